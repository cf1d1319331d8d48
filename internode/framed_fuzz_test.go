package internode

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// fuzzServer is a FramedServer on loopback for the fuzz tests, with handlers that answer at
// once; the connections it hands to gRPC are closed.
type fuzzServer struct {
	addr string
	srv  *FramedServer
}

func newFuzzServer(tb testing.TB, o FramedServerOptions) *fuzzServer {
	tb.Helper()
	m := NewMux()
	Handle(m, func(ctx context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
		return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK}, nil
	})
	Handle(m, func(ctx context.Context, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
		return &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK, Tombstones: req.GetLimit()}, nil
	})
	HandleStream(m, func(ctx context.Context, req *replicapb.PullRequest, send func(*replicapb.PullChunk) error) error {
		return nil
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	fs := &fuzzServer{addr: lis.Addr().String(), srv: NewFramedServer(m, o)}
	grpcLis := fs.srv.Split(lis)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := grpcLis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := fs.srv.Stop(ctx); err != nil {
			tb.Errorf("the framed server's Stop: %v", err)
		}
		<-done
	})
	return fs
}

// frame returns m as a frame.
func frame(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// requestsFrame returns a frame of a PipeRequests of rs.
func requestsFrame(rs ...*replicapb.PipeRequest) []byte {
	return frame(&replicapb.PipeRequests{Requests: rs})
}

// parseFrames splits b into frames as the framed protocol reads them, returning the frames whole
// and what follows them (a truncated frame, or one over the limit).
func parseFrames(b []byte) (frames [][]byte, rest []byte) {
	for len(b) >= 4 {
		n := binary.BigEndian.Uint32(b)
		if n > framedMaxFrame || uint64(len(b)-4) < uint64(n) {
			break
		}
		frames = append(frames, b[4:4+n])
		b = b[4+n:]
	}
	return frames, b
}

// framedSeeds are the fuzz tests' seeds: what clients send, and what a broken or hostile one
// sends, after the magic.
func framedSeeds() [][]byte {
	mutate := &replicapb.Request{Msg: &replicapb.Request_Mutate{Mutate: &replicapb.MutateRequest{}}}
	read := &replicapb.Request{Msg: &replicapb.Request_Read{Read: &replicapb.ReadRequest{Limit: 7}}}
	pull := &replicapb.Request{Msg: &replicapb.Request_Pull{Pull: &replicapb.PullRequest{}}}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	return [][]byte{
		nil,
		{0, 0, 0, 0}, // a ping
		requestsFrame(&replicapb.PipeRequest{Id: 1, Request: mutate}, &replicapb.PipeRequest{Id: 2, Request: read, TimeoutMicros: 1e6}),
		cat(requestsFrame(&replicapb.PipeRequest{Id: 1, Request: mutate}), []byte{0, 0, 0, 0}, requestsFrame(&replicapb.PipeRequest{Id: 1, Cancel: true})),
		// Ids reused, id 0, a negative or huge timeout, no request, a stream kind on a pipe, an
		// empty Request, a cancellation of nothing.
		requestsFrame(&replicapb.PipeRequest{Id: 5, Request: mutate}, &replicapb.PipeRequest{Id: 5, Request: read},
			&replicapb.PipeRequest{Id: 0, Request: mutate}, &replicapb.PipeRequest{Id: 6, Request: mutate, TimeoutMicros: -1},
			&replicapb.PipeRequest{Id: 7, Request: mutate, TimeoutMicros: 1 << 62}, &replicapb.PipeRequest{Id: 8},
			&replicapb.PipeRequest{Id: 9, Request: pull}, &replicapb.PipeRequest{Id: 10, Request: &replicapb.Request{}},
			&replicapb.PipeRequest{Id: 11, Cancel: true}),
		// A PipeResponses where a PipeRequests belongs: the wrong message kind.
		frame(&replicapb.PipeResponses{Responses: []*replicapb.PipeResponse{{Id: 1, Code: 2, Message: "x"}}, Closing: true}),
		append(binary.BigEndian.AppendUint32(nil, 6), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), // garbage
		binary.BigEndian.AppendUint32(nil, framedMaxFrame+1),                              // oversize
		{0xff, 0xff, 0xff, 0xff},
		binary.BigEndian.AppendUint32(nil, 100), // truncated
		{0, 0},                                  // a truncated length
	}
}

// FuzzFramedServerConn sends a framed server a connection's bytes from the first on (with
// magic, the framed magic comes first) and then ends its writing. Whatever they are, the server
// ends the connection, sending only the magic and whole frames of PipeResponses that answer
// ids the client sent; its handlers, connections and goroutines end (the server's Stop at the
// end waits for them).
func FuzzFramedServerConn(f *testing.F) {
	for _, s := range framedSeeds() {
		f.Add(true, s)
	}
	f.Add(false, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	f.Add(false, []byte{0x16, 3, 1, 0, 10})
	f.Add(false, []byte(framedMagic[:5]))
	f.Add(false, []byte("KVNF/0 something else...\x00\x00\x00\x00"))
	srv := newFuzzServer(f, FramedServerOptions{HandshakeTimeout: 10 * time.Second})
	f.Fuzz(func(t *testing.T, magic bool, data []byte) {
		in := data
		if magic {
			in = append([]byte(framedMagic), data...)
		}
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		got := make(chan []byte, 1)
		readErr := make(chan error, 1)
		go func() {
			b, err := io.ReadAll(c)
			got <- b
			readErr <- err
		}()
		if _, err := c.Write(in); err != nil && !isClosedByPeer(err) {
			t.Fatal(err)
		}
		c.(*net.TCPConn).CloseWrite()
		out, err := <-got, <-readErr
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server did not close the connection (it sent %d bytes)", len(out))
		}
		if !bytes.HasPrefix(in, []byte(framedMagic)) {
			if len(out) > 0 {
				t.Fatalf("the server answered %q to a connection without the framed magic", out)
			}
			return
		}
		if !bytes.HasPrefix(out, []byte(framedMagic)) {
			if len(out) > 0 || err == nil {
				t.Fatalf("the server answered the magic with %q (%v)", out, err)
			}
			return // reset before the magic's answer: the write of the magic failed
		}
		sent := map[uint64]bool{0: true}
		frames, _ := parseFrames(in[len(framedMagic):])
		for _, fr := range frames {
			var m replicapb.PipeRequests
			if proto.Unmarshal(fr, &m) != nil {
				break
			}
			for _, r := range m.GetRequests() {
				sent[r.GetId()] = true
			}
		}
		answers, rest := parseFrames(out[len(framedMagic):])
		if len(rest) > 0 && err == nil {
			t.Fatalf("the server's output ends with %d bytes that are no whole frame", len(rest))
		}
		for i, fr := range answers {
			var m replicapb.PipeResponses
			if err := proto.Unmarshal(fr, &m); err != nil {
				t.Fatalf("the server's frame %d is not a PipeResponses: %v", i, err)
			}
			for _, a := range m.GetResponses() {
				if !sent[a.GetId()] {
					t.Fatalf("the server answered id %d, which the client never sent", a.GetId())
				}
			}
		}
	})
}

// isClosedByPeer reports whether err is a write's to a connection the peer closed.
func isClosedByPeer(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}
