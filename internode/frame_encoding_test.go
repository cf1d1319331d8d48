package internode

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// TestFrameEncoding checks that a frame's hand-made encoding of a pipe's batch is proto.Marshal's,
// byte for byte (so it decodes to the same message), with every field of the items set and unset.
func TestFrameEncoding(t *testing.T) {
	mutate := func() *replicapb.Request { r, _ := wrapRequest(benchMutate()); return r }
	answer := func() *replicapb.Response {
		return &replicapb.Response{Msg: &replicapb.Response_Mutate{Mutate: &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK, WouldReject: true}}}
	}
	requests := []*replicapb.PipeRequests{
		{},
		{Requests: []*replicapb.PipeRequest{{Id: 1, Request: mutate(), TimeoutMicros: 2_000_000}}},
		{Requests: []*replicapb.PipeRequest{
			{Id: 1 << 40, Request: mutate()},
			{Id: 7, Cancel: true},
			{},
			{Id: 3, Request: &replicapb.Request{}, TimeoutMicros: 1},
			{Id: 9, Request: mutate(), TimeoutMicros: -5}, // refused by the server, encoded all the same
		}},
	}
	for i, m := range requests {
		for _, r := range m.GetRequests() {
			if r.GetRequest() != nil {
				proto.Size(r.GetRequest()) // as the Sender does before queuing it
			}
		}
		checkFrameEncoding(t, i, m, func(b []byte) ([]byte, error) { return appendPipeRequests(b, m) }, &replicapb.PipeRequests{})
	}
	responses := []*replicapb.PipeResponses{
		{},
		{Closing: true},
		{Responses: []*replicapb.PipeResponse{{Id: 1, Response: answer()}}},
		{Responses: []*replicapb.PipeResponse{
			{Id: 2, Code: 4, Message: "internode: deadline exceeded"},
			{Id: 3, UseCall: true},
			{},
			{Id: 1 << 50, Response: &replicapb.Response{}},
			{Id: 5, Response: answer(), Code: 2, Message: "ü", UseCall: true},
		}, Closing: true},
	}
	for i, m := range responses {
		for _, r := range m.GetResponses() {
			if r.GetResponse() != nil {
				proto.Size(r.GetResponse()) // as the pipe's server does before queuing it
			}
		}
		checkFrameEncoding(t, i, m, func(b []byte) ([]byte, error) { return appendPipeResponses(b, m) }, &replicapb.PipeResponses{})
	}
}

func checkFrameEncoding(t *testing.T, i int, m proto.Message, appendTo func([]byte) ([]byte, error), decoded proto.Message) {
	t.Helper()
	want, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendTo([]byte("prefix"))
	if err != nil {
		t.Fatalf("%T %d: %v", m, i, err)
	}
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("%T %d: the encoding did not append to its buffer", m, i)
	}
	got = got[len("prefix"):]
	if !bytes.Equal(got, want) {
		t.Errorf("%T %d encoded as\n%x, proto.Marshal makes\n%x", m, i, got, want)
	}
	if err := proto.Unmarshal(got, decoded); err != nil || !proto.Equal(decoded, m) {
		t.Errorf("%T %d decodes to %v (error %v), want %v", m, i, decoded, err, m)
	}
}

// BenchmarkFrameEncoding compares the encoding of a batch of four small writes as a frame
// carries it ("sized": the requests' sizes, which the Sender computes anyway, reused) with
// proto.MarshalAppend ("marshal", which computes them again), the code before.
func BenchmarkFrameEncoding(b *testing.B) {
	m := &replicapb.PipeRequests{}
	for i := range 4 {
		r, _ := wrapRequest(benchMutate())
		m.Requests = append(m.Requests, &replicapb.PipeRequest{Id: uint64(i + 1), Request: r, TimeoutMicros: 2_000_000})
	}
	buf := make([]byte, 0, 4096)
	b.Run("sized", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			for _, r := range m.Requests {
				proto.Size(r.Request) // the Sender's, before it queues the request
			}
			if _, err := appendPipeRequests(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			for _, r := range m.Requests {
				proto.Size(r.Request)
			}
			if _, err := (proto.MarshalOptions{}).MarshalAppend(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
