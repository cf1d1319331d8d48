package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

func mustParse(t *testing.T, src string) cql.Statement {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustOpen(t *testing.T, cfg Config) *Holder {
	t.Helper()
	h, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// dropped returns s with table ks.name dropped at version ts.
func dropped(t *testing.T, s *schema.Schema, table string, ts int64) *schema.Schema {
	t.Helper()
	next, err := s.Apply(mustParse(t, "DROP TABLE "+table), "", schema.Change{Version: schema.Version{Timestamp: ts, Node: "peer"}})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// TestMergePublishesAndPersists: a peer's schema merges into the holder, which publishes it
// (digest, SchemaChanged) and persists it; merging it again changes nothing and publishes
// nothing; a corrupt snapshot is refused naming its origin and leaves the schema as it was.
func TestMergePublishesAndPersists(t *testing.T) {
	dir := t.TempDir()
	h := mustOpen(t, Config{Dir: dir})
	if !h.Schema().Empty() || h.Digest() != schema.New().Digest().String() {
		t.Fatalf("a new holder holds %v (digest %s), want the empty schema", h.Schema(), h.Digest())
	}
	peer := mustBuild(t, ksRF1+"CREATE TABLE ks.t (k int PRIMARY KEY, v int);")
	ch := h.SchemaChanged()
	if changed, err := h.Merge(peer.Encode()); err != nil || !changed {
		t.Fatalf("Merge of a peer's schema = %v, %v; want changed", changed, err)
	}
	if !closed(ch) {
		t.Errorf("Merge changed the schema without closing SchemaChanged's channel")
	}
	if h.Digest() != peer.Digest().String() || !slices.Equal(h.Snapshot(), peer.Encode()) {
		t.Errorf("after the merge the holder's digest is %s, want the peer's %s", h.Digest(), peer.Digest())
	}

	ch = h.SchemaChanged()
	if changed, err := h.Merge(peer.Encode()); err != nil || changed {
		t.Errorf("Merge of the same schema again = %v, %v; want no change", changed, err)
	}
	if _, err := h.Merge([]byte("garbage")); err == nil || !strings.Contains(err.Error(), "schema from peer") {
		t.Errorf("Merge of garbage: %v, want an error naming the peer's schema", err)
	}
	if closed(ch) || h.Digest() != peer.Digest().String() {
		t.Errorf("merges that changed nothing published a schema (digest %s)", h.Digest())
	}

	if got := mustOpen(t, Config{Dir: dir}).Digest(); got != peer.Digest().String() {
		t.Errorf("reopened, the holder's digest is %s, want the merged %s", got, peer.Digest())
	}
}

// TestOpenRefusesACorruptSchemaFile: a schema file that does not decode is an error naming it.
func TestOpenRefusesACorruptSchemaFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, schemaFile), []byte("\xff\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, schemaFile)) {
		t.Fatalf("Open on a corrupt schema file: %v, want an error naming the file", err)
	}
	if _, err := Open(Config{}); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("Open without a directory: %v, want an error naming Config.Dir", err)
	}
}

// TestDropHooksRunAroundTheDrop: a merged drop deletes the table's data before the schema
// without the table is persisted and again after it is published, then forgets the table;
// tables that stay are left alone.
func TestDropHooksRunAroundTheDrop(t *testing.T) {
	dir := t.TempDir()
	h := mustOpen(t, Config{Dir: dir})
	s := mustBuild(t, ksRF1+"CREATE TABLE ks.t (k int PRIMARY KEY); CREATE TABLE ks.keep (k int PRIMARY KEY);")
	if _, err := h.Merge(s.Encode()); err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("ks", "t")
	type call struct {
		id                  schema.TableID
		persisted, resolves bool // the table in the schema file, and resolved by the holder
	}
	var calls []call
	var forgotten []string
	h.OnDrop(func(id schema.TableID) error {
		data, err := os.ReadFile(filepath.Join(dir, schemaFile))
		if err != nil {
			t.Fatal(err)
		}
		onDisk, err := schema.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		_, persisted := onDisk.TableByID(id)
		_, resolves := h.TableByID(id)
		calls = append(calls, call{id, persisted, resolves})
		return nil
	}, func(t *schema.Table) { forgotten = append(forgotten, t.QualifiedName()) })

	if _, err := h.Merge(dropped(t, s, "ks.t", 100).Encode()); err != nil {
		t.Fatal(err)
	}
	want := []call{{tb.ID, true, true}, {tb.ID, false, false}}
	if !slices.Equal(calls, want) {
		t.Errorf("the data hook ran %+v, want before the drop is persisted and after it is published: %+v", calls, want)
	}
	if !slices.Equal(forgotten, []string{"ks.t"}) {
		t.Errorf("the forget hooks ran for %v, want ks.t", forgotten)
	}
}

