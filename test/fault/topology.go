//go:build linux

package fault

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/test/proc"
)

// Topology changes as nemeses: a node decommissioned, or killed and removed with removenode,
// while the workload runs (the admin command runs in the namespace of the node that takes it:
// without authentication a node takes topology changes from its own host only); the heal
// brings it back as a new node (its data directory wiped, a new host id) that joins and
// bootstraps, the workload still running. So one step moves ranges away from the node
// (decommission, or re-replication from the survivors for removenode) and back to it
// (bootstrap). The cluster needs more nodes than the keyspace's replication factor, or the
// decommission is refused.

// topologyWait bounds one decommission or removenode.
const topologyWait = 3 * time.Minute

// Decommission decommissions node Node through its Admin service (kvnode decommission) and
// stops it once it has left; Heal wipes its data directory and starts it again, so that it
// joins as a new node (a node whose decommission failed is only started again if it stopped).
type Decommission struct {
	Node int
	gone bool // the node left the ring: Heal joins it as a new node
}

func (d *Decommission) Name() string { return fmt.Sprintf("decommission n%d, then join", d.Node+1) }

func (d *Decommission) Start(ctx context.Context, c *Cluster) error {
	n := c.Node(d.Node)
	ctx, cancel := context.WithTimeout(ctx, topologyWait)
	defer cancel()
	out, err := c.NS[d.Node].Exec(ctx, "", n.Binary, "decommission", "--addr", adminAddr(d.Node))
	if err != nil {
		return fmt.Errorf("kvnode decommission of n%d: %w: %s", d.Node+1, err, lastLines(out, 5))
	}
	d.gone = true
	return stopNode(n)
}

func (d *Decommission) Heal(ctx context.Context, c *Cluster) error {
	return rejoin(ctx, c, d.Node, &d.gone)
}

// RemoveNode SIGKILLs node Node and, once every other node sees it down, removes it through Via
// (kvnode removenode): its ranges re-replicate from the surviving replicas. Heal wipes its data
// directory and starts it again, so that it joins as a new node (a node whose removal failed is
// restarted on its data).
type RemoveNode struct {
	Node, Via int
	gone      bool // the node was removed from the ring: Heal joins it as a new node
}

func (r *RemoveNode) Name() string {
	return fmt.Sprintf("kill -9 and removenode n%d through n%d, then join", r.Node+1, r.Via+1)
}

func (r *RemoveNode) Start(ctx context.Context, c *Cluster) error {
	n := c.Node(r.Node)
	id := n.ID
	if err := n.Kill(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, topologyWait)
	defer cancel()
	want := c.Proc.AllUp()
	want[id] = "DOWN"
	var others []*proc.Node // removenode refuses while any live node sees it up
	for i := range c.Size() {
		if i != r.Node {
			others = append(others, c.Node(i))
		}
	}
	if err := c.Proc.WaitStates(ctx, time.Minute, others, want); err != nil {
		return err
	}
	out, err := c.NS[r.Via].Exec(ctx, "", n.Binary, "removenode", "--addr", adminAddr(r.Via), id)
	if err != nil {
		return fmt.Errorf("kvnode removenode %s (n%d) through n%d: %w: %s", id, r.Node+1, r.Via+1, err, lastLines(out, 5))
	}
	r.gone = true
	return nil
}

func (r *RemoveNode) Heal(ctx context.Context, c *Cluster) error {
	return rejoin(ctx, c, r.Node, &r.gone)
}

// rejoin starts node i again when its process is not running: when *gone (it left the ring) as a
// new node, its data directory wiped, so that it gets a new host id and bootstraps the ranges it
// takes (its start returns once it has streamed them), and *gone is reset; otherwise on its data,
// as it was. A running node is left alone, so that a heal without a start, or a second one,
// changes nothing.
func rejoin(_ context.Context, c *Cluster, i int, gone *bool) error {
	n := c.Node(i)
	if n.Running() {
		return nil
	}
	if !*gone {
		return n.Start()
	}
	if err := os.RemoveAll(n.DataDir); err != nil {
		return fmt.Errorf("wiping n%d's data directory: %w", i+1, err)
	}
	n.ID = "" // a new node: Start takes the id it prints
	if err := n.Start(); err != nil {
		return err
	}
	*gone = false
	return nil
}

// adminAddr is node i's Admin (gRPC) address.
func adminAddr(i int) string { return net.JoinHostPort(NodeIP(i), strconv.Itoa(GRPCPort)) }
