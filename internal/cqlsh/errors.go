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

// describeError renders a failed statement as one line starting with the error's kind:
//
//	InvalidRequest: 1:8: expected FROM, found 'FORM'
//	Unavailable: cannot achieve consistency level ALL (2 live replicas, 3 required)
//	Timeout: write at QUORUM timed out (1 of 2 acks)
//	RateLimited: writes on ks.t over 50/s per partition, rejected by coordinator; retry after 1.2s
//
// addr names the node for connection failures; timeout is the shell's own per-statement limit,
// named when it is what expired.
func describeError(err error, addr string, timeout time.Duration) string {
	var (
		rl  *client.RateLimitError
		un  *client.UnavailableError
		to  *client.TimeoutError
		inv *client.InvalidError
		sh  *shellError
	)
	switch {
	case errors.As(err, &sh):
		return "ShellError: " + sh.msg
	case errors.As(err, &inv):
		return "InvalidRequest: " + inv.Message
	case errors.As(err, &un):
		return fmt.Sprintf("Unavailable: cannot achieve consistency level %s (%d live %s, %d required)",
			un.Consistency, un.Live, plural(un.Live, "replica", "replicas"), un.Required)
	case errors.As(err, &to):
		what := "acks"
		if to.Op == client.OpRead {
			what = "responses"
		}
		op := string(to.Op)
		if op == "" {
			op = "operation"
		}
		return fmt.Sprintf("Timeout: %s at %s timed out (%d of %d %s)", op, to.Consistency, to.Received, to.Required, what)
	case errors.As(err, &rl):
		return describeRateLimit(rl)
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

func describeRateLimit(rl *client.RateLimitError) string {
	var b strings.Builder
	b.WriteString("RateLimited: ")
	switch rl.Op {
	case client.OpRead:
		b.WriteString("reads")
	case client.OpWrite:
		b.WriteString("writes")
	default:
		b.WriteString("operations")
	}
	b.WriteString(" on ")
	if rl.Keyspace != "" {
		b.WriteString(rl.Keyspace + ".")
	}
	b.WriteString(rl.Table)
	fmt.Fprintf(&b, " over %d/s per partition", rl.Limit)
	if rl.RejectedBy != "" {
		fmt.Fprintf(&b, ", rejected by %s", rl.RejectedBy)
	}
	if rl.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", roundRetry(rl.RetryAfter))
	}
	return b.String()
}

// roundRetry keeps a retry hint readable: tenths of a second above one second, milliseconds
// below, never rounding a positive hint down to zero.
func roundRetry(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
