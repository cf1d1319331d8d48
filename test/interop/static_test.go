package interop

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
)

// testGocqlStatic creates a table with a static column, writes the static value on its own and
// with rows through prepared statements, reads it with every row (paged by the driver), of a
// partition holding only static values, by DISTINCT and by a full scan, and checks gocql's
// column metadata (system_schema.columns kind 'static').
func testGocqlStatic(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf("CREATE TABLE %s.stat (k int, c int, s text STATIC, v int, PRIMARY KEY (k, c))", keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	ins := fmt.Sprintf("INSERT INTO %s.stat (k, c, v) VALUES (?, ?, ?)", keyspace)
	for c := range 5 {
		if err := session.Query(ins, 1, c, c*10).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", ins, err)
		}
	}
	for _, q := range []struct {
		stmt string
		args []any
	}{
		{fmt.Sprintf("UPDATE %s.stat SET s = ? WHERE k = ?", keyspace), []any{"one", 1}},
		{fmt.Sprintf("INSERT INTO %s.stat (k, s) VALUES (?, ?)", keyspace), []any{2, "alone"}},
	} {
		if err := session.Query(q.stmt, q.args...).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", q.stmt, err)
		}
	}
	// Every row carries the static value, on every page.
	iter := session.Query(fmt.Sprintf("SELECT c, s FROM %s.stat WHERE k = ?", keyspace), 1).PageSize(2).Iter()
	var c int
	var s string
	var cs []int
	for iter.Scan(&c, &s) {
		if s != "one" {
			t.Errorf("gocql: row %d has s = %q, want 'one'", c, s)
		}
		cs = append(cs, c)
	}
	if err := iter.Close(); err != nil || !slices.Equal(cs, []int{0, 1, 2, 3, 4}) {
		t.Errorf("gocql: paged rows %v, %v; want 0..4", cs, err)
	}
	// A partition of static values alone: one row, its clustering and regular columns null.
	var cp, vp *int
	if err := session.Query(fmt.Sprintf("SELECT c, s, v FROM %s.stat WHERE k = ?", keyspace), 2).Scan(&cp, &s, &vp); err != nil || cp != nil || vp != nil || s != "alone" {
		t.Errorf("gocql: static-only partition = %v %q %v, %v; want null 'alone' null", cp, s, vp, err)
	}
	// DISTINCT and a full scan (paged) see both partitions.
	got := map[int]string{}
	iter = session.Query(fmt.Sprintf("SELECT DISTINCT k, s FROM %s.stat", keyspace)).Iter()
	var k int
	for iter.Scan(&k, &s) {
		got[k] = s
	}
	if err := iter.Close(); err != nil || len(got) != 2 || got[1] != "one" || got[2] != "alone" {
		t.Errorf("gocql: SELECT DISTINCT k, s = %v, %v; want 1:one 2:alone", got, err)
	}
	rows := 0
	iter = session.Query(fmt.Sprintf("SELECT k, c, s FROM %s.stat", keyspace)).PageSize(2).Iter()
	for iter.Scan(&k, &cp, &s) {
		rows++
		if (k == 1 && s != "one") || (k == 2 && (s != "alone" || cp != nil)) {
			t.Errorf("gocql: scan row k=%d c=%v s=%q", k, cp, s)
		}
	}
	if err := iter.Close(); err != nil || rows != 6 {
		t.Errorf("gocql: scan returned %d rows, %v; want 6", rows, err)
	}
	// DELETE s alone; the rows stay.
	if err := session.Query(fmt.Sprintf("DELETE s FROM %s.stat WHERE k = ?", keyspace), 1).Exec(); err != nil {
		t.Fatalf("gocql: DELETE s: %v", err)
	}
	var sp *string
	if err := session.Query(fmt.Sprintf("SELECT s FROM %s.stat WHERE k = ? AND c = ?", keyspace), 1, 3).Scan(&sp); err != nil || sp != nil {
		t.Errorf("gocql: s after DELETE s = %v, %v; want null", sp, err)
	}
	// The driver's metadata: s is static.
	var tm *gocql.TableMetadata
	poll.Must(t, discoverTimeout, "gocql knows table stat", func() error {
		var err error
		tm, err = session.TableMetadata(keyspace, "stat")
		return err
	})
	if col, ok := tm.Columns["s"]; !ok || col.Kind != gocql.ColumnStatic {
		t.Errorf("gocql: column s metadata %+v, want kind static", col)
	}
	if col := tm.Columns["v"]; col == nil || col.Kind != gocql.ColumnRegular {
		t.Errorf("gocql: column v metadata %+v, want kind regular", col)
	}
}
