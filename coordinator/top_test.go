package coordinator

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// topSchema applies stmts to an empty schema.
func topSchema(t *testing.T, stmts ...string) *schema.Schema {
	t.Helper()
	s := schema.New()
	for i, text := range stmts {
		parsed, err := cql.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if s, err = s.Apply(parsed[0], "", schema.Change{Version: schema.Version{Timestamp: int64(i + 1), Node: "n1"}}); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	return s
}

// describeTop renders a merge for comparison: one line per partition.
func describeTop(top TopPartitions) string {
	var b strings.Builder
	for _, tt := range top.Tables {
		for _, p := range tt.Partitions {
			fmt.Fprintf(&b, "%s.%s %v token=%d key=%q ops=%g limit=%d rejected=%g share=%g would=%g nodes=%d\n",
				tt.Table.Keyspace, tt.Table.Name, p.Op, p.Token, p.Key, p.EstimatedOpsPerSecond, p.Limit,
				p.RejectedPerSecond, p.RejectedShare, p.WouldRejectPerSecond, p.Nodes)
		}
	}
	fmt.Fprintf(&b, "unreachable %v\n", top.Unreachable)
	return b.String()
}

func TestMergeTopPartitions(t *testing.T) {
	s := topSchema(t,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.b (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 100, 'max_reads_per_second': 50}",
		"CREATE TABLE ks.a (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 10}",
		"CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE other.c (k int PRIMARY KEY)",
		"CREATE TABLE ks.gone (k text PRIMARY KEY)",
		"DROP TABLE ks.gone",
	)
	a, _ := s.Table("ks", "a")
	b, _ := s.Table("ks", "b")
	c, _ := s.Table("other", "c")
	const dropped = schema.TableID(999_999)
	w, r := schema.OpWrite, schema.OpRead
	answers := []NodeHotPartitions{
		{Node: "n3", Partitions: []HotPartition{
			// The coordinator-local view of a: no key known, its own rejections.
			{Table: a.ID, Op: w, Token: 5, OpsPerSecond: 900, CoordinatorRejectionsPerSecond: 100},
			{Table: b.ID, Op: r, Token: 1, OpsPerSecond: 40},
			{Table: dropped, Op: w, Token: 2, OpsPerSecond: 1e6},
			{Table: c.ID, Op: w, Token: 9, OpsPerSecond: 20, CoordinatorWouldRejectPerSecond: 4, ReplicaWouldRejectPerSecond: 3},
		}},
		{Node: "n5", Unreachable: true},
		{Node: "n1", Partitions: []HotPartition{
			// Two replicas' views of a: the largest estimate and the largest replica rejections
			// count, coordinator rejections add up, the key is the first listed.
			{Table: a.ID, Op: w, Token: 5, Key: [][]byte{[]byte("hot")}, OpsPerSecond: 1000, ReplicaRejectionsPerSecond: 700, CoordinatorRejectionsPerSecond: 50},
			{Table: b.ID, Op: w, Token: 1, OpsPerSecond: 40}, // ties the read of the same token: write after read
			{Table: b.ID, Op: w, Token: -3, OpsPerSecond: 40},
			{Table: b.ID, Op: w, Token: 8, OpsPerSecond: 30},
			{Table: c.ID, Op: w, Token: 9, OpsPerSecond: 25, CoordinatorWouldRejectPerSecond: 1, ReplicaWouldRejectPerSecond: 5},
		}},
		{Node: "n2", Partitions: []HotPartition{
			{Table: a.ID, Op: w, Token: 5, Key: [][]byte{[]byte("other")}, OpsPerSecond: 950, ReplicaRejectionsPerSecond: 800},
			{Table: a.ID, Op: r, Token: 6, OpsPerSecond: 0, ReplicaRejectionsPerSecond: 3},       // no rate, rejections: all rejected
			{Table: a.ID, Op: w, Token: 7, OpsPerSecond: 10, CoordinatorRejectionsPerSecond: 30}, // more rejected than offered
		}},
		{Node: "n4", Unreachable: true},
	}
	for _, tt := range []struct {
		name     string
		keyspace string
		limit    int
		want     string
	}{
		{"every table", "", 0, `ks.a write token=5 key=["hot"] ops=1000 limit=10 rejected=950 share=0.95 would=0 nodes=3
ks.a write token=7 key=[] ops=10 limit=10 rejected=30 share=1 would=0 nodes=1
ks.a read token=6 key=[] ops=0 limit=0 rejected=3 share=1 would=0 nodes=1
ks.b write token=-3 key=[] ops=40 limit=100 rejected=0 share=0 would=0 nodes=1
ks.b read token=1 key=[] ops=40 limit=50 rejected=0 share=0 would=0 nodes=1
ks.b write token=1 key=[] ops=40 limit=100 rejected=0 share=0 would=0 nodes=1
ks.b write token=8 key=[] ops=30 limit=100 rejected=0 share=0 would=0 nodes=1
other.c write token=9 key=[] ops=25 limit=0 rejected=0 share=0 would=10 nodes=2
unreachable [n4 n5]
`},
		{"one keyspace, two per table", "ks", 2, `ks.a write token=5 key=["hot"] ops=1000 limit=10 rejected=950 share=0.95 would=0 nodes=3
ks.a write token=7 key=[] ops=10 limit=10 rejected=30 share=1 would=0 nodes=1
ks.b write token=-3 key=[] ops=40 limit=100 rejected=0 share=0 would=0 nodes=1
ks.b read token=1 key=[] ops=40 limit=50 rejected=0 share=0 would=0 nodes=1
unreachable [n4 n5]
`},
		{"a keyspace without hot partitions", "nothing", 10, "unreachable [n4 n5]\n"},
	} {
		got := describeTop(MergeTopPartitions(s, answers, tt.keyspace, tt.limit))
		if got != tt.want {
			t.Errorf("MergeTopPartitions(%s: keyspace %q, limit %d) =\n%s\nwant\n%s", tt.name, tt.keyspace, tt.limit, got, tt.want)
		}
	}
}

// TestMergeTopPartitionsIsOrderFree: the nodes' answers may come back in any order; the merge
// is the same (only which node's key is kept depends on it, and the nodes agree on keys).
func TestMergeTopPartitionsIsOrderFree(t *testing.T) {
	s := topSchema(t,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY) WITH per_partition_rate_limit = {'max_writes_per_second': 10, 'max_reads_per_second': 10}",
	)
	tbl, _ := s.Table("ks", "t")
	var answers []NodeHotPartitions
	for n := range 4 {
		a := NodeHotPartitions{Node: NodeID(fmt.Sprintf("n%d", n)), Unreachable: n == 2}
		for i := range 20 {
			op := schema.Op(1 + (i+n)%2)
			a.Partitions = append(a.Partitions, HotPartition{Table: tbl.ID, Op: op, Token: int64(i % 7), Key: [][]byte{{byte(i % 7)}},
				OpsPerSecond: float64((i * 13) % 5 * 10), CoordinatorRejectionsPerSecond: float64(n), ReplicaRejectionsPerSecond: float64(i % 3)})
		}
		if a.Unreachable {
			a.Partitions = nil
		}
		answers = append(answers, a)
	}
	want := MergeTopPartitions(s, answers, "", 0)
	for shift := 1; shift < len(answers); shift++ {
		rotated := append(append([]NodeHotPartitions(nil), answers[shift:]...), answers[:shift]...)
		if got := MergeTopPartitions(s, rotated, "", 0); !reflect.DeepEqual(got, want) {
			t.Errorf("the answers rotated by %d merge to\n%s\nwant\n%s", shift, describeTop(got), describeTop(want))
		}
	}
	if len(want.Tables) != 1 || len(want.Tables[0].Partitions) != 14 || !reflect.DeepEqual(want.Unreachable, []NodeID{"n2"}) {
		t.Errorf("the merge is\n%s\nwant table ks.t's 14 partitions (7 tokens × 2 ops) and n2 unreachable", describeTop(want))
	}
}

func TestMergeTopPartitionsOfNothing(t *testing.T) {
	if got := MergeTopPartitions(schema.New(), nil, "", 10); len(got.Tables) != 0 || len(got.Unreachable) != 0 {
		t.Errorf("MergeTopPartitions of no answers = %+v, want nothing", got)
	}
}
