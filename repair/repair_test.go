package repair_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// fakeRing is a token ring of SimpleStrategy: a token's replicas are the owners of the tokens
// from it clockwise, each node once.
type fakeRing struct {
	tokens []int64 // sorted
	owner  map[int64]coordinator.NodeID
}

func newFakeRing(owners map[coordinator.NodeID][]int64) fakeRing {
	r := fakeRing{owner: map[int64]coordinator.NodeID{}}
	for id, ts := range owners {
		for _, t := range ts {
			r.tokens = append(r.tokens, t)
			r.owner[t] = id
		}
	}
	slices.Sort(r.tokens)
	return r
}

func (r fakeRing) Tokens() []int64 { return slices.Clone(r.tokens) }

func (r fakeRing) Replicas(token int64, rf schema.Replication) []coordinator.NodeID {
	i, _ := slices.BinarySearch(r.tokens, token)
	var out []coordinator.NodeID
	for k := range r.tokens {
		id := r.owner[r.tokens[(i+k)%len(r.tokens)]]
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
		if len(out) == rf.Total() {
			break
		}
	}
	return out
}

func TestLocalRanges(t *testing.T) {
	ring := newFakeRing(map[coordinator.NodeID][]int64{"a": {-100, 100}, "b": {0}, "c": {50}})
	mn, mx := int64(math.MinInt64), int64(math.MaxInt64)
	same := func(x, y repair.Range) bool { return x.Range == y.Range && slices.Equal(x.Replicas, y.Replicas) }
	// The ring: (-100, 0] b, (0, 50] c, (50, 100] a, (100, -100] (wrapping) a.
	wantA := []repair.Range{
		{replica.TokenRange{Start: mn, End: -100}, []coordinator.NodeID{"a"}},
		{replica.TokenRange{Start: 50, End: 100}, []coordinator.NodeID{"a"}},
		{replica.TokenRange{Start: 100, End: mx}, []coordinator.NodeID{"a"}},
	}
	if g := repair.LocalRanges(ring, "a", schema.Simple(1)); !slices.EqualFunc(g, wantA, same) {
		t.Errorf("a's ranges at RF 1: %v, want %v", g, wantA)
	}
	// At RF 2, b also replicates a's ranges followed (after a's own tokens) by b's token 0:
	// (50, 100] and the wrapping range.
	wantB := []repair.Range{
		{replica.TokenRange{Start: mn, End: -100}, []coordinator.NodeID{"a", "b"}},
		{replica.TokenRange{Start: -100, End: 0}, []coordinator.NodeID{"b", "c"}},
		{replica.TokenRange{Start: 50, End: 100}, []coordinator.NodeID{"a", "b"}},
		{replica.TokenRange{Start: 100, End: mx}, []coordinator.NodeID{"a", "b"}},
	}
	if g := repair.LocalRanges(ring, "b", schema.Simple(2)); !slices.EqualFunc(g, wantB, same) {
		t.Errorf("b's ranges at RF 2: %v, want %v", g, wantB)
	}
	// Every token lies in exactly one range of the ring when RF covers every node.
	all := repair.LocalRanges(ring, "a", schema.Simple(3))
	if len(all) != 5 {
		t.Errorf("at RF 3 a replicates %d ranges, want all 5", len(all))
	}
	for _, tok := range []int64{mn + 1, -100, -99, 0, 1, 50, 51, 100, 101, mx} {
		n := 0
		for _, x := range all {
			if x.Range.Contains(tok) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("token %d lies in %d ranges, want 1", tok, n)
		}
	}
	if g := repair.LocalRanges(newFakeRing(nil), "a", schema.Simple(3)); g != nil {
		t.Errorf("an empty ring's ranges: %v, want none", g)
	}
}

func TestSelect(t *testing.T) {
	s, err := schema.Build("CREATE KEYSPACE a WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};\n" +
		"CREATE TABLE a.x (k int PRIMARY KEY); CREATE TABLE a.y (k int PRIMARY KEY);\n" +
		"CREATE KEYSPACE b WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};\n" +
		"CREATE TABLE b.z (k int PRIMARY KEY);\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ks, table string
		want      []string
		err       string
	}{
		{"", "", []string{"a.x", "a.y", "b.z"}, ""},
		{"a", "", []string{"a.x", "a.y"}, ""},
		{"b", "z", []string{"b.z"}, ""},
		{"c", "", nil, "repair: unknown keyspace c"},
		{"a", "z", nil, "repair: unknown table a.z"},
		{"", "x", nil, "repair: table x needs its keyspace (KEYSPACE.TABLE)"},
	} {
		ts, err := repair.Select(s, tc.ks, tc.table)
		var got []string
		for _, t := range ts {
			got = append(got, t.Keyspace+"."+t.Name)
		}
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("Select(%q, %q): error %v, want %q", tc.ks, tc.table, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("Select(%q, %q) = %v, %v; want %v", tc.ks, tc.table, got, err, tc.want)
		}
	}
}

