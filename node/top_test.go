package node_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/replica"
)

// TestTopPartitionsMergesEveryNode makes partitions hot on both limiter paths (with a frozen
// clock at a second boundary, counters never decay and rate estimates equal the counts) and
// asks a node that coordinated none of it for the cluster-wide list, through the client API.
func TestTopPartitionsMergesEveryNode(t *testing.T) {
	tc, _ := limitedCluster(t)
	c0 := tc.client(0)
	// rf3: node 0 replicates everything, so it decides and rejects alone; the other replicas
	// count the admitted writes and get the rejected ones as account-only deltas.
	_, hotRejected, _ := hammerTable(t, c0, "rf3.limited", "hot", 100)
	_, warmRejected, _ := hammerTable(t, c0, "rf3.limited", "warm", 60)
	hammerTable(t, c0, "rf3.limited", "cool", 30) // never above 2·limit (40): never hot
	// rf1: node 0 does not replicate key; its owner enforces alone.
	key, _ := keyNotOn(t, tc, 0, "one")
	_, _, oneRejected := hammerTable(t, c0, "rf1.limited", key, 80)

	type row struct {
		table, key string
		ops        float64
		nodes      int
	}
	want := []row{ // tables by name, partitions hottest first
		{"rf1.limited", key, 80, 1},
		{"rf3.limited", "hot", 100, 3},
		{"rf3.limited", "warm", 60, 3},
	}
	rejected := []int{oneRejected, hotRejected, warmRejected}
	c2 := tc.client(2)
	var (
		last     string
		estimate []float64
	)
	ctx := context.Background()
	poll.Must(t, 10*time.Second, "node 2 lists the hot partitions of every node, with propagated counts", poll.Bool(func() bool {
		res, err := c2.TopPartitions(ctx, "", "", 0)
		if err != nil {
			t.Fatalf("TopPartitions through node 2: %v", err)
		}
		var got []row
		estimate = estimate[:0]
		for _, tbl := range res.Tables {
			for _, p := range tbl.Partitions {
				k := "?"
				if len(p.Key) == 1 {
					k = fmt.Sprint(p.Key[0])
				}
				got = append(got, row{tbl.Keyspace + "." + tbl.Table, k, p.EstimatedOpsPerSecond, p.Nodes})
				estimate = append(estimate, p.RejectedPerSecond)
				if p.Op != client.OpWrite || p.Limit != 20 || math.Abs(p.RejectedShare-min(1, p.RejectedPerSecond/p.EstimatedOpsPerSecond)) > 1e-9 {
					t.Errorf("partition %s of %s.%s = %+v, want writes, limit 20, rejected share = rejected/ops", k, tbl.Keyspace, tbl.Table, p)
				}
			}
		}
		last = fmt.Sprintf("%+v, rejected/s %v (unreachable %v)", got, estimate, res.UnreachableNodes)
		return fmt.Sprint(got) == fmt.Sprint(want)
	}))
	t.Logf("node 2 lists %s; the clients saw %v rejected", last, rejected)
	// Rejections are sampled one in replica.HotSample: the estimates are near the counts.
	for i, r := range rejected {
		if math.Abs(estimate[i]-float64(r)) > 0.5*float64(r)+2*replica.HotSample {
			t.Errorf("%s %s: %.0f rejections/s estimated, the client saw %d rejected; want them close", want[i].table, want[i].key, estimate[i], r)
		}
	}

	// Narrowed to one table and one partition.
	res, err := c2.TopPartitions(ctx, "rf3", "limited", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 1 || len(res.Tables[0].Partitions) != 1 || fmt.Sprint(res.Tables[0].Partitions[0].Key) != "[hot]" {
		t.Errorf("TopPartitions(rf3, limited, 1) = %+v, want only rf3.limited's hot", res.Tables)
	}
	if cols := res.Tables[0].KeyColumns; len(cols) != 1 || cols[0] != (client.Column{Name: "k", Type: "text"}) {
		t.Errorf("rf3.limited's key columns = %v, want [k text]", cols)
	}
	for _, tt := range []struct{ ks, table, want string }{
		{"rf3", "nope", "unknown table rf3.nope"},
		{"nope", "", "unknown keyspace nope"},
	} {
		if _, err := c2.TopPartitions(ctx, tt.ks, tt.table, 0); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("TopPartitions(%q, %q) error = %v, want %q", tt.ks, tt.table, err, tt.want)
		}
	}

	// A node down is named, and what the others saw is still listed.
	down := tc.nodes[1].ID()
	tc.stop(1)
	poll.Must(t, 10*time.Second, "node 2 sees node 1 down", poll.Bool(func() bool { return !tc.nodes[2].Cluster().IsLive(cluster.NodeID(down)) }))
	res, err = c2.TopPartitions(ctx, "rf3", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.UnreachableNodes) != fmt.Sprint([]string{down}) || len(res.Tables) != 1 || len(res.Tables[0].Partitions) != 2 {
		t.Errorf("with node 1 down TopPartitions = %+v, unreachable %v; want rf3.limited's two partitions and node 1 (%s) unreachable", res.Tables, res.UnreachableNodes, down)
	}
}
