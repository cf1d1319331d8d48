package interop

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
)

// testGocqlCollections writes non-frozen sets, lists and maps through gocql's prepared
// statements: whole values, element additions and removals, m[k] = v, list prepends and updates
// by index, DELETE of elements, then reads them back whole and by element and slice, and checks
// the result and table metadata gocql sees.
func testGocqlCollections(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf("CREATE TABLE %s.colls (k int PRIMARY KEY, s set<text>, l list<int>, m map<text, int>)", keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if err := session.Query(fmt.Sprintf(q, keyspace), args...).Exec(); err != nil {
			t.Fatalf("gocql: %s with %v: %v", q, args, err)
		}
	}
	exec("INSERT INTO %s.colls (k, s, l, m) VALUES (?, ?, ?, ?)", 1, []string{"b", "a"}, []int{1, 2}, map[string]int{"x": 1})
	exec("UPDATE %s.colls SET s = s + ?, l = l + ?, m[?] = ? WHERE k = ?", []string{"c"}, []int{3}, "y", 2, 1)
	exec("UPDATE %s.colls SET s = s - ?, l = ? + l, m = m + ? WHERE k = ?", []string{"a"}, []int{0}, map[string]int{"z": 3}, 1)
	exec("UPDATE %s.colls SET l[?] = ?, m = m - ? WHERE k = ?", 1, 10, []string{"x"}, 1)
	exec("DELETE m[?] FROM %s.colls WHERE k = ?", "y", 1)
	exec("UPDATE %s.colls SET l = l - ? WHERE k = ?", []int{2}, 1)

	iter := session.Query(fmt.Sprintf("SELECT s, l, m FROM %s.colls WHERE k = ?", keyspace), 1).Iter()
	cols := iter.Columns()
	if len(cols) != 3 || cols[0].TypeInfo.Type() != gocql.TypeSet || cols[1].TypeInfo.Type() != gocql.TypeList || cols[2].TypeInfo.Type() != gocql.TypeMap {
		t.Errorf("gocql: result metadata %v, want set, list, map", cols)
	}
	var (
		s []string
		l []int
		m map[string]int
	)
	if !iter.Scan(&s, &l, &m) {
		t.Fatalf("gocql: no row: %v", iter.Close())
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s, []string{"b", "c"}) || !slices.Equal(l, []int{0, 10, 3}) || !reflect.DeepEqual(m, map[string]int{"z": 3}) {
		t.Errorf("gocql read s = %v, l = %v, m = %v; want [b c], [0 10 3], map[z:3]", s, l, m)
	}

	// Element and slice selection.
	var mz int
	var sl []string
	if err := session.Query(fmt.Sprintf("SELECT m[?], s['a'..'b'] FROM %s.colls WHERE k = ?", keyspace), "z", 1).Scan(&mz, &sl); err != nil || mz != 3 || !slices.Equal(sl, []string{"b"}) {
		t.Errorf("gocql: SELECT m['z'], s['a'..'b'] = %d, %v, %v; want 3, [b]", mz, sl, err)
	}

	// An emptied collection reads as null.
	exec("UPDATE %s.colls SET m = ?, s = s - ? WHERE k = ?", map[string]int{}, []string{"b", "c"}, 1)
	var isNull bool
	if err := session.Query(fmt.Sprintf("SELECT m, s FROM %s.colls WHERE k = ?", keyspace), 1).Scan(&m, &s); err != nil {
		t.Fatal(err)
	}
	isNull = m == nil && s == nil
	if !isNull {
		t.Errorf("gocql: emptied m, s read as %v, %v; want null (nil)", m, s)
	}

	// A non-frozen user type, written field by field.
	exec("CREATE TYPE %s.point (x int, y int, label text)")
	exec("CREATE TABLE %s.points (k int PRIMARY KEY, p point)")
	exec("INSERT INTO %s.points (k, p) VALUES (?, ?)", 1, map[string]any{"x": 1, "y": 2})
	exec("UPDATE %s.points SET p.label = ?, p.x = ? WHERE k = ?", "a", 5, 1)
	exec("DELETE p.y FROM %s.points WHERE k = ?", 1)
	var pt map[string]any
	if err := session.Query(fmt.Sprintf("SELECT p FROM %s.points WHERE k = ?", keyspace), 1).Scan(&pt); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pt) != "map[label:a x:5 y:<nil>]" && fmt.Sprint(pt) != "map[label:a x:5 y:0]" {
		t.Errorf("gocql read p = %v, want label a, x 5, y null", pt)
	}
	poll.Must(t, discoverTimeout, "gocql knows table colls", func() error {
		_, err := session.TableMetadata(keyspace, "colls")
		return err
	})
	tm, err := session.TableMetadata(keyspace, "colls")
	if err != nil {
		t.Fatalf("gocql: table metadata of colls: %v", err)
	}
	for col, typ := range map[string]string{"s": "set<text>", "l": "list<int>", "m": "map<text, int>"} {
		if cm, ok := tm.Columns[col]; !ok || cm.Type != typ {
			t.Errorf("gocql sees column colls.%s as %+v, want type %s", col, cm, typ)
		}
	}
}
