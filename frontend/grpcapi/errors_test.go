package grpcapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// fixed is an Executor that answers every statement with one result or error: these tests are
// about the front end's translation, not about executing statements.
type fixed struct {
	res coordinator.Result
	err error
}

func (f *fixed) Execute(context.Context, coordinator.Statement) (coordinator.Result, error) {
	return f.res, f.err
}

// serve starts the front end over exec on 127.0.0.1 and returns a client connected to it.
func serve(t *testing.T, exec grpcapi.Executor, limit int) *client.Client {
	t.Helper()
	api, err := grpcapi.New(grpcapi.Config{Executor: exec, MessageLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	kvnodepb.RegisterKVNodeServer(srv, api)
	go srv.Serve(lis) // returns when Stop closes the listener
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestErrorsReachTheClientWhole sends every kind of coordinator error, with every field set,
// through a real gRPC server and client, and checks that the client's typed error carries each
// field and the coordinator's own message.
func TestErrorsReachTheClientWhole(t *testing.T) {
	exec := &fixed{}
	cl := serve(t, exec, 0)
	bad := &coordinator.ReplicaError{Replica: "n2", Code: coordinator.ReplicaErrorBadRequest, Message: "garbled"}
	tombstones := &coordinator.ReplicaError{Replica: "n3", Code: coordinator.ReplicaErrorTooManyTombstones, Message: "too many"}
	tests := []struct {
		err  error
		code codes.Code
		want error // the client's error, Message aside (it must be err.Error())
	}{
		{&coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpWrite, RejectedBy: coordinator.RejectedByReplicas,
			Limit: 50, Count: 173, RetryAfter: 1250 * time.Millisecond, MayBeApplied: true},
			codes.ResourceExhausted,
			&client.RateLimitError{Keyspace: "ks", Table: "t", Op: client.OpWrite, RejectedBy: client.RejectedByReplicas,
				Limit: 50, Count: 173, RetryAfter: 1250 * time.Millisecond, MayBeApplied: true, Scope: client.ScopePartition}},
		{&coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpWrite, RejectedBy: coordinator.RejectedByCoordinator,
			Scope: coordinator.ScopeServiceLevel, ScopeName: "gold", Limit: 100, Count: 290, RetryAfter: 400 * time.Millisecond},
			codes.ResourceExhausted,
			&client.RateLimitError{Keyspace: "ks", Table: "t", Op: client.OpWrite, RejectedBy: client.RejectedByCoordinator,
				Scope: client.ScopeServiceLevel, ScopeName: "gold", Limit: 100, Count: 290, RetryAfter: 400 * time.Millisecond}},
		{&coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpRead, RejectedBy: coordinator.RejectedByCoordinator,
			Scope: coordinator.ScopeKeyspace, ScopeName: "ks", Limit: 7},
			codes.ResourceExhausted,
			&client.RateLimitError{Keyspace: "ks", Table: "t", Op: client.OpRead, RejectedBy: client.RejectedByCoordinator,
				Scope: client.ScopeKeyspace, ScopeName: "ks", Limit: 7}},
		{&coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpRead, RejectedBy: coordinator.RejectedByCoordinator, Limit: 3, Count: 9},
			codes.ResourceExhausted,
			&client.RateLimitError{Keyspace: "ks", Table: "t", Op: client.OpRead, RejectedBy: client.RejectedByCoordinator, Limit: 3, Count: 9, Scope: client.ScopePartition}},
		{&coordinator.UnavailableError{Consistency: coordinator.All, Live: 2, Required: 3},
			codes.Unavailable,
			&client.UnavailableError{Consistency: client.All, Live: 2, Required: 3}},
		{&coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2},
			codes.DeadlineExceeded,
			&client.TimeoutError{Op: client.OpWrite, Consistency: client.Quorum, Received: 1, Required: 2}},
		{&coordinator.FailureError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2, Failures: 1, Rejected: 1, Err: errors.New("disk full")},
			codes.Unavailable,
			&client.FailureError{Op: client.OpWrite, Consistency: client.Quorum, Received: 1, Required: 2, Failures: 1, Rejected: 1, Reason: client.FailureReplicas}},
		{&coordinator.FailureError{Op: coordinator.OpRead, Consistency: coordinator.All, Received: 0, Required: 3, Failures: 3, Err: bad},
			codes.Internal,
			&client.FailureError{Op: client.OpRead, Consistency: client.All, Required: 3, Failures: 3, Reason: client.FailureBadRequest}},
		{&coordinator.FailureError{Op: coordinator.OpRead, Consistency: coordinator.One, Received: 0, Required: 1, Failures: 1, Err: tombstones},
			codes.FailedPrecondition,
			&client.FailureError{Op: client.OpRead, Consistency: client.One, Required: 1, Failures: 1, Reason: client.FailureTooManyTombstones}},
		{&coordinator.InvalidError{Err: errors.New("unknown table ks.nope")},
			codes.InvalidArgument,
			&client.InvalidError{}},
	}
	for _, tt := range tests {
		exec.err = tt.err
		_, err := cl.Execute(context.Background(), client.One, "SELECT 1")
		if st := grpcapi.ErrorStatus(tt.err); st.Code() != tt.code || st.Message() != tt.err.Error() {
			t.Errorf("ErrorStatus(%T) = %v %q, want %v %q", tt.err, st.Code(), st.Message(), tt.code, tt.err.Error())
		}
		got := reflect.New(reflect.TypeOf(tt.want)) // a **client.XxxError for errors.As
		if !errors.As(err, got.Interface()) {
			t.Errorf("%T through gRPC: the client returned %T %v, want a %T", tt.err, err, err, tt.want)
			continue
		}
		gotErr := got.Elem().Interface().(error)
		// Copy before clearing Message, so the comparison does not change the client's error.
		cp := reflect.New(reflect.TypeOf(tt.want).Elem())
		cp.Elem().Set(reflect.ValueOf(gotErr).Elem())
		gotErr = cp.Interface().(error)
		// Every field but Message must match; Message must be the coordinator's own text.
		msg := reflect.ValueOf(gotErr).Elem().FieldByName("Message")
		if msg.String() != tt.err.Error() {
			t.Errorf("%T through gRPC: message %q, want the coordinator's %q", tt.err, msg.String(), tt.err.Error())
		}
		msg.SetString("")
		if _, ok := tt.want.(*client.FailureError); ok && status.Code(err) != tt.code {
			t.Errorf("%T through gRPC: status.Code of the client's error is %v, want %v", tt.err, status.Code(err), tt.code)
		}
		if fe, ok := gotErr.(*client.FailureError); ok {
			gotErr = &client.FailureError{Op: fe.Op, Consistency: fe.Consistency, Received: fe.Received, Required: fe.Required,
				Failures: fe.Failures, Rejected: fe.Rejected, Reason: fe.Reason} // without the unexported status
		}
		if !reflect.DeepEqual(gotErr, tt.want) {
			t.Errorf("%T through gRPC: the client got %+v, want %+v", tt.err, gotErr, tt.want)
		}
	}
}

