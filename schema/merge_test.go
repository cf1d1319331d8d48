package schema

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// node is a simulated node making schema changes with its own clock.
type node struct {
	id    string
	clock int64
	s     *Schema
}

func (n *node) exec(t *testing.T, src string) {
	t.Helper()
	if err := n.try(src); err != nil {
		t.Fatalf("node %s: %s: %v", n.id, src, err)
	}
}

func (n *node) try(src string) error {
	st, err := cql.ParseStatement(src)
	if err != nil {
		return err
	}
	n.clock++
	v := Version{Timestamp: n.clock, Node: n.id}
	var name cql.TableName
	if ct, ok := st.(*cql.CreateTableStmt); ok {
		name = ct.Table
	}
	s, err := n.s.Apply(st, "", Change{Version: v, TableID: TableIDFor(name.Keyspace.Name, name.Name.Name, v)})
	if err != nil {
		return err
	}
	n.s = s
	return nil
}

func sameSchema(a, b *Schema) bool {
	return a.Digest() == b.Digest() && bytes.Equal(a.Encode(), b.Encode())
}

func TestMergeDropWins(t *testing.T) {
	a := &node{id: "a", clock: 100, s: New()}
	a.exec(t, ksDDL)
	a.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY)")
	a.exec(t, "CREATE TABLE ks.u (k int PRIMARY KEY)")
	b := &node{id: "b", clock: 100, s: a.s} // b's clock is behind a's
	b.exec(t, "DROP TABLE ks.t")
	for _, m := range []*Schema{a.s.Merge(b.s), b.s.Merge(a.s)} {
		if _, ok := m.Table("ks", "t"); ok {
			t.Errorf("the dropped table ks.t came back after merging with a node that still has it")
		}
		if _, ok := m.Table("ks", "u"); !ok {
			t.Errorf("table ks.u was lost in the merge")
		}
	}
	c := &node{id: "c", clock: 0, s: a.s}
	c.exec(t, "DROP KEYSPACE ks")
	for _, m := range []*Schema{a.s.Merge(c.s), c.s.Merge(a.s), b.s.Merge(c.s).Merge(a.s)} {
		if _, ok := m.Keyspace("ks"); ok || len(m.Tables("")) != 0 {
			t.Errorf("the dropped keyspace came back after a merge: keyspaces %v, tables %v", m.Keyspaces(), m.Tables(""))
		}
	}
}

func TestMergeKeyspaceIncarnations(t *testing.T) {
	a := &node{id: "a", s: New()}
	a.exec(t, ksDDL)
	a.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY)")
	b := &node{id: "b", clock: a.clock, s: a.s}
	c := &node{id: "c", clock: a.clock + 1000, s: a.s} // far ahead
	b.exec(t, "DROP KEYSPACE ks")
	b.exec(t, ksDDL)
	b.exec(t, "CREATE TABLE ks.u (k int PRIMARY KEY)")
	// c has not seen the drop, and alters the old table with a later clock.
	c.exec(t, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_reads_per_second': 5}")
	c.exec(t, "CREATE TABLE ks.v (k int PRIMARY KEY)")

	want := b.s
	for _, m := range []*Schema{b.s.Merge(c.s), c.s.Merge(b.s), a.s.Merge(c.s).Merge(b.s), c.s.Merge(b.s).Merge(a.s)} {
		if !sameSchema(m, want) {
			t.Errorf("merging with a node that only knows the dropped incarnation changed the schema: tables %v, want %v", names(m.Tables("")), names(want.Tables("")))
		}
	}
}

