package shell_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

var schemaCollections = []string{
	"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE TABLE ks.c (k int PRIMARY KEY, s set<int>, m map<text, int>, l list<text>, n int)",
}

// TestCollectionUpdates runs every operation on non-frozen collections through the
// coordinator and reads the values back (Cassandra 4.1's results).
func TestCollectionUpdates(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaCollections...)
	steps := []struct{ stmt, want string }{
		{"INSERT INTO c (k, s, m, l) VALUES (1, {3, -1}, {'b': 2, 'a': 1}, ['x', 'y'])", "[-1 3] [{a 1} {b 2}] [x y]"},
		{"UPDATE c SET s = s + {2, 10}, m['c'] = 3, l = l + ['z'] WHERE k = 1", "[-1 2 3 10] [{a 1} {b 2} {c 3}] [x y z]"},
		{"UPDATE c SET s = s - {3, 99}, m = m - {'a'}, l = ['w', 'v'] + l WHERE k = 1", "[-1 2 10] [{b 2} {c 3}] [w v x y z]"},
		{"UPDATE c SET m = m + {'d': 4}, l = ['u'] + l WHERE k = 1", "[-1 2 10] [{b 2} {c 3} {d 4}] [u w v x y z]"},
		{"DELETE m['b'], l[0] FROM c WHERE k = 1", "[-1 2 10] [{c 3} {d 4}] [w v x y z]"},
		{"UPDATE c SET l[1] = 'V', l = l - ['x', 'z'] WHERE k = 1", "[-1 2 10] [{c 3} {d 4}] [w V y]"},
		{"UPDATE c SET s = {7}, m = {} WHERE k = 1", "[7] null [w V y]"},
		{"DELETE s FROM c WHERE k = 1", "null null [w V y]"},
		{"UPDATE c SET l = null WHERE k = 1", "null null null"},
	}
	for _, s := range steps {
		if _, err := c.exec("n1", quorum, s.stmt); err != nil {
			t.Fatalf("%s: %v", s.stmt, err)
		}
		c.settle()
		got := c.rowsAt(quorum, "SELECT s, m, l FROM c WHERE k = 1")
		if len(got) != 1 || got[0] != s.want {
			t.Fatalf("after %s: SELECT s, m, l = %v, want [%s]", s.stmt, got, s.want)
		}
	}
	// The row was created by INSERT: it stays with its collections all null.
	if got := c.rowsAt(quorum, "SELECT k, n FROM c WHERE k = 1"); !slices.Equal(got, []string{"1 null"}) {
		t.Errorf("the row = %v, want [1 null]", got)
	}
	for stmt, want := range map[string]string{
		"UPDATE c SET l[5] = 'x' WHERE k = 1":                          "list index 5 out of bound, list has size 0",
		"BEGIN BATCH UPDATE c SET l[0] = 'x' WHERE k = 1; APPLY BATCH": "not supported in a BATCH",
		"UPDATE c SET s = s + {1}, s = {2} WHERE k = 1":                "assigned twice",
		"SELECT TTL(m) FROM c WHERE k = 1":                             "non-frozen collection",
		"CREATE TABLE ks.bad (k int PRIMARY KEY, l list<list<int>>)":   "non-frozen collections are not allowed inside collections",
	} {
		_, err := c.exec("n1", quorum, stmt)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", stmt, err, want)
		}
	}
}

