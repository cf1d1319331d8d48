package native

import (
	"context"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
)

// Admitter is an Executor that also decides prepared writes early: its limiter looks at the
// partition key alone, before the statement's other values are decoded, so that a write to a
// hot partition is refused at the cost of reading its key. An Executor that implements it is
// asked first for every EXECUTE of a prepared statement with a partition key; any other runs
// every statement through Execute. Package node gives the coordinator's executor, whose
// AdmitPrepared is the decision.
type Admitter interface {
	// AdmitPrepared asks for an early decision on the prepared write p at level cl, key holding
	// the values bound to p.PKIndexes in partition key order (read in place: they are valid
	// only during the call). It returns nil, nil when no early decision applies (run the
	// statement with Execute); nil and the statement's error when the write is finished (a
	// rejection); or the admitted write, which the server runs with its values or abandons.
	AdmitPrepared(ctx context.Context, p *coordinator.Prepared, cl coordinator.Consistency, key [][]byte) (AdmittedWrite, error)
}

// AdmittedWrite is a prepared write that the executor's limiter admitted early (counted once,
// with its draw). The server runs it with Execute, at most once, or else Abandons it; Abandon
// after Execute does nothing.
type AdmittedWrite interface {
	// Prepared returns the prepared statement admitted.
	Prepared() *coordinator.Prepared
	// Execute runs the write with st's values (st.Prepared is the statement admitted).
	Execute(ctx context.Context, st coordinator.Statement) (coordinator.Result, error)
	// Abandon ends a write that will not be executed (the client went away, its frame was
	// malformed, admission control refused it), so that it is still counted once everywhere.
	Abandon()
}

// abandon abandons adm, when there is an admitted write.
func abandon(adm AdmittedWrite) {
	if adm != nil {
		adm.Abandon()
	}
}

// maxFastKey is the most partition key columns the reader's fast path reads in place.
const maxFastKey = 8

// admitExecute is the reader's fast path for an EXECUTE (h, body) on a started connection: it
// reads the prepared id, the consistency and the partition key's values in place, from the
// frame reader's buffer, and asks the executor's limiter for an early decision. A rejection (or
// any other final answer) is queued here and answered is true: no copy of the frame, no
// decoding of its other values, no goroutine. Otherwise the caller decodes and runs the frame
// as usual, with the admission (nil when no early decision applied). A frame malformed past
// the values it reads is rejected like a well-formed one when its partition is hot (its length
// prefix keeps the stream in step); otherwise it is decoded and refused as usual.
func (c *conn) admitExecute(h cqlwire.Header, body []byte) (answered bool, adm AdmittedWrite) {
	s := c.srv
	if s.admit == nil {
		return false, nil
	}
	head, ok := cqlwire.ScanExecute(h.Flags, body)
	if !ok {
		return false, nil
	}
	p, ok := s.prepared.get(head.ID)
	if !ok || len(p.PKIndexes) == 0 || len(p.PKIndexes) > maxFastKey {
		return false, nil
	}
	cl, err := consistency(head.Consistency)
	if err != nil {
		return false, nil
	}
	key := c.fastKey[:len(p.PKIndexes)]
	defer clear(key) // hold no reference into the frame reader's buffer
	for j, x := range p.PKIndexes {
		v, _, ok := head.Value(x)
		if !ok {
			return false, nil
		}
		key[j] = v
	}
	adm, err = s.admit.AdmitPrepared(c.ctx, p, cl, key)
	if err != nil {
		if rl, ok := err.(*coordinator.RateLimitError); ok {
			c.hold(h.Stream, newRateLimitFrame(c, rl)) // a hot partition's: written straight from rl
		} else {
			c.hold(h.Stream, s.errorMessage(c, err, request{consistency: head.Consistency}))
		}
		return true, nil
	}
	return false, adm
}
