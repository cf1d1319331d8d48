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

// TestBindPartitionKeyFilters: restrictions on part of a composite partition key, or a slice
// of a partition key column, make a scan that filters the partitions (Cassandra 4.1's
// PartitionKeySingleRestrictionSet.needFiltering), with ALLOW FILTERING only.
func TestBindPartitionKeyFilters(t *testing.T) {
	s := mustBuild(t, dataDDL)
	bind := func(src string) (*Read, error) {
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		return s.BindReadAt(st.(*cql.SelectStmt), "ks", nil, time.Time{})
	}
	for _, tt := range []struct {
		src  string
		cols []string
		ops  []cql.Token
	}{
		{src: "SELECT * FROM t WHERE a = 1 ALLOW FILTERING", cols: []string{"a"}, ops: []cql.Token{cql.EQ}},
		{src: "SELECT * FROM t WHERE b = 'x' ALLOW FILTERING", cols: []string{"b"}, ops: []cql.Token{cql.EQ}},
		{src: "SELECT * FROM t WHERE a IN (3, 1) ALLOW FILTERING", cols: []string{"a"}, ops: []cql.Token{cql.IN}},
		{src: "SELECT * FROM t WHERE a > 1 AND a <= 5 ALLOW FILTERING", cols: []string{"a", "a"}, ops: []cql.Token{cql.GT, cql.LE}},
		{src: "SELECT * FROM t WHERE a = 1 AND b > 'x' ALLOW FILTERING", cols: []string{"a", "b"}, ops: []cql.Token{cql.EQ, cql.GT}},
		{src: "SELECT * FROM t WHERE a = 1 AND c1 = 2 AND v = 'z' ALLOW FILTERING", cols: []string{"a", "c1", "v"}, ops: []cql.Token{cql.EQ, cql.EQ, cql.EQ}},
		{src: "SELECT * FROM kv WHERE k > 'm' ALLOW FILTERING", cols: []string{"k"}, ops: []cql.Token{cql.GT}},
		{src: "SELECT DISTINCT a, b FROM t WHERE a = 1 ALLOW FILTERING", cols: []string{"a"}, ops: []cql.Token{cql.EQ}},
	} {
		r, err := bind(tt.src)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !r.Scan || r.Tokens != FullRing || len(r.Filters) != len(tt.cols) {
			t.Errorf("%s: scan %v of %+v with %d filters, want a scan of the ring with %d", tt.src, r.Scan, r.Tokens, len(r.Filters), len(tt.cols))
			continue
		}
		for i, f := range r.Filters {
			if f.Columns[0].Name != tt.cols[i] || f.Op != tt.ops[i] {
				t.Errorf("%s: filter %d is %s %v, want %s %v", tt.src, i, f.Columns[0].Name, f.Op, tt.cols[i], tt.ops[i])
			}
		}
	}
	// The whole partition key by = or IN stays a read of its partitions.
	if r, err := bind("SELECT * FROM t WHERE a IN (1, 2) AND b = 'x' ALLOW FILTERING"); err != nil || r.Scan || len(r.PartitionKeys) != 2 {
		t.Errorf("the whole partition key: %+v, %v", r, err)
	}
	// The filters match on the partition key's values.
	r, err := bind("SELECT * FROM t WHERE a = 1 AND b > 'm' ALLOW FILTERING")
	if err != nil {
		t.Fatal(err)
	}
	row := func(a int32, b string) func(c *Column) []byte {
		return func(c *Column) []byte {
			if c.Name == "a" {
				return EncodeInt(a)
			}
			return []byte(b)
		}
	}
	for _, tt := range []struct {
		a    int32
		b    string
		want bool
	}{{1, "x", true}, {1, "a", false}, {2, "x", false}} {
		got := r.Filters[0].Match(row(tt.a, tt.b)) && r.Filters[1].Match(row(tt.a, tt.b))
		if got != tt.want {
			t.Errorf("a = 1 AND b > 'm' on (%d, %q): %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"SELECT * FROM t WHERE a = 1", errNeedsFiltering},
		{"SELECT * FROM t WHERE a IN (1, 2)", errNeedsFiltering},
		{"SELECT * FROM t WHERE a > 1 AND b = 'x'", errNeedsFiltering},
		{"SELECT * FROM kv WHERE k > 'm'", errNeedsFiltering},
		{"SELECT * FROM t WHERE a = 1 AND a = 2 ALLOW FILTERING", "column a is restricted more than once"},
		{"SELECT * FROM t WHERE a = 1 AND a > 0 ALLOW FILTERING", "column a is restricted more than once"},
		{"SELECT * FROM t WHERE a = NULL ALLOW FILTERING", "invalid null value in condition for column a"},
		{"SELECT * FROM t WHERE a = 1 AND token(a, b) > 0 ALLOW FILTERING", "partition key column a cannot be restricted by both a normal relation and a token relation"},
		{"SELECT * FROM t WHERE (a, b) = (1, 'x') ALLOW FILTERING", "multi-column relations can only be applied to clustering columns but was applied to: a"},
		{"SELECT * FROM t WHERE a = 1 ORDER BY c1 DESC ALLOW FILTERING", "ORDER BY is only supported when the partition key is restricted by an EQ or an IN"},
		{"SELECT DISTINCT a, b FROM t WHERE a = 1 AND c1 = 1 ALLOW FILTERING", "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns"},
	} {
		if _, err := bind(tt.src); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n  gave error %v\n  want %q", tt.src, err, tt.want)
		}
	}
}
