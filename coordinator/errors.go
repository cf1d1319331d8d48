package coordinator

import (
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/cql"
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

// FailureReason classifies a FailureError for front ends: whether retrying may help.
type FailureReason uint8

// The failure reasons.
const (
	// FailureReplicas: replicas failed or could not be reached; this may pass.
	FailureReplicas FailureReason = iota + 1
	// FailureBadRequest: a replica rejected the request as malformed (a bug, not the client's).
	FailureBadRequest
	// FailureTooManyTombstones: a read scanned more tombstones than a replica's failure
	// threshold; retrying fails the same way until the tombstones are gone.
	FailureTooManyTombstones
)

// String returns "replicas", "bad_request" or "too_many_tombstones".
func (r FailureReason) String() string {
	switch r {
	case FailureReplicas:
		return "replicas"
	case FailureBadRequest:
		return "bad_request"
	case FailureTooManyTombstones:
		return "too_many_tombstones"
	}
	return fmt.Sprintf("FailureReason(%d)", uint8(r))
}

// Reason classifies the failure by its first replica error.
func (e *FailureError) Reason() FailureReason {
	var re *ReplicaError
	if errors.As(e.Err, &re) {
		switch re.Code {
		case replicapb.Error_BAD_REQUEST:
			return FailureBadRequest
		case replicapb.Error_TOO_MANY_TOMBSTONES:
			return FailureTooManyTombstones
		}
	}
	return FailureReplicas
}
