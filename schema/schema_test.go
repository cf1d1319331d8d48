package schema

import (
	"errors"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

func TestVersionCompare(t *testing.T) {
	tests := []struct {
		a, b Version
		want int
	}{
		{Version{1, "a"}, Version{2, "a"}, -1},
		{Version{2, "a"}, Version{1, "z"}, 1},
		{Version{1, "a"}, Version{1, "b"}, -1},
		{Version{1, "b"}, Version{1, "b"}, 0},
		{Version{-5, ""}, Version{0, ""}, -1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	if got := (Version{12, "n1"}).String(); got != "12@n1" {
		t.Errorf("Version{12, n1}.String() = %q, want 12@n1", got)
	}
}

func TestApplyKeyspaces(t *testing.T) {
	s := New()
	s1, err := apply(s, ksDDL, 10)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := s1.Keyspace("ks")
	if !ok || k.ReplicationFactor != 3 || k.Version != (Version{10, "n1"}) {
		t.Fatalf("after CREATE KEYSPACE, Keyspace(ks) = %+v, %v; want RF 3 at 10@n1", k, ok)
	}
	if _, ok := s.Keyspace("ks"); ok {
		t.Errorf("CREATE KEYSPACE changed the schema it was applied to")
	}
	if again, err := apply(s1, "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 11); err != nil || again != s1 {
		t.Errorf("CREATE KEYSPACE IF NOT EXISTS on an existing keyspace = %p, %v; want the same schema %p", again, err, s1)
	}
	if _, err := apply(s1, ksDDL, 11); !errors.Is(err, ErrExists) {
		t.Errorf("CREATE KEYSPACE twice: error %v, want ErrExists", err)
	}
	s2, err := apply(s1, "CREATE TABLE ks.t (k int PRIMARY KEY)", 12)
	if err != nil {
		t.Fatal(err)
	}
	s3, err := apply(s2, "DROP KEYSPACE ks", 13)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s3.Keyspace("ks"); ok {
		t.Errorf("keyspace ks still exists after DROP KEYSPACE")
	}
	if _, ok := s3.TableByID(12); ok {
		t.Errorf("table ks.t (id 12) is still found by id after DROP KEYSPACE ks")
	}
	if len(s3.Keyspaces()) != 0 || len(s3.Tables("")) != 0 {
		t.Errorf("after DROP KEYSPACE the schema lists %d keyspaces and %d tables, want none", len(s3.Keyspaces()), len(s3.Tables("")))
	}
	if again, err := apply(s3, "DROP KEYSPACE IF EXISTS ks", 14); err != nil || again != s3 {
		t.Errorf("DROP KEYSPACE IF EXISTS on a missing keyspace = %v; want the same schema, no error", err)
	}
	if _, err := apply(s3, "DROP KEYSPACE ks", 14); !errors.Is(err, ErrUnknownKeyspace) || err.Error() != "unknown keyspace ks" {
		t.Errorf("DROP KEYSPACE of a missing keyspace: error %v, want unknown keyspace ks", err)
	}
	// Re-creating with a clock behind the drop still supersedes the drop.
	s4, err := apply(s3, ksDDL, 5)
	if err != nil {
		t.Fatal(err)
	}
	k, _ = s4.Keyspace("ks")
	if k.Version.Compare(Version{13, "n1"}) <= 0 {
		t.Errorf("keyspace re-created by a node whose clock is behind has version %v, want after the drop at 13@n1", k.Version)
	}
	if len(s4.Tables("ks")) != 0 {
		t.Errorf("the re-created keyspace has tables %v from its previous incarnation", s4.Tables("ks"))
	}
}

func TestApplyTables(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	s1, err := apply(s, "CREATE TABLE t (k int PRIMARY KEY, v text)", 10)
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := s1.Table("ks", "t")
	if !ok || tb.ID != 10 {
		t.Fatalf("CREATE TABLE t with current keyspace ks: Table(ks, t) = %v, %v; want id 10", tb, ok)
	}
	if got, ok := s1.TableByID(10); !ok || got != tb {
		t.Errorf("TableByID(10) = %v, %v; want ks.t", got, ok)
	}
	if again, err := apply(s1, "CREATE TABLE IF NOT EXISTS ks.t (x int PRIMARY KEY)", 11); err != nil || again != s1 {
		t.Errorf("CREATE TABLE IF NOT EXISTS on an existing table = %v; want the same schema", err)
	}
	if _, err := apply(s1, "CREATE TABLE ks.t (x int PRIMARY KEY)", 11); !errors.Is(err, ErrExists) || err.Error() != "table ks.t already exists" {
		t.Errorf("CREATE TABLE twice: error %v, want table ks.t already exists", err)
	}
	st, _ := cql.ParseStatement("CREATE TABLE ks2.u (k int PRIMARY KEY)")
	if _, err := s1.Apply(st, "", Change{Version: Version{11, "n1"}, TableID: 10}); err == nil || err.Error() != "table id 10 is already used by table ks.t" {
		t.Errorf("CREATE TABLE with a used id: error %v", err)
	}
	st, _ = cql.ParseStatement("CREATE TABLE u (k int PRIMARY KEY)")
	if _, err := s1.Apply(st, "", Change{Version: Version{11, "n1"}, TableID: 11}); err == nil || err.Error() != "no keyspace for table u: USE a keyspace or write keyspace.u" {
		t.Errorf("CREATE TABLE without a keyspace: error %v", err)
	}
	s2, err := apply(s1, "CREATE TABLE ks2.t (k int PRIMARY KEY)", 11)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range s2.Tables("") {
		names = append(names, tb.QualifiedName())
	}
	if !slices.Equal(names, []string{"ks.t", "ks2.t"}) {
		t.Errorf("Tables(\"\") = %v, want [ks.t ks2.t]", names)
	}

	s3, err := apply(s2, "DROP TABLE t", 12)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s3.Table("ks", "t"); ok {
		t.Errorf("ks.t exists after DROP TABLE")
	}
	if _, ok := s3.TableByID(10); ok {
		t.Errorf("TableByID(10) finds ks.t after DROP TABLE")
	}
	if _, ok := s2.TableByID(10); !ok {
		t.Errorf("DROP TABLE changed the schema it was applied to")
	}
	if again, err := apply(s3, "DROP TABLE IF EXISTS t", 13); err != nil || again != s3 {
		t.Errorf("DROP TABLE IF EXISTS on a missing table = %v; want the same schema", err)
	}
	if again, err := apply(s3, "DROP TABLE IF EXISTS nope.t", 13); err != nil || again != s3 {
		t.Errorf("DROP TABLE IF EXISTS in a missing keyspace = %v; want the same schema", err)
	}
	if _, err := apply(s3, "DROP TABLE t", 13); !errors.Is(err, ErrUnknownTable) {
		t.Errorf("DROP TABLE of a missing table: error %v, want ErrUnknownTable", err)
	}
	// Re-created, the table gets a new id, and a version after the drop even
	// from a node whose clock is behind.
	if _, err := apply(s3, "CREATE TABLE t (k int PRIMARY KEY)", 10); err == nil {
		t.Errorf("re-creating ks.t with the dropped table's id 10 succeeded, want an error")
	}
	st, _ = cql.ParseStatement("CREATE TABLE t (k bigint PRIMARY KEY)")
	s4, err := s3.Apply(st, "ks", Change{Version: Version{3, "n2"}, TableID: 99})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ = s4.Table("ks", "t")
	if tb.ID != 99 || tb.Version.Compare(Version{12, "n1"}) <= 0 || tb.Columns[0].Type != TypeBigInt {
		t.Errorf("re-created table: id %d, version %v, type %v; want id 99, a version after 12@n1, bigint", tb.ID, tb.Version, tb.Columns[0].Type)
	}

	if _, err := apply(s4, "SELECT * FROM t", 20); err == nil || err.Error() != "SELECT is not a schema statement" {
		t.Errorf("Apply(SELECT): error %v, want SELECT is not a schema statement", err)
	}
	if _, err := apply(s4, "USE ks", 20); err == nil || err.Error() != "USE is not a schema statement" {
		t.Errorf("Apply(USE): error %v", err)
	}
	if _, err := s4.TableFor(cql.TableName{Name: cql.Ident{Name: "t"}}, "nope"); !errors.Is(err, ErrUnknownKeyspace) || err.Error() != "unknown keyspace nope" {
		t.Errorf("TableFor in a missing keyspace: error %v", err)
	}
}

func TestTableIDFor(t *testing.T) {
	seen := make(map[TableID]string)
	for _, ks := range []string{"a", "ab", "b"} {
		for _, tb := range []string{"", "b", "t"} {
			for _, v := range []Version{{1, "n1"}, {2, "n1"}, {1, "n2"}} {
				id := TableIDFor(ks, tb, v)
				key := ks + "." + tb + "@" + v.String()
				if id == 0 {
					t.Errorf("TableIDFor(%s) = 0", key)
				}
				if prev, dup := seen[id]; dup {
					t.Errorf("TableIDFor(%s) = TableIDFor(%s) = %d", key, prev, id)
				}
				seen[id] = key
				if again := TableIDFor(ks, tb, v); again != id {
					t.Errorf("TableIDFor(%s) is not deterministic: %d then %d", key, id, again)
				}
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"USE nope", "1:1: unknown keyspace nope"},
		{ksDDL + "CREATE TABLE t (k int PRIMARY KEY)", "2:1: no keyspace for table t: USE a keyspace or write keyspace.t"},
		{"SELEC", "1:1: expected statement, found identifier SELEC"},
	}
	for _, tt := range tests {
		if _, err := Build(tt.src); err == nil || err.Error() != tt.want {
			t.Errorf("Build(%q) error = %v, want %q", tt.src, err, tt.want)
		}
	}
}

func TestStatementName(t *testing.T) {
	tests := []struct{ src, want string }{
		{"CREATE KEYSPACE k WITH x = 1", "CREATE KEYSPACE"}, {"DROP KEYSPACE k", "DROP KEYSPACE"}, {"USE k", "USE"},
		{"CREATE TABLE t (k int PRIMARY KEY)", "CREATE TABLE"}, {"ALTER TABLE t WITH x = 1", "ALTER TABLE"},
		{"DROP TABLE t", "DROP TABLE"}, {"INSERT INTO t (k) VALUES (1)", "INSERT"}, {"UPDATE t SET v = 1 WHERE k = 1", "UPDATE"},
		{"DELETE FROM t WHERE k = 1", "DELETE"}, {"SELECT * FROM t", "SELECT"}, {"DESCRIBE TABLES", "DESCRIBE"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := StatementName(st); got != tt.want {
			t.Errorf("StatementName(%s) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
