package schema

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

func bindSelect(t *testing.T, s *Schema, src string, values ...BindValue) (*Read, error) {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return s.BindRead(st.(*cql.SelectStmt), "ks", values)
}

func TestBindReadIn(t *testing.T) {
	s := mustBuild(t, dataDDL)
	r, err := bindSelect(t, s, "SELECT * FROM t WHERE a IN (2, 1, 2) AND b IN ('x', 'y') AND c1 IN (5, 3) AND c2 = 'q'")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.PartitionKeys) != 4 || !r.InPartitions {
		t.Fatalf("PartitionKeys = %d (InPartitions %v), want 4 (duplicates dropped)", len(r.PartitionKeys), r.InPartitions)
	}
	if got := describeRange(r.Clustering); got != "ck=[] >=00000003 <=00000005" {
		t.Errorf("clustering range %s, want the IN's bounds", got)
	}
	if len(r.Filters) != 2 || r.Filters[0].Op != cql.IN || r.Filters[1].Op != cql.IN {
		t.Errorf("filters %+v, want IN on c1 and on c2", r.Filters)
	}
	// IN ? binds a list.
	list := []byte{0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 9}
	r, err = bindSelect(t, s, "SELECT * FROM t WHERE a IN ? AND b = 'x'", v(list))
	if err != nil || len(r.PartitionKeys) != 2 {
		t.Fatalf("IN ?: %v, %d keys", err, len(r.PartitionKeys))
	}
	vars, _, err := s.Variables(mustParse(t, "SELECT * FROM t WHERE a IN ? AND b IN (?, ?) AND (c1, c2) > ?"), "ks")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"in(a) frozen<list<int>>", "b text", "b text", "(c1,c2) frozen<tuple<int, text>>"}
	for i, w := range want {
		if got := vars[i].Name + " " + string(vars[i].Type); got != w {
			t.Errorf("variable %d = %q, want %q", i, got, w)
		}
	}
}