// testCluster is three replicas, a, b and c, each a real replica.Store and replica.Service,
// connected in process; hosts reach each other through it.
type testCluster struct {
	t      *testing.T
	schema *schema.Schema
	table  *schema.Table
	ring   fakeRing
	nodes  map[coordinator.NodeID]*replica.Service
	stores map[coordinator.NodeID]*replica.Store

	mu      sync.Mutex
	down    map[coordinator.NodeID]bool
	failing map[coordinator.NodeID]error // the replica's anti-entropy calls fail so
	// tamper, when set, changes what replica c lists of a leaf's partitions.
	tamper    func(*replicapb.PartitionHashesResponse)
	streamed  []string // "to:partition key", what Mutate wrote
	throttled int      // bytes
	throttle  func(ctx context.Context) error
	purged    []string // "node:table", the Purge calls
}

// newTestCluster returns the cluster, with the table ks.t of gcGrace gc_grace_seconds.
func newTestCluster(t *testing.T, gcGrace int) *testCluster {
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};\n" +
		fmt.Sprintf("CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH gc_grace_seconds = %d;\n", gcGrace))
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("ks", "t")
	c := &testCluster{t: t, schema: s, table: tb,
		ring:   newFakeRing(map[coordinator.NodeID][]int64{"a": {-1 << 62}, "b": {0}, "c": {1 << 62}}),
		nodes:  map[coordinator.NodeID]*replica.Service{},
		stores: map[coordinator.NodeID]*replica.Store{},
		down:   map[coordinator.NodeID]bool{}, failing: map[coordinator.NodeID]error{}}
	for _, id := range []coordinator.NodeID{"a", "b", "c"} {
		st, err := replica.Open(t.TempDir(), replica.Options{NoSync: true, CacheSize: 1 << 20, MemTableSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		svc, err := replica.NewService(replica.Config{Store: st, Schema: s})
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id], c.stores[id] = svc, st
	}
	return c
}

func key(k string) [][]byte { return [][]byte{[]byte(k)} }

func token(k string) int64 { return partitioner.Token(partitioner.AppendKey(nil, key(k))) }

func ts(v int64) *int64 { return &v }

// write applies partition k's row (v at ts) on the given nodes.
func (c *testCluster) write(k string, v int32, at int64, on ...coordinator.NodeID) {
	c.apply(&replicapb.Mutation{TableId: uint64(c.table.ID), PartitionKey: key(k), Token: token(k),
		Rows: []*replicapb.Row{{Marker: ts(at), Cells: []*replicapb.Cell{{Column: "v", Value: schema.EncodeInt(v), Timestamp: at}}}}}, on...)
}

// deleteRow deletes partition k's row at ts on the given nodes.
func (c *testCluster) deleteRow(k string, at int64, on ...coordinator.NodeID) {
	c.apply(&replicapb.Mutation{TableId: uint64(c.table.ID), PartitionKey: key(k), Token: token(k),
		Rows: []*replicapb.Row{{Deletion: ts(at)}}}, on...)
}

func (c *testCluster) apply(m *replicapb.Mutation, on ...coordinator.NodeID) {
	c.t.Helper()
	for _, id := range on {
		if err := c.stores[id].Apply(c.table, m); err != nil {
			c.t.Fatal(err)
		}
	}
}

// fetch returns node id's version of partition k (nil when it holds nothing).
func (c *testCluster) fetch(id coordinator.NodeID, k string) *replicapb.Mutation {
	c.t.Helper()
	m, err := c.stores[id].FetchPartition(c.table, token(k), key(k))
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// hashes returns node id's leaf hashes of the whole ring.
func (c *testCluster) hashes(id coordinator.NodeID) string {
	c.t.Helper()
	h, _, err := c.stores[id].RangeHashes(context.Background(), c.table, replica.TokenRange{Start: math.MinInt64, End: math.MaxInt64}, 16)
	if err != nil {
		c.t.Fatal(err)
	}
	return fmt.Sprint(h)
}

// takeStreamed returns what was streamed, sorted, and forgets it.
func (c *testCluster) takeStreamed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.streamed
	c.streamed = nil
	sort.Strings(out)
	return out
}

