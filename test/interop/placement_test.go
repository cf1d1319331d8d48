package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/schema"
)

// TestPlacementMatchesPythonDriver: on random rings of several data centers and racks, kvnode
// places NetworkTopologyStrategy replicas on the same nodes as the DataStax Python driver's
// port of Cassandra's strategy, which is what its token-aware routing (and every driver's)
// relies on. Orders may differ: the driver adds a data center's rack repeats after its other
// racks, Cassandra 4.1 (and kvnode) where it meets them; the sets are Cassandra's in both (a
// data center's first RF − racks nodes met in racks it has, whichever way the walk is written).
// Nodes have one token each: with several, the driver (3.25) lists a node once per token it
// skipped, and those repeats use up the data center's replicas (a node twice, another missing),
// where Cassandra places distinct nodes (cluster's TestNetworkTopologyPlacement checks vnodes
// against a transcription of Cassandra 4.1's walk).
func TestPlacementMatchesPythonDriver(t *testing.T) {
	requireDrivers(t)
	type node struct {
		ID     string  `json:"id"`
		DC     string  `json:"dc"`
		Rack   string  `json:"rack"`
		Tokens []int64 `json:"tokens"`
	}
	type testCase struct {
		RF     map[string]int `json:"rf"`
		Tokens []int64        `json:"tokens"`
	}
	type document struct {
		Nodes []node     `json:"nodes"`
		Cases []testCase `json:"cases"`
	}
	rng := rand.New(rand.NewPCG(20261129, 35))
	var rings []*cluster.Ring
	var docs [][]byte
	for range 20 {
		var doc document
		var nodes []cluster.RingNode
		for i := range 2 + rng.IntN(30) {
			id := cluster.NodeID(fmt.Sprintf("n%02d", i))
			n := cluster.RingNode{ID: id, Tokens: cluster.NodeTokens(id, 1),
				DC: fmt.Sprintf("dc%d", 1+rng.IntN(3)), Rack: fmt.Sprintf("r%d", 1+rng.IntN(4))}
			nodes = append(nodes, n)
			doc.Nodes = append(doc.Nodes, node{ID: string(id), DC: n.DC, Rack: n.Rack, Tokens: n.Tokens})
		}
		for range 8 {
			c := testCase{RF: map[string]int{}}
			for d := 1; d <= 3; d++ {
				if rf := rng.IntN(5); rf > 0 {
					c.RF[fmt.Sprintf("dc%d", d)] = rf
				}
			}
			for range 40 {
				c.Tokens = append(c.Tokens, int64(rng.Uint64()))
			}
			doc.Cases = append(doc.Cases, c)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		rings = append(rings, cluster.NewRing(nodes))
		docs = append(docs, b)
	}
	for i, b := range docs {
		cmd := exec.Command(pythonPath, "-B", filepath.Join("python", "placement.py"))
		cmd.Stdin = bytes.NewReader(b)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("placement.py: %v\n%s", err, stderr.Bytes())
		}
		var got struct {
			Replicas [][][]string `json:"replicas"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("placement.py wrote %q: %v", out, err)
		}
		var doc document
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for ci, c := range doc.Cases {
			p, err := schema.NetworkTopology(c.RF)
			if err != nil {
				t.Fatal(err)
			}
			for ti, tok := range c.Tokens {
				var ours []string
				for _, id := range rings[i].AppendReplicasFor(nil, tok, p) {
					ours = append(ours, string(id))
				}
				theirs := slices.Sorted(slices.Values(got.Replicas[ci][ti]))
				if !slices.Equal(slices.Sorted(slices.Values(ours)), theirs) {
					t.Fatalf("ring %d, %v, token %d: kvnode places %v, the Python driver %v (nodes %+v)", i, p, tok, ours, theirs, doc.Nodes)
				}
			}
		}
	}
}
