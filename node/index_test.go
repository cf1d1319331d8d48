package node_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
)

// indexRows runs q to its end (paged as q says) and returns its rows (k, c), which an index
// query returns by token, then clustering.
func indexRows(t *testing.T, q *gocql.Query) []scanKey {
	t.Helper()
	return collect(t, q)
}

// waitIndexBuilt waits until an index query through s at ALL stops failing: every replica has
// built the index.
func waitIndexBuilt(t *testing.T, s *gocql.Session, query string) {
	t.Helper()
	poll.Must(t, 20*time.Second, "the index built on every replica", func() error {
		return s.Query(query).Consistency(gocql.All).Exec()
	})
}

// Secondary indexes end to end on three nodes at RF 3, through gocql: rows written before the
// index (the background build), overwrites and out-of-order writes that leave stale entries,
// deletes, paging through every node, a paging state continued on another node, the partition
// restricted form, system_schema.indexes, and DROP INDEX.
func TestSecondaryIndexQueries(t *testing.T) {
	var paused atomic.Bool
	tc := startClusterWith(t, 3, func(cfg *node.Config) {
		cfg.Testing = &node.TestingKnobs{PauseHintReplay: paused.Load}
	})
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, c0, client.One, "CREATE TABLE ks.u (k int, c int, v text, w int, PRIMARY KEY (k, c))")
	var want []scanKey
	for k := range int32(30) {
		for c := range int32(2) {
			v := "odd"
			if k%2 == 0 {
				v = "even"
			}
			exec(t, c0, client.Quorum, fmt.Sprintf("INSERT INTO ks.u (k, c, v, w) VALUES (%d, %d, '%s', %d)", k, c, v, c))
			if v == "even" {
				want = append(want, scanKey{k: k, c: c, token: intToken(k)})
			}
		}
	}
	slices.SortFunc(want, scanOrder)
	sessions := []*gocql.Session{scanSession(t, tc, 0), scanSession(t, tc, 1), scanSession(t, tc, 2)}
	if err := sessions[0].Query("SELECT k, c FROM u WHERE v = 'even'").Exec(); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Fatalf("a query on an unindexed column: %v, want the ALLOW FILTERING refusal", err)
	}
	exec(t, c0, client.One, "CREATE INDEX ON ks.u (v)")
	waitIndexBuilt(t, sessions[0], "SELECT k, c FROM u WHERE v = 'even'")

	for i, s := range sessions {
		for _, page := range []int{0, 1, 7, 1000} {
			if got := indexRows(t, s.Query("SELECT k, c FROM u WHERE v = 'even'").PageSize(page)); !slices.Equal(got, want) {
				t.Errorf("index query through node %d in pages of %d returned\n%v\nwant\n%v", i, page, got, want)
			}
		}
	}
	// The partition restricted form, and another restriction with ALLOW FILTERING.
	if got := indexRows(t, sessions[1].Query("SELECT k, c FROM u WHERE k = 4 AND v = 'even'")); len(got) != 2 || got[0].k != 4 {
		t.Errorf("k = 4 AND v = 'even' returned %v", got)
	}
	if got := indexRows(t, sessions[1].Query("SELECT k, c FROM u WHERE v = 'even' AND w = 1 ALLOW FILTERING")); len(got) != len(want)/2 {
		t.Errorf("v = 'even' AND w = 1 returned %d rows, want %d", len(got), len(want)/2)
	}
	if got := indexRows(t, sessions[2].Query("SELECT k, c FROM u WHERE v = 'even' LIMIT 5").PageSize(2)); !slices.Equal(got, want[:5]) {
		t.Errorf("LIMIT 5 in pages of 2 returned %v, want %v", got, want[:5])
	}

	// A paging state continues on another coordinator.
	it := sessions[0].Query("SELECT k, c FROM u WHERE v = 'even'").PageSize(4).Iter()
	var all []scanKey
	for k, c := int32(0), int32(0); len(all) < 4 && it.Scan(&k, &c); {
		all = append(all, scanKey{k: k, c: c, token: intToken(k)})
	}
	state := it.PageState()
	if err := it.Close(); err != nil || len(state) == 0 {
		t.Fatalf("first page: err %v, paging state %x", err, state)
	}
	for n := 1; len(state) > 0; n++ {
		it := sessions[n%3].Query("SELECT k, c FROM u WHERE v = 'even'").PageSize(4).PageState(state).Iter()
		for k, c := int32(0), int32(0); it.Scan(&k, &c); {
			all = append(all, scanKey{k: k, c: c, token: intToken(k)})
		}
		state = it.PageState()
		if err := it.Close(); err != nil || n > len(want) {
			t.Fatalf("page %d: err %v", n, err)
		}
	}
	if !slices.Equal(all, want) {
		t.Errorf("an index query continued on other nodes returned\n%v\nwant\n%v", all, want)
	}

	// Overwrites, an out-of-order older write and deletes leave stale entries: never returned.
	exec(t, c0, client.Quorum, "UPDATE ks.u SET v = 'moved' WHERE k = 0 AND c = 0")
	exec(t, c0, client.Quorum, "INSERT INTO ks.u (k, c, v) VALUES (2, 0, 'late') USING TIMESTAMP 1")
	exec(t, c0, client.Quorum, "DELETE FROM ks.u WHERE k = 4")
	exec(t, c0, client.Quorum, "DELETE v FROM ks.u WHERE k = 6 AND c = 1")
	want2 := slices.DeleteFunc(slices.Clone(want), func(r scanKey) bool {
		return r.k == 0 && r.c == 0 || r.k == 4 || r.k == 6 && r.c == 1
	})
	for i, s := range sessions {
		if got := indexRows(t, s.Query("SELECT k, c FROM u WHERE v = 'even'").PageSize(3)); !slices.Equal(got, want2) {
			t.Errorf("after overwrites and deletes, through node %d:\n%v\nwant\n%v", i, got, want2)
		}
	}
	if got := indexRows(t, sessions[0].Query("SELECT k, c FROM u WHERE v = 'late'")); len(got) != 0 {
		t.Errorf("an older write's value is returned: %v", got)
	}
	if got := indexRows(t, sessions[0].Query("SELECT k, c FROM u WHERE v = 'moved'")); len(got) != 1 || got[0].k != 0 {
		t.Errorf("v = 'moved' returned %v", got)
	}

	// A node that missed writes (hints held back): the other replicas' entries find the rows,
	// and the read back repairs the node, index entries included.
	paused.Store(true)
	tc.stop(2)
	poll.Must(t, 10*time.Second, "node 1 sees node 3 down", poll.Bool(func() bool {
		return !tc.nodes[0].Cluster().IsLive(cluster.NodeID(tc.nodeID(2)))
	}))
	exec(t, c0, client.Quorum, "INSERT INTO ks.u (k, c, v) VALUES (100, 0, 'new')")
	exec(t, c0, client.Quorum, "UPDATE ks.u SET v = 'new' WHERE k = 1 AND c = 1")
	tc.restart(2)
	tc.waitLive(20*time.Second, 3)
	s2 := scanSession(t, tc, 2)
	got := indexRows(t, s2.Query("SELECT k, c FROM u WHERE v = 'new'").Consistency(gocql.All))
	if len(got) != 2 {
		t.Fatalf("v = 'new' at ALL through the node that missed it returned %v, want (1,1) and (100,0)", got)
	}
	tc.stop(0)
	tc.stop(1)
	if got := indexRows(t, s2.Query("SELECT k, c FROM u WHERE v = 'new'").Consistency(gocql.One)); len(got) != 2 {
		t.Errorf("node 3 alone after the read repair returned %v, want (1,1) and (100,0)", got)
	}
}