func TestMergeConcurrentChanges(t *testing.T) {
	a := &node{id: "a", s: New()}
	a.exec(t, ksDDL)
	a.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY)")
	b := &node{id: "b", clock: a.clock, s: a.s}
	a.exec(t, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_reads_per_second': 1}")
	b.exec(t, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_reads_per_second': 2}")
	// Same timestamp: the node id breaks the tie (b > a).
	for _, m := range []*Schema{a.s.Merge(b.s), b.s.Merge(a.s)} {
		if tb, _ := m.Table("ks", "t"); tb.RateLimit.MaxReadsPerSecond != 2 {
			t.Errorf("concurrent ALTERs at the same timestamp: limit %d won, want node b's 2", tb.RateLimit.MaxReadsPerSecond)
		}
	}
	// Two nodes create the same table: the later creation wins, everywhere.
	a.exec(t, "CREATE TABLE ks.x (k int PRIMARY KEY)")
	b.clock += 5
	b.exec(t, "CREATE TABLE ks.x (k text PRIMARY KEY)")
	ab, ba := a.s.Merge(b.s), b.s.Merge(a.s)
	xa, _ := ab.Table("ks", "x")
	xb, _ := ba.Table("ks", "x")
	if xa != nil && xa.Columns[0].Type != TypeText || xb.ID != xa.ID {
		t.Errorf("concurrent CREATE TABLE: merged tables differ (%d vs %d) or the earlier one won", xa.ID, xb.ID)
	}
	if _, ok := ab.TableByID(xa.ID); !ok {
		t.Errorf("TableByID does not find the merged table")
	}
}

func names(ts []*Table) []string {
	var n []string
	for _, t := range ts {
		n = append(n, t.QualifiedName()+fmt.Sprintf("#%d", t.ID))
	}
	return n
}

// randomSchemas runs random schema changes on three nodes that sometimes
// exchange schemas, and returns a sample of the schemas they went through.
func randomSchemas(t *testing.T, seed uint64) []*Schema {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	nodes := []*node{{id: "n1", s: New()}, {id: "n2", s: New()}, {id: "n3", s: New()}}
	var out []*Schema
	keyspaces := []string{"k1", "k2"}
	tables := []string{"t1", "t2", "t3"}
	for step := 0; step < 60; step++ {
		n := nodes[rng.IntN(len(nodes))]
		n.clock += int64(rng.IntN(3)) // clocks advance unevenly and may stand still
		ks, tb := keyspaces[rng.IntN(len(keyspaces))], tables[rng.IntN(len(tables))]
		var src string
		switch rng.IntN(8) {
		case 0:
			src = fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", ks, 1+rng.IntN(3))
		case 1:
			src = "DROP KEYSPACE IF EXISTS " + ks
		case 2, 3:
			src = fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (k int, c int, v text, PRIMARY KEY (k, c))", ks, tb)
		case 4:
			src = fmt.Sprintf("ALTER TABLE %s.%s WITH per_partition_rate_limit = {'max_writes_per_second': %d}", ks, tb, 1+rng.IntN(100))
		case 5:
			src = fmt.Sprintf("DROP TABLE IF EXISTS %s.%s", ks, tb)
		case 6:
			o := nodes[rng.IntN(len(nodes))]
			n.s = n.s.Merge(o.s)
		case 7:
			src = fmt.Sprintf("ALTER KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", ks, 1+rng.IntN(3))
		}
		if src != "" {
			_ = n.try(src) // a change that does not apply (missing keyspace) is skipped
		}
		out = append(out, n.s)
	}
	return out
}

func TestMergeIsCommutativeAssociativeIdempotent(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		ss := randomSchemas(t, seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		for i := 0; i < 40; i++ {
			a, b, c := ss[rng.IntN(len(ss))], ss[rng.IntN(len(ss))], ss[rng.IntN(len(ss))]
			if !sameSchema(a.Merge(b), b.Merge(a)) {
				t.Fatalf("seed %d: a.Merge(b) != b.Merge(a)\na: %v\nb: %v", seed, names(a.Tables("")), names(b.Tables("")))
			}
			if !sameSchema(a.Merge(b).Merge(c), a.Merge(b.Merge(c))) {
				t.Fatalf("seed %d: (a.Merge(b)).Merge(c) != a.Merge(b.Merge(c))", seed)
			}
			if !sameSchema(a.Merge(a), a) {
				t.Fatalf("seed %d: a.Merge(a) != a", seed)
			}
			if ab := a.Merge(b); !sameSchema(ab.Merge(b), ab) || !sameSchema(ab.Merge(a), ab) {
				t.Fatalf("seed %d: merging a schema into a merge that already includes it changed the result", seed)
			}
			// A merged schema is a valid schema: it survives encoding.
			m := a.Merge(b).Merge(c)
			d, err := Decode(m.Encode())
			if err != nil || !sameSchema(d, m) {
				t.Fatalf("seed %d: a merged schema does not decode back: %v", seed, err)
			}
		}
		// All nodes that exchange everything, in any order, agree.
		all := New()
		for _, s := range ss {
			all = all.Merge(s)
		}
		rev := New()
		for i := len(ss) - 1; i >= 0; i-- {
			rev = ss[i].Merge(rev)
		}
		if !sameSchema(all, rev) {
			t.Fatalf("seed %d: merging every schema forwards and backwards gave different digests %v and %v", seed, all.Digest(), rev.Digest())
		}
	}
}

func TestMergeEqualIsIdentity(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY)")
	d, _ := Decode(s.Encode())
	if m := s.Merge(d); m != s {
		t.Errorf("merging an equal schema returned a new value, want the receiver")
	}
}

