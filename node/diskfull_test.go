package node_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/faultfs"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// TestFullDiskNodeIsDownForItsPeers fills one node's disk of three (as its reported free space,
// under its reserve): its peers see it down, with the reason, within the failure detector's
// suspicion time though it still answers gossip; QUORUM writes and reads through the others
// succeed and the writes are hinted for it. Once space is freed it says so by itself, its peers
// see it up, the hints replay, and every read at ALL and a repair through each node succeed.
// TRUNCATE through a peer, which needs every member up, still reaches the full node.
// Filled again (writes now meeting ENOSPC), it stops on Shutdown (SIGTERM) promptly.
func TestFullDiskNodeIsDownForItsPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const total = 10 << 30
	disk := faultfs.New(vfs.Default)
	free := func(n uint64) {
		disk.SetDiskUsage(&vfs.DiskUsage{AvailBytes: n, TotalBytes: total, UsedBytes: total - n})
	}
	free(5 << 30)
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3, Adjust: func(i int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		if i == 2 {
			cfg.Storage.FS = disk
			cfg.Storage.MinFreeSpace = 256 << 20
			cfg.Storage.DiskCheckInterval = 20 * time.Millisecond
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n1, n2, full := c.Node(0), c.Node(1), c.Node(2).Node()
	id := cluster.NodeID(full.ID())
	exec(t, n1.Client(), client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, n1.Client(), client.All, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	exec(t, n1.Client(), client.All, "INSERT INTO ks.t (k, v) VALUES (0, 0)")
	exec(t, n1.Client(), client.All, "CREATE TABLE ks.junk (k int PRIMARY KEY, v int)")
	exec(t, n1.Client(), client.All, "INSERT INTO ks.junk (k, v) VALUES (0, 0)")

	seen := func(live bool, reason string) func() error {
		return func() error {
			for _, p := range []*localcluster.Node{n1, n2} {
				m, ok := p.Node().Cluster().Member(id)
				if !ok || m.Live != live || m.Unavailable != reason || p.Node().Cluster().IsLive(id) != live {
					return fmt.Errorf("%s sees the node live %v, unavailable %q; want %v, %q", p.Name, m.Live, m.Unavailable, live, reason)
				}
			}
			return nil
		}
	}
	filled := time.Now()
	free(100 << 20)
	poll.Must(t, 30*time.Second, "both peers see the full node down", seen(false, cluster.ReasonDiskFull))
	took := time.Since(filled)
	// localcluster's ProfileTest: 200 ms probes, SuspicionMult 3, so 600 ms at first and up to
	// SuspicionMaxTimeoutMult (6) times that.
	t.Logf("peers saw the node down %v after its disk filled (suspicion time 0.6 s to 3.6 s)", took.Round(time.Millisecond))
	if took > 3600*time.Millisecond {
		t.Errorf("peers saw the full node down after %v, over the suspicion time", took)
	}
	status, err := kvnodepb.NewAdminClient(dialPlain(t, n1.Addr())).Status(ctx, &kvnodepb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range status.GetNodes() {
		if ns.GetHostId() == string(id) && (ns.GetState() != "DN" || ns.GetDownReason() != cluster.ReasonDiskFull) {
			t.Errorf("kvnode status through %s shows the full node %q, down for %q; want DN, %q", n1.Name, ns.GetState(), ns.GetDownReason(), cluster.ReasonDiskFull)
		}
	}
	if m, _ := full.Cluster().Member(id); !m.Live || !full.Cluster().IsLive(id) {
		t.Error("the full node sees itself down; the local node is always live")
	}

	hinted := metricValue(t, n1.Node().Registry(), "kvnode_hints_stored_total")
	for k := 1; k <= 20; k++ {
		exec(t, []*localcluster.Node{n1, n2}[k%2].Client(), client.Quorum, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES (%d, %d)", k, k))
	}
	for k := 1; k <= 20; k++ {
		if res := exec(t, []*localcluster.Node{n2, n1}[k%2].Client(), client.Quorum, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k)); len(res.Rows) != 1 {
			t.Fatalf("a QUORUM read of k = %d with the full node down returned %v, want the row", k, res.Rows)
		}
	}
	stored := metricValue(t, n1.Node().Registry(), "kvnode_hints_stored_total") +
		metricValue(t, n2.Node().Registry(), "kvnode_hints_stored_total") - hinted
	if stored < 20 {
		t.Errorf("%v hints stored for the full node by its peers, want one for each of the 20 writes", stored)
	}
	// TRUNCATE needs every member, and frees the full node's space: it still reaches it.
	exec(t, n2.Client(), client.All, "TRUNCATE ks.junk")

	freed := time.Now()
	free(5 << 30)
	poll.Must(t, 30*time.Second, "both peers see the node up again", seen(true, ""))
	t.Logf("peers saw the node up %v after space was freed", time.Since(freed).Round(time.Millisecond))
	poll.Must(t, 60*time.Second, "the peers' hints replayed", func() error {
		for _, p := range []*localcluster.Node{n1, n2} {
			if n := metricValue(t, p.Node().Registry(), "kvnode_hints_pending"); n > 0 {
				return fmt.Errorf("%s holds %v hints", p.Name, n)
			}
		}
		return nil
	})
	for _, p := range c.Nodes() {
		for k := 0; k <= 20; k++ {
			if res := exec(t, p.Client(), client.All, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k)); len(res.Rows) != 1 {
				t.Fatalf("a read at ALL of k = %d through %s after space was freed returned %v, want the row", k, p.Name, res.Rows)
			}
		}
		repairTables(ctx, t, p.Addr())
	}

	// Full again, writes meeting ENOSPC: SIGTERM (Shutdown) ends it promptly.
	free(10 << 20)
	disk.FailWrites(syscall.ENOSPC)
	poll.Must(t, 30*time.Second, "both peers see the full node down again", seen(false, cluster.ReasonDiskFull))
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	start := time.Now()
	err = full.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 15*time.Second {
		t.Errorf("Shutdown of the full node took %v (%v), want it prompt", time.Since(start), err)
	}
	t.Logf("Shutdown (SIGTERM) of the full node returned in %v: %v", time.Since(start).Round(time.Millisecond), err)
}
