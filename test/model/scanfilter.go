package model

import "strings"

// A scan with a clustering range (Op.Range of a Scan) filters every partition's rows to the
// range with ALLOW FILTERING: the model checks each partition's rows as a SELECT of that range
// of it (checkScan), so a filtered scan at QUORUM after an acknowledged QUORUM write sees it
// when it matches, and returns nothing outside the range.

// scanFilter renders the WHERE clause of a filtered scan, "" for a scan of whole partitions.
func (op *Op) scanFilter() string {
	t, rg := op.Table, op.Range
	var where []string
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
