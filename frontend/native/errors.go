package native

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/schema"
)

// errorMessage returns the ERROR answering err, an error of the executor or of the translation
// of req (docs/cql-protocol.md, "Errors"):
//
//   - *coordinator.RateLimitError: ScyllaDB's rate-limit error (0xF000, op_type and
//     rejected_by_coordinator) to a client that opted in to it in STARTUP, Config_error
//     (0x2300, which drivers do not retry) to one that did not; the message names the table,
//     the op, the limit, who rejected and the retry hint either way;
//   - *coordinator.UnavailableError: Unavailable with the level, required and alive;
//   - *coordinator.TimeoutError: Write_timeout (write type SIMPLE, BATCH or UNLOGGED_BATCH) or
//     Read_timeout (data_present when any replica answered);
//   - *coordinator.FailureError: Write_failure or Read_failure with the number of failures;
//   - *coordinator.InvalidError: Syntax_error for a parse error, Already_exists (with the
//     keyspace and table) for a keyspace or table that exists, Invalid otherwise;
//   - *admission.OverloadedError (the node's admission control has no room): Overloaded, with
//     the bounds reached and a retry hint;
//   - *auth.UnauthorizedError (the role lacks a permission): Unauthorized (0x2100);
//   - *coordinator.SchemaUnavailableError, coordinator.ErrClosed and the connection's end
//     (context.Canceled): Overloaded, which drivers retry on another node;
//   - anything else: Server_error with the error's message.
func (s *Server) errorMessage(c *conn, err error, req request) *cqlwire.Error {
	switch e := err.(type) {
	case *admission.OverloadedError:
		return s.overloaded(e) // the flood's common case: no reflection, no allocation
	case *coordinator.RateLimitError:
		return rateLimitAnswer(c, e) // a hot partition's: no reflection, no errors.As targets
	}
	return s.errorAnswer(c, err, req)
}

// rateLimitAnswer returns the ERROR answering rl: ScyllaDB's rate-limit error to a client that
// opted in to it, Config_error to one that did not.
func rateLimitAnswer(c *conn, rl *coordinator.RateLimitError) *cqlwire.Error {
	f := newRateLimitFrame(c, rl)
	return &cqlwire.Error{Code: f.code, Message: rl.Error(), RateLimitOp: f.op, RejectedByCoordinator: f.by}
}

// rateLimitFrame is the ERROR answering a rate-limit rejection on the reader's fast path, as
// rateLimitAnswer's *cqlwire.Error encodes it, byte for byte: its message is appended from
// the rejection straight into the frame being written, with no string and no cqlwire.Error
// made for it (a hot partition's rejections are most of what a node under one answers).
type rateLimitFrame struct {
	rl   *coordinator.RateLimitError
	code cqlwire.ErrorCode
	op   cqlwire.RateLimitOp
	by   bool // rejected by the coordinator
}

// newRateLimitFrame returns the answer to rl on c: ScyllaDB's rate-limit error to a client that
// opted in to it, Config_error to one that did not (as rateLimitAnswer).
func newRateLimitFrame(c *conn, rl *coordinator.RateLimitError) *rateLimitFrame {
	f := &rateLimitFrame{rl: rl, code: cqlwire.ErrConfig}
	if c.rateLimit.Load() {
		f.code = cqlwire.ErrRateLimit
		f.op = cqlwire.RateLimitRead
		if rl.Op == schema.OpWrite {
			f.op = cqlwire.RateLimitWrite
		}
		f.by = rl.RejectedBy == coordinator.RejectedByCoordinator
	}
	return f
}

func (*rateLimitFrame) Opcode() cqlwire.Opcode { return cqlwire.OpError }

// AppendBody appends [int code][string message] and, for ErrRateLimit, op_type and
// rejected_by_coordinator.
func (f *rateLimitFrame) AppendBody(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(f.code))
	at := len(dst)
	dst = append(dst, 0, 0) // the message's length, once known
	dst = f.rl.AppendMessage(dst)
	n := len(dst) - at - 2
	if n > math.MaxUint16 { // never, for names within the schema's bounds; cut as a [string] must be
		dst, n = dst[:at+2+math.MaxUint16], math.MaxUint16
	}
	binary.BigEndian.PutUint16(dst[at:], uint16(n))
	if f.code == cqlwire.ErrRateLimit {
		dst = append(dst, byte(f.op), 0)
		if f.by {
			dst[len(dst)-1] = 1
		}
	}
	return dst
}

