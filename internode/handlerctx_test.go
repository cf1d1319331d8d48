package internode

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestHandlerCtx checks that a pipe request's context ends as a context.WithDeadline of the
// pipe's would, whether or not anything asked for its Done channel before it ended.
func TestHandlerCtx(t *testing.T) {
	type key struct{}
	for _, materialized := range []bool{false, true} {
		name := "lazy"
		if materialized {
			name = "materialized"
		}
		t.Run(name+"/deadline", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hc := newHandlerCtx(context.Background(), time.Now().Add(time.Second))
				defer hc.release()
				if materialized {
					hc.Done()
				}
				if d, ok := hc.Deadline(); !ok || !d.Equal(time.Now().Add(time.Second)) {
					t.Errorf("Deadline() = %v, %v, want a second from now", d, ok)
				}
				if err := hc.Err(); err != nil {
					t.Fatalf("Err() before the deadline = %v, want nil", err)
				}
				time.Sleep(time.Second) // synctest's clock: the deadline, exactly
				synctest.Wait()         // a materialized context's timer has fired
				if err := hc.Err(); err != context.DeadlineExceeded {
					t.Errorf("Err() at the deadline = %v, want %v", err, context.DeadlineExceeded)
				}
				select {
				case <-hc.Done():
				default:
					t.Error("Done() is open at the deadline")
				}
				if err := context.Cause(hc); err != context.DeadlineExceeded {
					t.Errorf("Cause() = %v, want %v", err, context.DeadlineExceeded)
				}
			})
		})
		t.Run(name+"/cancel", func(t *testing.T) {
			hc := newHandlerCtx(context.Background(), time.Time{})
			defer hc.release()
			if _, ok := hc.Deadline(); ok {
				t.Error("Deadline() reports one for a request without a timeout")
			}
			if materialized {
				hc.Done()
			}
			hc.cancel()
			if err := hc.Err(); err != context.Canceled {
				t.Errorf("Err() after cancel = %v, want %v", err, context.Canceled)
			}
			<-hc.Done() // closed, or the test times out
			if err := hc.Err(); err != context.Canceled {
				t.Errorf("Err() once Done = %v, want %v", err, context.Canceled)
			}
		})
		t.Run(name+"/parent", func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
			hc := newHandlerCtx(parent, time.Now().Add(time.Hour))
			defer hc.release()
			if materialized {
				hc.Done()
			}
			child, stopChild := context.WithCancel(hc)
			defer stopChild()
			ran := make(chan struct{})
			context.AfterFunc(hc, func() { close(ran) })
			if err := hc.Err(); err != nil {
				t.Fatalf("Err() before the parent ended = %v, want nil", err)
			}
			cause := errors.New("the pipe broke")
			cancel(cause)
			if err := hc.Err(); err != context.Canceled {
				t.Errorf("Err() once the parent ended = %v, want %v", err, context.Canceled)
			}
			<-ran          // AfterFunc's function ran, or the test times out
			<-child.Done() // a derived context ended too
			if err := context.Cause(hc); err != cause {
				t.Errorf("Cause() = %v, want the parent's %v", err, cause)
			}
			if v := hc.Value(key{}); v != "v" {
				t.Errorf("Value() = %v, want the parent's v", v)
			}
		})
	}
}

// BenchmarkHandlerCtx compares a pipe request's context, made and ended after one Err ("lazy",
// as a replica's write uses it), with the context.WithTimeout the pipes made before.
func BenchmarkHandlerCtx(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			hc := newHandlerCtx(parent, time.Now().Add(time.Second))
			if hc.Err() != nil {
				b.Fatal("ended")
			}
			hc.release()
		}
	})
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			ctx, cancel := context.WithTimeout(parent, time.Second)
			if ctx.Err() != nil {
				b.Fatal("ended")
			}
			cancel()
		}
	})
}
