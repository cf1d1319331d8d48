package coordinator

import (
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/cql"
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

// ReplicaError is a replica's STATUS_ERROR answer.
type ReplicaError struct {
	Replica NodeID
	Code    ReplicaErrorCode
	Message string
}

// ReplicaErrorCode is what a replica said went wrong, in domain terms (the shell translates the
// internode protocol's codes at the edge).
type ReplicaErrorCode uint8

// The replica error codes; the values are those of the internode protocol.
const (
	// ReplicaErrorUnspecified: the replica gave no code.
	ReplicaErrorUnspecified ReplicaErrorCode = iota
	// ReplicaErrorBadRequest: the replica found the request malformed.
	ReplicaErrorBadRequest
	// ReplicaErrorUnknownTable: the table is not in the replica's schema.
	ReplicaErrorUnknownTable
	// ReplicaErrorInternal: the replica failed (storage, a bug).
	ReplicaErrorInternal
	// ReplicaErrorTooManyTombstones: a read scanned more tombstones than the replica's failure
	// threshold.
	ReplicaErrorTooManyTombstones
)

// String returns the code's protocol name: "BAD_REQUEST", "UNKNOWN_TABLE", "INTERNAL",
// "TOO_MANY_TOMBSTONES" or "CODE_UNSPECIFIED".
func (c ReplicaErrorCode) String() string {
	switch c {
	case ReplicaErrorUnspecified:
		return "CODE_UNSPECIFIED"
	case ReplicaErrorBadRequest:
		return "BAD_REQUEST"
	case ReplicaErrorUnknownTable:
		return "UNKNOWN_TABLE"
	case ReplicaErrorInternal:
		return "INTERNAL"
	case ReplicaErrorTooManyTombstones:
		return "TOO_MANY_TOMBSTONES"
	}
	return fmt.Sprintf("ReplicaErrorCode(%d)", uint8(c))
}

// Error reads "replica n2: BAD_REQUEST: message".
func (e *ReplicaError) Error() string {
	return fmt.Sprintf("replica %s: %v: %s", e.Replica, e.Code, e.Message)
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
		case ReplicaErrorBadRequest:
			return FailureBadRequest
		case ReplicaErrorTooManyTombstones:
			return FailureTooManyTombstones
		}
	}
	return FailureReplicas
}

// SchemaUnavailableError reports a schema change that could not be agreed: fewer than a majority
// of the cluster's members answered (DDL needs a majority, docs/architecture.md). Message says which members
// were down and, when a majority failed between the two phases, that the change may still take
// effect. Retrying may succeed once enough members are up.
type SchemaUnavailableError struct {
	Message string
}

func (e *SchemaUnavailableError) Error() string { return e.Message }