func mustParse(t *testing.T, src string) cql.Statement {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestBindReadShapeErrors(t *testing.T) {
	s := mustBuild(t, dataDDL)
	pk := "a = 1 AND b = 'x'"
	for _, c := range []struct{ src, want string }{
		{"SELECT * FROM t WHERE " + pk + " AND v = 'z'", errNeedsFiltering},
		{"SELECT * FROM t WHERE " + pk + " AND c2 = 'z'", "clustering column c2 cannot be restricted: the preceding clustering column c1 is not restricted by ="},
		{"SELECT * FROM t WHERE " + pk + " AND v IN ('z') ALLOW FILTERING", "IN predicates on non-primary-key columns (v) is not yet supported"},
		{"SELECT * FROM t WHERE " + pk + " AND (c2, c1) > (1, 'a')", "clustering columns must appear in the PRIMARY KEY order in multi-column relations: (c2, c1)"},
		{"SELECT * FROM t WHERE " + pk + " AND (a, c1) > (1, 2)", "multi-column relations can only be applied to clustering columns but was applied to: a"},
		{"SELECT DISTINCT a FROM t WHERE " + pk, "SELECT DISTINCT queries must request all the partition key columns (missing b)"},
		{"SELECT DISTINCT a, b, c1 FROM t WHERE " + pk, "SELECT DISTINCT queries must only request partition key columns and/or static columns (not c1)"},
		{"SELECT a, count(*) FROM t WHERE " + pk + " GROUP BY a", "group by is not supported on only a part of the partition key"},
		{"SELECT count(*) FROM t WHERE " + pk + " GROUP BY a, b, c2", "group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT count(*) FROM t WHERE " + pk + " GROUP BY v", "group by is currently only supported on the columns of the PRIMARY KEY, got v"},
		{"SELECT sum(v) FROM t WHERE " + pk, "invalid call to function sum: its argument is of type text; sum takes tinyint, smallint, int, bigint, float, double, decimal or varint"},
		{"SELECT * FROM t WHERE " + pk + " PER PARTITION LIMIT 0", "PER PARTITION LIMIT must be positive, not 0"},
		{"UPDATE t SET v = 'x' WHERE a IN (1, 2) AND b = 'x' AND c1 = 1 AND c2 = 'y'", "UPDATE with IN or a multi-column relation is not supported: write each row's key with ="},
	} {
		st := mustParse(t, c.src)
		var err error
		if sel, ok := st.(*cql.SelectStmt); ok {
			_, err = s.BindRead(sel, "ks", nil)
		} else {
			_, err = s.PrepareWrite(st, "ks")
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.src, err, c.want)
		}
	}
	// Allowed shapes.
	for _, src := range []string{
		"SELECT * FROM t WHERE " + pk + " AND c2 = 'z' ALLOW FILTERING",
		"SELECT * FROM t WHERE " + pk + " AND v = 'z' ALLOW FILTERING",
		"SELECT a, b, c1, count(*) AS n, max(v) FROM t WHERE " + pk + " GROUP BY a, b, c1",
		"SELECT count(*) FROM t WHERE " + pk + " AND c1 = 1 GROUP BY a, b, c2",
		"SELECT DISTINCT b, a FROM t WHERE a IN (1, 2) AND b = 'x'",
	} {
		if _, err := bindSelect(t, s, src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	r, err := bindSelect(t, s, "SELECT a AS x, count(*), max(c1) AS m FROM t WHERE "+pk)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range r.ResultColumns() {
		names = append(names, c.Name+" "+string(c.Type))
	}
	if got, want := strings.Join(names, ", "), "x int, count bigint, m int"; got != want {
		t.Errorf("ResultColumns = %s, want %s", got, want)
	}
}

func TestAggregates(t *testing.T) {
	run := func(name string, typ Type, vals ...[]byte) []byte {
		a := &Aggregate{Name: name, Type: typ}
		if name == "count" {
			a.Type = TypeBigInt
		}
		x := a.NewAccumulator()
		for _, v := range vals {
			if err := x.Add(v); err != nil {
				t.Fatal(err)
			}
		}
		return x.Result()
	}
	i := EncodeInt
	check := func(what string, got, want []byte) {
		t.Helper()
		if string(got) != string(want) {
			t.Errorf("%s = %x, want %x", what, got, want)
		}
	}
	check("sum int overflow wraps", run("sum", TypeInt, i(math.MaxInt32), i(1)), i(math.MinInt32))
	check("avg int in 64 bits", run("avg", TypeInt, i(math.MaxInt32), i(math.MaxInt32)), i(math.MaxInt32))
	check("avg int truncates", run("avg", TypeInt, i(1), i(2)), i(1))
	check("sum of nothing", run("sum", TypeInt), i(0))
	check("avg of nothing", run("avg", TypeDouble), EncodeDouble(0))
	check("max of nothing", run("max", TypeInt), nil)
	check("count skips null", run("count", TypeInt, i(1), nil, i(3)), EncodeBigInt(2))
	check("min", run("min", TypeInt, i(4), i(-2), nil, i(9)), i(-2))
	check("max text", run("max", TypeText, []byte("b"), []byte("ab")), []byte("b"))
	check("sum double compensated", run("sum", TypeDouble, EncodeDouble(1e16), EncodeDouble(1), EncodeDouble(1)), EncodeDouble(1e16+2))
	check("sum varint", run("sum", TypeVarint, EncodeVarint(big.NewInt(math.MaxInt64)), EncodeVarint(big.NewInt(1))),
		EncodeVarint(new(big.Int).Add(big.NewInt(math.MaxInt64), big.NewInt(1))))
	check("avg decimal half even", run("avg", TypeDecimal, EncodeDecimal(Decimal{Unscaled: big.NewInt(5), Scale: 1}), EncodeDecimal(Decimal{Unscaled: big.NewInt(0), Scale: 0})),
		EncodeDecimal(Decimal{Unscaled: big.NewInt(2), Scale: 1}))
}
