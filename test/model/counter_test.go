package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
)

func TestCheckCounterRead(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, int64(ms)*int64(time.Millisecond)) }
	incs := []CounterInc{
		{Start: at(0), End: at(10), By: 5, Acked: true},
		{Start: at(5), End: at(30), By: 7, Acked: false}, // unknown outcome
		{Start: at(40), End: at(50), By: 100, Acked: true},
	}
	for _, tt := range []struct {
		r  CounterRead
		ok bool
	}{
		{CounterRead{Start: at(20), End: at(35), Value: 5}, true},
		{CounterRead{Start: at(20), End: at(35), Value: 12}, true},
		{CounterRead{Start: at(20), End: at(35), Value: 4}, false},   // lost an acknowledged increment
		{CounterRead{Start: at(20), End: at(35), Value: 112}, false}, // saw one not yet started
		{CounterRead{Start: at(60), End: at(70), Value: 105}, true},
		{CounterRead{Start: at(60), End: at(70), Value: 113}, false}, // counted one twice
	} {
		if err := CheckCounterRead(incs, tt.r); (err == nil) != tt.ok {
			t.Errorf("CheckCounterRead(%+v) = %v, want ok %v", tt.r, err, tt.ok)
		}
	}
}

// TestModelCounters runs a seeded history of non-negative increments and reads of a few
// counters through random nodes of an in-process 3-node cluster at QUORUM and ALL (R + W >
// RF), with one node stopped for the middle third and restarted, and checks every read by
// CheckCounterRead; at the end every counter is read at ALL through every node.
func TestModelCounters(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./test/model -run TestModelCounters -model.seed %d)", seed, seed)
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	for _, ddl := range []string{
		"CREATE KEYSPACE mc WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE mc.c (k int, r int, n counter, PRIMARY KEY (k, r))",
	} {
		if _, err := tc.Node(0).Client().Execute(ctx, client.All, ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	const keys, workers, perPhase = 3, 4, 40
	var mu sync.Mutex
	incs := make([][]CounterInc, keys)
	var reads [][2]any // (key, CounterRead)
	phase := func(down int) {
		var wg sync.WaitGroup
		for w := range workers {
			rng := rand.New(rand.NewPCG(seed, uint64(w)+uint64(down+1)*100))
			wg.Go(func() {
				for range perPhase {
					node := rng.IntN(3)
					if node == down {
						node = (node + 1) % 3
					}
					c := tc.Node(node).Client()
					k := rng.IntN(keys)
					cl := []client.Consistency{client.Quorum, client.All}[rng.IntN(2)]
					if down >= 0 {
						cl = client.Quorum
					}
					if rng.IntN(3) == 0 {
						start := time.Now()
						_, rows, err := c.Query(ctx, cl, fmt.Sprintf("SELECT n FROM mc.c WHERE k = %d AND r = 0", k))
						end := time.Now()
						if err != nil {
							continue // an unknown read checks nothing
						}
						v := int64(0)
						if len(rows) == 1 && rows[0][0] != nil {
							v = rows[0][0].(int64)
						}
						mu.Lock()
						reads = append(reads, [2]any{k, CounterRead{Start: start, End: end, Value: v}})
						mu.Unlock()
						continue
					}
					by := int64(rng.IntN(10))
					start := time.Now()
					_, err := c.Execute(ctx, cl, fmt.Sprintf("UPDATE mc.c SET n = n + %d WHERE k = %d AND r = 0", by, k))
					mu.Lock()
					incs[k] = append(incs[k], CounterInc{Start: start, End: time.Now(), By: by, Acked: err == nil})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
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
	phase(-1)
	for k := range keys {
		for node := range 3 {
			start := time.Now()
			_, rows, err := tc.Node(node).Client().Query(ctx, client.All, fmt.Sprintf("SELECT n FROM mc.c WHERE k = %d AND r = 0", k))
			if err != nil {
				t.Errorf("final read of counter %d at ALL through node %d: %v", k, node+1, err)
				continue
			}
			v := int64(0)
			if len(rows) == 1 && rows[0][0] != nil {
				v = rows[0][0].(int64)
			}
			reads = append(reads, [2]any{k, CounterRead{Start: start, End: time.Now(), Value: v}})
		}
	}
	for _, r := range reads {
		k, read := r[0].(int), r[1].(CounterRead)
		if err := CheckCounterRead(incs[k], read); err != nil {
			t.Errorf("counter %d: %v (seed %d)", k, err, seed)
		}
	}
	t.Logf("%d increments and %d reads checked", len(incs[0])+len(incs[1])+len(incs[2]), len(reads))
}

// TestModelCounterBounds checks checkCounters, the bounds rule the main workload applies to
// its counter tables, on a hand-written history: a read that loses an acknowledged increment or
// counts one twice is reported; a timed-out increment may or may not be counted.
func TestModelCounterBounds(t *testing.T) {
	tbl := &Table{Keyspace: "m", Name: "counts", RF: 3, Counter: true,
		PK:         []Column{{Name: "k0", Type: Int}},
		CK:         []Column{{Name: "c0", Type: Int}},
		Regular:    []Column{{Name: "n0", Type: BigInt}},
		Partitions: [][]Val{{intVal(0)}},
	}
	h := newHistory(tbl)
	inc := func(by int64, cl client.Consistency, err error) {
		v := bigintVal(by)
		h.write(&Op{Kind: Update, Row: []Val{intVal(3)}, Cells: []CellWrite{{Col: 0, Val: &v}}}, cl, 0, err)
	}
	inc(5, client.Quorum, nil)
	inc(7, client.Quorum, &client.TimeoutError{}) // counted as started only
	inc(2, client.One, nil)                       // not seen for certain by a QUORUM read
	read := func(cl client.Consistency, rows ...[]any) []string {
		op := &Op{Cols: []int{0}}
		op.Seq, op.Kind, op.Table, op.PK, op.CL = h.seq, Select, h.t, h.t.Partitions[0], cl
		h.seq++
		op.Outcome.Sent = true
		for _, r := range rows {
			op.Outcome.Rows = append(op.Outcome.Rows, append([]any{int32(0)}, r...))
		}
		problems, _ := h.m.Check(op)
		return problems
	}
	for _, v := range []int64{5, 7, 12, 14} {
		if p := read(client.Quorum, []any{int32(3), v}); p != nil {
			t.Errorf("a QUORUM read of %d: %v, want no problem", v, p)
		}
	}
	for _, tt := range []struct {
		cl   client.Consistency
		rows [][]any
	}{
		{client.Quorum, [][]any{{int32(3), int64(4)}}},                        // lost the acknowledged 5
		{client.Quorum, nil},                                                  // lost the row
		{client.Quorum, [][]any{{int32(3), int64(15)}}},                       // over-counted
		{client.All, [][]any{{int32(3), int64(5)}}},                           // ALL must see the 2 acknowledged at ONE
		{client.Quorum, [][]any{{int32(3), int64(5)}, {int32(-7), int64(0)}}}, // a row nobody incremented
	} {
		if p := read(tt.cl, tt.rows...); p == nil {
			t.Errorf("a %v read returning %v: no problem, want one", tt.cl, tt.rows)
		}
	}
}