// errorAnswer is errorMessage for the other errors: the node's admission control's refusal,
// which the domain does not know, then the domain's errors by their coordinator.Code, each
// answered with the fields of the error itself; the connection's end, which the core does not
// know either; anything else is a server error.
func (s *Server) errorAnswer(c *conn, err error, req request) *cqlwire.Error {
	if oe, ok := errors.AsType[*admission.OverloadedError](err); ok {
		return s.overloaded(oe)
	}
	cl := func(c coordinator.Consistency) cqlwire.Consistency { return wireConsistency(c, req.consistency) }
	switch code := coordinator.Code(err); code {
	case coordinator.CodeRateLimited:
		rl, _ := errors.AsType[*coordinator.RateLimitError](err)
		return rateLimitAnswer(c, rl)
	case coordinator.CodeUnavailable:
		un, _ := errors.AsType[*coordinator.UnavailableError](err)
		return &cqlwire.Error{Code: cqlwire.ErrUnavailable, Message: un.Error(),
			Consistency: cl(un.Consistency), BlockFor: count(un.Required), Received: count(un.Live)}
	case coordinator.CodeReadTimeout, coordinator.CodeWriteTimeout:
		to, _ := errors.AsType[*coordinator.TimeoutError](err)
		m := &cqlwire.Error{Code: cqlwire.ErrReadTimeout, Message: to.Error(),
			Consistency: cl(to.Consistency), Received: count(to.Received), BlockFor: count(to.Required)}
		if code == coordinator.CodeWriteTimeout {
			m.Code, m.WriteType = cqlwire.ErrWriteTimeout, writeType(req, to.BatchLog)
			switch {
			case to.CAS:
				m.WriteType = "CAS"
			case to.Counter:
				m.WriteType = "COUNTER"
			}
		} else {
			m.DataPresent = to.Received > 0
		}
		return m
	case coordinator.CodeReadFailure, coordinator.CodeWriteFailure:
		fe, _ := errors.AsType[*coordinator.FailureError](err)
		m := &cqlwire.Error{Code: cqlwire.ErrReadFailure, Message: fe.Error(),
			Consistency: cl(fe.Consistency), Received: count(fe.Received), BlockFor: count(fe.Required),
			NumFailures: count(fe.Failures + fe.Rejected)}
		if code == coordinator.CodeWriteFailure {
			m.Code, m.WriteType = cqlwire.ErrWriteFailure, writeType(req, fe.BatchLog)
		} else {
			m.DataPresent = fe.Received > 0
		}
		return m
	case coordinator.CodeUnauthorized:
		ua, _ := errors.AsType[*auth.UnauthorizedError](err)
		return &cqlwire.Error{Code: cqlwire.ErrUnauthorized, Message: ua.Error()}
	case coordinator.CodeSyntax:
		inv, _ := errors.AsType[*coordinator.InvalidError](err)
		return &cqlwire.Error{Code: cqlwire.ErrSyntax, Message: inv.Error()}
	case coordinator.CodeAlreadyExists:
		inv, _ := errors.AsType[*coordinator.InvalidError](err)
		ex, _ := errors.AsType[*schema.ExistsError](err)
		return &cqlwire.Error{Code: cqlwire.ErrAlreadyExists, Message: inv.Error(), Keyspace: ex.Keyspace, Table: ex.Table}
	case coordinator.CodeInvalid:
		inv, _ := errors.AsType[*coordinator.InvalidError](err)
		return &cqlwire.Error{Code: cqlwire.ErrInvalid, Message: inv.Error()}
	case coordinator.CodeSchemaUnavailable:
		su, _ := errors.AsType[*coordinator.SchemaUnavailableError](err)
		return &cqlwire.Error{Code: cqlwire.ErrOverloaded, Message: su.Error()}
	case coordinator.CodeClosed:
		return &cqlwire.Error{Code: cqlwire.ErrOverloaded, Message: "this node is shutting down; try another node"}
	case coordinator.CodeBadCredentials:
		// A failed login is answered by the login (auth.go), never by a statement: should a
		// statement return one, it is a bug, answered as a server error below.
	}
	if errors.Is(err, context.Canceled) {
		return &cqlwire.Error{Code: cqlwire.ErrOverloaded, Message: "the request was canceled: the node or the connection is closing"}
	}
	return s.serverError(err)
}