// An index on a static column finds every row of the partitions whose static value matches,
// and a partition of static values alone.
func TestSecondaryIndexOnStaticColumn(t *testing.T) {
	tc := startCluster(t, 1)
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.One, "CREATE TABLE ks.st (k int, c int, s text STATIC, v int, PRIMARY KEY (k, c))")
	exec(t, c0, client.One, "INSERT INTO ks.st (k, c, s, v) VALUES (1, 1, 'blue', 1)")
	exec(t, c0, client.One, "INSERT INTO ks.st (k, c, v) VALUES (1, 2, 2)")
	exec(t, c0, client.One, "INSERT INTO ks.st (k, s) VALUES (2, 'blue')") // static values alone
	exec(t, c0, client.One, "INSERT INTO ks.st (k, c, s, v) VALUES (3, 1, 'red', 3)")
	exec(t, c0, client.One, "CREATE INDEX ON ks.st (s)")
	s := scanSession(t, tc, 0)
	waitIndexBuilt(t, s, "SELECT k FROM st WHERE s = 'blue'")
	count := func(v string) map[int32]int {
		it := s.Query("SELECT k, c FROM st WHERE s = ?", v).PageSize(2).Iter()
		got := map[int32]int{}
		var k int32
		var c *int32
		for it.Scan(&k, &c) {
			got[k]++
		}
		if err := it.Close(); err != nil {
			t.Fatalf("s = %q: %v", v, err)
		}
		return got
	}
	if got := count("blue"); len(got) != 2 || got[1] != 2 || got[2] != 1 {
		t.Errorf("s = 'blue' returned rows per partition %v, want 1: 2 rows, 2: its static row", got)
	}
	exec(t, c0, client.One, "UPDATE ks.st SET s = 'red' WHERE k = 1")
	if got := count("blue"); len(got) != 1 || got[2] != 1 {
		t.Errorf("after the update, s = 'blue' returned %v, want partition 2 only", got)
	}
	if got := count("red"); len(got) != 2 || got[1] != 2 || got[3] != 1 {
		t.Errorf("s = 'red' returned %v, want partitions 1 (2 rows) and 3", got)
	}
}