// TestCollectionElementsReconcile writes elements while a replica misses them, and checks
// that reads reconcile them element by element and read repair brings the replica up to date.
func TestCollectionElementsReconcile(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaCollections...)
	c.must("UPDATE c SET s = s + {1}, m['a'] = 1 WHERE k = 2")
	c.transport.setFault(failWrites, "n3")
	if _, err := c.exec("n1", quorum, "UPDATE c SET s = s + {2}, m['a'] = 2, m['b'] = 3 WHERE k = 2"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.transport.setFault(deliver, "n3")
	if got := c.localRows("n3", "SELECT s, m FROM c WHERE k = 2"); !slices.Equal(got, []string{"[1] [{a 1}]"}) {
		t.Fatalf("n3 alone before repair = %v, want [[1] [{a 1}]]", got)
	}
	// n3 writes an element of its own the others miss.
	c.transport.setFault(failWrites, "n1", "n2")
	if _, err := c.exec("n3", coordinator.One, "UPDATE c SET s = s + {3} WHERE k = 2"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.transport.setFault(deliver, "n1", "n2")
	want := []string{"[1 2 3] [{a 2} {b 3}]"}
	if got := c.rowsAt(coordinator.All, "SELECT s, m FROM c WHERE k = 2"); !slices.Equal(got, want) {
		t.Fatalf("SELECT at ALL = %v, want %v", got, want)
	}
	c.settle()
	for _, n := range nodes {
		if got := c.localRows(n, "SELECT s, m FROM c WHERE k = 2"); !slices.Equal(got, want) {
			t.Errorf("%s alone after read repair = %v, want %v", n, got, want)
		}
	}
}

func TestCollectionElementSelection(t *testing.T) {
	c := newCluster(t, options{})
	c.must(append(schemaCollections, "CREATE TABLE ks.f (k int PRIMARY KEY, fs frozen<set<int>>)")...)
	c.must("INSERT INTO c (k, s, m, l) VALUES (1, {-5, 1, 2, 3, 10}, {'a': 1, 'b': 2, 'c': 3}, ['x'])",
		"INSERT INTO f (k, fs) VALUES (1, {1, 2, 3})")
	for stmt, want := range map[string]string{
		"SELECT m['b'], m['z'], s[2], s[4] FROM c WHERE k = 1":        "2 null 2 null",
		"SELECT s[1..3], s[..1], s[3..], m['b'..] FROM c WHERE k = 1": "[1 2 3] [-5 1] [3 10] [{b 2} {c 3}]",
		"SELECT fs[2..], fs[3] FROM f WHERE k = 1":                    "[2 3] 3",
	} {
		if got := c.rowsAt(quorum, stmt); !slices.Equal(got, []string{want}) {
			t.Errorf("%s = %v, want [%s]", stmt, got, want)
		}
	}
	res, err := c.exec("n1", quorum, "SELECT s[20..30], m['a'] FROM c WHERE k = 1")
	if err != nil {
		t.Fatal(err)
	}
	if cols := res.Rows.Columns; cols[0].Name != "s[20..30]" || cols[0].Type != "set<int>" || cols[1].Name != "m['a']" || cols[1].Type != "int" || res.Rows.Values[0][0] != nil {
		t.Errorf("SELECT s[20..30], m['a'] columns %v, values %x; want s[20..30] set<int> (null), m['a'] int", cols, res.Rows.Values)
	}
	p := c.prepare("n1", "SELECT m[?], s[?..?] FROM c WHERE k = ?")
	if len(p.Variables) != 4 || p.Variables[0].Name != "key(m)" || p.Variables[0].Type != "text" || p.Variables[2].Type != "int" {
		t.Errorf("prepared element selection variables = %v", p.Variables)
	}
	_, err = c.exec("n1", quorum, "SELECT l[0] FROM c WHERE k = 1")
	if err == nil || !strings.Contains(err.Error(), "element selection is only allowed on sets and maps, but l is a list") {
		t.Errorf("SELECT l[0]: error %v, want the refusal of lists", err)
	}
}

func TestCollectionGuardrails(t *testing.T) {
	c := newCluster(t, options{collections: [2]int{40, 3}})
	c.must(schemaCollections...)
	for stmt, want := range map[string]string{
		"UPDATE c SET s = s + {1, 2, 3, 4} WHERE k = 1":                               "column s: this write's collection has 4 elements; the guardrail allows 3 (max_collection_items)",
		"INSERT INTO c (k, l) VALUES (1, ['0123456789', '0123456789', '0123456789'])": "column l: this write's collection is 46 bytes; the guardrail allows 40 bytes (max_collection_size)",
		"UPDATE c SET m['" + strings.Repeat("x", 41) + "'] = 1 WHERE k = 1":           "max_collection_size",
		"UPDATE c SET s = s + {1, 2, 3}, l = l - ['a', 'b', 'c', 'd'] WHERE k = 1":    "",
	} {
		_, err := c.exec("n1", quorum, stmt)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%.60s: error %v, want %q", stmt, err, want)
		}
	}
}

