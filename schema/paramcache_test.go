package schema

import (
	"testing"
)

// paramTable is a table whose clustering column is a tuple and whose regular column is a
// frozen map, for the tests of the parsed types a Column keeps.
func paramTable(t testing.TB) *Table {
	t.Helper()
	s, err := Build(ksDDL + `CREATE TABLE ks.pc (k int, c tuple<int, text>, m frozen<map<int, frozen<list<text>>>>, PRIMARY KEY (k, c))`)
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := s.Table("ks", "pc")
	if !ok {
		t.Fatal("no table ks.pc")
	}
	return tb
}

// TestColumnKeepsParsedType checks that a table's columns check and compare parametric values
// as their types do, and that doing so allocates nothing.
func TestColumnKeepsParsedType(t *testing.T) {
	tb := paramTable(t)
	c, m := &tb.Clustering[0], &tb.Regular[0]
	a, b := elems(EncodeInt(1), []byte("a")), elems(EncodeInt(1), []byte("b"))
	if got, want := c.Compare(a, b), c.Type.Compare(a, b); got != want || got != -1 {
		t.Errorf("Column.Compare = %d, Type.Compare = %d, want -1", got, want)
	}
	if got := tb.CompareClustering([][]byte{b}, [][]byte{a}); got != 1 {
		t.Errorf("CompareClustering = %d, want 1", got)
	}
	mv := coll(1, EncodeInt(2), coll(2, []byte("x"), []byte("y")))
	if err := m.Check(mv); err != nil {
		t.Errorf("Check(valid map) = %v", err)
	}
	bad := coll(1, EncodeInt(2), coll(1, []byte{0xff}))
	if err, want := m.Check(bad), m.Type.Check(bad); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("Check(invalid) = %v, Type.Check = %v, want the same error", err, want)
	}
	if n := testing.AllocsPerRun(100, func() { c.Compare(a, b) }); n != 0 {
		t.Errorf("Column.Compare allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = m.Check(mv) }); n != 0 {
		t.Errorf("Column.Check allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { tb.CompareClustering([][]byte{a}, [][]byte{b}) }); n != 0 {
		t.Errorf("CompareClustering allocates %v times, want 0", n)
	}
}

// BenchmarkTupleCompare compares two tuple values by parsing the type's name (Type.Compare) and
// with the parsed type a table's Column keeps (Column.Compare), in the same run.
func BenchmarkTupleCompare(b *testing.B) {
	tb := paramTable(b)
	c := &tb.Clustering[0]
	x, y := elems(EncodeInt(1), []byte("a")), elems(EncodeInt(1), []byte("b"))
	b.Run("Type", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Type.Compare(x, y)
		}
	})
	b.Run("Column", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Compare(x, y)
		}
	})
}
