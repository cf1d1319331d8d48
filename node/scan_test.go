package node_test

import (
	"fmt"
	"io"
	"log"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// scanSession opens a gocql session held to node i's native port (no discovery), at QUORUM.
func scanSession(t *testing.T, tc *testCluster, i int) *gocql.Session {
	t.Helper()
	host, port := splitHostPort(t, tc.nodes[i].CQLAddr())
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.ProtoVersion = 4
	cluster.Consistency = gocql.Quorum
	cluster.Keyspace = "ks"
	cluster.Timeout = 20 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.DisableInitialHostLookup = true
	cluster.Logger = log.New(io.Discard, "", 0)
	s, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql session to node %d: %v", i, err)
	}
	t.Cleanup(s.Close)
	return s
}

// scanKey is one row of ks.s: its partition key k, its token and its clustering key c.
type scanKey struct {
	k, c  int32
	token int64
}

func (a scanKey) String() string { return fmt.Sprintf("%d/%d", a.k, a.c) }

// scanOrder sorts rows as a scan returns them: by token, then by clustering key.
func scanOrder(a, b scanKey) int {
	if a.token != b.token {
		if a.token < b.token {
			return -1
		}
		return 1
	}
	return int(a.c - b.c)
}

func intToken(k int32) int64 { return partitioner.Token(schema.EncodeInt(k)) }

// collect runs a paged query to its end and returns its rows (k, c).
func collect(t *testing.T, q *gocql.Query) []scanKey {
	t.Helper()
	var out []scanKey
	it := q.Iter()
	var k, c int32
	for it.Scan(&k, &c) {
		out = append(out, scanKey{k: k, c: c, token: intToken(k)})
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: %v", q.Statement(), err)
	}
	return out
}

func TestScansReturnEveryRowOnceInTokenOrderThroughEveryNode(t *testing.T) {
	tc := startCluster(t, 3)
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c0, client.One, "CREATE TABLE ks.s (k int, c int, v int, PRIMARY KEY (k, c))")
	var want []scanKey
	for k := range int32(60) {
		for c := range k%3 + 1 {
			exec(t, c0, client.Quorum, fmt.Sprintf("INSERT INTO ks.s (k, c, v) VALUES (%d, %d, %d)", k, c, k*10+c))
			want = append(want, scanKey{k: k, c: c, token: intToken(k)})
		}
	}
	exec(t, c0, client.Quorum, "DELETE FROM ks.s WHERE k = 0 AND c = 0") // a deleted row is not returned
	want = slices.DeleteFunc(want, func(r scanKey) bool { return r.k == 0 && r.c == 0 })
	slices.SortFunc(want, scanOrder)

	sessions := []*gocql.Session{scanSession(t, tc, 0), scanSession(t, tc, 1), scanSession(t, tc, 2)}
	for i, s := range sessions {
		for _, page := range []int{0, 1, 7, 1000} {
			got := collect(t, s.Query("SELECT k, c FROM s").PageSize(page))
			if !slices.Equal(got, want) {
				t.Errorf("a full scan through node %d in pages of %d returned %d rows\n%v\nwant %d\n%v", i, page, len(got), got, len(want), want)
			}
		}
	}

	// Token ranges split the table; together they return every row once.
	splits := []int64{math.MinInt64, -4e18, 0, 123456789, 5e18, math.MaxInt64}
	var got []scanKey
	for i := 1; i < len(splits); i++ {
		q := sessions[i%3].Query("SELECT k, c FROM s WHERE token(k) > ? AND token(k) <= ?", splits[i-1], splits[i]).PageSize(5)
		got = append(got, collect(t, q)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("token ranges split at %v returned\n%v\nwant\n%v", splits, got, want)
	}
	lo, hi := want[10].token, want[40].token
	got = collect(t, sessions[1].Query("SELECT k, c FROM s WHERE token(k) >= ? AND token(k) < ?", lo, hi).PageSize(4))
	var inRange []scanKey
	for _, r := range want {
		if r.token >= lo && r.token < hi {
			inRange = append(inRange, r)
		}
	}
	if !slices.Equal(got, inRange) {
		t.Errorf("token(k) >= %d AND token(k) < %d returned\n%v\nwant\n%v", lo, hi, got, inRange)
	}

	// LIMIT counts across pages.
	got = collect(t, sessions[2].Query("SELECT k, c FROM s LIMIT 23").PageSize(5))
	if !slices.Equal(got, want[:23]) {
		t.Errorf("LIMIT 23 in pages of 5 returned %v, want %v", got, want[:23])
	}

	// A paging state continues on another coordinator.
	it := sessions[0].Query("SELECT k, c FROM s").PageSize(10).Iter()
	var first []scanKey
	for k, c := int32(0), int32(0); len(first) < 10 && it.Scan(&k, &c); {
		first = append(first, scanKey{k: k, c: c, token: intToken(k)})
	}
	state := it.PageState()
	if err := it.Close(); err != nil || len(state) == 0 {
		t.Fatalf("first page: err %v, paging state %x", err, state)
	}
	// gocql fetches one page per query given a paging state: the test pages by hand, each page
	// through the next node.
	all := first
	for n := 1; len(state) > 0; n++ {
		it := sessions[n%3].Query("SELECT k, c FROM s").PageSize(10).PageState(state).Iter()
		for k, c := int32(0), int32(0); it.Scan(&k, &c); {
			all = append(all, scanKey{k: k, c: c, token: intToken(k)})
		}
		state = it.PageState()
		if err := it.Close(); err != nil || n > len(want) {
			t.Fatalf("page %d: err %v", n, err)
		}
	}
	if !slices.Equal(all, want) {
		t.Errorf("a scan continued on another node returned\n%v\nwant\n%v", all, want)
	}
	// A paging state is checked.
	err := sessions[1].Query("SELECT k, c FROM s").PageSize(10).PageState([]byte{2, 1, 2, 3}).Exec()
	if err == nil || !strings.Contains(err.Error(), "invalid paging state") {
		t.Errorf("a scan with a forged paging state: err = %v, want an invalid paging state", err)
	}

	// Aggregates without GROUP BY fold the whole scan, paged internally, into one row: COUNT(*)
	// of a table (what an operator asks first), over a token range too, and SELECT JSON.
	var sumV, maxV int32
	for _, r := range want {
		sumV += r.k*10 + r.c
		maxV = max(maxV, r.k*10+r.c)
	}
	var n int64
	var m, sm int32
	if err := sessions[2].Query("SELECT COUNT(*), max(v), sum(v) FROM s").Scan(&n, &m, &sm); err != nil || n != int64(len(want)) || m != maxV || sm != sumV {
		t.Errorf("SELECT COUNT(*), max(v), sum(v) over a scan = %d, %d, %d (%v); want %d, %d, %d", n, m, sm, err, len(want), maxV, sumV)
	}
	if err := sessions[0].Query("SELECT COUNT(*) FROM s WHERE token(k) >= ? AND token(k) < ?", lo, hi).Scan(&n); err != nil || n != int64(len(inRange)) {
		t.Errorf("COUNT(*) over token range [%d, %d) = %d (%v), want %d", lo, hi, n, err, len(inRange))
	}
	var js string
	if err := sessions[1].Query("SELECT JSON k, c FROM s LIMIT 1").Scan(&js); err != nil || !strings.HasPrefix(js, `{"k": `) {
		t.Errorf("SELECT JSON over a scan = %q (%v), want a row as a JSON object", js, err)
	}
	// DISTINCT over a scan: each partition once, in token order, paged.
	var keys []int32
	for _, r := range want {
		if len(keys) == 0 || keys[len(keys)-1] != r.k {
			keys = append(keys, r.k)
		}
	}
	var distinct []int32
	dit := sessions[1].Query("SELECT DISTINCT k FROM s").PageSize(3).Iter()
	for k := int32(0); dit.Scan(&k); {
		distinct = append(distinct, k)
	}
	if err := dit.Close(); err != nil || !slices.Equal(distinct, keys) {
		t.Errorf("SELECT DISTINCT k over a scan = %v (%v), want %v", distinct, err, keys)
	}
	checkScanShapes(t, c0, sessions) // scan_filter_test.go
}

