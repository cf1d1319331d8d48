package native

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// TestBudget: acquire waits while the bytes do not fit, admits one oversized item alone, and
// gives up when done closes.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(10)
		never := make(chan struct{})
		if !b.acquire(25, never) {
			t.Fatal("an item over the whole budget was refused while nothing was held")
		}
		got := make(chan bool, 1)
		go func() { got <- b.acquire(1, never) }()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("acquire(1) went through while 25 of 10 bytes were held")
		default:
		}
		b.release(25)
		synctest.Wait()
		if !<-got || b.held() != 1 {
			t.Fatalf("after the release: held %d, want the waiter's 1", b.held())
		}
		done := make(chan struct{})
		go func() { got <- b.acquire(10, done) }()
		synctest.Wait()
		close(done)
		b.wake()
		if <-got {
			t.Fatal("acquire reported success after done closed")
		}
		if b.held() != 1 {
			t.Fatalf("held %d after a given-up acquire, want 1", b.held())
		}
	})
}

// TestUnreadAnswersAreBoundedInBytes checks the attack the byte budget is for: a client sends
// many SELECTs with large results and does not read the answers. The node must not hold them
// all (MaxInFlight of them could be gigabytes): past MaxConnectionBytes the answers wait
// unbuilt, and every one still arrives once the client reads.
func TestUnreadAnswersAreBoundedInBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			resultBytes = 1 << 20
			limit       = 3 << 20
			requests    = 12
		)
		var calls atomic.Int32
		big := make([]byte, resultBytes)
		exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
			calls.Add(1)
			return coordinator.Result{Kind: coordinator.ResultRows, Rows: &coordinator.Rows{
				Keyspace: "ks", Table: "t",
				Columns: []coordinator.RowColumn{{Name: "b", Type: schema.TypeBlob}},
				Values:  [][][]byte{{big}},
			}}, nil
		}}
		s, err := New(Config{Executor: exec, Options: Options{MaxConnectionBytes: limit}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		srvEnd, cliEnd := net.Pipe()
		s.accept(srvEnd)
		defer cliEnd.Close()
		fr := cqlwire.NewFrameReader(bufio.NewReader(cliEnd), cqlwire.ReaderOptions{Responses: true, MaxFrameSize: 4 << 20})
		write := func(stream int16, m cqlwire.Message) {
			go func() { cliEnd.Write(cqlwire.AppendFrame(nil, stream, m, cqlwire.FrameOptions{})) }()
		}
		write(0, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
		if h, _, err := fr.ReadFrame(); err != nil || h.Opcode != cqlwire.OpReady {
			t.Fatalf("STARTUP answered %v, %v", h.Opcode, err)
		}
		q := &cqlwire.Query{Query: "SELECT b FROM ks.t WHERE k = 1", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
		for i := range requests {
			write(int16(i+1), q)
		}
		synctest.Wait() // every request read and executed; the answers wait for the client
		if n := calls.Load(); n != requests {
			t.Fatalf("executor called %d times, want %d", n, requests)
		}
		if held := s.bytes.held(); held > limit || held < resultBytes {
			t.Fatalf("the server holds %d bytes of unread answers, want between one answer (%d) and MaxConnectionBytes (%d)", held, resultBytes, limit)
		}
		for range requests {
			h, _, err := fr.ReadFrame()
			if err != nil || h.Opcode != cqlwire.OpResult {
				t.Fatalf("answer %v, %v; want RESULT", h.Opcode, err)
			}
		}
		synctest.Wait()
		if held := s.bytes.held(); held != 0 {
			t.Fatalf("the server still holds %d bytes after every answer was read", held)
		}
	})
}
