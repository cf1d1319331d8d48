package shell_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// forwarder relays forwarded writes through the test transport, as internode's RelayMutations
// does between nodes, and records them.
type forwarder struct {
	c        *cluster
	mu       sync.Mutex
	vias     []coordinator.NodeID
	targets  [][]string
	limiters []replicapb.Limiter_Mode
	// old makes the forwarder a release without forwarding: Unimplemented.
	old bool
}

func (c *cluster) forwarder(f func(*cluster) shell.Forwarder) shell.Forwarder {
	if f == nil {
		return nil
	}
	return f(c)
}

func (f *forwarder) ForwardMutate(ctx context.Context, via coordinator.NodeID, req *replicapb.ForwardMutateRequest, recv func(*replicapb.ForwardMutateAck) error) error {
	f.mu.Lock()
	f.vias = append(f.vias, via)
	var ts []string
	for _, t := range req.GetTargets() {
		ts = append(ts, t.GetNode())
		f.limiters = append(f.limiters, t.GetLimiter().GetMode())
	}
	f.targets = append(f.targets, ts)
	f.mu.Unlock()
	if f.old {
		return fmt.Errorf("internode: forward_mutate to node %s: %w", via, status.Error(codes.Unimplemented, "internode: this node serves no forward_mutate requests"))
	}
	for _, t := range req.GetTargets() {
		ack := &replicapb.ForwardMutateAck{Node: t.GetNode()}
		resp, err := f.c.transport.Mutate(ctx, coordinator.NodeID(t.GetNode()), &replicapb.MutateRequest{Limiter: t.GetLimiter(), Mutation: req.GetMutation()})
		if err != nil {
			ack.Unreachable = err.Error()
		} else {
			ack.Response = resp
		}
		if err := recv(ack); err != nil {
			return err
		}
	}
	return nil
}

func (f *forwarder) sent() ([]coordinator.NodeID, [][]string, []replicapb.Limiter_Mode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.vias), slices.Clone(f.targets), slices.Clone(f.limiters)
}

// newTwoDCs returns n1, n2, n3 in dc1 and n4, n5, n6 in dc2 with forwarding through fw, a
// keyspace with three replicas in each and a table with a write limit.
func newTwoDCs(t *testing.T, fw *forwarder, hints shell.HintSink) *cluster {
	c := newCluster(t, options{
		order: []coordinator.NodeID{"n1", "n2", "n3", "n4", "n5", "n6"},
		dcs:   map[coordinator.NodeID]string{"n1": "dc1", "n2": "dc1", "n3": "dc1", "n4": "dc2", "n5": "dc2", "n6": "dc2"},
		forward: func(c *cluster) shell.Forwarder {
			fw.c = c
			return fw
		},
		hints: hints,
	})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 1000}")
	return c
}

// TestWriteForwardedToRemoteDataCenter: a write through n1 at EACH_QUORUM goes to dc2 as one
// forwarded message naming its three replicas, each to account the write only (dc1 decides
// it); their answers come back through the forwarder and make dc2's quorum; n1 sends dc1's
// replicas their copies directly, and each replica is written once.
func TestWriteForwardedToRemoteDataCenter(t *testing.T) {
	fw := &forwarder{}
	c := newTwoDCs(t, fw, nil)
	c.transport.mu.Lock()
	before := maps.Clone(c.transport.calls)
	c.transport.mu.Unlock()
	if _, err := c.exec("n1", coordinator.EachQuorum, "INSERT INTO ks.t (k, v) VALUES (1, 1)"); err != nil {
		t.Fatalf("a write at EACH_QUORUM through n1: %v", err)
	}
	vias, targets, modes := fw.sent()
	if len(vias) != 1 || !slices.Contains([]coordinator.NodeID{"n4", "n5", "n6"}, vias[0]) {
		t.Fatalf("forwarded through %v, want once through a node of dc2", vias)
	}
	if got := slices.Sorted(slices.Values(targets[0])); !slices.Equal(got, []string{"n4", "n5", "n6"}) {
		t.Errorf("the forwarded write's targets are %v, want n4, n5, n6", got)
	}
	for _, m := range modes {
		if m != replicapb.Limiter_ACCOUNT_ONLY {
			t.Errorf("a dc2 replica got the forwarded write with limiter %v, want ACCOUNT_ONLY", m)
		}
	}
	poll.Must(t, 10*time.Second, "each of the six replicas written once", func() error {
		c.transport.mu.Lock()
		defer c.transport.mu.Unlock()
		for _, id := range []coordinator.NodeID{"n1", "n2", "n3", "n4", "n5", "n6"} {
			if n := c.transport.calls[id] - before[id]; n != 1 {
				return fmt.Errorf("%s written %d times", id, n)
			}
		}
		return nil
	})
}

// TestForwardedWriteHintsAFailedTarget: a dc2 replica that fails the write the forwarder sends
// it is hinted by the coordinator, and the write at LOCAL_QUORUM succeeds.
func TestForwardedWriteHintsAFailedTarget(t *testing.T) {
	fw := &forwarder{}
	hints := &hintRecorder{}
	c := newTwoDCs(t, fw, hints)
	c.transport.setFault(failWrites, "n5")
	if _, err := c.exec("n1", coordinator.LocalQuorum, "INSERT INTO ks.t (k, v) VALUES (2, 2)"); err != nil {
		t.Fatalf("a write at LOCAL_QUORUM through n1 with n5 failing: %v", err)
	}
	poll.Must(t, 10*time.Second, "a hint for n5", poll.Bool(func() bool { return slices.Equal(hints.targets(), []string{"n5"}) }))
	if vias, _, _ := fw.sent(); len(vias) != 1 {
		t.Errorf("forwarded %d times, want once", len(vias))
	}
}

// TestForwardingToAnOlderRelease: a forwarder that does not serve forward_mutate (a release
// before it, during a rolling upgrade) answers Unimplemented; the coordinator then sends dc2's
// replicas their copies directly, and the write at EACH_QUORUM succeeds.
func TestForwardingToAnOlderRelease(t *testing.T) {
	fw := &forwarder{old: true}
	hints := &hintRecorder{}
	c := newTwoDCs(t, fw, hints)
	c.transport.mu.Lock()
	before := maps.Clone(c.transport.calls)
	c.transport.mu.Unlock()
	if _, err := c.exec("n1", coordinator.EachQuorum, "INSERT INTO ks.t (k, v) VALUES (3, 3)"); err != nil {
		t.Fatalf("a write at EACH_QUORUM through n1, forwarded to an older release: %v", err)
	}
	if vias, _, _ := fw.sent(); len(vias) != 1 {
		t.Errorf("tried forwarding %d times, want once", len(vias))
	}
	poll.Must(t, 10*time.Second, "each of dc2's replicas written once, directly", func() error {
		c.transport.mu.Lock()
		defer c.transport.mu.Unlock()
		for _, id := range []coordinator.NodeID{"n4", "n5", "n6"} {
			if n := c.transport.calls[id] - before[id]; n != 1 {
				return fmt.Errorf("%s written %d times", id, n)
			}
		}
		return nil
	})
	if h := hints.targets(); len(h) != 0 {
		t.Errorf("hints for %v, want none", h)
	}
}