// TestRestrictIsTheKeyspacesPart checks the value schema consensus agrees on: a keyspace's
// entries only, tombstones included, and merging the parts back gives the whole.
func TestRestrictIsTheKeyspacesPart(t *testing.T) {
	n := &node{id: "a", clock: 100, s: New()}
	n.exec(t, ksDDL)
	n.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY)")
	n.exec(t, "CREATE TABLE ks.u (k int PRIMARY KEY)")
	n.exec(t, "DROP TABLE ks.u")
	n.exec(t, "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	n.exec(t, "CREATE TABLE other.t (k int PRIMARY KEY)")
	n.exec(t, "CREATE KEYSPACE gone WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	n.exec(t, "DROP KEYSPACE gone")

	ks := n.s.Restrict("ks")
	if !ks.HoldsOnly("ks") || ks.HoldsOnly("other") {
		t.Errorf("Restrict(ks).HoldsOnly: ks %v, other %v; want true, false", ks.HoldsOnly("ks"), ks.HoldsOnly("other"))
	}
	if got := len(ks.Tables("")); got != 1 {
		t.Errorf("Restrict(ks) has %d live tables, want 1 (ks.t)", got)
	}
	if _, ok := ks.EntryVersion("ks", "u"); !ok {
		t.Errorf("Restrict(ks) lost the tombstone of ks.u")
	}
	if v, ok := n.s.Restrict("gone").EntryVersion("gone", ""); !ok || v.Timestamp != 108 {
		t.Errorf("Restrict(gone).EntryVersion = %v, %v; want the drop's version 108@a", v, ok)
	}
	if !New().Restrict("x").Empty() || !n.s.Restrict("nothing").Empty() {
		t.Errorf("Restrict of a name without entries is not empty")
	}
	whole := New()
	for _, name := range []string{"gone", "other", "ks"} {
		whole = whole.Merge(n.s.Restrict(name))
	}
	if !sameSchema(whole, n.s) {
		t.Errorf("merging every keyspace's part does not give the whole schema back")
	}
}

// TestApplyDerivesTableIDs: a CREATE TABLE without an id gets TableIDFor of its name and the
// version of its creation, raised above a dropped predecessor's.
func TestApplyDerivesTableIDs(t *testing.T) {
	s, err := Build(ksDDL)
	if err != nil {
		t.Fatal(err)
	}
	create, _ := cql.ParseStatement("CREATE TABLE ks.t (k int PRIMARY KEY)")
	drop, _ := cql.ParseStatement("DROP TABLE ks.t")
	v := Version{Timestamp: 10, Node: "n1"}
	s1, err := s.Apply(create, "", Change{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	t1, _ := s1.Table("ks", "t")
	if t1.ID != TableIDFor("ks", "t", v) {
		t.Errorf("table id %d, want TableIDFor(ks, t, %v) = %d", t1.ID, v, TableIDFor("ks", "t", v))
	}
	s2, err := s1.Apply(drop, "", Change{Version: Version{Timestamp: 20, Node: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	// A clock behind the drop: the creation's version is raised above it, and so its id is new.
	s3, err := s2.Apply(create, "", Change{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	t3, _ := s3.Table("ks", "t")
	if t3.ID == t1.ID || t3.Version.Compare(Version{Timestamp: 20, Node: "n1"}) <= 0 {
		t.Errorf("table created again after a drop: id %d (first %d), version %v; want a new id and a version after the drop's", t3.ID, t1.ID, t3.Version)
	}
}

func TestStatementTarget(t *testing.T) {
	tests := []struct {
		src, current, ks, table, err string
	}{
		{"CREATE KEYSPACE a WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", "", "a", "", ""},
		{"DROP KEYSPACE a", "b", "a", "", ""},
		{"CREATE TABLE t (k int PRIMARY KEY)", "cur", "cur", "t", ""},
		{"ALTER TABLE x.t WITH per_partition_rate_limit = {}", "cur", "x", "t", ""},
		{"DROP TABLE t", "", "", "", "no keyspace for table t"},
		{"SELECT * FROM x.t WHERE k = 1", "", "", "", "SELECT is not a schema statement"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		ks, table, err := StatementTarget(st, tt.current)
		if tt.err != "" {
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.err)) {
				t.Errorf("StatementTarget(%s) error %v, want %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil || ks != tt.ks || table != tt.table {
			t.Errorf("StatementTarget(%s, %q) = %q, %q, %v; want %q, %q", tt.src, tt.current, ks, table, err, tt.ks, tt.table)
		}
	}
}

// TestPurgedTombstonesStayPurged: once every node holds a drop, the tombstone is purged under a
// GC horizon; neither a node that has not purged yet nor one that somehow missed the drop (it
// still has the object, at an older version) brings back the tombstone or the object.
func TestPurgedTombstonesStayPurged(t *testing.T) {
	a := &node{id: "a", clock: 100, s: New()}
	a.exec(t, ksDDL)
	a.exec(t, "CREATE KEYSPACE gone WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	a.exec(t, "CREATE TABLE gone.x (k int PRIMARY KEY)")
	a.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY)")
	a.exec(t, "CREATE TABLE ks.u (k int PRIMARY KEY)")
	missed := a.s // a node that misses the drops below
	a.exec(t, "DROP TABLE ks.t")
	a.exec(t, "DROP KEYSPACE gone")
	agreed := a.s // every node holds this
	if got := agreed.Tombstones(); got != 2 {
		t.Fatalf("Tombstones() = %d after two drops, want 2", got)
	}
	purged := agreed.Purge(a.clock + 1)
	if got := purged.Tombstones(); got != 0 {
		t.Errorf("Tombstones() = %d after Purge past every drop, want 0", got)
	}
	if len(purged.Encode()) >= len(agreed.Encode()) {
		t.Errorf("purging did not shrink the schema: %d bytes, %d before", len(purged.Encode()), len(agreed.Encode()))
	}
	if purged.Purge(a.clock+1) != purged || agreed.Purge(0) != agreed {
		t.Errorf("Purge at or below the horizon changed the schema")
	}
	for _, o := range []struct {
		what string
		s    *Schema
	}{{"a node that has not purged yet", agreed}, {"a node that missed the drops", missed}} {
		for _, m := range []*Schema{purged.Merge(o.s), o.s.Merge(purged)} {
			if !sameSchema(m, purged) {
				t.Errorf("merging the purged schema with %s: tables %v, %d tombstones, horizon %d; want the purged schema (tables %v)",
					o.what, names(m.Tables("")), m.Tombstones(), m.GCHorizon(), names(purged.Tables("")))
			}
		}
	}
	d, err := Decode(purged.Encode())
	if err != nil || !sameSchema(d, purged) || d.GCHorizon() != purged.GCHorizon() {
		t.Fatalf("a purged schema does not decode back: %v", err)
	}
	if _, err := Decode(append(agreed.Encode(), 0)); err == nil {
		t.Errorf("Decode accepted a zero GC horizon, which Encode never writes")
	}

	// Changes made after the horizon merge as usual, from either side, and so does recreating a
	// purged name.
	b := &node{id: "b", clock: a.clock + 10, s: purged}
	b.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	b.exec(t, "CREATE TABLE ks.w (k int PRIMARY KEY)")
	c := &node{id: "c", clock: a.clock + 10, s: agreed}
	c.exec(t, "CREATE TABLE ks.z (k int PRIMARY KEY)")
	for _, m := range []*Schema{b.s.Merge(c.s), c.s.Merge(b.s)} {
		var got []string
		for _, tb := range m.Tables("") {
			got = append(got, tb.QualifiedName())
		}
		if want := []string{"ks.t", "ks.u", "ks.w", "ks.z"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("after the horizon: tables %v, want %v", got, want)
		}
		if m.Tombstones() != 0 {
			t.Errorf("after the horizon: %d tombstones, want 0", m.Tombstones())
		}
	}
}

// TestMergeWithHorizonsIsCommutativeAssociativeIdempotent: the merge laws hold for nodes that
// purged an agreed schema under different horizons (or not yet) and changed it afterwards, as
// Purge's contract allows.
func TestMergeWithHorizonsIsCommutativeAssociativeIdempotent(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		agreed := New()
		for _, s := range randomSchemas(t, seed) {
			agreed = agreed.Merge(s)
		}
		var top int64
		for _, v := range agreed.tombstoneVersions() {
			top = max(top, v.Timestamp)
		}
		rng := rand.New(rand.NewPCG(seed, 11))
		var ss []*Schema
		for i, base := range []*Schema{agreed, agreed.Purge(top/2 + 1), agreed.Purge(top + 1), agreed.Purge(top + 3)} {
			n := &node{id: fmt.Sprintf("m%d", i), clock: top + 5, s: base}
			ss = append(ss, n.s)
			for step := 0; step < 4; step++ {
				n.clock += int64(rng.IntN(3))
				ks, tb := []string{"k1", "k2"}[rng.IntN(2)], []string{"t1", "t2", "t4"}[rng.IntN(3)]
				switch rng.IntN(3) {
				case 0:
					_ = n.try(fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s (k int PRIMARY KEY)", ks, tb))
				case 1:
					_ = n.try(fmt.Sprintf("DROP TABLE IF EXISTS %s.%s", ks, tb))
				case 2:
					_ = n.try(fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks))
				}
				ss = append(ss, n.s)
			}
		}
		for i := 0; i < 60; i++ {
			a, b, c := ss[rng.IntN(len(ss))], ss[rng.IntN(len(ss))], ss[rng.IntN(len(ss))]
			if !sameSchema(a.Merge(b), b.Merge(a)) {
				t.Fatalf("seed %d: a.Merge(b) != b.Merge(a)", seed)
			}
			if !sameSchema(a.Merge(b).Merge(c), a.Merge(b.Merge(c))) {
				t.Fatalf("seed %d: (a.Merge(b)).Merge(c) != a.Merge(b.Merge(c))", seed)
			}
			if !sameSchema(a.Merge(a), a) {
				t.Fatalf("seed %d: a.Merge(a) != a", seed)
			}
			m := a.Merge(b).Merge(c)
			if d, err := Decode(m.Encode()); err != nil || !sameSchema(d, m) {
				t.Fatalf("seed %d: a merged schema does not decode back: %v", seed, err)
			}
		}
	}
}