// TestErrorStatusOfOtherErrors covers the errors without a typed detail.
func TestErrorStatusOfOtherErrors(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code codes.Code
	}{
		{context.Canceled, codes.Canceled},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{coordinator.ErrClosed, codes.Unavailable},
		{fmt.Errorf("ddl: %w", &coordinator.SchemaUnavailableError{Message: "a schema change needs 2 of the cluster's 3 nodes to agree"}), codes.Unavailable},
		{status.Error(codes.Aborted, "own status"), codes.Aborted},
		{errors.New("disk on fire"), codes.Internal},
	} {
		want := tt.err.Error()
		if s, ok := status.FromError(tt.err); ok {
			want = s.Message()
		}
		if st := grpcapi.ErrorStatus(tt.err); st.Code() != tt.code || st.Message() != want {
			t.Errorf("ErrorStatus(%v) = %v %q, want %v %q", tt.err, st.Code(), st.Message(), tt.code, want)
		}
	}
	if st := grpcapi.ErrorStatus(nil); st != nil {
		t.Errorf("ErrorStatus(nil) = %v, want nil", st)
	}
}

// TestUnknownConsistencyIsInvalid: a level the client API does not define is refused before the
// executor sees the statement.
func TestUnknownConsistencyIsInvalid(t *testing.T) {
	exec := &fixed{res: coordinator.Result{Kind: coordinator.ResultVoid}}
	api, err := grpcapi.New(grpcapi.Config{Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	_, err = api.Execute(context.Background(), &kvnodepb.ExecuteRequest{Statement: "SELECT 1", Consistency: kvnodepb.Consistency(42)})
	want := "unknown consistency level 42 (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)"
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != want {
		t.Errorf("consistency 42: %v, want INVALID_ARGUMENT %q", err, want)
	}
}

// clientEcho answers every statement with an invalid-request error naming the client address
// its context carries.
type clientEcho struct{}

func (clientEcho) Execute(ctx context.Context, _ coordinator.Statement) (coordinator.Result, error) {
	a, ok := auth.ClientFrom(ctx)
	if !ok {
		return coordinator.Result{}, &coordinator.InvalidError{Err: errors.New("no client address")}
	}
	return coordinator.Result{}, &coordinator.InvalidError{Err: errors.New("client " + a.String())}
}

// TestExecuteCarriesTheClientAddress checks that the executor finds the caller's address in the
// context (auth.ClientFrom), for service levels attached to addresses.
func TestExecuteCarriesTheClientAddress(t *testing.T) {
	cl := serve(t, clientEcho{}, 0)
	_, err := cl.Execute(context.Background(), client.One, "SELECT 1")
	var inv *client.InvalidError
	if !errors.As(err, &inv) || inv.Message != "client 127.0.0.1" {
		t.Errorf("Execute: %v, want the executor to see client 127.0.0.1", err)
	}
}