// Indexes on the elements of non-frozen collections: values of a set and a map, keys of a map,
// queried by CONTAINS and CONTAINS KEY; elements removed or overwritten are not found.
func TestSecondaryIndexOnCollections(t *testing.T) {
	tc := startCluster(t, 1)
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.One, "CREATE TABLE ks.col (k int PRIMARY KEY, tags set<text>, attrs map<text, int>, l list<int>)")
	exec(t, c0, client.One, "INSERT INTO ks.col (k, tags, attrs, l) VALUES (1, {'a', 'b'}, {'x': 1}, [5, 6])")
	exec(t, c0, client.One, "INSERT INTO ks.col (k, tags, attrs, l) VALUES (2, {'b'}, {'y': 1}, [6])")
	for _, ddl := range []string{"CREATE INDEX ON ks.col (tags)", "CREATE INDEX ON ks.col (keys(attrs))", "CREATE INDEX ON ks.col (values(attrs))", "CREATE INDEX ON ks.col (values(l))", "CREATE INDEX ON ks.col (entries(attrs))"} {
		exec(t, c0, client.One, ddl)
	}
	s := scanSession(t, tc, 0)
	// Each index is built on its own: wait for every one the queries below use.
	for _, q := range []string{"SELECT k FROM col WHERE l CONTAINS 6", "SELECT k FROM col WHERE tags CONTAINS 'a'", "SELECT k FROM col WHERE attrs CONTAINS KEY 'y'", "SELECT k FROM col WHERE attrs CONTAINS 1", "SELECT k FROM col WHERE attrs['x'] = 1"} {
		waitIndexBuilt(t, s, q)
	}
	keys := func(q string, args ...any) []int32 {
		t.Helper()
		it := s.Query(q, args...).PageSize(1).Iter()
		var out []int32
		var k int32
		for it.Scan(&k) {
			out = append(out, k)
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		q    string
		arg  any
		want []int32
	}{
		{"SELECT k FROM col WHERE tags CONTAINS ?", "b", []int32{1, 2}},
		{"SELECT k FROM col WHERE tags CONTAINS ?", "a", []int32{1}},
		{"SELECT k FROM col WHERE attrs CONTAINS KEY ?", "y", []int32{2}},
		{"SELECT k FROM col WHERE attrs CONTAINS ?", 1, []int32{1, 2}},
		{"SELECT k FROM col WHERE l CONTAINS ?", 6, []int32{1, 2}},
		{"SELECT k FROM col WHERE attrs['x'] = ?", 1, []int32{1}},
		{"SELECT k FROM col WHERE attrs['x'] = ?", 2, nil},
	} {
		if got := keys(tt.q, tt.arg); !slices.Equal(got, tt.want) {
			t.Errorf("%s (%v) = %v, want %v", tt.q, tt.arg, got, tt.want)
		}
	}
	exec(t, c0, client.One, "UPDATE ks.col SET attrs['x'] = 3 WHERE k = 1")
	if got := keys("SELECT k FROM col WHERE attrs[?] = ?", "x", 3); !slices.Equal(got, []int32{1}) {
		t.Errorf("attrs['x'] = 3 after the update = %v, want [1]", got)
	}
	if got := keys("SELECT k FROM col WHERE attrs['x'] = 1"); len(got) != 0 {
		t.Errorf("attrs['x'] = 1 after the update = %v, want none", got)
	}
	exec(t, c0, client.One, "UPDATE ks.col SET tags = tags - {'b'} WHERE k = 1")
	exec(t, c0, client.One, "UPDATE ks.col SET attrs = {'z': 2} WHERE k = 2")
	exec(t, c0, client.One, "UPDATE ks.col SET l = [7] WHERE k = 2")
	for _, tt := range []struct {
		q    string
		arg  any
		want []int32
	}{
		{"SELECT k FROM col WHERE tags CONTAINS ?", "b", []int32{2}},
		{"SELECT k FROM col WHERE attrs CONTAINS KEY ?", "y", nil},
		{"SELECT k FROM col WHERE attrs CONTAINS KEY ?", "z", []int32{2}},
		{"SELECT k FROM col WHERE attrs CONTAINS ?", 3, []int32{1}},
		{"SELECT k FROM col WHERE l CONTAINS ?", 6, []int32{1}},
	} {
		if got := keys(tt.q, tt.arg); !slices.Equal(got, tt.want) {
			t.Errorf("after the updates, %s (%v) = %v, want %v", tt.q, tt.arg, got, tt.want)
		}
	}
	if err := s.Query("SELECT k FROM col WHERE attrs CONTAINS KEY 'x' AND tags CONTAINS 'a'").Exec(); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("two indexed restrictions without ALLOW FILTERING: %v", err)
	}
	if got := keys("SELECT k FROM col WHERE attrs CONTAINS KEY 'x' AND tags CONTAINS 'a' ALLOW FILTERING"); !slices.Equal(got, []int32{1}) {
		t.Errorf("two collection restrictions = %v, want [1]", got)
	}
}