// testHost is node self's repair.Host.
type testHost struct {
	c    *testCluster
	self coordinator.NodeID
}

func (h testHost) Self() coordinator.NodeID { return h.self }
func (h testHost) Ring() repair.Ring        { return h.c.ring }
func (h testHost) Schema() *schema.Schema   { return h.c.schema }

func (h testHost) AntiEntropy(id coordinator.NodeID) (repair.AntiEntropy, error) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if h.c.down[id] {
		return nil, repair.ErrDown
	}
	ae := h.c.nodes[id].AntiEntropy()
	if err := h.c.failing[id]; err != nil {
		return failingAntiEntropy{ae, err}, nil
	}
	if id == "c" && h.c.tamper != nil {
		return tamperingAntiEntropy{ae, h.c.tamper}, nil
	}
	return ae, nil
}

func (h testHost) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	if req.GetLimiter().GetMode() != replicapb.Limiter_NONE {
		h.c.t.Errorf("repair wrote to %s in limiter mode %v, want NONE", to, req.GetLimiter().GetMode())
	}
	h.c.mu.Lock()
	h.c.streamed = append(h.c.streamed, fmt.Sprintf("%s:%s", to, req.GetMutation().GetPartitionKey()[0]))
	h.c.mu.Unlock()
	return h.c.nodes[to].Mutate(ctx, req)
}

func (h testHost) Throttle(ctx context.Context, n int) error {
	h.c.mu.Lock()
	h.c.throttled += n
	f := h.c.throttle
	h.c.mu.Unlock()
	if f != nil {
		return f(ctx)
	}
	return nil
}

func (h testHost) SetRepairedAt(id schema.TableID, at time.Time) error {
	return h.c.stores[h.self].SetRepairedAt(id, at)
}

func (h testHost) RepairedAt(id schema.TableID) (time.Time, bool, error) {
	return h.c.stores[h.self].RepairedAt(id)
}

func (h testHost) Purge(ctx context.Context, t *schema.Table, now time.Time) (replica.PurgeStats, error) {
	h.c.mu.Lock()
	h.c.purged = append(h.c.purged, string(h.self)+":"+t.QualifiedName())
	h.c.mu.Unlock()
	return h.c.stores[h.self].Purge(ctx, t, now)
}

// failingAntiEntropy fails every range hash request with err.
type failingAntiEntropy struct {
	repair.AntiEntropy
	err error
}

func (f failingAntiEntropy) RangeHashes(context.Context, *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error) {
	return nil, f.err
}

// tamperingAntiEntropy changes the partitions listed for a leaf with tamper.
type tamperingAntiEntropy struct {
	repair.AntiEntropy
	tamper func(*replicapb.PartitionHashesResponse)
}

func (f tamperingAntiEntropy) PartitionHashes(ctx context.Context, req *replicapb.PartitionHashesRequest) (*replicapb.PartitionHashesResponse, error) {
	resp, err := f.AntiEntropy.PartitionHashes(ctx, req)
	if err == nil {
		f.tamper(resp)
	}
	return resp, err
}

