package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// blocking is an executor whose calls wait until release is closed.
type blocking struct {
	arrived chan struct{}
	release chan struct{}
}

func (b *blocking) Execute(ctx context.Context, _ coordinator.Statement) (coordinator.Result, error) {
	b.arrived <- struct{}{}
	<-b.release
	return coordinator.Result{}, nil
}

// TestExecuteShedWhenTheNodeIsFull: with the one execution slot held by a blocked call and no
// queue, the next Execute is refused at once with RESOURCE_EXHAUSTED, RetryInfo and ErrorInfo
// OVERLOADED; the blocked call completes once released.
func TestExecuteShedWhenTheNodeIsFull(t *testing.T) {
	ctl, err := admission.New(admission.Options{MaxConcurrent: 1, MaxQueued: -1, QueueTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	exec := &blocking{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	s, err := grpcapi.New(grpcapi.Config{Executor: exec, Admission: ctl})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := s.Execute(ctx, &kvnodepb.ExecuteRequest{Statement: "SELECT * FROM ks.t WHERE k = 'a'"})
		first <- err
	}()
	<-exec.arrived
	_, err = s.Execute(ctx, &kvnodepb.ExecuteRequest{Statement: "SELECT * FROM ks.t WHERE k = 'a'"})
	st := status.Convert(err)
	var retry *errdetails.RetryInfo
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.ErrorInfo:
			info = d
		}
	}
	if st.Code() != codes.ResourceExhausted || retry.GetRetryDelay().AsDuration() <= 0 || info.GetReason() != grpcapi.OverloadedReason {
		t.Fatalf("Execute with the node full = %v (details %v), want RESOURCE_EXHAUSTED with RetryInfo and ErrorInfo OVERLOADED", st, st.Details())
	}
	close(exec.release)
	if err := <-first; err != nil {
		t.Errorf("the blocked call, released: %v", err)
	}
	if ctl.InFlight() != 0 {
		t.Errorf("%d calls hold a slot after both returned, want 0", ctl.InFlight())
	}
}
