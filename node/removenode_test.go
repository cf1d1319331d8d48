package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestWritesDuringRemoveNodeReachTheNewOwners: at RF=2 on 3 nodes, with one node killed, writes
// at ONE run through both survivors while removenode re-replicates the dead node's ranges (and
// some land after the ranges have streamed, before the removal). While it runs, every node sees
// the dead node leaving; once it returns, every row is readable at ONE through each survivor
// alone (each is the new owner of some of the dead node's ranges), without a repair.
func TestWritesDuringRemoveNodeReachTheNewOwners(t *testing.T) {
	const dead = 2
	var (
		written   atomic.Int64
		streamed  = make(chan struct{})
		seenState [2]cluster.NodeState
		refusals  [2]error
		tc        *localcluster.Cluster
	)
	tc, err := localcluster.Start(context.Background(), localcluster.Options{
		Dir:   t.TempDir(),
		Nodes: 3,
		Adjust: func(i int, cfg *node.Config) {
			cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
			cfg.Coordinator.WriteTimeout = time.Second
			if i == 0 {
				cfg.Testing = &node.TestingKnobs{BeforeRemoval: func() {
					for j := range 2 {
						seenState[j], _ = tc.Node(j).Node().Cluster().Ring().State(cluster.NodeID(tc.Node(dead).ID))
					}
					_, refusals[0] = tc.Node(1).Node().RemoveNode(context.Background(), tc.Node(dead).ID)
					_, refusals[1] = tc.Node(1).Node().Decommission(context.Background())
					// Writes made now reach the old replicas after their stream: only the
					// pending replicas bring them to the new owners.
					for at := written.Load(); written.Load() < at+40; {
						select {
						case <-streamed:
							return
						case <-time.After(time.Millisecond):
						}
					}
				}}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	do := func(i int, cl client.Consistency, stmt string) (*client.Result, error) {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return tc.Node(i).Client().Execute(cctx, cl, stmt)
	}
	must := func(i int, cl client.Consistency, stmt string) {
		t.Helper()
		if _, err := do(i, cl, stmt); err != nil {
			t.Fatalf("%s through node %d: %v", stmt, i, err)
		}
	}
	must(0, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	must(0, client.Quorum, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	for k := range 100 {
		must(k%3, client.All, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, %d)", k, k))
	}
	if err := tc.Kill(dead); err != nil {
		t.Fatal(err)
	}
	if err := tc.WaitSeenDown(ctx, dead); err != nil {
		t.Fatal(err)
	}

	// A removenode that fails midway (here: cancelled once every node sees the dead node
	// leaving) leaves every ring as it was.
	deadID := cluster.NodeID(tc.Node(dead).ID)
	before := tc.Node(1).Node().Cluster().Ring()
	rctx, rcancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := tc.Node(0).Node().RemoveNode(rctx, string(deadID))
		errc <- err
	}()
	poll.Must(t, 20*time.Second, "node 1 sees the dead node leaving", func() error {
		if st, _ := tc.Node(1).Node().Cluster().Ring().State(deadID); st != cluster.StateLeaving {
			return fmt.Errorf("node 1 sees it %v", st)
		}
		return nil
	})
	rcancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled removenode succeeded")
	}
	for j := range 2 {
		if r := tc.Node(j).Node().Cluster().Ring(); !r.Equal(before) || r.Transitioning() {
			t.Errorf("node %d: the ring after a failed removenode differs from the one before", j)
		}
	}

	// Writers through both survivors until removenode has returned; every acknowledged key
	// must be readable afterwards.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []int
		stop  atomic.Bool
	)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1000 + w; !stop.Load(); k += 2 {
				if _, err := do(w, client.One, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, %d)", k, k)); err != nil {
					continue
				}
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
				written.Add(1)
			}
		}()
	}
	_, err = tc.Node(0).Node().RemoveNode(ctx, tc.Node(dead).ID)
	close(streamed)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("removenode: %v", err)
	}
	for j, st := range seenState {
		if st != cluster.StateLeaving {
			t.Errorf("node %d saw the node being removed as %v while its ranges streamed, want leaving", j, st)
		}
	}
	if err := refusals[0]; err == nil || !strings.Contains(err.Error(), "already being removed") {
		t.Errorf("removenode of the node being removed, through another node = %v, want a refusal", err)
	}
	if err := refusals[1]; err == nil || !strings.Contains(err.Error(), "joining or leaving") {
		t.Errorf("decommission during a removenode = %v, want a refusal", err)
	}
	if len(acked) < 40 {
		t.Fatalf("only %d writes during removenode; the test proves little", len(acked))
	}
	// A write at ONE that one replica acknowledged may have left a hint for the other: each
	// survivor holds every row only once the hints between them are replayed.
	poll.Must(t, time.Minute, "the survivors replay their hints to each other", func() error {
		for j := range 2 {
			if n := node.PendingHints(tc.Node(j).Node()); n > 0 {
				return fmt.Errorf("node %d holds %d hints", j, n)
			}
		}
		return nil
	})
	keys := make([]int, 0, 100+len(acked))
	for k := range 100 {
		keys = append(keys, k)
	}
	keys = append(keys, acked...)
	// Each survivor alone: the other is stopped.
	for alone := range 2 {
		other := 1 - alone
		if err := tc.Stop(other); err != nil {
			t.Fatal(err)
		}
		if err := tc.WaitSeenDown(ctx, other); err != nil {
			t.Fatal(err)
		}
		missing := 0
		for _, k := range keys {
			res, err := do(alone, client.One, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k))
			if err != nil {
				t.Fatalf("read of %d at ONE through node %d alone: %v", k, alone, err)
			}
			if len(res.Rows) != 1 {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("node %d alone lacks %d of %d acknowledged rows after removenode", alone, missing, len(keys))
		}
		if alone == 0 {
			if err := tc.Restart(ctx, other); err != nil {
				t.Fatal(err)
			}
		}
	}
}
