package node_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestDecommissionHandsOffItsHints: a node that coordinated writes at ONE while another was down
// holds hints for it; decommissioned before its periodic replay delivered them (paused here), it
// delivers them before it leaves, so that the other node alone serves those rows afterwards.
func TestDecommissionHandsOffItsHints(t *testing.T) {
	const leaving, target = 3, 2
	var paused atomic.Bool
	paused.Store(true)
	c, err := localcluster.Start(context.Background(), localcluster.Options{
		Dir:   t.TempDir(),
		Nodes: 4,
		Adjust: func(i int, cfg *node.Config) {
			cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
			if i == leaving {
				cfg.Testing = &node.TestingKnobs{PauseHintReplay: paused.Load}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	do := func(i int, cl client.Consistency, stmt string) (*client.Result, error) {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return c.Node(i).Client().Execute(cctx, cl, stmt)
	}
	must := func(i int, cl client.Consistency, stmt string) {
		t.Helper()
		if _, err := do(i, cl, stmt); err != nil {
			t.Fatalf("%s through node %d: %v", stmt, i, err)
		}
	}
	const rows = 40
	must(0, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	must(0, client.Quorum, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")

	if err := c.Stop(target); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSeenDown(ctx, target); err != nil {
		t.Fatal(err)
	}
	for k := range rows {
		must(leaving, client.One, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, %d)", k, k))
	}
	if err := c.Restart(ctx, target); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Node(leaving).Node().Decommission(ctx); err != nil {
		t.Fatalf("decommission: %v", err)
	}
	if err := c.Stop(leaving); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		if err := c.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	// Only the target is up: it serves at ONE exactly the rows it replicates (the others are
	// unavailable), and each of those must be there.
	served := 0
	for k := range rows {
		res, err := do(target, client.One, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k))
		if err != nil {
			continue // not a replica of k
		}
		served++
		if len(res.Rows) != 1 {
			t.Errorf("row %d, written at ONE while node %d was down, is missing from it after the coordinator holding its hint was decommissioned", k, target)
		}
	}
	if served == 0 {
		t.Fatalf("node %d replicates none of the %d rows; the test proves nothing", target, rows)
	}
}