// The index's schema: system_schema.indexes, DESCRIBE, DROP INDEX, and the refusals.
func TestSecondaryIndexSchema(t *testing.T) {
	tc := startCluster(t, 1)
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.One, "CREATE TABLE ks.u (k int, c int, v text, PRIMARY KEY (k, c))")
	exec(t, c0, client.One, "CREATE INDEX IF NOT EXISTS vi ON ks.u (v)")
	exec(t, c0, client.One, "CREATE INDEX IF NOT EXISTS vi ON ks.u (v)") // a no-op
	s := scanSession(t, tc, 0)
	var table, name, kind string
	var options map[string]string
	if err := s.Query("SELECT table_name, index_name, kind, options FROM system_schema.indexes WHERE keyspace_name = 'ks'").Scan(&table, &name, &kind, &options); err != nil {
		t.Fatal(err)
	}
	if table != "u" || name != "vi" || kind != "COMPOSITES" || options["target"] != "v" {
		t.Errorf("system_schema.indexes = %s %s %s %v", table, name, kind, options)
	}
	// gocql's keyspace metadata reads system_schema.indexes.
	if md, err := s.KeyspaceMetadata("ks"); err != nil {
		t.Errorf("gocql keyspace metadata: %v", err)
	} else if ix, ok := md.Indexes["vi"]; !ok || ix.TableName != "u" || ix.Options["target"] != "v" {
		t.Errorf("gocql sees indexes %v, want vi on u (target v)", md.Indexes)
	}
	res := exec(t, c0, client.One, "DESCRIBE TABLE ks.u")
	if desc := fmt.Sprint(res); !strings.Contains(desc, "CREATE INDEX vi ON ks.u (v);") {
		t.Errorf("DESCRIBE TABLE lacks the index: %s", desc)
	}
	for stmt, want := range map[string]string{
		"CREATE INDEX ON ks.u (k)":       "Cannot create secondary index on the only partition key column k",
		"CREATE INDEX other ON ks.u (v)": "Index other is a duplicate of existing index vi",
		"CREATE MATERIALIZED VIEW ks.mv AS SELECT * FROM ks.u PRIMARY KEY (v, k, c)": "create a secondary index",
		"DROP INDEX ks.nope": "Index 'ks.nope' doesn't exist",
	} {
		if err := execErr(c0, stmt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", stmt, err, want)
		}
	}
	exec(t, c0, client.One, "DROP INDEX ks.vi")
	exec(t, c0, client.One, "DROP INDEX IF EXISTS ks.vi")
	if err := s.Query("SELECT k FROM u WHERE v = 'a'").Exec(); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("after DROP INDEX: %v, want the ALLOW FILTERING refusal", err)
	}
}
