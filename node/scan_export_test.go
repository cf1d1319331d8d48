package node_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

var exportRows = flag.Int("scan.export.rows", 2000, "rows the export tests write (the issue's long form: -scan.export.rows 100000)")

// gocqlTo opens a gocql session to the native address addr at QUORUM, held to that node unless
// discover is set.
func gocqlTo(t testing.TB, addr string, discover bool) *gocql.Session {
	t.Helper()
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.ProtoVersion = 4
	cluster.Consistency = gocql.Quorum
	cluster.Keyspace = "ks"
	cluster.Timeout = 30 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	if !discover {
		// Pinned to addr: the driver must not learn other nodes from events. Every node of an
		// in-process cluster listens on 127.0.0.1 and gocql keys hosts by IP and assumes one port,
		// so a ring refresh (a node joining) would map other hosts onto this one and a status
		// event for them close this node's connections mid-request.
		cluster.DisableInitialHostLookup = true
		cluster.Events.DisableTopologyEvents = true
		cluster.Events.DisableNodeStatusEvents = true
	}
	cluster.Logger = log.New(io.Discard, "", 0)
	s, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql session to %s: %v", addr, err)
	}
	t.Cleanup(s.Close)
	return s
}

// driverRanges returns the token ranges a driver's metadata gives, as an export splits a table:
// (previous token, token] for each token of every host (Session.GetHosts), sorted, with the range
// that wraps around split at the ends of the ring.
func driverRanges(t *testing.T, s *gocql.Session) [][2]int64 {
	t.Helper()
	var tokens []int64
	for _, h := range s.GetHosts() {
		for _, tok := range h.Tokens() {
			v, err := strconv.ParseInt(tok, 10, 64)
			if err != nil {
				t.Fatalf("host %s token %q: %v", h.HostID(), tok, err)
			}
			tokens = append(tokens, v)
		}
	}
	if len(tokens) == 0 {
		t.Fatal("the driver's metadata has no host tokens")
	}
	slices.Sort(tokens)
	tokens = slices.Compact(tokens)
	ranges := [][2]int64{{math.MinInt64, tokens[0]}}
	for i := 1; i < len(tokens); i++ {
		ranges = append(ranges, [2]int64{tokens[i-1], tokens[i]})
	}
	return append(ranges, [2]int64{tokens[len(tokens)-1], math.MaxInt64})
}

// exportThrough scans every range through s in pages at QUORUM and returns how often each row
// (k/c) came back.
func exportThrough(t *testing.T, s *gocql.Session, ranges [][2]int64) map[[2]int32]int {
	t.Helper()
	seen := map[[2]int32]int{}
	for _, r := range ranges {
		it := s.Query("SELECT k, c FROM e WHERE token(k) > ? AND token(k) <= ?", r[0], r[1]).PageSize(500).Iter()
		var k, c int32
		for it.Scan(&k, &c) {
			seen[[2]int32{k, c}]++
		}
		if err := it.Close(); err != nil {
			t.Fatalf("export of range (%d, %d]: %v", r[0], r[1], err)
		}
	}
	return seen
}

// checkExport reports every acknowledged row not returned exactly once, and rows nobody wrote.
func checkExport(t *testing.T, what string, seen map[[2]int32]int, acked map[[2]int32]bool) {
	t.Helper()
	bad := 0
	for row := range acked {
		if n := seen[row]; n != 1 && bad < 10 {
			t.Errorf("%s: row k=%d c=%d returned %d times, want once", what, row[0], row[1], n)
			bad++
		}
	}
	for row, n := range seen {
		if !acked[row] && bad < 10 {
			t.Errorf("%s: row k=%d c=%d returned %d times, but no write of it was acknowledged", what, row[0], row[1], n)
			bad++
		}
	}
}

// padding makes each row's value about 100 bytes.
var padding = strings.Repeat(".", 80)

// writeRows inserts rows k/c for k in [from, to), c in {0, 1}, at QUORUM through s, from a few
// goroutines, and records the acknowledged ones.
func writeRows(t testing.TB, s *gocql.Session, from, to int32, acked map[[2]int32]bool) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	const workers = 8
	var firstErr error
	for w := range int32(workers) {
		wg.Go(func() {
			for k := from + w; k < to; k += workers {
				for c := range int32(2) {
					err := s.Query("INSERT INTO e (k, c, v) VALUES (?, ?, ?)", k, c, fmt.Sprintf("value %d/%d%s", k, c, padding)).Exec()
					mu.Lock()
					if err == nil {
						acked[[2]int32{k, c}] = true
					} else if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("writing rows: %v", firstErr)
	}
}

// TestExportByDriverTokenRangesReturnsEveryRowOnce writes rows, splits the ring by the token
// ranges gocql's metadata gives, and scans every range through every node at QUORUM: every
// acknowledged row comes back exactly once. Then a fourth node joins and is held mid-stream at
// a test hook: the export through every node still returns every row once (and rows written
// meanwhile); released, the node finishes joining, and the export through all four nodes,
// split by the new ring's ranges, does too.
func TestExportByDriverTokenRangesReturnsEveryRowOnce(t *testing.T) {
	ctx := context.Background()
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	tc, err := localcluster.Start(ctx, localcluster.Options{
		Dir:   t.TempDir(),
		Nodes: 3,
		Adjust: func(i int, cfg *node.Config) {
			cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
			if i == 3 { // the joining node: hold its bootstrap after its first chunk
				cfg.Testing = &node.TestingKnobs{AfterStreamChunk: func(reason string) {
					if reason != "bootstrap" {
						return
					}
					once.Do(func() {
						close(held)
						<-release
					})
				}}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	exec(t, tc.Node(0).Client(), 1, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, tc.Node(0).Client(), 1, "CREATE TABLE ks.e (k int, c int, v text, PRIMARY KEY (k, c))")
	var addrs []string
	for _, n := range tc.Nodes() {
		addrs = append(addrs, n.Node().CQLAddr())
	}
	sessions := []*gocql.Session{gocqlTo(t, addrs[0], false), gocqlTo(t, addrs[1], false), gocqlTo(t, addrs[2], false)}
	acked := map[[2]int32]bool{}
	half := int32(*exportRows / 2)
	writeRows(t, sessions[0], 0, half, acked)

	meta := gocqlTo(t, addrs[0], true)
	ranges := driverRanges(t, meta)
	if len(ranges) < 3*4 {
		t.Fatalf("the driver sees %d token ranges, want at least one per vnode of three nodes", len(ranges))
	}
	for i, s := range sessions {
		checkExport(t, fmt.Sprintf("export through node %d", i+1), exportThrough(t, s, ranges), acked)
	}

	joined := make(chan error, 1)
	go func() {
		_, err := tc.Add(ctx)
		joined <- err
	}()
	select {
	case <-held:
	case err := <-joined:
		close(release)
		t.Fatalf("the fourth node joined without streaming a chunk: %v", err)
	}
	writeRows(t, sessions[1], half, half+half/4, acked) // written while the join is pending
	for i, s := range sessions {
		checkExport(t, fmt.Sprintf("export through node %d while node 4 joins", i+1), exportThrough(t, s, ranges), acked)
	}
	close(release)
	if err := <-joined; err != nil {
		t.Fatalf("node 4 joining: %v", err)
	}
	sessions = append(sessions, gocqlTo(t, tc.Node(3).Node().CQLAddr(), false))
	ranges = driverRanges(t, gocqlTo(t, addrs[2], true))
	for i, s := range sessions {
		checkExport(t, fmt.Sprintf("export through node %d after node 4 joined", i+1), exportThrough(t, s, ranges), acked)
	}
}
