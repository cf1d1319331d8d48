package client

import (
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// Op is the kind of operation an error is about: "read" or "write".
type Op string

// The operation kinds.
const (
	OpRead  Op = "read"
	OpWrite Op = "write"
)

func opFromProto(o kvnodepb.Op) Op {
	switch o {
	case kvnodepb.Op_OP_READ:
		return OpRead
	case kvnodepb.Op_OP_WRITE:
		return OpWrite
	}
	return ""
}

// RejectedBy says which node(s) rejected a rate-limited operation.
type RejectedBy string

// Who rejects: the coordinator when it is itself a replica of the partition and decides first,
// or the replicas when rejections made the consistency level unreachable.
const (
	RejectedByCoordinator RejectedBy = "coordinator"
	RejectedByReplicas    RejectedBy = "replicas"
)

// RateLimitError reports that a partition is over its table's per_partition_rate_limit. It is not
// retryable at once: wait at least RetryAfter, and prefer shedding the load on that partition.
type RateLimitError struct {
	Keyspace, Table string
	Op              Op
	RejectedBy      RejectedBy
	// Limit is the table's limit for Op, in operations per second per partition.
	Limit uint32
	// RetryAfter is when the partition's counter will have decayed back under the admission
	// threshold if no more operations arrive.
	RetryAfter time.Duration
	// Message is the server's text.
	Message string
	// Count is the rejecting counter after the increment: the coordinator's, or the largest
	// among the rejecting replicas; 0 if the server did not say.
	Count uint32
	// MayBeApplied says a write rejected by replicas may still have been stored by replicas that
	// admitted it (their counters disagree, e.g. under clock skew), as after a write timeout.
	MayBeApplied bool
	// Scope is the limit that rejected the operation: ScopePartition, the zero value (the
	// table's per_partition_rate_limit; Limit is per partition), ScopeServiceLevel or ScopeKeyspace (a
	// budget held across the cluster, named by ScopeName; Limit is the budget's).
	Scope     Scope
	ScopeName string
}

// Scope names the limit that rejected a rate-limited operation. The zero value is the
// partition's.
type Scope string

// The scopes.
const (
	ScopePartition    Scope = ""
	ScopeServiceLevel Scope = "service_level"
	ScopeKeyspace     Scope = "keyspace"
)

// String returns "partition", "service_level" or "keyspace".
func (s Scope) String() string {
	if s == ScopePartition {
		return "partition"
	}
	return string(s)
}

func (e *RateLimitError) Error() string { return "kvnode: " + e.Message }

// OverloadedError reports that the node had no room for the request (its admission control's
// bound on executing and queued requests): nothing was executed. Retry after RetryAfter, or on
// another node.
type OverloadedError struct {
	Message    string
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string { return "kvnode: " + e.Message }

// UnavailableError reports that too few replicas were live to reach the consistency level; the
// operation was not attempted.
type UnavailableError struct {
	Consistency    Consistency
	Live, Required int
	Message        string
}

func (e *UnavailableError) Error() string { return "kvnode: " + e.Message }

// TimeoutError reports that replicas did not answer in time. A write that timed out may still
// have been applied by some replicas.
type TimeoutError struct {
	Op                 Op
	Consistency        Consistency
	Received, Required int
	Message            string
}

func (e *TimeoutError) Error() string { return "kvnode: " + e.Message }

// FailureReason says why replicas failed an operation.
type FailureReason string

// The failure reasons.
const (
	// FailureReplicas: replicas failed or could not be reached; this may pass.
	FailureReplicas FailureReason = "replicas"
	// FailureBadRequest: a replica rejected the request as malformed (a server bug).
	FailureBadRequest FailureReason = "bad_request"
	// FailureTooManyTombstones: a read scanned more tombstones than a replica's failure
	// threshold; retrying fails the same way until the tombstones are gone.
	FailureTooManyTombstones FailureReason = "too_many_tombstones"
)

// FailureError reports that replica failures (possibly with rate-limit rejections too few to
// decide on their own) made the consistency level unreachable. The operation may have been
// applied by some replicas.
type FailureError struct {
	Op                 Op
	Consistency        Consistency
	Received, Required int
	// Failures is how many replicas failed, Rejected how many rejected on their rate limit.
	Failures, Rejected int
	Reason             FailureReason
	Message            string

	st *status.Status // the server's, for GRPCStatus
}

func (e *FailureError) Error() string { return "kvnode: " + e.Message }

// GRPCStatus returns the server's status (UNAVAILABLE, INTERNAL or FAILED_PRECONDITION by
// Reason), so that status.FromError and status.Code keep working on failures as they did before
// they had a type; nil for a FailureError made by hand.
func (e *FailureError) GRPCStatus() *status.Status { return e.st }

// InvalidError reports a statement that could not be parsed or does not fit the schema. Its
// message starts with line:col when the position is known.
type InvalidError struct {
	Message string
}

func (e *InvalidError) Error() string { return "kvnode: invalid statement: " + e.Message }

// fromStatus turns a gRPC error into the typed error its code and details describe. Errors it
// does not recognise are returned wrapped, so status.FromError and errors.Is still work on them.
func fromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("kvnode: %w", err)
	}
	msg := st.Message()
	for _, d := range st.Details() {
		if d, ok := d.(*kvnodepb.FailureDetail); ok {
			return &FailureError{
				Op: opFromProto(d.GetOp()), Consistency: consistencyFromProto(d.GetConsistency()),
				Received: int(d.GetReceived()), Required: int(d.GetRequired()),
				Failures: int(d.GetFailures()), Rejected: int(d.GetRejected()),
				Reason: failureReasonFromProto(d.GetReason()), Message: msg, st: st,
			}
		}
	}
	switch st.Code() {
	case codes.ResourceExhausted:
		var (
			rl    *kvnodepb.RateLimitDetail
			retry time.Duration
		)
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *kvnodepb.RateLimitDetail:
				rl = d
			case *errdetails.RetryInfo:
				retry = d.GetRetryDelay().AsDuration()
			}
		}
		if rl != nil {
			by := RejectedByReplicas
			if rl.GetRejectedBy() == kvnodepb.RateLimitDetail_COORDINATOR {
				by = RejectedByCoordinator
			}
			return &RateLimitError{
				Keyspace: rl.GetKeyspace(), Table: rl.GetTable(), Op: opFromProto(rl.GetOp()),
				RejectedBy: by, Limit: rl.GetLimit(), RetryAfter: retry, Message: msg,
				Count: rl.GetCount(), MayBeApplied: rl.GetMayBeApplied(),
				Scope: scopeFromProto(rl.GetScope()), ScopeName: rl.GetScopeName(),
			}
		}
		for _, d := range st.Details() {
			if d, ok := d.(*errdetails.ErrorInfo); ok && d.GetReason() == "OVERLOADED" {
				return &OverloadedError{Message: msg, RetryAfter: retry}
			}
		}
		// Without a rate-limit detail: a message over a size limit, the node's or gRPC's.
		return fmt.Errorf("kvnode: too large: %w", err)
	case codes.Unavailable:
		for _, d := range st.Details() {
			if d, ok := d.(*kvnodepb.UnavailableDetail); ok {
				return &UnavailableError{
					Consistency: consistencyFromProto(d.GetConsistency()),
					Live:        int(d.GetLive()), Required: int(d.GetRequired()), Message: msg,
				}
			}
		}
	case codes.DeadlineExceeded:
		for _, d := range st.Details() {
			if d, ok := d.(*kvnodepb.TimeoutDetail); ok {
				return &TimeoutError{
					Op: opFromProto(d.GetOp()), Consistency: consistencyFromProto(d.GetConsistency()),
					Received: int(d.GetReceived()), Required: int(d.GetRequired()), Message: msg,
				}
			}
		}
	case codes.InvalidArgument:
		return &InvalidError{Message: msg}
	case codes.PermissionDenied:
		return &UnauthorizedError{Message: msg, st: st}
	case codes.Unauthenticated:
		return &AuthenticationError{Message: msg, st: st}
	}
	return fmt.Errorf("kvnode: %w", err)
}

func failureReasonFromProto(r kvnodepb.FailureDetail_Reason) FailureReason {
	switch r {
	case kvnodepb.FailureDetail_BAD_REQUEST:
		return FailureBadRequest
	case kvnodepb.FailureDetail_TOO_MANY_TOMBSTONES:
		return FailureTooManyTombstones
	}
	return FailureReplicas
}

// scopeFromProto returns the client's name of a rejecting scope (an unknown one, from a newer
// server, as its enum name).
func scopeFromProto(s kvnodepb.RateLimitDetail_Scope) Scope {
	switch s {
	case kvnodepb.RateLimitDetail_SCOPE_PARTITION:
		return ScopePartition
	case kvnodepb.RateLimitDetail_SCOPE_SERVICE_LEVEL:
		return ScopeServiceLevel
	case kvnodepb.RateLimitDetail_SCOPE_KEYSPACE:
		return ScopeKeyspace
	}
	return Scope(s.String())
}