// TestCollectionUpdatesDoNotRead checks that set and map updates write without reading, and
// that the list operations by index or value read the row once.
func TestCollectionUpdatesDoNotRead(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaCollections...)
	for _, tt := range []struct {
		stmt string
		want int
	}{
		{"UPDATE c SET s = s + {1}, m['a'] = 1, m = m + {'b': 2}, l = l + ['x'] WHERE k = 1", 0},
		{"UPDATE c SET s = s - {1}, m = m - {'a'}, l = ['y'] + l, n = 1 WHERE k = 1", 0},
		{"DELETE m['b'], s FROM c WHERE k = 1", 0},
		{"UPDATE c SET l[0] = 'z' WHERE k = 1", -1}, // a read at QUORUM (speculation may add one)
	} {
		stmt, want := tt.stmt, tt.want
		before := c.transport.readCount()
		if _, err := c.exec("n1", quorum, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		c.settle()
		if got := c.transport.readCount() - before; got != want && (want >= 0 || got < 2) {
			t.Errorf("%s made %d replica reads, want %d (-1: at least a quorum, 2)", stmt, got, want)
		}
	}
}

// TestNonFrozenUserType writes a non-frozen user type whole and field by field.
func TestNonFrozenUserType(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaCollections[0], "CREATE TYPE ks.address (street text, zip int, city text)",
		"CREATE TABLE ks.h (k int PRIMARY KEY, a address, f frozen<address>)")
	steps := []struct{ stmt, want string }{
		{"INSERT INTO h (k, a) VALUES (1, {street: 'main', zip: 5})", "[{street main} {zip 5} {city <nil>}]"},
		{"UPDATE h SET a.city = 'x', a.zip = null WHERE k = 1", "[{street main} {zip <nil>} {city x}]"},
		{"DELETE a.street FROM h WHERE k = 1", "[{street <nil>} {zip <nil>} {city x}]"},
		{"UPDATE h SET a = {zip: 7} WHERE k = 1", "[{street <nil>} {zip 7} {city <nil>}]"},
		{"DELETE a.zip FROM h WHERE k = 1", "null"},
	}
	for _, s := range steps {
		if _, err := c.exec("n1", quorum, s.stmt); err != nil {
			t.Fatalf("%s: %v", s.stmt, err)
		}
		c.settle()
		if got := c.rowsAt(quorum, "SELECT a FROM h WHERE k = 1"); len(got) != 1 || got[0] != s.want {
			t.Fatalf("after %s: a = %v, want [%s]", s.stmt, got, s.want)
		}
	}
	p := c.prepare("n1", "UPDATE h SET a.zip = ? WHERE k = ?")
	if p.Variables[0].Name != "a.zip" || p.Variables[0].Type != schema.TypeInt {
		t.Errorf("the marker of a.zip = ? is %v, want a.zip int", p.Variables[0])
	}
	for stmt, want := range map[string]string{
		"UPDATE h SET f.zip = 1 WHERE k = 1":                        "for frozen user-defined type column f",
		"UPDATE h SET a.nope = 1 WHERE k = 1":                       "user type ks.address has no field nope",
		"CREATE TABLE ks.bad (a address PRIMARY KEY)":               "invalid non-frozen user-defined type address for PRIMARY KEY component a",
		"CREATE TABLE ks.bad2 (k int PRIMARY KEY, l list<address>)": "non-frozen user-defined types are not allowed inside collections",
	} {
		_, err := c.exec("n1", quorum, stmt)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", stmt, err, want)
		}
	}
}
