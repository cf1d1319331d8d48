package schema

import (
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cql"
)

func TestBindScanFilters(t *testing.T) {
	s := mustBuild(t, dataDDL)
	for _, tt := range []struct {
		src     string
		values  []BindValue
		filters int
		ops     []cql.Token
	}{
		{src: "SELECT * FROM t WHERE v = 'x' ALLOW FILTERING", filters: 1, ops: []cql.Token{cql.EQ}},
		{src: "SELECT * FROM t WHERE c1 > 1 AND c2 <= 'b' ALLOW FILTERING", filters: 2, ops: []cql.Token{cql.GT, cql.LE}},
		{src: "SELECT * FROM t WHERE v > 'a' AND v < 'c' ALLOW FILTERING", filters: 2, ops: []cql.Token{cql.GT, cql.LT}},
		{src: "SELECT * FROM t WHERE token(a, b) > 0 AND c1 IN (3, 1, 3) ALLOW FILTERING", filters: 1, ops: []cql.Token{cql.IN}},
		{src: "SELECT * FROM t WHERE (c1, c2) > (1, 'a') ALLOW FILTERING", filters: 1, ops: []cql.Token{cql.GT}},
		{src: "SELECT * FROM kv WHERE v = ? ALLOW FILTERING", values: []BindValue{{Bytes: EncodeBigInt(7)}}, filters: 1, ops: []cql.Token{cql.EQ}},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		r, err := s.BindReadAt(st.(*cql.SelectStmt), "ks", tt.values, time.Time{})
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !r.Scan || len(r.Filters) != tt.filters {
			t.Errorf("%s: scan %v with %d filters, want a scan with %d", tt.src, r.Scan, len(r.Filters), tt.filters)
			continue
		}
		for i, op := range tt.ops {
			if r.Filters[i].Op != op {
				t.Errorf("%s: filter %d is %v, want %v", tt.src, i, r.Filters[i].Op, op)
			}
		}
		if tt.ops[0] == cql.IN && len(r.Filters[0].Values) != 2 {
			t.Errorf("%s: IN values %v, want 1 and 3 once each", tt.src, r.Filters[0].Values)
		}
	}
	for _, tt := range []struct {
		src    string
		values []BindValue
		want   string
	}{
		{src: "SELECT * FROM t WHERE v = 'x'", want: errNeedsFiltering},
		{src: "SELECT * FROM t WHERE (c1, c2) > (1, 'a')", want: errNeedsFiltering},
		{src: "SELECT * FROM t WHERE v = null ALLOW FILTERING", want: "invalid null value in condition for column v"},
		{src: "SELECT * FROM kv WHERE v = ? ALLOW FILTERING", values: []BindValue{{Unset: true}}, want: "invalid unset value for column v"},
		{src: "SELECT * FROM t WHERE v IN ('x') ALLOW FILTERING", want: "IN predicates on non-primary-key columns (v) is not yet supported"},
		{src: "SELECT * FROM t WHERE (c2, c1) > ('a', 1) ALLOW FILTERING", want: "clustering columns must appear in the PRIMARY KEY order"},
		{src: "SELECT DISTINCT a, b FROM t WHERE v = 'x' ALLOW FILTERING", want: "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns"},
		{src: "SELECT * FROM t WHERE token(a, b) > 0 AND zz = 1 ALLOW FILTERING", want: "unknown column zz"},
		{src: "SELECT * FROM t WHERE c1 = 1 AND c1 = 2 ALLOW FILTERING", want: "column c1 is restricted more than once"},
		{src: "SELECT * FROM t WHERE v > 'a' AND v >= 'b' ALLOW FILTERING", want: "column v is restricted more than once (a lower bound is already given)"},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		_, err = s.BindReadAt(st.(*cql.SelectStmt), "ks", tt.values, time.Time{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n  gave error %v\n  want %q", tt.src, err, tt.want)
		}
	}
}