// overloaded returns the Overloaded ERROR answering oe. The admission controller refuses with a
// few *OverloadedErrors it shares, so their answers are made once and shared too (answers are
// read-only once made): under a flood most requests are refused, and each refusal then costs
// no formatting and no allocation.
func (s *Server) overloaded(oe *admission.OverloadedError) *cqlwire.Error {
	if m, ok := s.overloadedAnswers.Load(oe); ok {
		return m.(*cqlwire.Error)
	}
	m := &cqlwire.Error{Code: cqlwire.ErrOverloaded, Message: oe.Error()}
	if s.overloadedCount.Add(1) > maxOverloadedAnswers {
		return m // not one of the controller's shared refusals: do not keep it
	}
	m2, _ := s.overloadedAnswers.LoadOrStore(oe, m)
	return m2.(*cqlwire.Error)
}

// maxOverloadedAnswers bounds the Overloaded answers overloaded keeps: the controller shares
// three refusals; more means the errors are made per request, and keeping them would leak.
const maxOverloadedAnswers = 16

// serverError answers an unexpected failure: its message only, and the details in the log.
func (s *Server) serverError(err error) *cqlwire.Error {
	s.log.Error("native: request failed unexpectedly", "err", err)
	return &cqlwire.Error{Code: cqlwire.ErrServer, Message: fmt.Sprintf("internal error: %v", err)}
}

// writeType is the write type of a write timeout or failure; batchLog when it was a logged
// batch's batchlog write (drivers retry BATCH_LOG timeouts: nothing was applied).
func writeType(req request, batchLog bool) string {
	switch {
	case batchLog:
		return "BATCH_LOG"
	case req.batch == nil:
		return "SIMPLE"
	case *req.batch == cqlwire.BatchUnlogged:
		return "UNLOGGED_BATCH"
	}
	return "BATCH"
}

// wireConsistency returns the protocol level of a domain level: the one the client asked for
// when it maps to c.
func wireConsistency(c coordinator.Consistency, asked cqlwire.Consistency) cqlwire.Consistency {
	if d, err := consistency(asked); err == nil && d == c {
		return asked
	}
	for _, w := range []cqlwire.Consistency{cqlwire.One, cqlwire.Two, cqlwire.Three, cqlwire.Quorum, cqlwire.All, cqlwire.LocalOne, cqlwire.LocalQuorum, cqlwire.EachQuorum, cqlwire.Serial, cqlwire.LocalSerial} {
		if d, _ := consistency(w); d == c {
			return w
		}
	}
	return cqlwire.One
}

// count converts a non-negative count for the wire.
func count(n int) int32 { return int32(max(n, 0)) }

// errorCodeName names a code for the errors metric.
func errorCodeName(c cqlwire.ErrorCode) string {
	switch c {
	case cqlwire.ErrServer:
		return "server_error"
	case cqlwire.ErrProtocol:
		return "protocol_error"
	case cqlwire.ErrUnavailable:
		return "unavailable"
	case cqlwire.ErrOverloaded:
		return "overloaded"
	case cqlwire.ErrWriteTimeout:
		return "write_timeout"
	case cqlwire.ErrReadTimeout:
		return "read_timeout"
	case cqlwire.ErrReadFailure:
		return "read_failure"
	case cqlwire.ErrWriteFailure:
		return "write_failure"
	case cqlwire.ErrSyntax:
		return "syntax_error"
	case cqlwire.ErrInvalid:
		return "invalid"
	case cqlwire.ErrConfig:
		return "config_error"
	case cqlwire.ErrAlreadyExists:
		return "already_exists"
	case cqlwire.ErrUnprepared:
		return "unprepared"
	case cqlwire.ErrRateLimit:
		return "rate_limit"
	case cqlwire.ErrUnauthorized:
		return "unauthorized"
	case cqlwire.ErrBadCredentials:
		return "bad_credentials"
	}
	return fmt.Sprintf("0x%04x", int32(c))
}
