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
