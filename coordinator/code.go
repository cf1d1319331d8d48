package coordinator

import (
	"fmt"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// ErrClosed is the error of every call to an executor (coordinator/shell's Executor) after it
// was closed: the node is shutting down. It is a constant, as the core keeps no package-level
// variables; compare with errors.Is.
const ErrClosed = sentinel("coordinator: executor closed")

// sentinel is an error that can be a constant.
type sentinel string

func (e sentinel) Error() string { return string(e) }

// ErrorCode classifies an error of the domain API for the front ends: which of the domain's
// errors it is, whatever wraps it. Each front end maps a code to its wire form (a CQL error
// code, a gRPC status) and takes the fields it sends from the error itself (errors.AsType).
//
// Errors the domain does not define read as CodeUnknown, among them the context's errors (the
// core does not know package context) and a front end's own errors (admission control's
// refusals): front ends tell those apart themselves.
type ErrorCode uint8

// The error codes. When an error wraps several of the domain's errors, the one listed first
// here decides its code (the front ends' former errors.As ladders checked them in this order).
const (
	// CodeOK is the code of no error (nil).
	CodeOK ErrorCode = iota
	// CodeUnknown: none of the errors below; a front end answers it as a server error unless it
	// recognises it (the context's errors, its own).
	CodeUnknown
	// CodeRateLimited: a *RateLimitError, the limiter rejected the operation.
	CodeRateLimited
	// CodeUnavailable: an *UnavailableError, too few live replicas for the consistency level.
	CodeUnavailable
	// CodeReadTimeout and CodeWriteTimeout: a *TimeoutError of a read or of a write.
	CodeReadTimeout
	CodeWriteTimeout
	// CodeReadFailure and CodeWriteFailure: a *FailureError of a read or of a write
	// (FailureError.Reason says whether retrying may help).
	CodeReadFailure
	CodeWriteFailure
	// CodeUnauthorized: an *auth.UnauthorizedError, the role may not run the statement.
	CodeUnauthorized
	// CodeSyntax: an *InvalidError of a statement that does not parse (its chain holds a
	// cql.ErrorList that is not only refusals of unsupported CQL: cql.ErrorList.Unsupported).
	CodeSyntax
	// CodeAlreadyExists: an *InvalidError creating a keyspace or table that exists (its chain
	// holds a *schema.ExistsError, which names it).
	CodeAlreadyExists
	// CodeInvalid: any other *InvalidError; retrying cannot succeed.
	CodeInvalid
	// CodeBadCredentials: an *auth.AuthenticationError, a failed login.
	CodeBadCredentials
	// CodeSchemaUnavailable: a *SchemaUnavailableError, a schema change without a majority.
	CodeSchemaUnavailable
	// CodeClosed: ErrClosed, the executor is closed.
	CodeClosed
)

// String returns the code's name in snake case ("rate_limited", "write_timeout", ...).
func (c ErrorCode) String() string {
	switch c {
	case CodeOK:
		return "ok"
	case CodeUnknown:
		return "unknown"
	case CodeRateLimited:
		return "rate_limited"
	case CodeUnavailable:
		return "unavailable"
	case CodeReadTimeout:
		return "read_timeout"
	case CodeWriteTimeout:
		return "write_timeout"
	case CodeReadFailure:
		return "read_failure"
	case CodeWriteFailure:
		return "write_failure"
	case CodeUnauthorized:
		return "unauthorized"
	case CodeSyntax:
		return "syntax"
	case CodeAlreadyExists:
		return "already_exists"
	case CodeInvalid:
		return "invalid"
	case CodeBadCredentials:
		return "bad_credentials"
	case CodeSchemaUnavailable:
		return "schema_unavailable"
	case CodeClosed:
		return "closed"
	}
	return fmt.Sprintf("ErrorCode(%d)", uint8(c))
}

// Code returns the code of err: CodeOK for nil, the code of the first of the domain's errors
// in the order of the codes that err's tree holds (as errors.As and errors.Is find them:
// through Unwrap() error and Unwrap() []error, and Is methods for ErrClosed), CodeUnknown when
// it holds none. It walks the tree once, with a type switch per error: it neither reflects nor
// allocates.
func Code(err error) ErrorCode {
	if err == nil {
		return CodeOK
	}
	var f found
	f.walk(err)
	return f.code()
}

// found is what Code's walk found in an error's tree: each of the domain's errors, and the
// first timeout's and failure's op.
type found struct {
	rateLimited, unavailable, unauthorized, invalid, syntax, exists bool
	badCredentials, schemaUnavailable, closed                       bool
	timeout, failure                                                schema.Op // 0: none found
}

// walk visits err and the errors it wraps, depth first in errors.As's order.
func (f *found) walk(err error) {
	for err != nil {
		switch e := err.(type) {
		case *RateLimitError:
			f.rateLimited = true
		case *UnavailableError:
			f.unavailable = true
		case *TimeoutError:
			if f.timeout == 0 {
				f.timeout = opOrRead(e.Op)
			}
		case *FailureError:
			if f.failure == 0 {
				f.failure = opOrRead(e.Op)
			}
		case *auth.UnauthorizedError:
			f.unauthorized = true
		case *InvalidError:
			f.invalid = true
		case cql.ErrorList:
			// Valid CQL that kvnode does not execute is Invalid, not a syntax error.
			f.syntax = f.syntax || !e.Unsupported()
		case *schema.ExistsError:
			f.exists = true
		case *auth.AuthenticationError:
			f.badCredentials = true
		case *SchemaUnavailableError:
			f.schemaUnavailable = true
		}
		if err == ErrClosed {
			f.closed = true
		} else if is, ok := err.(interface{ Is(error) bool }); ok && is.Is(ErrClosed) {
			f.closed = true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				f.walk(e)
			}
			return
		default:
			return
		}
	}
}

// opOrRead is op, except that an op other than a write counts as a read, as front ends answer
// it.
func opOrRead(op schema.Op) schema.Op {
	if op == schema.OpWrite {
		return schema.OpWrite
	}
	return schema.OpRead
}

// code is the code of what was found, in the order of the codes.
func (f *found) code() ErrorCode {
	switch {
	case f.rateLimited:
		return CodeRateLimited
	case f.unavailable:
		return CodeUnavailable
	case f.timeout == schema.OpWrite:
		return CodeWriteTimeout
	case f.timeout != 0:
		return CodeReadTimeout
	case f.failure == schema.OpWrite:
		return CodeWriteFailure
	case f.failure != 0:
		return CodeReadFailure
	case f.unauthorized:
		return CodeUnauthorized
	case f.invalid && f.syntax:
		return CodeSyntax
	case f.invalid && f.exists:
		return CodeAlreadyExists
	case f.invalid:
		return CodeInvalid
	case f.badCredentials:
		return CodeBadCredentials
	case f.schemaUnavailable:
		return CodeSchemaUnavailable
	case f.closed:
		return CodeClosed
	}
	return CodeUnknown
}