// TestFailingDataHookKeepsTheSchema: when the table's data cannot be deleted, the drop is not
// installed: Merge fails naming the table, and the schema, its file and its digest stay.
func TestFailingDataHookKeepsTheSchema(t *testing.T) {
	dir := t.TempDir()
	h := mustOpen(t, Config{Dir: dir})
	s := mustBuild(t, ksRF1+"CREATE TABLE ks.t (k int PRIMARY KEY);")
	if _, err := h.Merge(s.Encode()); err != nil {
		t.Fatal(err)
	}
	errDisk := errors.New("disk on fire")
	h.OnDrop(func(schema.TableID) error { return errDisk })
	ch := h.SchemaChanged()
	_, err := h.Merge(dropped(t, s, "ks.t", 100).Encode())
	if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "ks.t") {
		t.Fatalf("Merge of a drop whose data hook fails: %v, want the hook's error naming ks.t", err)
	}
	if _, ok := h.Schema().Table("ks", "t"); !ok || closed(ch) {
		t.Errorf("a drop whose data could not be deleted was installed")
	}
	if got := mustOpen(t, Config{Dir: dir}).Digest(); got != s.Digest().String() {
		t.Errorf("a drop whose data could not be deleted was persisted")
	}
}

// TestSystemTablesAndDroppedIDs: the system keyspace's tables resolve by id beside the
// schema's; Dropped names the stored ids neither holds, and none while the schema has never
// held a keyspace.
func TestSystemTablesAndDroppedIDs(t *testing.T) {
	sys, err := schema.SystemKeyspace("system_test", 1, []schema.SystemTable{{ID: 7, CQL: "CREATE TABLE x (k int PRIMARY KEY)"}})
	if err != nil {
		t.Fatal(err)
	}
	h := mustOpen(t, Config{Dir: t.TempDir(), System: sys})
	if got := h.Dropped([]schema.TableID{7, 99}); got != nil {
		t.Errorf("Dropped on a schema that never held a keyspace = %v, want none", got)
	}
	s := mustBuild(t, ksRF1+"CREATE TABLE ks.t (k int PRIMARY KEY);") // table id 2
	if _, err := h.Merge(s.Encode()); err != nil {
		t.Fatal(err)
	}
	if tb, ok := h.TableByID(7); !ok || tb.Name != "x" {
		t.Errorf("TableByID(7) = %v, %v; want the system table x", tb, ok)
	}
	if got := h.Dropped([]schema.TableID{2, 7, 99, 100}); !slices.Equal(got, []schema.TableID{99, 100}) {
		t.Errorf("Dropped(2, 7, 99, 100) = %v, want 99 and 100 (2 is ks.t, 7 the system table)", got)
	}
	if h.System() != sys {
		t.Errorf("System() is not the system keyspace given to Open")
	}
}

// TestApplyDDLBeforeStart fails saying the node is starting, and sends nothing.
func TestApplyDDLBeforeStart(t *testing.T) {
	h := mustOpen(t, Config{Dir: t.TempDir()})
	_, _, err := h.ApplyDDL(context.Background(), mustParse(t, ksRF1), "")
	if err == nil || !strings.Contains(err.Error(), "the node is starting") {
		t.Fatalf("ApplyDDL before Start: %v, want an error saying the node is starting", err)
	}
	if got := h.CollectTombstones(time.Now()); got != 0 {
		t.Errorf("CollectTombstones before Start = %v, want 0", got)
	}
}

