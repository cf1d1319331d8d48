package internode

import (
	"fmt"
	"reflect"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// kinds maps message types to the fields of the Request and Response oneofs. It is read from
// the generated descriptors when a Mux or Sender is made, and never changes after; the
// per-call wrapping is wire.go's.
type kinds struct {
	reqOneof, respOneof protoreflect.OneofDescriptor
	// req holds the Request's fields by index (protoreflect.FieldDescriptor.Index): a kind's
	// index is its field's.
	req []protoreflect.FieldDescriptor
	// byReq and byResp map a message's Go type (a pointer to the generated struct) to its
	// Request field's index and its Response field.
	byReq  map[reflect.Type]int
	byResp map[reflect.Type]protoreflect.FieldDescriptor
}

// newKinds reads the map from replicapb's descriptors. It panics when a message type appears
// twice in a oneof: internode.proto is then wrong, which the package's tests catch.
func newKinds() *kinds {
	reqMsg := (&replicapb.Request{}).ProtoReflect()
	respMsg := (&replicapb.Response{}).ProtoReflect()
	k := &kinds{
		reqOneof:  reqMsg.Descriptor().Oneofs().ByName("msg"),
		respOneof: respMsg.Descriptor().Oneofs().ByName("msg"),
		byReq:     map[reflect.Type]int{},
		byResp:    map[reflect.Type]protoreflect.FieldDescriptor{},
	}
	fields := reqMsg.Descriptor().Fields()
	k.req = make([]protoreflect.FieldDescriptor, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		t := oneofMessageType(reqMsg, fd, k.reqOneof)
		if _, dup := k.byReq[t]; dup {
			panic(fmt.Sprintf("internode: %s appears twice in Request", fd.Message().FullName()))
		}
		k.byReq[t], k.req[i] = i, fd
	}
	fields = respMsg.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		t := oneofMessageType(respMsg, fd, k.respOneof)
		if _, dup := k.byResp[t]; dup {
			panic(fmt.Sprintf("internode: %s appears twice in Response", fd.Message().FullName()))
		}
		k.byResp[t] = fd
	}
	return k
}

// oneofMessageType returns the Go type of field fd of m, which must be a message field of the
// oneof o.
func oneofMessageType(m protoreflect.Message, fd protoreflect.FieldDescriptor, o protoreflect.OneofDescriptor) reflect.Type {
	if fd.ContainingOneof() != o || fd.Message() == nil {
		panic(fmt.Sprintf("internode: %s is not a message field of the oneof %s", fd.FullName(), o.FullName()))
	}
	return reflect.TypeOf(m.NewField(fd).Message().Interface())
}

// kindOf returns the index of req's kind, or an InvalidArgument error when req is nil or not a
// request message.
func (k *kinds) kindOf(req proto.Message) (int, error) {
	i, ok := k.byReq[reflect.TypeOf(req)]
	if !ok {
		if req == nil {
			return 0, status.Error(codes.InvalidArgument, "internode: no request message")
		}
		return 0, status.Errorf(codes.InvalidArgument, "internode: %T is not an internode request message (none of Request's)", req)
	}
	if !req.ProtoReflect().IsValid() {
		return 0, status.Errorf(codes.InvalidArgument, "internode: %s request is a nil %T", k.name(i), req)
	}
	return i, nil
}

// name returns the name of kind i: its Request field's ("mutate").
func (k *kinds) name(i int) string { return string(k.req[i].Name()) }

// wrap returns a Request carrying req, of kind i.
func (k *kinds) wrap(i int, req proto.Message) (*replicapb.Request, error) {
	r, ok := wrapRequest(req)
	if !ok {
		return nil, status.Errorf(codes.Internal, "internode: wire.go has no case for %s requests", k.name(i))
	}
	return r, nil
}

// unwrap returns the kind and the message r carries: an InvalidArgument error when it carries
// none, Unimplemented when it carries one in a field this release does not know.
func (k *kinds) unwrap(r *replicapb.Request) (int, proto.Message, error) {
	if r == nil {
		return 0, nil, status.Error(codes.InvalidArgument, "internode: no request")
	}
	msg := requestMsg(r)
	if msg == nil {
		if r.GetMsg() != nil {
			return 0, nil, status.Errorf(codes.Internal, "internode: wire.go has no case for %T", r.GetMsg())
		}
		if num, ok := unknownField(r.ProtoReflect()); ok {
			return 0, nil, status.Errorf(codes.Unimplemented,
				"internode: request kind number %d is unknown to this node (sent by a newer release?)", num)
		}
		return 0, nil, status.Error(codes.InvalidArgument, "internode: request carries no message")
	}
	i, err := k.kindOf(msg)
	if err != nil {
		return 0, nil, err
	}
	return i, msg, nil
}

// respond returns a Response carrying resp, the answer of a kind i request.
func (k *kinds) respond(i int, resp proto.Message) (*replicapb.Response, error) {
	r, ok := wrapResponse(resp)
	if !ok {
		return nil, status.Errorf(codes.Internal, "internode: wire.go has no case for %s answers (%T)", k.name(i), resp)
	}
	return r, nil
}

// unwrapResponse returns the message r carries: an Internal error when it carries none, or one
// in a field this release does not know.
func (k *kinds) unwrapResponse(r *replicapb.Response) (proto.Message, error) {
	msg := responseMsg(r)
	switch {
	case msg != nil && msg.ProtoReflect().IsValid():
		return msg, nil
	case msg != nil:
		return nil, status.Errorf(codes.Internal, "answered with a nil %s", messageName(msg))
	case r.GetMsg() != nil:
		return nil, status.Errorf(codes.Internal, "internode: wire.go has no case for %T", r.GetMsg())
	}
	if num, ok := unknownField(r.ProtoReflect()); ok {
		return nil, status.Errorf(codes.Internal, "answered with response kind number %d, unknown to this node", num)
	}
	return nil, status.Error(codes.Internal, "answered with an empty response")
}

// unknownField returns the number of the first field of m that its type does not know.
func unknownField(m protoreflect.Message) (protowire.Number, bool) {
	u := m.GetUnknown()
	if len(u) == 0 {
		return 0, false
	}
	num, _, n := protowire.ConsumeTag(u)
	return num, n > 0
}

// messageName returns the name of m's type ("MutateResponse").
func messageName(m proto.Message) string {
	if m == nil {
		return "no message"
	}
	return string(m.ProtoReflect().Descriptor().Name())
}

// Kind returns the kind of request r (its oneof field's name, "mutate"), or "" when it carries
// none this release knows: for logs, such as those of a recovery interceptor, which see one
// method for every kind.
func Kind(r *replicapb.Request) string {
	if r == nil {
		return ""
	}
	m := r.ProtoReflect()
	if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("msg")); fd != nil {
		return string(fd.Name())
	}
	return ""
}