// service returns node self's repair service, on a clock a minute ahead of the stores'.
func (c *testCluster) service(self coordinator.NodeID) *repair.Service {
	c.t.Helper()
	at := time.Now().Add(time.Minute)
	s, err := repair.New(repair.Config{Host: testHost{c, self}, Now: func() time.Time { return at }, WriteTimeout: time.Minute})
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// diverge writes 20 partitions on every replica, then makes four differ: p1 is only on a; b
// holds a newer p2; a deleted p3's row; c deleted p4's row.
func (c *testCluster) diverge() {
	for i := range 20 {
		c.write(fmt.Sprintf("k%d", i), int32(i), 10, "a", "b", "c")
	}
	c.write("p1", 1, 10, "a")
	c.write("p2", 2, 10, "a", "b", "c")
	c.write("p2", 22, 20, "b")
	c.write("p3", 3, 10, "a", "b", "c")
	c.deleteRow("p3", 30, "a")
	c.write("p4", 4, 10, "a", "b", "c")
	c.deleteRow("p4", 30, "c")
}

// TestRepairConverges: a repair from a brings the three replicas to the same data, streaming
// only the versions that differ, each to the replicas that lacked it, newest write and
// tombstones winning. A second repair finds nothing to do.
func TestRepairConverges(t *testing.T) {
	c := newTestCluster(t, 864000)
	c.diverge()
	if c.hashes("a") == c.hashes("b") || c.hashes("b") == c.hashes("c") {
		t.Fatal("the replicas agree before the repair")
	}
	s := c.service("a")
	res, err := s.Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(3)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("repair returned %d table results, want 1", len(res))
	}
	r := res[0]
	if r.Keyspace != "ks" || r.Table != "t" || r.Ranges != 4 || r.RangesFailed != 0 || len(r.Errors) != 0 || r.LeavesMismatched == 0 {
		t.Errorf("repair result %+v, want ks.t with 4 ranges, none failed, some leaves mismatched", r)
	}
	// p1: a's version to b and c. p2: the old version (a's) to b, b's new one to a and c.
	// p3: a's deletion to b and c, their version to a. p4: c's deletion to a and b, theirs to c.
	want := []string{"a:p2", "a:p3", "a:p4", "b:p1", "b:p2", "b:p3", "b:p4", "c:p1", "c:p2", "c:p3", "c:p4"}
	if got := c.takeStreamed(); !slices.Equal(got, want) {
		t.Errorf("streamed %v, want %v", got, want)
	}
	if r.PartitionsStreamed != uint64(len(want)) || r.BytesStreamed == 0 || r.BytesStreamed != uint64(c.throttled) {
		t.Errorf("result counts %d partitions (%d bytes) streamed, %d bytes throttled; want %d partitions, their bytes all throttled",
			r.PartitionsStreamed, r.BytesStreamed, c.throttled, len(want))
	}

	if c.hashes("a") != c.hashes("b") || c.hashes("b") != c.hashes("c") {
		t.Error("the replicas differ after the repair")
	}
	for _, id := range []coordinator.NodeID{"a", "b", "c"} {
		if m := c.fetch(id, "p1"); m == nil {
			t.Errorf("%s lacks p1 after the repair", id)
		}
		if m := c.fetch(id, "p2"); m == nil || m.Rows[0].Cells[0].Timestamp != 20 {
			t.Errorf("%s's p2 after the repair: %v, want the write at 20", id, m)
		}
		for _, k := range []string{"p3", "p4"} {
			if m := c.fetch(id, k); m == nil || len(m.Rows) != 1 || m.Rows[0].Deletion == nil {
				t.Errorf("%s's %s after the repair: %v, want the row tombstone", id, k, m)
			}
		}
	}
	if at, ok, err := c.stores["a"].RepairedAt(c.table.ID); err != nil || !ok || !at.Equal(r.Started) {
		t.Errorf("a's recorded repair of ks.t: %v, %v, %v; want %v", at, ok, err, r.Started)
	}

	// Replicas that agree: nothing differs, nothing travels.
	res, err = c.service("b").Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(3)}})
	if err != nil || res[0].RangesFailed != 0 || res[0].LeavesMismatched != 0 || res[0].PartitionsStreamed != 0 {
		t.Errorf("a repair of replicas that agree: %+v, %v; want nothing mismatched or streamed", res, err)
	}
	if got := c.takeStreamed(); len(got) != 0 {
		t.Errorf("a repair of replicas that agree streamed %v, want nothing", got)
	}
}

// TestRepairPurges: having repaired every range of a table with gc_grace_seconds 0, the node
// purges the tombstones stored before the repair started, with the data they shadow; the other
// replicas keep theirs until they repair.
func TestRepairPurges(t *testing.T) {
	c := newTestCluster(t, 0)
	c.diverge()
	res, err := c.service("a").Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(3)}})
	if err != nil || res[0].RangesFailed != 0 {
		t.Fatalf("repair: %+v, %v", res, err)
	}
	if got, want := c.purged, []string{"a:ks.t"}; !slices.Equal(got, want) {
		t.Errorf("purged %v, want %v", got, want)
	}
	for _, k := range []string{"p3", "p4"} {
		if m := c.fetch("a", k); m != nil {
			t.Errorf("a's %s after its repair: %v, want nothing (the tombstone and its data purged)", k, m)
		}
		for _, id := range []coordinator.NodeID{"b", "c"} {
			if m := c.fetch(id, k); m == nil || m.Rows[0].Deletion == nil {
				t.Errorf("%s's %s after a's repair: %v, want its tombstone kept", id, k, m)
			}
		}
	}
	if m := c.fetch("a", "k1"); m == nil {
		t.Error("a's live partition k1 was purged")
	}
}

