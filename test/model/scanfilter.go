package model

import (
	"math/rand/v2"
	"strings"
)

// A scan with a clustering range (Op.Range of a Scan) filters every partition's rows to the
// range with ALLOW FILTERING: the model checks each partition's rows as a SELECT of that range
// of it (checkScan), so a filtered scan at QUORUM after an acknowledged QUORUM write sees it
// when it matches, and returns nothing outside the range.
//
// A scan with a KeyFilter restricts one partition key column (=, IN, > or <=; on a composite
// key, part of the partition key) with ALLOW FILTERING: the partitions it matches are checked
// as above, and the others must return nothing.

// KeyFilter is a scan's restriction of partition key column Col: Op "=" or ">" or "<=" with
// Vals[0], or "IN" with Vals.
type KeyFilter struct {
	Col  int
	Op   string
	Vals []Val
}

// keyFilter returns the KeyFilter of scan op, or nil for a third of scans and more. It draws from
// a generator of its own, seeded by the workload's seed and op's sequence number, so that adding
// it left the histories every other seed generates as they were.
func (w *Workload) keyFilter(op *Op) *KeyFilter {
	t := op.Table
	r := rand.New(rand.NewPCG(w.Seed^0x6b657966696c74, uint64(op.Seq)))
	if r.IntN(3) != 0 {
		return nil
	}
	col := r.IntN(len(t.PK))
	val := func() Val { return t.Partitions[r.IntN(len(t.Partitions))][col] }
	f := &KeyFilter{Col: col, Vals: []Val{val()}}
	switch r.IntN(4) {
	case 0:
		f.Op = "="
	case 1:
		f.Op = "IN"
		if v := val(); compareVals(t.PK[col].Type, v.Enc, f.Vals[0].Enc) != 0 {
			f.Vals = append(f.Vals, v)
		}
	case 2:
		f.Op = ">"
	default:
		f.Op = "<="
	}
	return f
}

// match reports whether partition key pk of table t matches f.
func (f *KeyFilter) match(t *Table, pk []Val) bool {
	typ, v := t.PK[f.Col].Type, pk[f.Col].Enc
	switch f.Op {
	case ">":
		return compareVals(typ, v, f.Vals[0].Enc) > 0
	case "<=":
		return compareVals(typ, v, f.Vals[0].Enc) <= 0
	}
	for _, x := range f.Vals {
		if compareVals(typ, v, x.Enc) == 0 {
			return true
		}
	}
	return false
}

// scanFilter renders the WHERE clause of a filtered scan, "" for a scan of whole partitions.
func (op *Op) scanFilter() string {
	t, rg := op.Table, op.Range
	var where []string
	if f := op.KeyFilter; f != nil {
		name := t.PK[f.Col].Name
		if f.Op == "IN" {
			lits := make([]string, len(f.Vals))
			for i, v := range f.Vals {
				lits[i] = v.Lit
			}
			where = append(where, name+" IN ("+strings.Join(lits, ", ")+")")
		} else {
			where = append(where, name+" "+f.Op+" "+f.Vals[0].Lit)
		}
	}
	for i, v := range rg.Prefix {
		where = append(where, t.CK[i].Name+" = "+v.Lit)
	}
	if n := len(rg.Prefix); n < len(t.CK) {
		if b := rg.Lower; b != nil {
			where = append(where, t.CK[n].Name+map[bool]string{true: " >= ", false: " > "}[b.Inclusive]+b.Val.Lit)
		}
		if b := rg.Upper; b != nil {
			where = append(where, t.CK[n].Name+map[bool]string{true: " <= ", false: " < "}[b.Inclusive]+b.Val.Lit)
		}
	}
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ") + " ALLOW FILTERING"
}
