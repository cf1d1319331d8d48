package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/faultfs"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/replica"
)

// refuses reports "" once nothing accepts connections at addr.
func refuses(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		return fmt.Errorf("%s still accepts connections", addr)
	}
}

// scrape returns the node's /metrics page.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: status %d, %v", addr, resp.StatusCode, err)
	}
	return string(body)
}

// TestStorageFailureStopsTheNode fails the disk of one node of three (EIO on every write and
// sync) under a write: the node stops serving clients (gRPC and native ports) and peers (the
// internode port, gossip), its peers see it down within failure detection but keep it in the
// ring, its metrics keep answering with the failure, the reason is logged at ERROR once, the
// cluster goes on at QUORUM, and its Shutdown returns promptly with the failure.
func TestStorageFailureStopsTheNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	disk := faultfs.New(vfs.Default)
	var logged lockedbuf.Buffer
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3, Adjust: func(i int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		if i == 2 {
			cfg.Storage.FS = disk
			cfg.Storage.NoSync = false // the write that meets the error waits for its sync
			cfg.Listen.MetricsAddr = "127.0.0.1:0"
			cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n1, n3 := c.Node(0), c.Node(2).Node()
	exec(t, n1.Client(), client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, n1.Client(), client.All, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	exec(t, n1.Client(), client.All, "INSERT INTO ks.t (k, v) VALUES (1, 1)")

	disk.FailWrites(syscall.EIO)
	go func() {
		// Coordinated by the failing node, whose own replica meets the error; its answer does
		// not matter (the node may stop before it is sent).
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c.Node(2).Client().Execute(wctx, client.One, "INSERT INTO ks.t (k, v) VALUES (2, 2)")
	}()
	poll.Must(t, 30*time.Second, "the node's storage fails", func() error {
		if n3.StorageFailed() == nil {
			return errors.New("storage not failed yet")
		}
		return nil
	})
	failedAt := time.Now()
	if f := n3.StorageFailed(); f.Kind != replica.FailureIO || !errors.Is(f, syscall.EIO) {
		t.Errorf("the storage failure is %v (kind %s), want an io_error wrapping EIO", f, f.Kind)
	}

	id := n3.ID()
	poll.Must(t, 30*time.Second, "both peers see the failed node down, still a member", func() error {
		for _, p := range []*localcluster.Node{c.Node(0), c.Node(1)} {
			m, ok := p.Node().Cluster().Member(cluster.NodeID(id))
			switch {
			case !ok:
				return fmt.Errorf("%s no longer lists the failed node", p.Name)
			case m.Live:
				return fmt.Errorf("%s still sees the failed node live", p.Name)
			}
		}
		return nil
	})
	t.Logf("peers saw the node down %v after its storage failed", time.Since(failedAt).Round(time.Millisecond))
	for _, addr := range []string{n3.Addr(), n3.CQLAddr(), n3.InternodeAddr()} {
		poll.Must(t, 30*time.Second, "the failed node's "+addr+" refuses connections", refuses(addr))
	}
	t.Logf("every listener of the failed node refused connections %v after its storage failed", time.Since(failedAt).Round(time.Millisecond))
	if page := scrape(t, n3.MetricsAddr()); !strings.Contains(page, `kvnode_storage_failed{kind="io_error"} 1`) {
		t.Errorf("the failed node's metrics lack kvnode_storage_failed{kind=\"io_error\"} 1")
	}

	// The others go on at QUORUM without it.
	exec(t, n1.Client(), client.Quorum, "INSERT INTO ks.t (k, v) VALUES (3, 3)")
	if res := exec(t, n1.Client(), client.Quorum, "SELECT v FROM ks.t WHERE k = 3"); len(res.Rows) != 1 {
		t.Errorf("a QUORUM read with the failed node down returned %v, want the row", res.Rows)
	}

	start := time.Now()
	err = n3.Shutdown(ctx)
	took := time.Since(start)
	if !errors.Is(err, replica.ErrStorageFailed) {
		t.Errorf("Shutdown of the failed node = %v, want an error wrapping replica.ErrStorageFailed", err)
	}
	if took > 10*time.Second {
		t.Errorf("Shutdown of the failed node took %v, want it prompt", took)
	}
	t.Logf("Shutdown (SIGTERM) of the failed node returned in %v", took.Round(time.Millisecond))
	if n := strings.Count(logged.String(), "level=ERROR msg=\"storage failed"); n != 1 {
		t.Errorf("the failed node logged the storage failure at ERROR %d times, want once:\n%s", n, logged.String())
	}
}

// TestStorageFailureDiePolicy: with disk_failure_policy die the node exits at once with
// ExitStorageFailed.
func TestStorageFailureDiePolicy(t *testing.T) {
	disk := faultfs.New(vfs.Default)
	exited := make(chan int, 1)
	nd := startOne(t, func(cfg *node.Config) {
		cfg.Storage.FS = disk
		cfg.Storage.NoSync = false
		cfg.Storage.DiskFailurePolicy = replica.PolicyDie
		cfg.Testing = &node.TestingKnobs{Exit: func(code int) { exited <- code }}
	})
	cl := connect(t, nd.Addr())
	exec(t, cl, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, cl, client.One, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	disk.FailWrites(syscall.ENOSPC)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl.Execute(ctx, client.One, "INSERT INTO ks.t (k, v) VALUES (1, 1)")
	}()
	select {
	case code := <-exited:
		if code != node.ExitStorageFailed {
			t.Errorf("the node exited with %d, want %d", code, node.ExitStorageFailed)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not exit within 30s of its storage failing")
	}
	if f := nd.StorageFailed(); f == nil || f.Kind != replica.FailureDiskFull {
		t.Errorf("the storage failure is %v, want disk_full", f)
	}
}

// TestLowDiskRefusesWritesUntilSpaceReturns fills the node's disk (as its reported free space):
// writes are refused with an error naming the disk and the free space, DROP TABLE still works,
// and once space returns writes are accepted again without a restart.
func TestLowDiskRefusesWritesUntilSpaceReturns(t *testing.T) {
	const total = 10 << 30
	disk := faultfs.New(vfs.Default)
	free := func(n uint64) {
		disk.SetDiskUsage(&vfs.DiskUsage{AvailBytes: n, TotalBytes: total, UsedBytes: total - n})
	}
	free(5 << 30)
	var dir string
	nd := startOne(t, func(cfg *node.Config) {
		dir = cfg.DataDir
		cfg.Storage.FS = disk
		cfg.Storage.MinFreeSpace = 256 << 20
		cfg.Storage.DiskCheckInterval = 10 * time.Millisecond
	})
	cl := connect(t, nd.Addr())
	exec(t, cl, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, cl, client.One, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	exec(t, cl, client.One, "INSERT INTO ks.t (k, v) VALUES (1, 1)")

	free(100 << 20)
	var refusal error
	poll.Must(t, 30*time.Second, "writes refused for low disk space", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, refusal = cl.Execute(ctx, client.One, "INSERT INTO ks.t (k, v) VALUES (2, 2)"); refusal == nil {
			return errors.New("writes still accepted")
		}
		return nil
	})
	dataDir := filepath.Join(dir, "data")
	for _, want := range []string{"100.0 MiB free of 10.0 GiB", "under the 256.0 MiB", dataDir} {
		if !strings.Contains(refusal.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, refusal)
		}
	}
	exec(t, cl, client.One, "DROP TABLE ks.t")
	exec(t, cl, client.One, "CREATE TABLE ks.u (k int PRIMARY KEY, v int)")

	free(2 << 30)
	poll.Must(t, 30*time.Second, "writes accepted again once space returned", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cl.Execute(ctx, client.One, "INSERT INTO ks.u (k, v) VALUES (1, 1)")
		return err
	})
}

// TestCorruptLogRefusesToStartThenServesNoReadsUntilRepaired damages the middle of a stopped
// node's newest write-ahead log, its tail intact: the node refuses to start, naming the log and
// the offset; started with start_despite_corrupt_log it takes writes, its peers and `kvnode
// status` show it unrepaired, reads through it are answered by the others (its own copy lost
// the log's writes), and a repair run on it brings the writes back and clears the mark.
func TestCorruptLogRefusesToStartThenServesNoReadsUntilRepaired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var despite atomic.Bool
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3, Adjust: func(i int, cfg *node.Config) {
		cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		if i == 2 {
			cfg.Storage.NoSync = false // pebble tells damage from a torn tail by the syncs after it
			cfg.Storage.StartDespiteCorruptLog = despite.Load()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := c.Node(0).Client()
	exec(t, cl, client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, cl, client.All, "CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))")
	const partitions, rows = 16, 100
	pad := strings.Repeat("x", 60)
	for k := range partitions {
		var b strings.Builder
		b.WriteString("BEGIN UNLOGGED BATCH\n")
		for r := range rows {
			fmt.Fprintf(&b, "INSERT INTO ks.t (k, c, v) VALUES (%d, %d, '%s');\n", k, r, pad)
		}
		b.WriteString("APPLY BATCH")
		exec(t, cl, client.All, b.String())
	}
	dataDir := c.Node(2).DataDir
	if err := c.Kill(2); err != nil {
		t.Fatal(err)
	}
	log := newestLog(t, filepath.Join(dataDir, "data"))
	corrupt(t, log)

	err = c.Restart(ctx, 2)
	var cerr *replica.CorruptLogError
	if !errors.As(err, &cerr) || cerr.Log != log || !strings.Contains(err.Error(), "--start-despite-corrupt-log") {
		t.Fatalf("restarting with a corrupt log: %v, want a CorruptLogError naming %s and the flag", err, log)
	}
	t.Logf("refused: %v", cerr.Error()[:strings.Index(cerr.Error(), ". The node")])

	despite.Store(true)
	if err := c.Restart(ctx, 2); err != nil {
		t.Fatalf("restarting with start_despite_corrupt_log: %v", err)
	}
	n3 := c.Node(2).Node()
	id := cluster.NodeID(n3.ID())
	poll.Must(t, 30*time.Second, "every node sees the restarted node unrepaired", func() error {
		for _, p := range c.Nodes() {
			if m, ok := p.Node().Cluster().Member(id); !ok || !m.Unrepaired {
				return fmt.Errorf("%s sees it %+v", p.Name, m)
			}
		}
		return nil
	})
	if got := nodeStatus(ctx, t, c.Node(0).Addr())[n3.ID()]; got != "UR" {
		t.Errorf("kvnode status shows the unrepaired node as %q, want UR", got)
	}
	if got := metricValue(t, n3.Registry(), "kvnode_storage_unrepaired"); got != 1 {
		t.Errorf("kvnode_storage_unrepaired = %v, want 1", got)
	}
	// Reads through it, even at ONE, are answered by replicas that have every write.
	n3c := c.Node(2).Client()
	for k := range partitions {
		if res := exec(t, n3c, client.One, fmt.Sprintf("SELECT c FROM ks.t WHERE k = %d", k)); len(res.Rows) != rows {
			t.Fatalf("partition %d read at ONE through the unrepaired node has %d rows, want %d", k, len(res.Rows), rows)
		}
	}
	exec(t, n3c, client.All, "INSERT INTO ks.t (k, c, v) VALUES (99, 0, 'after')") // it takes writes

	repair(ctx, t, n3.Addr())
	poll.Must(t, 30*time.Second, "every node sees the repaired node repaired", func() error {
		for _, p := range c.Nodes() {
			if m, _ := p.Node().Cluster().Member(id); m.Unrepaired {
				return fmt.Errorf("%s still sees it unrepaired", p.Name)
			}
		}
		return nil
	})
	if got := nodeStatus(ctx, t, c.Node(0).Addr())[n3.ID()]; got != "UN" {
		t.Errorf("kvnode status shows the repaired node as %q, want UN", got)
	}
	// kvnode status on it shows when ks.t was last repaired.
	st, err := kvnodepb.NewAdminClient(dialPlain(t, n3.Addr())).Status(ctx, &kvnodepb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r := st.GetRepairs(); st.GetAutoRepair() != "on" || len(r) != 1 || r[0].GetTable() != "t" || r[0].GetLastRepairedUnixNanos() == 0 ||
		r[0].GetDueUnixNanos() <= r[0].GetLastRepairedUnixNanos() {
		t.Errorf("kvnode status's repairs on the repaired node: auto_repair %q, %v; want ks.t repaired, due later", st.GetAutoRepair(), r)
	}
	// Its own copy has the writes again: a read at ONE through it now reads it first.
	for k := range partitions {
		if res := exec(t, n3c, client.One, fmt.Sprintf("SELECT c FROM ks.t WHERE k = %d", k)); len(res.Rows) != rows {
			t.Errorf("partition %d read at ONE through the repaired node has %d rows, want %d", k, len(res.Rows), rows)
		}
	}
}

// newestLog returns the newest write-ahead log of the pebble store in dir.
func newestLog(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s: %v", dir, err)
	}
	newest := logs[0]
	for _, l := range logs {
		if l > newest {
			newest = l
		}
	}
	return newest
}

// corrupt flips 16 bytes a third of the way into the file at path, leaving its tail intact.
func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 96<<10 {
		t.Fatalf("%s holds %d bytes, want several 32 KiB blocks", path, len(b))
	}
	for i := range 16 {
		b[len(b)/3+i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// nodeStatus returns each member's state as `kvnode status` shows it, by host id.
func nodeStatus(ctx context.Context, t *testing.T, addr string) map[string]string {
	t.Helper()
	resp, err := kvnodepb.NewAdminClient(dialPlain(t, addr)).Status(ctx, &kvnodepb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range resp.GetNodes() {
		out[n.GetHostId()] = n.GetState()
	}
	return out
}

// connect connects a client to the node at addr for the test.
func connect(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