// TestPeriodicPurge: a started service purges every table each PurgeInterval, the first one
// interval after it started, until it is stopped.
func TestPeriodicPurge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 0)
		s := c.service("a")
		s.Start()
		purged := func() []string {
			synctest.Wait()
			c.mu.Lock()
			defer c.mu.Unlock()
			return slices.Clone(c.purged)
		}
		time.Sleep(repair.PurgeInterval - time.Nanosecond)
		if got := purged(); len(got) != 0 {
			t.Fatalf("purged %v before the first interval ended, want nothing", got)
		}
		time.Sleep(time.Nanosecond)
		if got, want := purged(), []string{"a:ks.t"}; !slices.Equal(got, want) {
			t.Fatalf("after one interval: purged %v, want %v", got, want)
		}
		time.Sleep(repair.PurgeInterval)
		if got := purged(); len(got) != 2 {
			t.Fatalf("after two intervals: purged %v, want two passes", got)
		}
		s.Stop()
		time.Sleep(2 * repair.PurgeInterval)
		if got := purged(); len(got) != 2 {
			t.Fatalf("after Stop: purged %v, want no more passes", got)
		}
	})
}

// TestRepairFailsTheRangesOfAFailingReplica: a replica down, or failing, fails exactly the
// ranges it replicates, each with a *RangeError whose *ReplicaError names it; the others are
// repaired; the table is not recorded as repaired, so no tombstone is purged.
func TestRepairFailsTheRangesOfAFailingReplica(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *testCluster)
		msg  string
	}{
		{"down", func(c *testCluster) { c.down["c"] = true }, "replica c is down"},
		{"failing", func(c *testCluster) { c.failing["c"] = errors.New("connection reset") }, "replica c: connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 0)
			c.diverge()
			tc.set(c)
			s := c.service("a")
			// At RF 2, a replicates (-inf, a] and (c, +inf] with b, and (b, c] with c.
			res, err := s.Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(2)}})
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			if r.Ranges != 3 || r.RangesFailed != 1 || len(r.Errors) != 1 {
				t.Fatalf("repair with c %s: %+v, want 3 ranges, the 1 with c failed", tc.name, r)
			}
			var re *repair.RangeError
			var pe *repair.ReplicaError
			switch {
			case !errors.As(r.Errors[0], &re) || re.Range.Range != (replica.TokenRange{Start: 0, End: 1 << 62}):
				t.Errorf("the failure %v is not a *RangeError of (0, 2^62]", r.Errors[0])
			case !errors.As(r.Errors[0], &pe) || pe.Replica != "c":
				t.Errorf("the failure %v does not name replica c", r.Errors[0])
			case !strings.Contains(r.Errors[0].Error(), fmt.Sprintf("range (0, %d] on [c a]: %s", int64(1<<62), tc.msg)):
				t.Errorf("the failure reads %q, want it to say range (0, 2^62] on [c a]: %s", r.Errors[0], tc.msg)
			}
			if _, ok, _ := c.stores["a"].RepairedAt(c.table.ID); ok {
				t.Error("a table with a failed range was recorded as repaired")
			}
			if m := c.fetch("a", "p3"); m == nil || m.Rows[0].Deletion == nil {
				t.Errorf("a's p3 after a failed repair: %v, want its tombstone kept", m)
			}
			// The ranges with b were repaired: p2 (token 8069292045054636054, in (c, +inf])
			// got b's newer write.
			if m := c.fetch("a", "p2"); m == nil || m.Rows[0].Cells[0].Timestamp != 20 {
				t.Errorf("a's p2 (in a range shared with b) after the repair: %v, want b's write at 20", m)
			}
			want := `
# HELP kvnode_repair_ranges_total Token ranges of tables this node repaired (kvnode repair), by result: ok, or failed (a replica down or failing).
# TYPE kvnode_repair_ranges_total counter
kvnode_repair_ranges_total{result="failed"} 1
kvnode_repair_ranges_total{result="ok"} 2
`
			if err := testutil.CollectAndCompare(s, strings.NewReader(want), "kvnode_repair_ranges_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRepairRefusesListedPartitionsOfOtherTokens: a replica that lists, for a leaf, a
// partition whose token is not its key's, or lies outside the leaf, fails that leaf's range,
// named, and nothing of it is streamed.
func TestRepairRefusesListedPartitionsOfOtherTokens(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(p *replicapb.PartitionHash)
		msg    string
	}{
		{"not its key's", func(p *replicapb.PartitionHash) { p.PartitionKey = [][]byte{[]byte("elsewhere")} }, "whose key's token is"},
		{"outside the leaf", func(p *replicapb.PartitionHash) { p.Token = math.MinInt64 }, "outside the leaf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 0)
			c.diverge()
			// A partition only c holds, in (0, 2^62], the range a shares with c: a's repair
			// asks c for that leaf's partitions.
			for i := 0; ; i++ {
				k := fmt.Sprintf("q%d", i)
				if tok := partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(k)})); tok > 0 && tok <= 1<<62 {
					c.write(k, 1, 10, "c")
					break
				}
			}
			c.tamper = func(resp *replicapb.PartitionHashesResponse) {
				if len(resp.Partitions) > 0 {
					tc.tamper(resp.Partitions[0])
				}
			}
			s := c.service("a")
			res, err := s.Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(2)}})
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			var pe *repair.ReplicaError
			if r.RangesFailed != 1 || len(r.Errors) != 1 || !errors.As(r.Errors[0], &pe) || pe.Replica != "c" || !strings.Contains(r.Errors[0].Error(), tc.msg) {
				t.Fatalf("repair with c listing a partition %s: %+v, want the range with c failed, naming c and %q", tc.name, r, tc.msg)
			}
			for _, st := range c.takeStreamed() {
				if strings.Contains(st, "elsewhere") {
					t.Errorf("streamed %s, the partition c listed under another token", st)
				}
			}
		})
	}
}

