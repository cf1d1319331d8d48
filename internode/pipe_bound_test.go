package internode

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/internal/gopool"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// unreadStream is a pipe's stream whose caller sends batch after batch of requests and reads no
// answer: Send blocks until release is closed. Its first batch fills the pipe's bound, each next
// one holds over new requests, up to batches of them; then it ends the pipe. The second comes
// once a handler of the first is blocked in Send, holding the pipe's writing.
type unreadStream struct {
	release chan struct{}
	entered chan struct{} // closed once Send was called
	once    sync.Once
	batches int
	recvs   int
	nextID  uint64
}

func (s *unreadStream) Recv() (*replicapb.PipeRequests, error) {
	if s.recvs++; s.recvs > s.batches {
		return nil, status.Error(codes.Canceled, "the caller ended the pipe")
	}
	if s.recvs == 2 {
		<-s.entered
	}
	n := PipeMaxInFlight
	if s.recvs > 1 {
		n = 1024
	}
	b := &replicapb.PipeRequests{}
	for range n {
		s.nextID++
		b.Requests = append(b.Requests, &replicapb.PipeRequest{Id: s.nextID, Request: &replicapb.Request{Msg: &replicapb.Request_Mutate{Mutate: &replicapb.MutateRequest{}}}})
	}
	return b, nil
}

func (s *unreadStream) Send(*replicapb.PipeResponses) error {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return nil
}

// TestPipeEndsACallerThatDoesNotRead checks that a caller that sends requests beyond a pipe's
// bound while it reads no answer cannot make the server queue answers without bound: once
// pipeMaxUnheld are queued, the pipe's reader reads no more and ends the pipe, ResourceExhausted.
func TestPipeEndsACallerThatDoesNotRead(t *testing.T) {
	m := NewMux()
	Handle(m, func(ctx context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
		return &replicapb.MutateResponse{}, nil
	})
	ss := &unreadStream{release: make(chan struct{}), entered: make(chan struct{}), batches: 100}
	ps := &pipeServer{ss: ss, slots: make(chan struct{}, PipeMaxInFlight), inFlight: map[uint64]*handlerCtx{}}
	pool := gopool.New(gopool.IdleTimeout)
	defer pool.Close()
	var handlers sync.WaitGroup
	err := ps.read(t.Context(), m, pool, &handlers)
	ps.mu.Lock()
	queued := len(ps.queue)
	ps.mu.Unlock()
	close(ss.release)
	handlers.Wait()
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("the pipe's reader returned %v after %d batches, want ResourceExhausted", err, ss.recvs)
	}
	if max := PipeMaxInFlight + pipeMaxUnheld; queued > max {
		t.Errorf("%d answers queued for a caller that reads none, want at most %d", queued, max)
	}
}

// TestPipeTimeoutBeyondDuration sends a pipe request whose timeout is longer than a
// time.Duration holds: its handler runs without a deadline of its own (the stream's is 30 s
// away), instead of one overflowed into the past.
func TestPipeTimeoutBeyondDuration(t *testing.T) {
	p := newPipePeer(t, peerFramed)
	st, err := replicapb.NewInternodeClient(dial(t, p.addr)).Pipe(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	req := &replicapb.Request{Msg: &replicapb.Request_Mutate{Mutate: mutateOf(2)}}
	if err := st.Send(&replicapb.PipeRequests{Requests: []*replicapb.PipeRequest{{Id: 1, Request: req, TimeoutMicros: 1 << 62}}}); err != nil {
		t.Fatal(err)
	}
	if left := <-p.entered; left != noDeadline && left < 10*time.Second {
		t.Errorf("the handler's deadline is %v away, want none but the stream's (30 s)", left)
	}
	close(p.release)
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if a := r.GetResponses(); len(a) != 1 || a[0].GetCode() != 0 {
		t.Errorf("answered %v, want the mutate's response", a)
	}
}
