package coordinator

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// isClosed is an error that is ErrClosed by its Is method, as errors.Is accepts.
type isClosed struct{}

func (isClosed) Error() string        { return "closing" }
func (isClosed) Is(target error) bool { return target == ErrClosed }
func (isClosed) Unwrap() error        { return errors.New("cause") }

func TestCode(t *testing.T) {
	rl := &RateLimitError{Keyspace: "ks", Table: "t", Op: schema.OpWrite, RejectedBy: RejectedByReplicas, Limit: 5}
	un := &UnavailableError{Consistency: Quorum, Required: 2, Live: 1}
	readTimeout := &TimeoutError{Op: schema.OpRead, Consistency: Quorum, Required: 2}
	writeTimeout := &TimeoutError{Op: schema.OpWrite, Consistency: Quorum, Required: 2}
	readFailure := &FailureError{Op: schema.OpRead, Consistency: One, Required: 1, Failures: 1, Err: &ReplicaError{Replica: "n2", Code: ReplicaErrorInternal}}
	writeFailure := &FailureError{Op: schema.OpWrite, Consistency: One, Required: 1, Failures: 1, Err: errors.New("unreachable")}
	syntax := &InvalidError{Err: cql.ErrorList{{Msg: "expected FROM, found 'x'"}}}
	exists := &InvalidError{Err: &schema.ExistsError{Keyspace: "ks", Table: "t"}}
	invalid := &InvalidError{Err: fmt.Errorf("ks.t: %w", schema.ErrUnknownTable)}
	ua := &auth.UnauthorizedError{Role: "alice", Permission: auth.Modify, Resource: auth.TableResource("ks", "t")}
	ae := &auth.AuthenticationError{Username: "alice"}
	su := &SchemaUnavailableError{Message: "1 of 3 members answered"}
	for _, tt := range []struct {
		name string
		err  error
		want ErrorCode
	}{
		{"nil", nil, CodeOK},
		{"an unknown error", errors.New("disk on fire"), CodeUnknown},
		{"a replica error alone", &ReplicaError{Replica: "n1", Code: ReplicaErrorBadRequest}, CodeUnknown},
		{"a syntax error outside an InvalidError", cql.ErrorList{{Msg: "x"}}, CodeUnknown},
		{"ErrExists outside an InvalidError", &schema.ExistsError{Keyspace: "ks"}, CodeUnknown},

		{"a rate-limit error", rl, CodeRateLimited},
		{"an unavailable error", un, CodeUnavailable},
		{"a read timeout", readTimeout, CodeReadTimeout},
		{"a write timeout", writeTimeout, CodeWriteTimeout},
		{"a timeout without an op", &TimeoutError{}, CodeReadTimeout},
		{"a read failure", readFailure, CodeReadFailure},
		{"a write failure", writeFailure, CodeWriteFailure},
		{"an unauthorized error", ua, CodeUnauthorized},
		{"a syntax error", syntax, CodeSyntax},
		{"an existing table", exists, CodeAlreadyExists},
		{"an unknown table", invalid, CodeInvalid},
		{"a failed login", ae, CodeBadCredentials},
		{"a schema change without a majority", su, CodeSchemaUnavailable},
		{"ErrClosed", ErrClosed, CodeClosed},
		{"an error that Is ErrClosed", isClosed{}, CodeClosed},

		{"a wrapped rate-limit error", fmt.Errorf("execute: %w", rl), CodeRateLimited},
		{"a twice wrapped write timeout", fmt.Errorf("a: %w", fmt.Errorf("b: %w", writeTimeout)), CodeWriteTimeout},
		{"a wrapped syntax error", fmt.Errorf("prepare: %w", syntax), CodeSyntax},
		{"valid CQL refused as not supported", &InvalidError{Err: cql.ErrorList{{Msg: "materialized views are not supported", Unsupported: true}}}, CodeInvalid},
		{"a refusal and a syntax error", &InvalidError{Err: cql.ErrorList{{Msg: "x", Unsupported: true}, {Msg: "expected FROM"}}}, CodeSyntax},
		{"a wrapped ErrClosed", fmt.Errorf("execute: %w", ErrClosed), CodeClosed},
		{"an error joined with ErrClosed", errors.Join(errors.New("x"), ErrClosed), CodeClosed},
		{"an InvalidError wrapping an existing table", fmt.Errorf("batch: %w", exists), CodeAlreadyExists},

		// Several of the domain's errors in one tree: the one listed first among the codes.
		{"a rate limit joined with a timeout", errors.Join(writeTimeout, rl), CodeRateLimited},
		{"a failure wrapping a timeout", &FailureError{Op: schema.OpWrite, Err: readTimeout}, CodeReadTimeout},
		{"the first of two timeouts", errors.Join(readTimeout, writeTimeout), CodeReadTimeout},
		{"the first of two timeouts, the other way round", errors.Join(writeTimeout, readTimeout), CodeWriteTimeout},
		{"an unauthorized and an invalid error", errors.Join(invalid, ua), CodeUnauthorized},
		{"an invalid error and ErrClosed", errors.Join(ErrClosed, invalid), CodeInvalid},
		{"an invalid error wrapping a syntax error and an existing table", &InvalidError{Err: errors.Join(&schema.ExistsError{Keyspace: "ks"}, cql.ErrorList{{Msg: "x"}})}, CodeSyntax},
		{"a schema error and a failed login", errors.Join(su, ae), CodeBadCredentials},
	} {
		if got := Code(tt.err); got != tt.want {
			t.Errorf("Code(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
		if got, want := Code(tt.err), ladder(tt.err); got != want {
			t.Errorf("Code(%s: %v) = %v, but the errors.As ladder says %v", tt.name, tt.err, got, want)
		}
	}
}

// ladder is Code written as the front ends' errors.As and errors.Is ladders were: the reference
// Code's single walk must agree with.
func ladder(err error) ErrorCode {
	var (
		rl *RateLimitError
		un *UnavailableError
		to *TimeoutError
		fe *FailureError
		ua *auth.UnauthorizedError
		in *InvalidError
		sx cql.ErrorList
		ex *schema.ExistsError
		ae *auth.AuthenticationError
		su *SchemaUnavailableError
	)
	switch {
	case err == nil:
		return CodeOK
	case errors.As(err, &rl):
		return CodeRateLimited
	case errors.As(err, &un):
		return CodeUnavailable
	case errors.As(err, &to):
		if to.Op == schema.OpWrite {
			return CodeWriteTimeout
		}
		return CodeReadTimeout
	case errors.As(err, &fe):
		if fe.Op == schema.OpWrite {
			return CodeWriteFailure
		}
		return CodeReadFailure
	case errors.As(err, &ua):
		return CodeUnauthorized
	case errors.As(err, &in):
		switch {
		case errors.As(err, &sx) && !sx.Unsupported():
			return CodeSyntax
		case errors.As(err, &ex):
			return CodeAlreadyExists
		}
		return CodeInvalid
	case errors.As(err, &ae):
		return CodeBadCredentials
	case errors.As(err, &su):
		return CodeSchemaUnavailable
	case errors.Is(err, ErrClosed):
		return CodeClosed
	}
	return CodeUnknown
}

func TestCodeAllocatesNothing(t *testing.T) {
	err := error(fmt.Errorf("execute: %w", &InvalidError{Err: &schema.ExistsError{Keyspace: "ks"}}))
	if n := testing.AllocsPerRun(100, func() { _ = Code(err) }); n != 0 {
		t.Errorf("Code allocates %v times per call, want 0", n)
	}
}

func TestErrorCodeString(t *testing.T) {
	seen := map[string]ErrorCode{}
	for c := CodeOK; c <= CodeClosed; c++ {
		s := c.String()
		if prev, ok := seen[s]; ok {
			t.Errorf("codes %d and %d are both named %q", prev, c, s)
		}
		seen[s] = c
	}
	if got := (CodeClosed + 1).String(); got != fmt.Sprintf("ErrorCode(%d)", CodeClosed+1) {
		t.Errorf("an undefined code reads %q", got)
	}
	if ErrClosed.Error() != "coordinator: executor closed" {
		t.Errorf("ErrClosed reads %q, want the message clients have always seen", ErrClosed.Error())
	}
}
