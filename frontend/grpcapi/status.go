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
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// ErrorStatus returns the gRPC status for an error of the domain API (Executor.Execute), as the
// client API documents it. The message is the error's own (each error builds it once); the
// details carry every field of the error. The domain's errors, by their coordinator.Code:
//
//   - *coordinator.RateLimitError: RESOURCE_EXHAUSTED with kvnodepb.RateLimitDetail (its scope:
//     the partition, a service level or a keyspace, and the level's or keyspace's name) and, when
//     the retry hint is known, google.rpc.RetryInfo;
//   - *coordinator.UnavailableError: UNAVAILABLE with kvnodepb.UnavailableDetail;
//   - *coordinator.TimeoutError: DEADLINE_EXCEEDED with kvnodepb.TimeoutDetail;
//   - *coordinator.FailureError: with kvnodepb.FailureDetail, UNAVAILABLE (replicas failed or
//     could not be reached, which may pass), INTERNAL (a replica rejected the request as
//     malformed) or FAILED_PRECONDITION (too many tombstones: retrying fails the same way);
//   - *coordinator.InvalidError: INVALID_ARGUMENT;
//   - *auth.UnauthorizedError (the role lacks a permission): PERMISSION_DENIED;
//     *auth.AuthenticationError (a failed login): UNAUTHENTICATED;
//   - *coordinator.SchemaUnavailableError (a schema change without a majority): UNAVAILABLE.
//
// Any other error answers with its own status if it has one (GRPCStatus), CANCELED and
// DEADLINE_EXCEEDED for the context's errors, UNAVAILABLE after the executor closed
// (coordinator.ErrClosed), INTERNAL for everything else.
//
// It returns nil for nil.
func ErrorStatus(err error) *status.Status {
	code := coordinator.Code(err)
	switch code {
	case coordinator.CodeOK:
		return nil
	case coordinator.CodeRateLimited:
		rl, _ := errors.AsType[*coordinator.RateLimitError](err)
		return rateLimitStatus(rl)
	case coordinator.CodeUnavailable:
		un, _ := errors.AsType[*coordinator.UnavailableError](err)
		return withDetails(codes.Unavailable, un.Error(), &kvnodepb.UnavailableDetail{
			Consistency: consistencyToProto(un.Consistency), Live: count(un.Live), Required: count(un.Required),
		})
	case coordinator.CodeReadTimeout, coordinator.CodeWriteTimeout:
		to, _ := errors.AsType[*coordinator.TimeoutError](err)
		return withDetails(codes.DeadlineExceeded, to.Error(), &kvnodepb.TimeoutDetail{
			Op: opToProto(to.Op), Consistency: consistencyToProto(to.Consistency),
			Received: count(to.Received), Required: count(to.Required),
		})
	case coordinator.CodeReadFailure, coordinator.CodeWriteFailure:
		fe, _ := errors.AsType[*coordinator.FailureError](err)
		return failureStatus(fe)
	case coordinator.CodeSyntax, coordinator.CodeAlreadyExists, coordinator.CodeInvalid:
		inv, _ := errors.AsType[*coordinator.InvalidError](err)
		return status.New(codes.InvalidArgument, inv.Error())
	case coordinator.CodeUnauthorized:
		ua, _ := errors.AsType[*auth.UnauthorizedError](err)
		return status.New(codes.PermissionDenied, ua.Error())
	case coordinator.CodeBadCredentials:
		ae, _ := errors.AsType[*auth.AuthenticationError](err)
		return status.New(codes.Unauthenticated, ae.Error())
	case coordinator.CodeSchemaUnavailable:
		return status.New(codes.Unavailable, err.Error())
	}
	// Not one of the domain's errors (or the executor closed, which an error's own status
	// and the context's end take precedence over).
	if gs, ok := errors.AsType[grpcStatusError](err); ok {
		return gs.GRPCStatus()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case code == coordinator.CodeClosed:
		return status.New(codes.Unavailable, err.Error())
	}
	return status.New(codes.Internal, err.Error())
}

// grpcStatusError is an error that carries its own gRPC status (as status.FromError finds it).
type grpcStatusError interface {
	error
	GRPCStatus() *status.Status
}

func rateLimitStatus(e *coordinator.RateLimitError) *status.Status {
	by := kvnodepb.RateLimitDetail_REPLICAS
	if e.RejectedBy == coordinator.RejectedByCoordinator {
		by = kvnodepb.RateLimitDetail_COORDINATOR
	}
	d := &kvnodepb.RateLimitDetail{
		Keyspace: e.Keyspace, Table: e.Table, Op: opToProto(e.Op), RejectedBy: by,
		Limit: e.Limit, Count: e.Count, MayBeApplied: e.MayBeApplied, ScopeName: e.ScopeName,
	}
	switch e.Scope {
	case coordinator.ScopeServiceLevel:
		d.Scope = kvnodepb.RateLimitDetail_SCOPE_SERVICE_LEVEL
	case coordinator.ScopeKeyspace:
		d.Scope = kvnodepb.RateLimitDetail_SCOPE_KEYSPACE
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
