package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// startNode starts one in-process node (real pebble, gRPC and native listeners on loopback)
// with the table ks.kv, whose partitions accept 40 reads and 40 writes per second, and returns
// its gRPC and native addresses.
func startNode(t *testing.T) (grpcAddr, cqlAddr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 1})
	if err != nil {
		t.Fatalf("start a node: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	n := c.Node(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.kv (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_reads_per_second': 40, 'max_writes_per_second': 40}",
	} {
		if _, err := n.Client().Execute(ctx, client.One, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return n.Addr(), n.Node().CQLAddr()
}

// TestExecuteAgainstANode runs the benchmark against a real node over both protocols and every
// coordinator choice: every operation is sent and counted once, none fails, and the hot
// partition's excess over its limit comes back as rate-limit rejections by the coordinator (the
// node is the partition's only replica), which the cold partitions never see.
func TestExecuteAgainstANode(t *testing.T) {
	grpcAddr, cqlAddr := startNode(t)
	for _, tc := range []struct {
		protocol Protocol
		coord    Coordinator
		addr     string
	}{
		{ProtocolCQL, TokenAware, cqlAddr},
		{ProtocolCQL, RoundRobin, cqlAddr},
		{ProtocolCQL, Fixed, cqlAddr},
		{ProtocolGRPC, RoundRobin, grpcAddr},
	} {
		t.Run(string(tc.protocol)+"/"+string(tc.coord), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Protocol, cfg.Coordinator, cfg.Addrs = tc.protocol, tc.coord, []string{tc.addr}
			cfg.Table = "ks.kv"
			cfg.Hot, cfg.Writes, cfg.Partitions = 0.5, 0.5, 50
			cfg.Rate, cfg.Duration, cfg.Concurrency = 1000, 500*time.Millisecond, 8 // exactly 500 operations
			s := execute(t, cfg)
			checkTotals(t, s)
			if s.Protocol != string(tc.protocol) || s.Coordinator != string(tc.coord) {
				t.Errorf("summary says protocol %q coordinator %q, want %q %q", s.Protocol, s.Coordinator, tc.protocol, tc.coord)
			}
			if s.Offered != 500 || len(s.Errors) != 0 {
				t.Errorf("offered %d with errors %v; want 500 and none", s.Offered, s.Errors)
			}
			// The hot partition gets about 125 reads and 125 writes in half a second, over three
			// times what a limit of 40 per second admits in that time.
			if s.RejectedByCoordinator == 0 || s.RejectedByReplicas != 0 {
				t.Errorf("rejected by coordinator %d, by replicas %d; want some by the coordinator (the only replica) and none by other replicas",
					s.RejectedByCoordinator, s.RejectedByReplicas)
			}
			if s.Hot.Rejected != s.Rejected() || s.Cold.Rejected != 0 || s.Cold.Accepted == 0 || s.Hot.Accepted == 0 {
				t.Errorf("hot %d accepted %d rejected, cold %d accepted %d rejected; want both accepted and only hot ones rejected",
					s.Hot.Accepted, s.Hot.Rejected, s.Cold.Accepted, s.Cold.Rejected)
			}
		})
	}
}

// TestNativeRateLimitIsARejectionNeverRetried checks the native path's classification of gocql's
// rate-limit error (wrapped or not, by whom) and that the driver's retry policy retries nothing:
// a retried rejection would add load to the partition over its limit and hide it from the counts.
func TestNativeRateLimitIsARejectionNeverRetried(t *testing.T) {
	for _, byCoord := range []bool{true, false} {
		err := fmt.Errorf("insert: %w", &gocql.RequestErrRateLimitReached{OpType: gocql.OpTypeWrite, RejectedByCoordinator: byCoord})
		if rej, coord := rateLimited(err); !rej || coord != byCoord {
			t.Errorf("rateLimited(%v) = %v, %v; want true, %v", err, rej, coord, byCoord)
		}
	}
	if rej, _ := rateLimited(&gocql.RequestErrUnavailable{}); rej {
		t.Errorf("rateLimited(unavailable) = true, want false")
	}
	cluster, err := newCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if cluster.RetryPolicy.Attempt(nil) || cluster.RetryPolicy.GetRetryType(&gocql.RequestErrRateLimitReached{}) != gocql.Rethrow {
		t.Errorf("the driver's retry policy %T would retry a rate-limit rejection", cluster.RetryPolicy)
	}
}

// TestTLS runs the benchmark against a node with TLS on: with --tls-ca over both protocols it
// connects and runs, without it the run cannot start.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	f := ca.Issue(t, dir, "n1")
	clientTLS, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 1, ClientTLS: clientTLS,
		Adjust: func(_ int, cfg *node.Config) {
			cfg.Security.TLSCert, cfg.Security.TLSKey, cfg.Security.TLSCA = f.Cert, f.Key, f.CA
		}})
	if err != nil {
		t.Fatalf("start a node: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	n := c.Node(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.kv (k text PRIMARY KEY, v int)",
	} {
		if _, err := n.Client().Execute(ctx, client.One, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, tc := range []struct {
		protocol Protocol
		coord    Coordinator
		addr     string
	}{
		{ProtocolCQL, TokenAware, n.Node().CQLAddr()},
		{ProtocolGRPC, RoundRobin, n.Addr()},
	} {
		cfg := DefaultConfig()
		cfg.Protocol, cfg.Coordinator, cfg.Addrs, cfg.Table = tc.protocol, tc.coord, []string{tc.addr}, "ks.kv"
		cfg.Rate, cfg.Duration, cfg.Concurrency = 200, 250*time.Millisecond, 4 // 50 operations
		if _, err := Execute(ctx, cfg, nil); err == nil {
			t.Errorf("%s without --tls-ca against a TLS node started", tc.protocol)
		}
		cfg.TLSCA = ca.CertFile
		s := execute(t, cfg)
		if s.Offered != 50 || len(s.Errors) != 0 || s.Accepted != 50 {
			t.Errorf("%s with --tls-ca: offered %d, accepted %d, errors %v; want 50 accepted", tc.protocol, s.Offered, s.Accepted, s.Errors)
		}
	}
}
