package snapshot_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/snapshot"
)

// fixture is a store with a schema of two keyspaces and a snapshot manager over it.
type fixture struct {
	dir   string
	store *replica.Store
	s     *schema.Schema
	m     *snapshot.Manager
}

func newFixture(t testing.TB, opts snapshot.Options) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), s: schema.New()}
	var err error
	f.store, err = replica.Open(filepath.Join(f.dir, "data"), replica.Options{NoSync: true, CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	f.ddl(t, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	f.ddl(t, "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	f.ddl(t, "CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	f.ddl(t, "CREATE TABLE ks.u (k int PRIMARY KEY, v text)")
	f.ddl(t, "CREATE TABLE other.w (k int PRIMARY KEY, v text)")
	f.m, err = snapshot.New(snapshot.Config{Options: opts, Dir: filepath.Join(f.dir, "snapshots"), Store: f.store,
		StoreDir: filepath.Join(f.dir, "data"), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var version int64

func (f *fixture) ddl(t testing.TB, src string) {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	version++
	if f.s, err = f.s.Apply(st, "", schema.Change{Version: schema.Version{Timestamp: version, Node: "n1"}}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) table(t testing.TB, ks, name string) *schema.Table {
	t.Helper()
	tb, ok := f.s.Table(ks, name)
	if !ok {
		t.Fatalf("no table %s.%s", ks, name)
	}
	return tb
}

func intBytes(v int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// mutation writes row (k, c) of a table with clustering, or row k of one without, at ts.
func mutation(tb *schema.Table, k, c int, v string, ts int64) *replicapb.Mutation {
	pk := intBytes(k)
	row := &replicapb.Row{Cells: []*replicapb.Cell{{Column: "v", Value: []byte(v), Timestamp: ts}}, Marker: &ts}
	if len(tb.Clustering) > 0 {
		row.Clustering = [][]byte{intBytes(c)}
	}
	return &replicapb.Mutation{TableId: uint64(tb.ID), PartitionKey: [][]byte{pk}, Token: partitioner.Token(pk), Rows: []*replicapb.Row{row}}
}

func (f *fixture) write(t *testing.T, tb *schema.Table, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	for k := range n {
		for c := range 3 {
			v := fmt.Sprintf("%0100x", rng.Uint64()) // little to compress
			if err := f.store.Apply(tb, mutation(tb, k, c, v, 1000+int64(k))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTakeScopesAndManifest: a snapshot of a table, a keyspace and the node each hold the tables
// of its scope, with the CQL that recreates them and their keyspaces.
func TestTakeScopesAndManifest(t *testing.T) {
	f := newFixture(t, snapshot.Options{})
	f.write(t, f.table(t, "ks", "t"), 500)
	for _, tc := range []struct {
		req    snapshot.Request
		scope  string
		tables []string
	}{
		{snapshot.Request{Tag: "one", Keyspace: "ks", Table: "t"}, snapshot.ScopeTable, []string{"ks.t"}},
		{snapshot.Request{Tag: "ks", Keyspace: "ks"}, snapshot.ScopeKeyspace, []string{"ks.t", "ks.u"}},
		{snapshot.Request{Tag: "all"}, snapshot.ScopeNode, []string{"ks.t", "ks.u", "other.w"}},
	} {
		man, err := f.m.Take(f.s, tc.req)
		if err != nil {
			t.Fatalf("Take(%+v): %v", tc.req, err)
		}
		var got []string
		for _, e := range man.Tables {
			got = append(got, e.Keyspace+"."+e.Name)
			if !strings.HasPrefix(e.CQL, "CREATE TABLE "+e.Keyspace+"."+e.Name) {
				t.Errorf("%s: table %s's CQL is %q", tc.req.Tag, e.Name, e.CQL)
			}
		}
		if man.Scope != tc.scope || strings.Join(got, " ") != strings.Join(tc.tables, " ") || man.Reason != snapshot.ReasonManual || man.Node != "n1" {
			t.Errorf("%s: scope %s, tables %v, reason %s, node %s; want %s, %v, manual, n1", tc.req.Tag, man.Scope, got, man.Reason, man.Node, tc.scope, tc.tables)
		}
		for _, k := range man.Keyspaces {
			if !strings.HasPrefix(k.CQL, "CREATE KEYSPACE "+k.Name+" WITH replication") {
				t.Errorf("%s: keyspace %s's CQL is %q", tc.req.Tag, k.Name, k.CQL)
			}
		}
		if _, err := os.Stat(filepath.Join(f.dir, "snapshots", tc.req.Tag, "manifest.json")); err != nil {
			t.Errorf("%s: %v", tc.req.Tag, err)
		}
	}
	// A default tag is the time in milliseconds.
	man, err := f.m.Take(f.s, snapshot.Request{})
	if err != nil || len(man.Tag) < 13 || strings.Trim(man.Tag, "0123456789") != "" {
		t.Errorf("Take without a tag: %v, tag %q; want the time in milliseconds", err, man.Tag)
	}
	list, err := f.m.List()
	if err != nil || len(list) != 4 {
		t.Fatalf("List: %d snapshots, %v; want 4", len(list), err)
	}
	for _, i := range list {
		// The data was flushed into sstables the live store shares: each snapshot holds them,
		// but clearing it would free only its manifest, options and small log.
		if i.Tag != man.Tag && i.Tag != "ks" && i.Tag != "all" && i.Tag != "one" {
			t.Errorf("unexpected snapshot %s", i.Tag)
		}
		if i.Bytes < 500*3*50 || i.TrueBytes >= i.Bytes/2 {
			t.Errorf("snapshot %s: %d bytes, %d true bytes; want at least the data's 75 kB, mostly shared", i.Tag, i.Bytes, i.TrueBytes)
		}
	}
}

// TestBadInput: unknown keyspaces and tables, a tag in use and invalid tags are refused with an
// error naming them, and leave nothing behind.
func TestBadInput(t *testing.T) {
	f := newFixture(t, snapshot.Options{})
	if _, err := f.m.Take(f.s, snapshot.Request{Tag: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  snapshot.Request
		is   error
		want string
	}{
		{snapshot.Request{Tag: "a", Keyspace: "nope"}, snapshot.ErrNotFound, "keyspace nope"},
		{snapshot.Request{Tag: "a", Keyspace: "nope", Table: "t"}, snapshot.ErrNotFound, "keyspace nope"},
		{snapshot.Request{Tag: "a", Keyspace: "ks", Table: "nope"}, snapshot.ErrNotFound, "table ks.nope"},
		{snapshot.Request{Tag: "x"}, snapshot.ErrExists, "snapshot x"},
		{snapshot.Request{Tag: "../x"}, snapshot.ErrBadTag, "path separator"},
		{snapshot.Request{Tag: "a/b"}, snapshot.ErrBadTag, "path separator"},
		{snapshot.Request{Tag: ".."}, snapshot.ErrBadTag, `starts with '.'`},
		{snapshot.Request{Tag: ".hidden"}, snapshot.ErrBadTag, `starts with '.'`},
		{snapshot.Request{Tag: "a b"}, snapshot.ErrBadTag, `' ' is not allowed`},
		{snapshot.Request{Tag: strings.Repeat("a", 201)}, snapshot.ErrBadTag, "longer than 200"},
	} {
		_, err := f.m.Take(f.s, tc.req)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Take(%+v): %v; want %v naming %q", tc.req, err, tc.is, tc.want)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(f.dir, "snapshots"))
	if len(entries) != 1 {
		t.Errorf("snapshots/ holds %d entries, want only x", len(entries))
	}
	if _, err := f.m.Clear("nope"); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("Clear(nope): %v, want ErrNotFound", err)
	}
	if _, err := f.m.Clear("../data"); !errors.Is(err, snapshot.ErrBadTag) {
		t.Errorf("Clear(../data): %v, want ErrBadTag", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "data")); err != nil {
		t.Errorf("the store's directory: %v", err)
	}
	// A disk that refuses the snapshot's directory: a clear error, no snapshot listed.
	if err := os.RemoveAll(filepath.Join(f.dir, "snapshots")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "snapshots"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Take(f.s, snapshot.Request{Tag: "y"}); err == nil || !strings.Contains(err.Error(), "snapshot y") || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Take into a snapshots/ that is a file: %v", err)
	}
}

// TestClear removes one snapshot, then every one; the metrics count them.
func TestClear(t *testing.T) {
	f := newFixture(t, snapshot.Options{})
	tb := f.table(t, "ks", "u")
	f.write(t, tb, 200)
	for _, tag := range []string{"a", "b", "c"} {
		if _, err := f.m.Take(f.s, snapshot.Request{Tag: tag, Keyspace: "ks"}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.m.Clear("b"); err != nil || len(got) != 1 || got[0] != "b" {
		t.Fatalf("Clear(b): %v, %v", got, err)
	}
	list, err := f.m.List()
	if err != nil || len(list) != 2 || list[0].Tag != "a" || list[1].Tag != "c" {
		t.Fatalf("List after clearing b: %+v, %v", list, err)
	}
	if n := testutil.ToFloat64(gauge(f.m, "kvnode_snapshots")); n != 2 {
		t.Errorf("kvnode_snapshots = %v, want 2", n)
	}
	if n := testutil.ToFloat64(gauge(f.m, "kvnode_snapshot_bytes")); n < 200*100 {
		t.Errorf("kvnode_snapshot_bytes = %v, want at least the data's 20 kB (200 rows of 100 bytes)", n)
	}
	if err := testutil.CollectAndCompare(f.m, strings.NewReader(`
# HELP kvnode_snapshots_taken_total Snapshots this node took, by reason: manual (kvnode snapshot), dropped (before DROP TABLE or DROP KEYSPACE), truncated (before TRUNCATE).
# TYPE kvnode_snapshots_taken_total counter
kvnode_snapshots_taken_total{reason="dropped"} 0
kvnode_snapshots_taken_total{reason="manual"} 3
kvnode_snapshots_taken_total{reason="truncated"} 0
`), "kvnode_snapshots_taken_total"); err != nil {
		t.Error(err)
	}
	got, err := f.m.Clear("")
	if err != nil || len(got) != 2 {
		t.Fatalf("Clear(all): %v, %v", got, err)
	}
	if n := testutil.ToFloat64(gauge(f.m, "kvnode_snapshots")); n != 0 {
		t.Errorf("kvnode_snapshots after clearing all = %v, want 0", n)
	}
	if list, err := f.m.List(); err != nil || len(list) != 0 {
		t.Fatalf("List after clearing all: %+v, %v", list, err)
	}
}

// TestAuto: auto snapshots are tagged by reason, time and table, and off with NoAutoSnapshot.
func TestAuto(t *testing.T) {
	f := newFixture(t, snapshot.Options{})
	tb := f.table(t, "ks", "t")
	tag, err := f.m.Auto(f.s, tb, snapshot.ReasonDropped)
	if err != nil || !strings.HasPrefix(tag, "dropped-") || !strings.HasSuffix(tag, "-ks.t") {
		t.Fatalf("Auto: %q, %v", tag, err)
	}
	man, err := f.m.Load(tag)
	if err != nil || man.Reason != snapshot.ReasonDropped || man.Scope != snapshot.ScopeTable {
		t.Fatalf("Load(%s): %+v, %v", tag, man, err)
	}
	off := newFixture(t, snapshot.Options{NoAutoSnapshot: true})
	if tag, err := off.m.Auto(off.s, off.table(t, "ks", "t"), snapshot.ReasonTruncated); tag != "" || err != nil {
		t.Errorf("Auto with NoAutoSnapshot: %q, %v; want none", tag, err)
	}
}

// storeWriter applies restored partitions to a store: the node's replicas, in one.
type storeWriter struct{ s *replica.Store }

func (w storeWriter) WritePartition(_ context.Context, t *schema.Table, m *replicapb.Mutation) error {
	return w.s.Apply(t, m)
}

// TestRestoreIntoRecreatedTable: after a drop and the table's recreation from the manifest's
// CQL, a restore writes every row back at its timestamp, so a newer write survives it.
func TestRestoreIntoRecreatedTable(t *testing.T) {
	f := newFixture(t, snapshot.Options{})
	old := f.table(t, "ks", "t")
	f.write(t, old, 30)
	// A newer write to partition 0 lands after the snapshot: the restore must not undo it.
	man, err := f.m.Take(f.s, snapshot.Request{Tag: "s", Keyspace: "ks"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Restoring into tables that do not exist: refused before anything is written, with the
	// CQL to run.
	f.ddl(t, "DROP TABLE ks.t")
	if err := f.store.DropTable(old.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.m.Restore(ctx, f.s, "s", "ks", "t", storeWriter{f.store})
	if !errors.Is(err, snapshot.ErrNoTarget) || !strings.Contains(err.Error(), "CREATE TABLE ks.t") {
		t.Fatalf("Restore into a dropped table: %v; want the CQL to recreate it", err)
	}
	if _, err := f.m.Restore(ctx, f.s, "s", "other", "", storeWriter{f.store}); !errors.Is(err, snapshot.ErrNotFound) || !strings.Contains(err.Error(), "holds no keyspace other") {
		t.Errorf("Restore of a keyspace the snapshot lacks: %v", err)
	}
	if _, err := f.m.Restore(ctx, f.s, "nope", "", "", storeWriter{f.store}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("Restore of an unknown snapshot: %v", err)
	}
	f.ddl(t, "CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c))")
	if _, err := f.m.Restore(ctx, f.s, "s", "ks", "t", storeWriter{f.store}); !errors.Is(err, snapshot.ErrNoTarget) || !strings.Contains(err.Error(), "primary key differs") {
		t.Errorf("Restore into a table of another primary key: %v", err)
	}
	f.ddl(t, "DROP TABLE ks.t")
	for _, e := range man.Tables {
		if e.Name == "t" {
			f.ddl(t, e.CQL)
		}
	}
	cur := f.table(t, "ks", "t")
	if cur.ID == old.ID {
		t.Fatal("the recreated table has the old id")
	}
	if err := f.store.Apply(cur, mutation(cur, 0, 0, "newer", 5000)); err != nil {
		t.Fatal(err)
	}
	got, err := f.m.Restore(ctx, f.s, "s", "ks", "t", storeWriter{f.store})
	if err != nil || len(got) != 1 || got[0].Partitions != 30 {
		t.Fatalf("Restore: %+v, %v; want 30 partitions of ks.t", got, err)
	}
	if n, err := f.store.TableKeys(cur.ID); err != nil || n < 30*3 {
		t.Errorf("the recreated table holds %d keys, %v; want at least 90", n, err)
	}
	m, err := f.store.FetchPartition(cur, partitioner.Token(intBytes(0)), [][]byte{intBytes(0)})
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, r := range m.GetRows() {
		for _, c := range r.GetCells() {
			vals = append(vals, string(c.GetValue()[:min(5, len(c.GetValue()))]))
		}
	}
	if len(vals) != 3 || vals[2] != "newer" && vals[0] != "newer" {
		t.Errorf("partition 0 after the restore: %v; want 3 rows, the newer write kept", vals)
	}
}

// gauge returns the collector of m's metric name alone.
func gauge(m *snapshot.Manager, name string) prometheus.Collector {
	return filtered{m, name}
}

type filtered struct {
	m    *snapshot.Manager
	name string
}

func (f filtered) Describe(ch chan<- *prometheus.Desc) { f.m.Describe(ch) }

func (f filtered) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() {
		f.m.Collect(all)
		close(all)
	}()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"`+f.name+`"`) {
			ch <- m
		}
	}
}