// TestScanReadRepairsAStaleReplica: a replica that missed writes (it was down, and hints are
// held back) is repaired by a scan at ALL, like a single-partition read: afterwards it serves
// the rows alone.
func TestScanReadRepairsAStaleReplica(t *testing.T) {
	var paused atomic.Bool
	paused.Store(true)
	tc := startClusterWith(t, 3, func(cfg *node.Config) {
		cfg.Testing = &node.TestingKnobs{PauseHintReplay: paused.Load}
	})
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, c0, client.One, "CREATE TABLE ks.s (k int, c int, v int, PRIMARY KEY (k, c))")
	exec(t, c0, client.One, "CREATE TABLE ks.f (k int, c int, v int, PRIMARY KEY (k, c))")
	tc.stop(2)
	poll.Must(t, 10*time.Second, "node 1 sees node 3 down", poll.Bool(func() bool {
		return !tc.nodes[0].Cluster().IsLive(cluster.NodeID(tc.nodeID(2)))
	}))
	var want []scanKey
	for k := range int32(20) {
		exec(t, c0, client.Quorum, fmt.Sprintf("INSERT INTO ks.s (k, c, v) VALUES (%d, 0, %d)", k, k))
		exec(t, c0, client.Quorum, fmt.Sprintf("INSERT INTO ks.f (k, c, v) VALUES (%d, 0, %d)", k, k))
		want = append(want, scanKey{k: k, token: intToken(k)})
	}
	slices.SortFunc(want, scanOrder)
	tc.restart(2)
	tc.waitLive(20*time.Second, 3)
	// At ALL every replica answers, node 3 with nothing: the scan returns the rows and repairs it.
	if got := collect(t, scanSession(t, tc, 0).Query("SELECT k, c FROM s").Consistency(gocql.All).PageSize(7)); !slices.Equal(got, want) {
		t.Fatalf("a scan at ALL returned\n%v\nwant\n%v", got, want)
	}
	// A filtered scan repairs every row it merged, matched or not.
	high := slices.DeleteFunc(slices.Clone(want), func(r scanKey) bool { return r.k < 10 })
	if got := collect(t, scanSession(t, tc, 1).Query("SELECT k, c FROM f WHERE v >= 10 ALLOW FILTERING").Consistency(gocql.All).PageSize(3)); !slices.Equal(got, high) {
		t.Fatalf("a filtered scan at ALL returned\n%v\nwant\n%v", got, high)
	}
	s2 := scanSession(t, tc, 2)
	tc.stop(0)
	tc.stop(1)
	for _, table := range []string{"s", "f"} {
		if got := collect(t, s2.Query("SELECT k, c FROM "+table).Consistency(gocql.One).PageSize(7)); !slices.Equal(got, want) {
			t.Errorf("node 3 alone, after the scan's read repair of %s, returned\n%v\nwant\n%v", table, got, want)
		}
	}
}
