package model

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

func TestCheckIndexRead(t *testing.T) {
	a, b, c := IndexRow{K: 1, Token: 10}, IndexRow{K: 2, Token: 20}, IndexRow{K: 3, Token: 30}
	writes := map[IndexRow][]IndexWrite{
		a: {{TS: 5, Value: "x", Acked: true}, {TS: 3, Value: "y", Acked: true}},  // x for certain
		b: {{TS: 5, Value: "x", Acked: true}, {TS: 9, Value: "", Acked: false}},  // x or deleted
		c: {{TS: 5, Value: "y", Acked: true}, {TS: 4, Value: "x", Acked: false}}, // y for certain
	}
	for _, tt := range []struct {
		got []IndexRow
		ok  bool
	}{
		{[]IndexRow{a, b}, true},
		{[]IndexRow{a}, true},
		{[]IndexRow{b}, false},    // misses a
		{[]IndexRow{a, c}, false}, // c is y: its x was older than the acknowledged y
		{[]IndexRow{b, a}, false}, // out of token order
		{[]IndexRow{a, a}, false}, // twice
	} {
		if err := CheckIndexRead(writes, "x", tt.got); (err == nil) != tt.ok {
			t.Errorf("CheckIndexRead(x, %v) = %v, want ok %v", tt.got, err, tt.ok)
		}
	}
}

// indexSession opens a gocql session held to one node's native port.
func indexSession(t *testing.T, addr string) *gocql.Session {
	t.Helper()
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	cfg := gocql.NewCluster(host)
	cfg.Port = port
	cfg.ProtoVersion = 4
	cfg.Timeout = 20 * time.Second
	cfg.ConnectTimeout = 10 * time.Second
	cfg.DisableInitialHostLookup = true
	cfg.Logger = log.New(io.Discard, "", 0)
	s, err := cfg.CreateSession()
	if err != nil {
		t.Fatalf("gocql session to %s: %v", addr, err)
	}
	return s
}

