package native

import (
	"context"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/cqlwire"
)

// admitter is the early limiter decision of prepared writes, which the coordinator shell's
// *shell.Executor offers (see shell.Executor.AdmitPrepared). An executor without it runs every
// statement through Execute.
type admitter interface {
	AdmitPrepared(ctx context.Context, p *coordinator.Prepared, cl coordinator.Consistency, key [][]byte) (*shell.Admission, error)
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
func (c *conn) admitExecute(h cqlwire.Header, body []byte) (answered bool, adm *shell.Admission) {
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
		c.hold(h.Stream, s.errorMessage(c, err, request{consistency: head.Consistency}))
		return true, nil
	}
	return false, adm
}
