package cqlsh

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
)

// ErrStatementFailed is what Run returns when a non-interactive run stopped at a statement that
// failed. The failure itself has already been printed to stderr, so a caller should exit with
// status 1 without printing anything more (test with errors.Is).
var ErrStatementFailed = errors.New("cql: stopped at the first failed statement")

// shellError is a mistake in a shell command (CONSISTENCY with an unknown level, ...).
type shellError struct{ msg string }

func (e *shellError) Error() string { return e.msg }

// describeError renders a failed statement as one line: the error's kind, then the message the
// server built for it (the shell adds none of its own to kvnode's typed errors):
//
//	InvalidRequest: 1:8: expected FROM, found 'FORM'
//	Unavailable: cannot achieve consistency level ALL: 2 replicas live, 3 required
//	Timeout: write timed out at QUORUM: 1 of 2 required acks received
//	Failure: write failed at QUORUM: 2 replicas failed, 1 of 2 required acks received: ...
//	RateLimited: rate limit exceeded for writes on ks.t (limit 50/s), rejected by coordinator; retry after 1.2s
//
// addr names the node for connection failures; timeout is the shell's own per-statement limit,
// named when it is what expired.
func describeError(err error, addr string, timeout time.Duration) string {
	var (
		rl  *client.RateLimitError
		un  *client.UnavailableError
		to  *client.TimeoutError
		fe  *client.FailureError
		inv *client.InvalidError
		sh  *shellError
		ua  *client.UnauthorizedError
		ae  *client.AuthenticationError
	)
	switch {
	case errors.As(err, &sh):
		return "ShellError: " + sh.msg
	case errors.As(err, &inv):
		return "InvalidRequest: " + inv.Message
	case errors.As(err, &ua):
		return "Unauthorized: " + ua.Message
	case errors.As(err, &ae):
		return "AuthenticationFailed: " + ae.Message
	case errors.As(err, &un):
		return "Unavailable: " + un.Message
	case errors.As(err, &to):
		return "Timeout: " + to.Message
	case errors.As(err, &fe):
		return "Failure: " + fe.Message
	case errors.As(err, &rl):
		return "RateLimited: " + rl.Message
	}
	// Errors without a kvnode detail: the shell's own deadline, Ctrl-C, a lost connection, a
	// server fault.
	if st := grpcStatus(err); st != nil {
		switch st.Code() {
		case codes.DeadlineExceeded:
			return fmt.Sprintf("Timeout: no answer from %s within %s; a write may still have been applied", addr, timeout)
		case codes.Canceled:
			return "Cancelled: statement interrupted; a write may still have been applied"
		case codes.Unavailable:
			return fmt.Sprintf("ConnectionError: %s: %s", addr, st.Message())
		case codes.Internal, codes.Unknown, codes.Unimplemented, codes.DataLoss:
			return fmt.Sprintf("ServerError: %s: %s", addr, st.Message())
		default:
			return fmt.Sprintf("Error: %s: %s", codeName(st.Code()), st.Message())
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("Timeout: no answer from %s within %s; a write may still have been applied", addr, timeout)
	case errors.Is(err, context.Canceled):
		return "Cancelled: statement interrupted; a write may still have been applied"
	}
	return "Error: " + strings.TrimPrefix(err.Error(), "kvnode: ")
}

// grpcStatus returns the gRPC status err carries, or nil. Unlike status.FromError it keeps the
// server's own message when the status is wrapped (the client wraps statuses it has no type for).
func grpcStatus(err error) *status.Status {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		return gs.GRPCStatus()
	}
	return nil
}

// codeName turns a gRPC code into words: "permission denied".
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}
