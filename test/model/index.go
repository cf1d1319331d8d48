package model

import (
	"fmt"
	"slices"
)

// Secondary index queries are checked against a last-write-wins model of the indexed column,
// row by row. Every write carries its own USING TIMESTAMP, unique in the history and drawn at
// random, so last-write-wins order differs from history order and writes land out of order
// (leaving the stale index entries the replicas must skip). At a read, a row's indexed value is
// definite when the acknowledged write with the greatest timestamp decides it and no write of
// unknown outcome has a greater one; otherwise each such write's value is possible. A query
// WHERE v = x must return every row whose value is definitely x, no row that cannot be x, each
// row once, in token order (then clustering order).

// IndexWrite is one write of a row's indexed column: its timestamp, the value it leaves ("" for
// a deletion, of the row or the cell), and whether it was acknowledged at a level the reads
// overlap (R + W > RF).
type IndexWrite struct {
	TS    int64
	Value string
	Acked bool
}

// IndexRow names a row: its partition key, the partition's token and its clustering key.
type IndexRow struct {
	K, C  int32
	Token int64
}

// possibleValues returns what a read may see of a row written by ws: the definite value (the
// greatest acknowledged write's, "" without one) first, then the values of writes of unknown
// outcome that win over it.
func possibleValues(ws []IndexWrite) []string {
	var best *IndexWrite
	for i := range ws {
		if ws[i].Acked && (best == nil || ws[i].TS > best.TS) {
			best = &ws[i]
		}
	}
	out := []string{""}
	if best != nil {
		out[0] = best.Value
	}
	for _, w := range ws {
		if !w.Acked && (best == nil || w.TS > best.TS) && !slices.Contains(out, w.Value) {
			out = append(out, w.Value)
		}
	}
	return out
}

// CheckIndexRead reports why got cannot be the answer of WHERE v = x over rows written by
// writes (all the writes started before the read ended), or nil.
func CheckIndexRead(writes map[IndexRow][]IndexWrite, x string, got []IndexRow) error {
	seen := make(map[IndexRow]bool, len(got))
	for i, r := range got {
		if seen[r] {
			return fmt.Errorf("row %d/%d returned twice", r.K, r.C)
		}
		seen[r] = true
		if i > 0 {
			p := got[i-1]
			if p.Token > r.Token || p.Token == r.Token && p.K == r.K && p.C > r.C {
				return fmt.Errorf("rows out of token order: %d/%d (token %d) after %d/%d (token %d)", r.K, r.C, r.Token, p.K, p.C, p.Token)
			}
		}
		if !slices.Contains(possibleValues(writes[r]), x) {
			return fmt.Errorf("row %d/%d returned for v = %q, which it cannot hold (possible: %q)", r.K, r.C, x, possibleValues(writes[r]))
		}
	}
	for r, ws := range writes {
		if pv := possibleValues(ws); len(pv) == 1 && pv[0] == x && !seen[r] {
			return fmt.Errorf("row %d/%d missing: it holds v = %q for certain", r.K, r.C, x)
		}
	}
	return nil
}
