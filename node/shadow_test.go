package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/tool/toppartitions"
)

// TestShadowModeWarnsGocql: gocql clients (ScyllaDB's fork, as applications use) writing a hot
// partition of a table whose limit is in shadow mode, through each node of a 3-node cluster at
// RF=2 (so one coordinator is outside the partition's replicas, whose two enforcing replicas
// both decide every write it sends), get no error, and the writes enforce mode would have
// rejected carry a warning naming the table, the op and the limit, which gocql surfaces through
// Iter.Warnings. kvnode_limiter_would_reject_total, summed over the nodes as the dashboard
// sums it, counts each warned write exactly once.
func TestShadowModeWarnsGocql(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatalf("start the nodes: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	n := c.Node(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.kv (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 5, 'mode': 'shadow'}",
	} {
		if _, err := n.Client().Execute(ctx, client.One, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// One session per node, each held to its node, so that every node coordinates.
	var sessions []*gocql.Session
	for _, n := range c.Nodes() {
		host, port := splitHostPort(t, n.Node().CQLAddr())
		cluster := gocql.NewCluster(host)
		cluster.Port = port
		cluster.ProtoVersion = 4
		cluster.Consistency = gocql.One
		cluster.Keyspace = "ks"
		cluster.Timeout = 10 * time.Second
		cluster.ConnectTimeout = 10 * time.Second
		cluster.DisableInitialHostLookup = true
		cluster.Logger = log.New(io.Discard, "", 0) // gocql logs every warning it receives
		session, err := cluster.CreateSession()
		if err != nil {
			t.Fatalf("gocql session to %s: %v", n.Node().CQLAddr(), err)
		}
		defer session.Close()
		sessions = append(sessions, session)
	}

	// 60 writes at once are twelve times the limit, in well under the second the counter
	// halves in: past 2·limit (10) and the onset bound most are would-be rejections.
	const want = "per_partition_rate_limit in shadow mode: this write on ks.kv would have been rejected (limit 5 writes per second per partition); it was not, since the limit is not enforced"
	const writes = 60
	warned := 0
	for i := range writes {
		session := sessions[i%len(sessions)]
		iter := session.Query("INSERT INTO kv (k, v) VALUES ('hot', ?)", i).Iter()
		warnings := iter.Warnings()
		if err := iter.Close(); err != nil {
			t.Fatalf("write %d in shadow mode: %v, want success", i+1, err)
		}
		switch {
		case len(warnings) == 0:
		case len(warnings) == 1 && warnings[0] == want:
			warned++
		default:
			t.Fatalf("write %d warned %q, want at most [%q]", i+1, warnings, want)
		}
	}
	if warned < writes/2 {
		t.Errorf("%d of %d writes at twelve times the limit carried the shadow-mode warning, want most of them", warned, writes)
	}
	var counted float64
	for _, n := range c.Nodes() {
		counted += metricValue(t, n.Node().Registry(), "kvnode_limiter_would_reject_total", "keyspace", "ks", "table", "kv", "op", "write")
	}
	if counted != float64(warned) {
		t.Errorf("kvnode_limiter_would_reject_total summed over the nodes = %v, want %d: one per warned write, however many replicas decided it", counted, warned)
	}
	var v int
	if err := sessions[0].Query("SELECT v FROM kv WHERE k = 'hot'").Consistency(gocql.Quorum).Scan(&v); err != nil || v != writes-1 {
		t.Errorf("SELECT at QUORUM after the writes = %d, %v; want %d (shadow mode rejects nothing)", v, err, writes-1)
	}
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	var port int
	for _, c := range addr[i+1:] {
		port = port*10 + int(c-'0')
	}
	if i < 0 || port == 0 {
		t.Fatalf("address %q has no port", addr)
	}
	return addr[:i], port
}

// TestShadowModeAcrossTheCluster is issue 20's "done when" on three nodes at RF=3: a hot
// partition offered ten times its limit in shadow mode through gocql gets no error, every write
// enforce mode would have rejected is warned and counted once in
// kvnode_limiter_would_reject_total (summed over the nodes), kvnode toppartitions lists the
// partition with its would-be rejections over both protocols, and an ALTER through another node
// switches the mode at once: to enforce (rejections), and back to shadow (none).
func TestShadowModeAcrossTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatalf("start the nodes: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	n := c.Node(0)
	const limit = 20
	shadow := fmt.Sprintf("{'max_writes_per_second': %d, 'mode': 'shadow'}", limit)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.kv (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = " + shadow,
	} {
		if _, err := n.Client().Execute(ctx, client.All, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	host, port := splitHostPort(t, n.Node().CQLAddr())
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.ProtoVersion = 4
	cluster.Consistency = gocql.Quorum
	cluster.Keyspace = "ks"
	cluster.Timeout = 10 * time.Second
	cluster.DisableInitialHostLookup = true
	cluster.Logger = log.New(io.Discard, "", 0) // gocql logs every warning it receives
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql session: %v", err)
	}
	defer session.Close()

	// Ten times the limit for two seconds, paced by a ticker (a slower machine offers less,
	// and the share enforce mode would reject follows what was offered).
	tick := time.NewTicker(time.Second / (10 * limit))
	defer tick.Stop()
	start := time.Now()
	ops, warned := 0, 0
	for time.Since(start) < 2*time.Second {
		<-tick.C
		iter := session.Query("INSERT INTO kv (k, v) VALUES ('hot', ?)", ops).Iter()
		if len(iter.Warnings()) > 0 {
			warned++
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("write %d in shadow mode: %v, want success", ops+1, err)
		}
		ops++
	}
	// A young counter may admit up to 3·L in its first second (docs/accuracy.md, the onset), so
	// at most about 4·L of the two seconds' writes go unwarned: at 6·L offered that is a third.
	offered := float64(ops) / time.Since(start).Seconds()
	if offered > 6*limit && float64(warned) < 0.5*float64(ops) {
		t.Errorf("%d of %d writes at %.0f/s (limit %d/s) were warned as would-be rejections, want most of them", warned, ops, offered, limit)
	}
	var counted float64
	for _, n := range c.Nodes() {
		counted += metricValue(t, n.Node().Registry(), "kvnode_limiter_would_reject_total", "keyspace", "ks", "table", "kv", "op", "write")
	}
	if counted != float64(warned) {
		t.Errorf("kvnode_limiter_would_reject_total summed over the nodes = %v, want %d, one per warned write", counted, warned)
	}

	for _, proto := range []string{"cql", "grpc"} {
		addr := n.Node().CQLAddr()
		if proto == "grpc" {
			addr = n.Node().Addr()
		}
		var out, stderr bytes.Buffer
		if err := toppartitions.Run(ctx, []string{"--protocol", proto, "--addr", addr, "--table", "ks.kv", "--json"}, &out, &stderr); err != nil {
			t.Fatalf("kvnode toppartitions --protocol %s: %v\n%s", proto, err, stderr.String())
		}
		var top struct {
			Tables []struct {
				Partitions []struct {
					Op                   string  `json:"op"`
					Key                  string  `json:"partition_key_text"`
					Rejected             float64 `json:"rejected_per_second"`
					WouldRejectPerSecond float64 `json:"would_reject_per_second"`
				} `json:"partitions"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(out.Bytes(), &top); err != nil {
			t.Fatalf("kvnode toppartitions --protocol %s --json printed %q: %v", proto, out.String(), err)
		}
		if len(top.Tables) != 1 || len(top.Tables[0].Partitions) == 0 {
			t.Fatalf("kvnode toppartitions --protocol %s listed %s, want the hot partition of ks.kv", proto, out.String())
		}
		p := top.Tables[0].Partitions[0]
		if p.Op != "write" || p.Key != "hot" || p.Rejected != 0 || p.WouldRejectPerSecond <= 0 {
			t.Errorf("kvnode toppartitions --protocol %s lists %+v first, want the write partition 'hot' with would-be rejections and none rejected", proto, p)
		}
	}

	// ALTER through node 1; writes through node 0 follow at once, since DDL returns after
	// every live node has the new schema.
	alter := func(rateLimit string) {
		t.Helper()
		if _, err := c.Node(1).Client().Execute(ctx, client.One, "ALTER TABLE ks.kv WITH per_partition_rate_limit = "+rateLimit); err != nil {
			t.Fatalf("ALTER to %s through node 1: %v", rateLimit, err)
		}
	}
	writeBurst := func() (rejected int) {
		for i := range 20 {
			if err := session.Query("INSERT INTO kv (k, v) VALUES ('hot', ?)", i).Exec(); err != nil {
				var rl *gocql.RequestErrRateLimitReached
				if !errors.As(err, &rl) {
					t.Fatalf("write %d: %v, want success or a rate-limit error", i+1, err)
				}
				rejected++
			}
		}
		return rejected
	}
	alter(fmt.Sprintf("{'max_writes_per_second': %d}", limit))
	if r := writeBurst(); r == 0 {
		t.Errorf("after ALTER to enforce mode through node 1, 0 of 20 writes to the hot partition through node 0 were rejected, want rejections at once")
	}
	alter(shadow)
	if r := writeBurst(); r != 0 {
		t.Errorf("after ALTER back to shadow mode through node 1, %d of 20 writes through node 0 were rejected, want none", r)
	}
}
