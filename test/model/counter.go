package model

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Counters are checked by bounds, not by a reference value: an increment whose outcome is
// unknown (a timeout, a failure) may or may not have been applied, and a counter has no
// timestamps to order versions by. With non-negative increments, writes and reads at levels
// with R + W > RF, a read of a counter lies between the sum of the increments acknowledged
// before it started and the sum of all increments started before it ended.

// CounterInc is one increment of a counter: when it started and ended, by how much, and
// whether it was acknowledged.
type CounterInc struct {
	Start, End time.Time
	By         int64
	Acked      bool
}

// CounterRead is one read of a counter: when it started and ended, and what it returned.
type CounterRead struct {
	Start, End time.Time
	Value      int64
}

// CheckCounterRead reports why r cannot be a read of a counter incremented by incs (all of
// them, in any order), or nil: its value must be at least the sum of the increments
// acknowledged before r started and at most the sum of those started before r ended.
func CheckCounterRead(incs []CounterInc, r CounterRead) error {
	var lo, hi int64
	for _, inc := range incs {
		if inc.By < 0 {
			return fmt.Errorf("increment by %d: the bounds need non-negative increments", inc.By)
		}
		if inc.Acked && inc.End.Before(r.Start) {
			lo += inc.By
		}
		if inc.Start.Before(r.End) {
			hi += inc.By
		}
	}
	if r.Value < lo || r.Value > hi {
		return fmt.Errorf("counter read %d, outside [%d, %d]: the increments acknowledged before the read started sum to %d, those started before it ended to %d", r.Value, lo, hi, lo, hi)
	}
	return nil
}

// checkCounters checks a SELECT of a counter table (Table.Counter) by the bounds rule: every
// counter of every row the read covers, returned or not (a row not returned reads as 0, as does
// a null counter), lies between the sum of the increments of it acknowledged at a level W with
// W + R > RF (every recorded operation of the partition ended before the read started: a
// worker runs them one at a time) and the sum of all increments that may have been applied. It
// also checks that the rows returned are rows of the range, once each, in clustering order, and
// were incremented at all.
func (m *Model) checkCounters(read *Op) (problems []string, determined bool) {
	t := read.Table
	ops := m.History(t, read.PK)
	rg := read.Range
	if read.Row != nil {
		rg = Range{Prefix: read.Row}
	}
	type bounds struct {
		lo, hi  []int64 // per regular column
		written bool
	}
	rows := map[string]*bounds{}
	var candidates [][]Val
	for _, ck := range t.allRows() {
		if !t.inRange(rg, ck) {
			continue
		}
		b := &bounds{lo: make([]int64, len(t.Regular)), hi: make([]int64, len(t.Regular))}
		for _, op := range ops {
			if op.Kind != Update || !rowEqual(op.Row, ck) {
				continue
			}
			b.written = true
			for _, cw := range op.Cells {
				by := int64(binary.BigEndian.Uint64(cw.Val.Enc))
				b.hi[cw.Col] += by
				if op.applied() == acked && definiteFor(op, read) {
					b.lo[cw.Col] += by
				}
			}
		}
		rows[valsKey(ck)] = b
		candidates = append(candidates, ck)
	}
	npk, nck := len(t.PK), len(t.CK)
	check := func(rowName string, b *bounds, vals []any) {
		for j, ci := range read.Cols {
			var v int64
			if vals != nil && vals[j] != nil {
				n, ok := vals[j].(int64)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s counter %s: value %#v (%T)", rowName, t.Regular[ci].Name, vals[j], vals[j]))
					continue
				}
				v = n
			}
			if v < b.lo[ci] || v > b.hi[ci] {
				problems = append(problems, fmt.Sprintf("%s has counter %s = %d, outside [%d, %d]: the increments acknowledged at levels a read at %v must see sum to %d, all increments that may have been applied to %d", rowName, t.Regular[ci].Name, v, b.lo[ci], b.hi[ci], read.CL, b.lo[ci], b.hi[ci]))
			}
		}
	}
	returned := map[string]bool{}
	var prev []Val
	for ri, row := range read.Outcome.Rows {
		if len(row) != npk+nck+len(read.Cols) {
			problems = append(problems, fmt.Sprintf("row %d has %d values, want %d", ri, len(row), npk+nck+len(read.Cols)))
			continue
		}
		keys := append(append([]Column{}, t.PK...), t.CK...)
		enc := make([][]byte, len(keys))
		bad := false
		for i, c := range keys {
			var err error
			if enc[i], err = encodeResult(c.Type, row[i]); err != nil || enc[i] == nil {
				problems = append(problems, fmt.Sprintf("row %d key column %s: %v (%v)", ri, c.Name, row[i], err))
				bad = true
			}
		}
		if bad {
			continue
		}
		ck, rowName, keyProblems := rowKey(t, read, enc, ri)
		problems = append(problems, keyProblems...)
		b := rows[valsKey(ck)]
		switch {
		case b == nil:
			problems = append(problems, rowName+": outside the rows the SELECT asked for")
			continue
		case !b.written:
			problems = append(problems, rowName+": a counter row nobody incremented")
			continue
		case returned[valsKey(ck)]:
			problems = append(problems, rowName+": returned twice")
			continue
		}
		returned[valsKey(ck)] = true
		if prev != nil && t.compareRows(prev, ck) >= 0 {
			problems = append(problems, fmt.Sprintf("%s comes after (%s): out of order", rowName, formatRow(t, prev)))
		}
		prev = ck
		check(rowName, b, row[npk+nck:])
	}
	determined = true
	for _, ck := range candidates {
		b := rows[valsKey(ck)]
		for _, ci := range read.Cols {
			determined = determined && b.lo[ci] == b.hi[ci]
		}
		if !returned[valsKey(ck)] {
			check(fmt.Sprintf("row (%s), not returned,", formatRow(t, ck)), b, nil)
		}
	}
	return problems, determined
}