// TestRepairOneAtATime: a repair asked for while another runs fails with ErrRunning; one whose
// context ends returns the tables done so far and the context's error.
func TestRepairOneAtATime(t *testing.T) {
	c := newTestCluster(t, 864000)
	c.diverge()
	s := c.service("a")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.throttle = func(ctx context.Context) error {
		once.Do(func() { close(entered); <-release })
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(3)}})
		done <- err
	}()
	<-entered
	if _, err := s.Repair(context.Background(), []repair.Target{{Table: c.table, RF: schema.Simple(3)}}); !errors.Is(err, repair.ErrRunning) {
		t.Errorf("a repair during another: %v, want ErrRunning", err)
	}
	if err := testutil.CollectAndCompare(s, strings.NewReader(running(1)), "kvnode_repair_running"); err != nil {
		t.Errorf("during a repair: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first repair: %v", err)
	}
	if err := testutil.CollectAndCompare(s, strings.NewReader(running(0)), "kvnode_repair_running"); err != nil {
		t.Errorf("after the repair: %v", err)
	}

	// A canceled repair stops at once and says so.
	c.diverge()
	c.write("p5", 5, 40, "b")
	ctx, cancel := context.WithCancel(context.Background())
	c.throttle = func(ctx context.Context) error { cancel(); return ctx.Err() }
	res, err := s.Repair(ctx, []repair.Target{{Table: c.table, RF: schema.Simple(3)}, {Table: c.table, RF: schema.Simple(3)}})
	if !errors.Is(err, context.Canceled) || len(res) != 1 || res[0].RangesFailed != 1 {
		t.Errorf("a canceled repair: %+v, %v; want the first table with its range failed, and context.Canceled", res, err)
	}
}

// running is the exposition of kvnode_repair_running at v.
func running(v int) string {
	return fmt.Sprintf(`
# HELP kvnode_repair_running 1 while a repair runs on this node.
# TYPE kvnode_repair_running gauge
kvnode_repair_running %d
`, v)
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := newTestCluster(t, 0)
	for _, tc := range []struct {
		cfg  repair.Config
		want string
	}{
		{repair.Config{WriteTimeout: time.Second}, "repair: Config.Host is nil"},
		{repair.Config{Host: testHost{c, "a"}}, "repair: Config.WriteTimeout is 0s, want a positive duration"},
	} {
		if _, err := repair.New(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	var s *repair.Service
	s.Stop() // a nil service stops
}

func TestConfigEnsureDefaults(t *testing.T) {
	var c repair.Config
	c.EnsureDefaults()
	if c.Logger == nil || c.Now == nil {
		t.Errorf("EnsureDefaults on zero Config: logger %v, clock set %v; want both set", c.Logger, c.Now != nil)
	}
	logger, now := c.Logger, time.Unix(7, 0)
	set := repair.Config{Logger: logger, Now: func() time.Time { return now }, WriteTimeout: time.Second}
	set.EnsureDefaults().EnsureDefaults()
	if set.Logger != logger || !set.Now().Equal(now) || set.WriteTimeout != time.Second {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
}
