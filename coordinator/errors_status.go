package coordinator

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// InvalidError reports a statement that cannot be executed: a syntax error, or a statement that
// does not fit the schema (unknown keyspace, table or column, a value of the wrong type, a
// WHERE clause of an unsupported shape, ...). Retrying it cannot succeed.
type InvalidError struct {
	// Pos is where in the statement the problem is, when known and not already part of Err's
	// message (syntax errors carry their own positions).
	Pos cql.Pos
	Err error
}

// Error reads "line:col: what is wrong" when the position is known.
func (e *InvalidError) Error() string {
	if e.Pos.IsValid() {
		return e.Pos.String() + ": " + e.Err.Error()
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error, e.g. a cql.ErrorList or one wrapping schema.ErrUnknownTable.
func (e *InvalidError) Unwrap() error { return e.Err }

// invalid wraps err, a schema error about stmt, as an *InvalidError. Unknown and existing
// keyspaces and tables are positioned at the name the statement gives them.
func invalid(stmt cql.Statement, err error) error {
	e := &InvalidError{Err: err}
	if errors.Is(err, schema.ErrUnknownKeyspace) || errors.Is(err, schema.ErrUnknownTable) || errors.Is(err, schema.ErrExists) {
		e.Pos = namePos(stmt)
	}
	return e
}

// namePos returns the position of the keyspace or table name stmt operates on.
func namePos(stmt cql.Statement) cql.Pos {
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return st.Name.Pos()
	case *cql.DropKeyspaceStmt:
		return st.Name.Pos()
	case *cql.UseStmt:
		return st.Keyspace.Pos()
	case *cql.CreateTableStmt:
		return st.Table.Pos()
	case *cql.AlterTableStmt:
		return st.Table.Pos()
	case *cql.DropTableStmt:
		return st.Table.Pos()
	case *cql.InsertStmt:
		return st.Table.Pos()
	case *cql.UpdateStmt:
		return st.Table.Pos()
	case *cql.DeleteStmt:
		return st.Table.Pos()
	case *cql.SelectStmt:
		return st.Table.Pos()
	case *cql.DescribeStmt:
		if st.Kind == cql.DescribeTable {
			return st.Table.Pos()
		}
		if st.Keyspace.Name != "" {
			return st.Keyspace.Pos()
		}
	}
	return stmt.Pos()
}

// ReplicaError is a replica's STATUS_ERROR answer.
type ReplicaError struct {
	Replica NodeID
	Code    replicapb.Error_Code
	Message string
}

// Error reads "replica n2: BAD_REQUEST: message".
func (e *ReplicaError) Error() string {
	return fmt.Sprintf("replica %s: %v: %s", e.Replica, e.Code, e.Message)
}

// transportError wraps the error of a replica call that got no answer.
func transportError(to NodeID, err error) error {
	return fmt.Errorf("replica %s unreachable: %w", to, err)
}

// GRPCStatus returns RESOURCE_EXHAUSTED with a kvnodepb.RateLimitDetail and, when the retry
// hint is known, a google.rpc.RetryInfo.
func (e *RateLimitError) GRPCStatus() *status.Status {
	by := kvnodepb.RateLimitDetail_REPLICAS
	if e.RejectedBy == RejectedByCoordinator {
		by = kvnodepb.RateLimitDetail_COORDINATOR
	}
	d := &kvnodepb.RateLimitDetail{Keyspace: e.Keyspace, Table: e.Table, Op: opToProto(e.Op), RejectedBy: by, Limit: e.Limit}
	if e.RetryAfter > 0 {
		return withDetails(codes.ResourceExhausted, e.Error(), d, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)})
	}
	return withDetails(codes.ResourceExhausted, e.Error(), d)
}

// GRPCStatus returns UNAVAILABLE with a kvnodepb.UnavailableDetail.
func (e *UnavailableError) GRPCStatus() *status.Status {
	return withDetails(codes.Unavailable, e.Error(), &kvnodepb.UnavailableDetail{
		Consistency: consistencyToProto(e.Consistency), Live: uint32(max(e.Live, 0)), Required: uint32(max(e.Required, 0)),
	})
}

// GRPCStatus returns DEADLINE_EXCEEDED with a kvnodepb.TimeoutDetail.
func (e *TimeoutError) GRPCStatus() *status.Status {
	return withDetails(codes.DeadlineExceeded, e.Error(), &kvnodepb.TimeoutDetail{
		Op: opToProto(e.Op), Consistency: consistencyToProto(e.Consistency),
		Received: uint32(max(e.Received, 0)), Required: uint32(max(e.Required, 0)),
	})
}

// GRPCStatus returns UNAVAILABLE (the replicas failed or could not be reached, which may pass),
// INTERNAL when a replica rejected the request as malformed, or FAILED_PRECONDITION when a read
// scanned more tombstones than a replica's threshold (retrying fails the same way until the
// tombstones are gone).
func (e *FailureError) GRPCStatus() *status.Status {
	var re *ReplicaError
	if errors.As(e.Err, &re) {
		switch re.Code {
		case replicapb.Error_BAD_REQUEST:
			return status.New(codes.Internal, e.Error())
		case replicapb.Error_TOO_MANY_TOMBSTONES:
			return status.New(codes.FailedPrecondition, e.Error())
		}
	}
	return status.New(codes.Unavailable, e.Error())
}

// GRPCStatus returns INVALID_ARGUMENT.
func (e *InvalidError) GRPCStatus() *status.Status {
	return status.New(codes.InvalidArgument, e.Error())
}

// ErrorStatus returns the gRPC status for an error of Execute, as the client API documents it:
// RESOURCE_EXHAUSTED (rate limited, with kvnodepb.RateLimitDetail and google.rpc.RetryInfo),
// UNAVAILABLE (too few live replicas, with kvnodepb.UnavailableDetail; or replicas failed),
// DEADLINE_EXCEEDED (with kvnodepb.TimeoutDetail), INVALID_ARGUMENT, CANCELED for a canceled
// context, UNAVAILABLE after Close, INTERNAL for everything else. It returns nil for nil.
func ErrorStatus(err error) *status.Status {
	var gs interface{ GRPCStatus() *status.Status }
	switch {
	case err == nil:
		return nil
	case errors.As(err, &gs):
		return gs.GRPCStatus()
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, ErrClosed):
		return status.New(codes.Unavailable, err.Error())
	}
	return status.New(codes.Internal, err.Error())
}

// withDetails returns a status with details. Attaching them fails only for messages that
// cannot be marshaled, which these always can; the status is then returned without them.
func withDetails(code codes.Code, msg string, details ...protoadapt.MessageV1) *status.Status {
	st := status.New(code, msg)
	if ds, err := st.WithDetails(details...); err == nil {
		return ds
	}
	return st
}

func opToProto(op Op) kvnodepb.Op {
	switch op {
	case OpRead:
		return kvnodepb.Op_OP_READ
	case OpWrite:
		return kvnodepb.Op_OP_WRITE
	}
	return kvnodepb.Op_OP_UNSPECIFIED
}
