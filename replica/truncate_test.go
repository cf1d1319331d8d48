package replica

import (
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// evolve returns the test table after each statement, applied at its timestamp.
func evolve(t *testing.T, stmts map[int64]string, order ...int64) []*schema.Table {
	t.Helper()
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};" + testTableDDL)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.Table("ks", "t")
	out := []*schema.Table{first}
	for _, at := range order {
		st, err := cql.ParseStatement(stmts[at])
		if err != nil {
			t.Fatal(err)
		}
		if s, err = s.Apply(st, "ks", schema.Change{Version: schema.Version{Timestamp: at, Node: "n1"}}); err != nil {
			t.Fatal(err)
		}
		tbl, _ := s.Table("ks", "t")
		out = append(out, tbl)
	}
	return out
}

func applyTo(t *testing.T, s *Store, tbl *schema.Table, m *replicapb.Mutation) {
	t.Helper()
	m.TableId = uint64(tbl.ID)
	if err := s.Apply(tbl, m); err != nil {
		t.Fatal(err)
	}
}

func readAs(t *testing.T, s *Store, tbl *schema.Table, pk string) string {
	t.Helper()
	req := readReq(pk)
	req.TableId = uint64(tbl.ID)
	resp, err := s.ReadPartition(tbl, req)
	if err != nil {
		t.Fatal(err)
	}
	return format(tbl, resp)
}

func TestDroppedColumnStaysInvisible(t *testing.T) {
	s, _ := openMem(t)
	ts := evolve(t, map[int64]string{100: "ALTER TABLE t DROP w", 200: "ALTER TABLE t ADD w text"}, 100, 200)
	orig, dropped, readded := ts[0], ts[1], ts[2]
	applyTo(t, s, orig, mut("a", row(1, "x", "marker@50", "v=1@50", "w=old@50")))
	if got, want := readAs(t, s, orig, "a"), "(1,x) marker@50 [v=1@50 w=old@50]"; got != want {
		t.Fatalf("before the drop: %s, want %s", got, want)
	}
	if got, want := readAs(t, s, dropped, "a"), "(1,x) marker@50 [v=1@50]"; got != want {
		t.Errorf("after DROP w: %s, want %s", got, want)
	}
	if got, want := readAs(t, s, readded, "a"), "(1,x) marker@50 [v=1@50]"; got != want {
		t.Errorf("after ADD w again, the dropped value came back: %s, want %s", got, want)
	}
	// A late write of the old column (a hint, say) is not stored; a new one is.
	applyTo(t, s, readded, mut("a", row(1, "x", "w=late@90")))
	applyTo(t, s, readded, mut("a", row(2, "y", "w=new@300")))
	if got, want := readAs(t, s, readded, "a"), "(1,x) marker@50 [v=1@50]; (2,y) [w=new@300]"; got != want {
		t.Errorf("after a late and a new write: %s, want %s", got, want)
	}
	if got := readAs(t, s, orig, "a"); got != "(1,x) marker@50 [v=1@50 w=old@50]; (2,y) [w=new@300]" {
		t.Errorf("the late write was stored: the original table reads %s", got)
	}
}

func TestTruncateHidesDeletesAndDiscards(t *testing.T) {
	s, _ := openMem(t)
	ts := evolve(t, map[int64]string{100: "TRUNCATE t"}, 100)
	orig, trunc := ts[0], ts[1]
	for _, pk := range []string{"a", "b"} {
		m := mut(pk, row(1, "x", "marker@50", "v=1@50"), row(2, "y", "w=z@60", "deleted@40"))
		m.PartitionDeletion = tsPtr(10)
		applyTo(t, s, orig, m)
	}
	if got := readAs(t, s, trunc, "a"); got != "" {
		t.Errorf("a truncated partition reads %q, want nothing", got)
	}
	// Late writes before the truncation are discarded; later ones kept.
	applyTo(t, s, trunc, mut("b", row(3, "z", "v=3@99")))
	applyTo(t, s, trunc, mut("b", row(4, "z", "v=4@101")))
	if got, want := readAs(t, s, trunc, "b"), "(4,z) [v=4@101]"; got != want {
		t.Errorf("after late writes: %s, want %s", got, want)
	}
	// TruncateTable frees the old entries and keeps the newer one.
	n, err := s.TruncateTable(trunc)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("TruncateTable deleted nothing")
	}
	if got, want := readAs(t, s, orig, "b"), "(4,z) [v=4@101]"; got != want {
		t.Errorf("the untruncated view after TruncateTable: %s, want %s", got, want)
	}
	if keys, _ := s.TableKeys(trunc.ID); keys != 1 {
		t.Errorf("after TruncateTable the table has %d keys, want 1 (the newer write)", keys)
	}
	// Without newer data it is one range deletion.
	s2, _ := openMem(t)
	applyTo(t, s2, orig, mut("a", row(1, "x", "v=1@50")))
	if n, err := s2.TruncateTable(trunc); err != nil || n != 1 {
		t.Errorf("TruncateTable = %d, %v; want 1, nil", n, err)
	}
	if keys, _ := s2.TableKeys(trunc.ID); keys != 0 {
		t.Errorf("after TruncateTable the table has %d keys, want 0", keys)
	}
}

func tsPtr(v int64) *int64 { return &v }

// TestLateWriteOfDroppedColumn: a mutation carrying a column dropped since (a hint written
// before the drop, say) is applied without that column rather than refused.
func TestLateWriteOfDroppedColumn(t *testing.T) {
	s, _ := openMem(t)
	ts := evolve(t, map[int64]string{100: "ALTER TABLE t DROP w"}, 100)
	applyTo(t, s, ts[1], mut("a", row(1, "x", "v=1@50", "w=gone@50")))
	if got, want := readAs(t, s, ts[1], "a"), "(1,x) [v=1@50]"; got != want {
		t.Errorf("after a late write with the dropped column: %s, want %s", got, want)
	}
	m := mut("a", row(1, "x", "nope=1@50"))
	m.TableId = uint64(ts[1].ID)
	if err := s.Apply(ts[1], m); err == nil {
		t.Errorf("a write of a column that never existed was accepted")
	}
}
