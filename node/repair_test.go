package node

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

func TestLocalRanges(t *testing.T) {
	ring := cluster.NewRing([]cluster.RingNode{
		{ID: "a", Tokens: []int64{-100, 100}},
		{ID: "b", Tokens: []int64{0}},
		{ID: "c", Tokens: []int64{50}},
	})
	type rr struct {
		r        replica.TokenRange
		replicas []coordinator.NodeID
	}
	got := func(self cluster.NodeID, rf int) []rr {
		var out []rr
		for _, x := range localRanges(ring, self, rf) {
			out = append(out, rr{x.r, x.replicas})
		}
		return out
	}
	// The ring: (-100, 0] b, (0, 50] c, (50, 100] a, (100, -100] (wrapping) a.
	min, max := int64(math.MinInt64), int64(math.MaxInt64)
	wantA := []rr{
		{replica.TokenRange{Start: min, End: -100}, []coordinator.NodeID{"a"}},
		{replica.TokenRange{Start: 50, End: 100}, []coordinator.NodeID{"a"}},
		{replica.TokenRange{Start: 100, End: max}, []coordinator.NodeID{"a"}},
	}
	if g := got("a", 1); !slices.EqualFunc(g, wantA, func(x, y rr) bool { return x.r == y.r && slices.Equal(x.replicas, y.replicas) }) {
		t.Errorf("a's ranges at RF 1: %v, want %v", g, wantA)
	}
	// At RF 2, b also replicates a's ranges followed (after a's own tokens) by b's token 0:
	// (50, 100] and the wrapping range.
	wantB := []rr{
		{replica.TokenRange{Start: min, End: -100}, []coordinator.NodeID{"a", "b"}},
		{replica.TokenRange{Start: -100, End: 0}, []coordinator.NodeID{"b", "c"}},
		{replica.TokenRange{Start: 50, End: 100}, []coordinator.NodeID{"a", "b"}},
		{replica.TokenRange{Start: 100, End: max}, []coordinator.NodeID{"a", "b"}},
	}
	if g := got("b", 2); !slices.EqualFunc(g, wantB, func(x, y rr) bool { return x.r == y.r && slices.Equal(x.replicas, y.replicas) }) {
		t.Errorf("b's ranges at RF 2: %v, want %v", g, wantB)
	}
	// Every token lies in exactly one range of the ring when RF covers every node.
	all := localRanges(ring, "a", 3)
	if len(all) != 5 {
		t.Errorf("at RF 3 a replicates %d ranges, want all 5", len(all))
	}
	for _, tok := range []int64{min + 1, -100, -99, 0, 1, 50, 51, 100, 101, max} {
		n := 0
		for _, x := range all {
			if x.r.Contains(tok) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("token %d lies in %d ranges, want 1", tok, n)
		}
	}
}

func TestRepairTables(t *testing.T) {
	s, err := schema.Build("CREATE KEYSPACE a WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};\n" +
		"CREATE TABLE a.x (k int PRIMARY KEY); CREATE TABLE a.y (k int PRIMARY KEY);\n" +
		"CREATE KEYSPACE b WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};\n" +
		"CREATE TABLE b.z (k int PRIMARY KEY);\n")
	if err != nil {
		t.Fatal(err)
	}
	names := func(req *kvnodepb.RepairRequest) ([]string, error) {
		ts, err := repairTables(s, req)
		var out []string
		for _, t := range ts {
			out = append(out, t.Keyspace+"."+t.Name)
		}
		return out, err
	}
	for _, tc := range []struct {
		ks, table string
		want      []string
		err       string
	}{
		{"", "", []string{"a.x", "a.y", "b.z"}, ""},
		{"a", "", []string{"a.x", "a.y"}, ""},
		{"b", "z", []string{"b.z"}, ""},
		{"c", "", nil, "unknown keyspace c"},
		{"a", "z", nil, "unknown table a.z"},
		{"", "x", nil, "needs its keyspace"},
	} {
		got, err := names(&kvnodepb.RepairRequest{Keyspace: tc.ks, Table: tc.table})
		switch {
		case tc.err != "" && (err == nil || !contains(err.Error(), tc.err)):
			t.Errorf("repair %q.%q: error %v, want one with %q", tc.ks, tc.table, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("repair %q.%q: %v, %v; want %v", tc.ks, tc.table, got, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
