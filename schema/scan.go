package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/kvnode/kvnode/cql"
)

// TokenRange is the tokens a scan reads: those greater than Start and at most End. Start ==
// math.MinInt64 and End == math.MaxInt64 is the whole ring (no partition key has the token
// math.MinInt64). Empty is set when the restrictions select no token at all.
type TokenRange struct {
	Start, End int64
	Empty      bool
}

// FullRing is the TokenRange of a scan without token restrictions.
var FullRing = TokenRange{Start: math.MinInt64, End: math.MaxInt64}

// tokenVariable names the bind markers of token(...) relations, as Cassandra names them.
const tokenVariable = "partition key token"

// IsScan reports whether a SELECT's WHERE relations make it a scan: they restrict the partition
// key's token, or do not name one partition key (or a list of them) by = or IN on every partition
// key column. As Cassandra 4.1's PartitionKeySingleRestrictionSet.needFiltering, relations on some
// partition key columns only, or a slice of one (k > ?), read the whole ring and filter the
// partitions (with ALLOW FILTERING, scanFilter).
func IsScan(t *Table, rels []cql.Relation) bool {
	eq := make([]bool, len(t.PartitionKey))
	for _, r := range rels {
		if r.Token != nil {
			return true
		}
		if r.Multi() {
			continue
		}
		c, ok := t.Column(r.Column.Name)
		if !ok || c.Kind != PartitionKeyColumn {
			continue
		}
		switch r.Op {
		case cql.EQ, cql.IN:
			eq[c.Index] = true
		case cql.LT, cql.LE, cql.GT, cql.GE:
			return true
		}
	}
	return slices.Contains(eq, false)
}

// onToken reports whether rels restrict the partition key's token.
func onToken(rels []cql.Relation) bool {
	return slices.ContainsFunc(rels, func(r cql.Relation) bool { return r.Token != nil })
}

// scanWhere interprets the WHERE clause of a SELECT that scans table t (IsScan): token(...)
// relations on the whole partition key, in key order, give the tokens read; relations on other
// columns filter the rows read (scanfilter.go), with ALLOW FILTERING only.
func scanWhere(t *Table, st *cql.SelectStmt, b *binder) (TokenRange, []RowFilter, error) {
	tr := FullRing
	var lowerSet, upperSet bool
	var filters []RowFilter
	bounds := scanBounds{}
	token := onToken(st.Where)
	for _, r := range st.Where {
		if r.Token == nil {
			f, err := scanFilter(t, r, st.AllowFiltering, token, b)
			if err == nil {
				err = bounds.add(f)
			}
			if err != nil {
				return tr, nil, err
			}
			filters = append(filters, f)
			continue
		}
		if err := tokenColumns(t, r.Token); err != nil {
			return tr, nil, err
		}
		v, ok, err := b.term(&Column{Name: tokenVariable, Type: TypeBigInt, Kind: PartitionKeyColumn}, r.Value)
		if err != nil {
			return tr, nil, err
		}
		var tok int64
		if ok {
			if len(v) != 8 {
				return tr, nil, fmt.Errorf("token(%s): a token is a bigint, got %d bytes", columnList(t.PartitionKey), len(v))
			}
			tok = int64(binary.BigEndian.Uint64(v))
		}
		lower, upper := r.Op == cql.GT || r.Op == cql.GE || r.Op == cql.EQ, r.Op == cql.LT || r.Op == cql.LE || r.Op == cql.EQ
		if lower && lowerSet || upper && upperSet {
			return tr, nil, fmt.Errorf("more than one restriction was found for the %s bound of token(%s)", map[bool]string{true: "start", false: "end"}[lower], columnList(t.PartitionKey))
		}
		lowerSet, upperSet = lowerSet || lower, upperSet || upper
		if !ok { // only checking, or an unset marker (Cassandra refuses it too)
			if !b.check {
				return tr, nil, fmt.Errorf("invalid unset value for the %s", tokenVariable)
			}
			continue
		}
		switch r.Op {
		case cql.GT:
			tr.Start = tok
		case cql.GE, cql.EQ:
			if tok == math.MinInt64 {
				tr.Start = math.MinInt64 // no key has it: > and >= agree
			} else {
				tr.Start = tok - 1
			}
		}
		switch r.Op {
		case cql.LE, cql.EQ:
			tr.End = tok
		case cql.LT:
			if tok == math.MinInt64 {
				tr.Empty = true
			} else {
				tr.End = tok - 1
			}
		}
	}
	if tr.Start >= tr.End {
		tr.Empty = true // Cassandra returns nothing for a start after the end, rather than wrapping
	}
	if len(st.OrderBy) > 0 {
		return tr, nil, errors.New("ORDER BY is only supported when the partition key is restricted by an EQ or an IN")
	}
	return tr, filters, nil
}

// tokenColumns checks the arguments of token(...) in a relation: t's partition key columns, all of
// them, in key order.
func tokenColumns(t *Table, cols []cql.Ident) error {
	if len(cols) != len(t.PartitionKey) {
		return fmt.Errorf("the token() function must be applied to all partition key components or none of them: token(%s)", columnList(t.PartitionKey))
	}
	for i, x := range cols {
		if x.Name != t.PartitionKey[i].Name {
			if _, err := column(t, x); err != nil {
				return err
			}
			return fmt.Errorf("the token function arguments must be in the partition key order: %s", columnList(t.PartitionKey))
		}
	}
	return nil
}