// TestApplyDDLOnImpossibleKeyspaceNames: a name no keyspace can have fails as invalid with the
// schema's own message, without a consensus round.
func TestApplyDDLOnImpossibleKeyspaceNames(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	var sent atomic.Int32
	h.inject(func(context.Context, message) action { sent.Add(1); return deliver })
	for stmt, want := range map[string]string{
		`CREATE KEYSPACE "a-b" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`: "may contain only letters, digits and underscores",
		`DROP KEYSPACE "a b"`:                      `unknown keyspace "a b"`,
		`CREATE TABLE "x.y".t (k int PRIMARY KEY)`: `unknown keyspace "x.y"`,
	} {
		var ie *coordinator.InvalidError
		if _, _, err := h.ddl("n1", stmt); !errors.As(err, &ie) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an invalid-statement error containing %q", stmt, err, want)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("statements on impossible keyspace names sent %d consensus messages, want none", n)
	}
}

// TestApplyDDLOutcomes: a change is announced and waits for agreement, warning of the nodes
// that did not agree; a no-op changes nothing; a statement that does not fit the agreed state
// fails as invalid, and the node still takes that state and publishes it.
func TestApplyDDLOutcomes(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	if got := h.published["n2"]; got != h.node("n1").Digest() {
		t.Errorf("after n1's change n2 gossips %s, want n1's digest (the change pushed)", got)
	}

	h.noPush = true
	changed, warnings, err := h.ddl("n2", "CREATE TABLE ks.t (k int PRIMARY KEY)")
	if err != nil || !changed || len(warnings) != 1 || !strings.Contains(warnings[0], "nodes [n1 n3] have not applied the change yet") {
		t.Fatalf("a change no peer took: changed %v, warnings %q, err %v; want a warning naming n1 and n3", changed, warnings, err)
	}

	if changed, _, err := h.ddl("n2", "CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY)"); err != nil || changed {
		t.Errorf("CREATE TABLE IF NOT EXISTS of an existing table: changed %v, err %v; want a no-op", changed, err)
	}

	// n3 accepted the change but its schema never got it: its CREATE fails, and leaves it
	// holding and gossiping the agreed table.
	publishes := h.publishes["n3"]
	var ie *coordinator.InvalidError
	if _, _, err := h.ddl("n3", "CREATE TABLE ks.t (k int PRIMARY KEY, v int)"); !errors.As(err, &ie) || !errors.Is(err, schema.ErrExists) {
		t.Fatalf("CREATE of an agreed table on a node lacking it: %v, want invalid, already exists", err)
	}
	if _, ok := h.node("n3").Schema().Table("ks", "t"); !ok {
		t.Errorf("n3 does not hold ks.t after its CREATE failed against it")
	}
	if h.publishes["n3"] != publishes+1 || h.published["n3"] != h.node("n3").Digest() {
		t.Errorf("n3 published %d times after merging the agreed state, want once", h.publishes["n3"]-publishes)
	}
}

// TestVersionsNeverRepeat: the versions of a node's changes follow its clock, rise when it
// stands still or goes back, and stay above the GC horizon.
func TestVersionsNeverRepeat(t *testing.T) {
	clock := int64(1000)
	h := mustOpen(t, Config{Dir: t.TempDir(), Now: func() time.Time { return time.UnixMicro(clock) }})
	h.Start(Cluster{Self: "n1"})
	for _, s := range []struct{ clock, want int64 }{{1000, 1000}, {1000, 1001}, {5, 1002}, {2000, 2000}} {
		clock = s.clock
		if v := h.nextVersion(); v != (schema.Version{Timestamp: s.want, Node: "n1"}) {
			t.Fatalf("nextVersion at clock %d = %v, want %d@n1", s.clock, v, s.want)
		}
	}
	if _, err := h.merge(schema.New().Purge(5000)); err != nil {
		t.Fatal(err)
	}
	if v := h.nextVersion(); v.Timestamp != 5001 {
		t.Errorf("nextVersion behind a GC horizon of 5000 = %v, want 5001", v)
	}
}
