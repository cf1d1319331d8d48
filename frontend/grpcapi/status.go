package grpcapi

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// ErrorStatus returns the gRPC status for an error of shell.Executor.Execute, as the client
// API documents it. The message is the error's own (each error builds it once); the details carry
// every field of the error:
//
//   - *coordinator.RateLimitError: RESOURCE_EXHAUSTED with kvnodepb.RateLimitDetail and, when the
//     retry hint is known, google.rpc.RetryInfo;
//   - *coordinator.UnavailableError: UNAVAILABLE with kvnodepb.UnavailableDetail;
//   - *coordinator.TimeoutError: DEADLINE_EXCEEDED with kvnodepb.TimeoutDetail;
//   - *coordinator.FailureError: with kvnodepb.FailureDetail, UNAVAILABLE (replicas failed or
//     could not be reached, which may pass), INTERNAL (a replica rejected the request as
//     malformed) or FAILED_PRECONDITION (too many tombstones: retrying fails the same way);
//   - *coordinator.InvalidError: INVALID_ARGUMENT;
//   - *auth.UnauthorizedError (the role lacks a permission): PERMISSION_DENIED;
//     *auth.AuthenticationError (a failed login): UNAUTHENTICATED;
//   - *coordinator.SchemaUnavailableError (a schema change without a majority): UNAVAILABLE;
//   - CANCELED and DEADLINE_EXCEEDED for the context's errors, UNAVAILABLE after Close, an error's
//     own status if it has one (GRPCStatus), INTERNAL for everything else.
//
// It returns nil for nil.
func ErrorStatus(err error) *status.Status {
	var (
		rl  *coordinator.RateLimitError
		un  *coordinator.UnavailableError
		to  *coordinator.TimeoutError
		fe  *coordinator.FailureError
		inv *coordinator.InvalidError
		su  *coordinator.SchemaUnavailableError
		gs  interface{ GRPCStatus() *status.Status }
		ua  *auth.UnauthorizedError
		ae  *auth.AuthenticationError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rl):
		return rateLimitStatus(rl)
	case errors.As(err, &un):
		return withDetails(codes.Unavailable, un.Error(), &kvnodepb.UnavailableDetail{
			Consistency: consistencyToProto(un.Consistency), Live: count(un.Live), Required: count(un.Required),
		})
	case errors.As(err, &to):
		return withDetails(codes.DeadlineExceeded, to.Error(), &kvnodepb.TimeoutDetail{
			Op: opToProto(to.Op), Consistency: consistencyToProto(to.Consistency),
			Received: count(to.Received), Required: count(to.Required),
		})
	case errors.As(err, &fe):
		return failureStatus(fe)
	case errors.As(err, &inv):
		return status.New(codes.InvalidArgument, inv.Error())
	case errors.As(err, &ua):
		return status.New(codes.PermissionDenied, ua.Error())
	case errors.As(err, &ae):
		return status.New(codes.Unauthenticated, ae.Error())
	case errors.As(err, &su):
		return status.New(codes.Unavailable, err.Error())
	case errors.As(err, &gs):
		return gs.GRPCStatus()
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, shell.ErrClosed):
		return status.New(codes.Unavailable, err.Error())
	}
	return status.New(codes.Internal, err.Error())
}

func rateLimitStatus(e *coordinator.RateLimitError) *status.Status {
	by := kvnodepb.RateLimitDetail_REPLICAS
	if e.RejectedBy == coordinator.RejectedByCoordinator {
		by = kvnodepb.RateLimitDetail_COORDINATOR
	}
	d := &kvnodepb.RateLimitDetail{
		Keyspace: e.Keyspace, Table: e.Table, Op: opToProto(e.Op), RejectedBy: by,
		Limit: e.Limit, Count: e.Count, MayBeApplied: e.MayBeApplied,
	}
	if e.RetryAfter > 0 {
		return withDetails(codes.ResourceExhausted, e.Error(), d, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)})
	}
	return withDetails(codes.ResourceExhausted, e.Error(), d)
}

func failureStatus(e *coordinator.FailureError) *status.Status {
	code, reason := codes.Unavailable, kvnodepb.FailureDetail_REPLICAS
	switch e.Reason() {
	case coordinator.FailureBadRequest:
		code, reason = codes.Internal, kvnodepb.FailureDetail_BAD_REQUEST
	case coordinator.FailureTooManyTombstones:
		code, reason = codes.FailedPrecondition, kvnodepb.FailureDetail_TOO_MANY_TOMBSTONES
	}
	return withDetails(code, e.Error(), &kvnodepb.FailureDetail{
		Op: opToProto(e.Op), Consistency: consistencyToProto(e.Consistency),
		Received: count(e.Received), Required: count(e.Required),
		Failures: count(e.Failures), Rejected: count(e.Rejected), Reason: reason,
	})
}

// count converts a non-negative count for the wire.
func count(n int) uint32 { return uint32(max(n, 0)) }

// withDetails returns a status with details. Attaching them fails only for messages that
// cannot be marshaled, which these always can; the status is then returned without them.
func withDetails(code codes.Code, msg string, details ...protoadapt.MessageV1) *status.Status {
	st := status.New(code, msg)
	if ds, err := st.WithDetails(details...); err == nil {
		return ds
	}
	return st
}