// TestModelIndexQueries runs a seeded history of writes to an indexed column (INSERT, UPDATE,
// DELETE of the row or the cell, each USING TIMESTAMP drawn at random, so last-write-wins
// order is not history order) and index queries WHERE v = ? paged at random (a third with
// c = ? or k > ? beside it, ALLOW FILTERING), through random
// nodes of an in-process 3-node cluster at QUORUM and ALL, with one node stopped for the middle
// third and restarted, and checks every read by CheckIndexRead; at the end every value is read
// at ALL through every node.
func TestModelIndexQueries(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./test/model -run TestModelIndexQueries -model.seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 33))
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	for _, ddl := range []string{
		"CREATE KEYSPACE mi WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE mi.t (k int, c int, v text, w int, PRIMARY KEY (k, c))",
		"CREATE INDEX ON mi.t (v)",
	} {
		if _, err := tc.Node(0).Client().Execute(ctx, client.All, ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	sessions := make([]*gocql.Session, 3)
	open := func(i int) {
		if sessions[i] != nil {
			sessions[i].Close()
		}
		sessions[i] = indexSession(t, tc.Node(i).Node().CQLAddr())
	}
	for i := range sessions {
		open(i)
	}
	t.Cleanup(func() {
		for _, s := range sessions {
			s.Close()
		}
	})
	poll.Must(t, 20*time.Second, "the index built on every node", func() error {
		return sessions[0].Query("SELECT k FROM mi.t WHERE v = 'a'").Consistency(gocql.All).Exec()
	})

	const keys, clusterings, perPhase = 8, 3, 80
	values := []string{"a", "b", "c"}
	writes := make(map[IndexRow][]IndexWrite)
	used := make(map[int64]bool)
	reads := 0
	query := func(node int, cl gocql.Consistency, x string) {
		page := []int{0, 1, 2, 5, 100}[rng.IntN(5)]
		// A third of the queries restrict a primary key column beside the index too (ALLOW
		// FILTERING): the rows they may return are those of the rows that match it.
		q, args, keep := "SELECT k, c FROM mi.t WHERE v = ?", []any{x}, func(IndexRow) bool { return true }
		switch bound := int32(rng.IntN(keys)); rng.IntN(6) {
		case 0:
			c := bound % clusterings
			q, args, keep = q+" AND c = ? ALLOW FILTERING", append(args, c), func(r IndexRow) bool { return r.C == c }
		case 1:
			q, args, keep = q+" AND k > ? ALLOW FILTERING", append(args, bound), func(r IndexRow) bool { return r.K > bound }
		}
		it := sessions[node].Query(q, args...).Consistency(cl).PageSize(page).Iter()
		var got []IndexRow
		var k, c int32
		for it.Scan(&k, &c) {
			got = append(got, IndexRow{K: k, C: c, Token: partitioner.Token(schema.EncodeInt(k))})
		}
		if err := it.Close(); err != nil {
			return // an unknown read checks nothing
		}
		reads++
		matching := make(map[IndexRow][]IndexWrite, len(writes))
		for r, ws := range writes {
			if keep(r) {
				matching[r] = ws
			}
		}
		if err := CheckIndexRead(matching, x, got); err != nil {
			t.Errorf("%s %v at %v through node %d in pages of %d: %v (seed %d)", q, args, cl, node+1, page, err, seed)
		}
	}
	phase := func(down int) {
		for range perPhase {
			node := rng.IntN(3)
			if node == down {
				node = (node + 1) % 3
			}
			cl := []gocql.Consistency{gocql.Quorum, gocql.All}[rng.IntN(2)]
			if down >= 0 {
				cl = gocql.Quorum
			}
			if rng.IntN(3) == 0 {
				query(node, cl, values[rng.IntN(len(values))])
				continue
			}
			r := IndexRow{K: int32(rng.IntN(keys)), C: int32(rng.IntN(clusterings))}
			r.Token = partitioner.Token(schema.EncodeInt(r.K))
			ts := int64(1000 + rng.IntN(1_000_000))
			for used[ts] {
				ts++
			}
			used[ts] = true
			x := values[rng.IntN(len(values))]
			var stmt string
			switch rng.IntN(6) {
			case 0:
				stmt, x = fmt.Sprintf("DELETE FROM mi.t USING TIMESTAMP %d WHERE k = %d AND c = %d", ts, r.K, r.C), ""
			case 1:
				stmt, x = fmt.Sprintf("DELETE v FROM mi.t USING TIMESTAMP %d WHERE k = %d AND c = %d", ts, r.K, r.C), ""
			case 2, 3:
				stmt = fmt.Sprintf("UPDATE mi.t USING TIMESTAMP %d SET v = '%s', w = %d WHERE k = %d AND c = %d", ts, x, ts, r.K, r.C)
			default:
				stmt = fmt.Sprintf("INSERT INTO mi.t (k, c, v) VALUES (%d, %d, '%s') USING TIMESTAMP %d", r.K, r.C, x, ts)
			}
			err := sessions[node].Query(stmt).Consistency(cl).Exec()
			writes[r] = append(writes[r], IndexWrite{TS: ts, Value: x, Acked: err == nil})
		}
	}
	phase(-1)
	down := int(seed % 3)
	if err := tc.Stop(down); err != nil {
		t.Fatal(err)
	}
	if err := tc.WaitSeenDown(ctx, down); err != nil {
		t.Fatal(err)
	}
	phase(down)
	if err := tc.Restart(ctx, down); err != nil {
		t.Fatal(err)
	}
	open(down)
	phase(-1)
	for _, x := range values {
		for node := range 3 {
			query(node, gocql.All, x)
		}
	}
	t.Logf("%d writes and %d index reads checked", len(used), reads)
}

// indexHistory is a history of writes to an indexed column and index queries, as
// TestModelIndexQueries runs, through the gRPC API at QUORUM, for TestModelTopology: the index
// entries must move with their rows through joins, decommission and removenode (streaming
// applies them with the rows: ApplyStreamed).
type indexHistory struct {
	rng            *rand.Rand
	writes         map[IndexRow][]IndexWrite
	used           map[int64]bool
	nwrites, reads int
}

func newIndexHistory(seed uint64) *indexHistory {
	return &indexHistory{rng: rand.New(rand.NewPCG(seed, 34)), writes: map[IndexRow][]IndexWrite{}, used: map[int64]bool{}}
}

var indexValues = []string{"a", "b", "c"}

// setup creates the indexed table mi.t at RF 3 through c and waits until its index answers at
// ALL.
func (h *indexHistory) setup(ctx context.Context, t *testing.T, c *client.Client) {
	t.Helper()
	for _, ddl := range []string{
		"CREATE KEYSPACE mi WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE mi.t (k int, c int, v text, w int, PRIMARY KEY (k, c))",
		"CREATE INDEX ON mi.t (v)",
	} {
		if _, err := c.Execute(ctx, client.All, ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	poll.Must(t, 20*time.Second, "the index built on every node", func() error {
		_, err := c.Execute(ctx, client.All, "SELECT k, c FROM mi.t WHERE v = 'a'")
		return err
	})
}

// query checks an index query WHERE v = x through c at cl by CheckIndexRead (a failed one
// checks nothing).
func (h *indexHistory) query(ctx context.Context, t *testing.T, c *client.Client, cl client.Consistency, x, where string) {
	t.Helper()
	res, err := c.Execute(ctx, cl, fmt.Sprintf("SELECT k, c FROM mi.t WHERE v = '%s'", x))
	if err != nil {
		return
	}
	var got []IndexRow
	for _, row := range res.Rows {
		k, okK := row[0].(int32)
		cc, okC := row[1].(int32)
		if !okK || !okC {
			t.Fatalf("index query returned row %v, want two ints", row)
		}
		got = append(got, IndexRow{K: k, C: cc, Token: partitioner.Token(schema.EncodeInt(k))})
	}
	h.reads++
	if err := CheckIndexRead(h.writes, x, got); err != nil {
		t.Errorf("v = %q at %v %s: %v", x, cl, where, err)
	}
}

// run runs n operations of the history, a third of them index queries, through random running
// nodes of tc at QUORUM.
func (h *indexHistory) run(ctx context.Context, t *testing.T, tc *localcluster.Cluster, n int, when string) {
	t.Helper()
	const keys, clusterings = 8, 3
	for range n {
		running := tc.Running()
		node := running[h.rng.IntN(len(running))]
		if h.rng.IntN(3) == 0 {
			h.query(ctx, t, node.Client(), client.Quorum, indexValues[h.rng.IntN(len(indexValues))], "through "+node.Name+" "+when)
			continue
		}
		r := IndexRow{K: int32(h.rng.IntN(keys)), C: int32(h.rng.IntN(clusterings))}
		r.Token = partitioner.Token(schema.EncodeInt(r.K))
		ts := int64(1000 + h.rng.IntN(1_000_000))
		for h.used[ts] {
			ts++
		}
		h.used[ts] = true
		x := indexValues[h.rng.IntN(len(indexValues))]
		var stmt string
		switch h.rng.IntN(6) {
		case 0:
			stmt, x = fmt.Sprintf("DELETE FROM mi.t USING TIMESTAMP %d WHERE k = %d AND c = %d", ts, r.K, r.C), ""
		case 1:
			stmt, x = fmt.Sprintf("DELETE v FROM mi.t USING TIMESTAMP %d WHERE k = %d AND c = %d", ts, r.K, r.C), ""
		case 2, 3:
			stmt = fmt.Sprintf("UPDATE mi.t USING TIMESTAMP %d SET v = '%s', w = %d WHERE k = %d AND c = %d", ts, x, ts, r.K, r.C)
		default:
			stmt = fmt.Sprintf("INSERT INTO mi.t (k, c, v) VALUES (%d, %d, '%s') USING TIMESTAMP %d", r.K, r.C, x, ts)
		}
		_, err := node.Client().Execute(ctx, client.Quorum, stmt)
		h.writes[r] = append(h.writes[r], IndexWrite{TS: ts, Value: x, Acked: err == nil})
		h.nwrites++
	}
}

// final queries every value at ALL through every running node of tc.
func (h *indexHistory) final(ctx context.Context, t *testing.T, tc *localcluster.Cluster) {
	t.Helper()
	for _, x := range indexValues {
		for _, n := range tc.Running() {
			reads := h.reads
			h.query(ctx, t, n.Client(), client.All, x, "through "+n.Name+" at the end, every remaining node up")
			if h.reads == reads {
				t.Errorf("the final index query v = %q at ALL through %s failed with every remaining node up", x, n.Name)
			}
		}
	}
}
