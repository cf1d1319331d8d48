package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
)

const (
	// writerPartitions is how many partitions the writer spreads its rows over.
	writerPartitions = 16
	// readRetryTimeout bounds the retries of a failed read-back (each failure is reported).
	readRetryTimeout = 60 * time.Second
)

// quorumWriter inserts rows with distinct keys at QUORUM through one client, one after another,
// and records which were acknowledged. Row i is (k 'p<i mod writerPartitions>', c i, v 7i).
type quorumWriter struct {
	c      *client.Client
	cancel context.CancelFunc
	done   chan struct{} // closed when the writing goroutine has returned

	killed        atomic.Bool // set just before the kill: later outcomes count as after it
	acks          atomic.Int64
	acksAfterKill atomic.Int64

	mu             sync.Mutex
	acked          []int    // row numbers of acknowledged writes
	failuresBefore []string // failed writes before the kill, with their errors
	failuresAfter  []string // failed writes after the kill
}

// startWriter starts writing through c until stop.
func startWriter(c *client.Client) *quorumWriter {
	ctx, cancel := context.WithCancel(context.Background())
	w := &quorumWriter{c: c, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

func (w *quorumWriter) run(ctx context.Context) {
	defer close(w.done)
	for i := 0; ctx.Err() == nil; i++ {
		stmt := fmt.Sprintf("INSERT INTO crash.t (k, c, v) VALUES ('p%d', %d, %d)", i%writerPartitions, i, 7*i)
		opCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
		_, err := w.c.Execute(opCtx, client.Quorum, stmt)
		cancel()
		if ctx.Err() != nil {
			return // stopped: this write's outcome is unknown and not counted
		}
		after := w.killed.Load()
		w.mu.Lock()
		switch {
		case err == nil:
			w.acked = append(w.acked, i)
			w.acks.Add(1)
			if after {
				w.acksAfterKill.Add(1)
			}
		case after:
			w.failuresAfter = append(w.failuresAfter, fmt.Sprintf("row %d: %v", i, err))
		default:
			w.failuresBefore = append(w.failuresBefore, fmt.Sprintf("row %d: %v", i, err))
		}
		w.mu.Unlock()
	}
}

// stop stops the writer and waits for it. It is safe to call more than once.
func (w *quorumWriter) stop() {
	w.cancel()
	<-w.done
}

// TestSIGKILLDuringQuorumWrites kills one node of three with SIGKILL while a writer inserts rows
// at QUORUM through another node (writes synced to disk, the default), and checks that:
// QUORUM writes keep succeeding; once the others see the node down, ALL writes fail at once with
// UNAVAILABLE; the node restarts on its data directory and addresses and rejoins; and every
// acknowledged write is then readable at QUORUM through every node, the restarted one included.
func TestSIGKILLDuringQuorumWrites(t *testing.T) {
	skipShort(t)
	tc := startCluster(t, 3, true)
	n1, n2, n3 := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	execute(t, n1.Client(), client.One, "CREATE KEYSPACE crash WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	execute(t, n1.Client(), client.One, "CREATE TABLE crash.t (k text, c int, v int, PRIMARY KEY (k, c))")

	w := startWriter(n1.Client())
	t.Cleanup(w.stop)
	progress := func() string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return fmt.Sprintf("%d acknowledged (%d after the kill), %d failed before the kill, %d after",
			w.acks.Load(), w.acksAfterKill.Load(), len(w.failuresBefore), len(w.failuresAfter))
	}
	poll.Must(t, 30*time.Second, "the writer has 200 acknowledged QUORUM writes", func() error {
		if w.acks.Load() >= 200 {
			return nil
		}
		return errors.New(progress())
	})

	w.killed.Store(true)
	killedAt := time.Now()
	if err := n3.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed %s after %s", n3.Name, progress())

	// The failure detector needs a few seconds (memberlist's LAN profile); QUORUM writes must not
	// notice, since two replicas of three still answer.
	tc.waitStates(30*time.Second, []*node{n1, n2}, map[string]string{n1.ID: "UP", n2.ID: "UP", n3.ID: "DOWN"})
	t.Logf("%s and %s saw %s DOWN %v after the SIGKILL; writer: %s", n1.Name, n2.Name, n3.Name, time.Since(killedAt).Round(time.Millisecond), progress())
	for _, n := range []*node{n1, n2} {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		_, err := n.Client().Execute(ctx, client.All, "INSERT INTO crash.t (k, c, v) VALUES ('all', 1, 1)")
		cancel()
		var un *client.UnavailableError
		if !errors.As(err, &un) || un.Live != 2 || un.Required != 3 || un.Consistency != client.All {
			t.Errorf("ALL write through %s with %s down: err = %v (%T), want an UnavailableError for ALL with 2 live of 3 required", n.Name, n3.Name, err, err)
		}
	}
	poll.Must(t, 30*time.Second, "the writer has 100 acknowledged writes since the kill", func() error {
		if w.acksAfterKill.Load() >= 100 {
			return nil
		}
		return errors.New(progress())
	})

	restartAt := time.Now()
	if err := n3.Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	t.Logf("%s restarted on %s and every node saw it UP %v later", n3.Name, n3.Addr, time.Since(restartAt).Round(time.Millisecond))
	// Keep writing a little with all three up again, so writes around the rejoin are checked too.
	target := w.acks.Load() + 100
	poll.Must(t, 30*time.Second, "the writer has 100 more acknowledged writes after the restart", func() error {
		if w.acks.Load() >= target {
			return nil
		}
		return errors.New(progress())
	})
	w.stop()

	w.mu.Lock()
	acked := append([]int(nil), w.acked...)
	before, after := w.failuresBefore, w.failuresAfter
	w.mu.Unlock()
	t.Logf("writer: %d writes acknowledged, %d after the kill; %d failed before the kill, %d after", len(acked), w.acksAfterKill.Load(), len(before), len(after))
	if len(before) > 0 {
		t.Errorf("%d QUORUM writes failed with all three nodes up, want none; first: %s", len(before), before[0])
	}
	if len(after) > 0 {
		t.Errorf("%d QUORUM writes through %s failed after %s was killed, want none (two of three replicas were up); first: %s", len(after), n1.Name, n3.Name, after[0])
	}

	// Every acknowledged row, read back at QUORUM through every node.
	want := make([]map[int]int, writerPartitions)
	for p := range want {
		want[p] = map[int]int{}
	}
	for _, i := range acked {
		want[i%writerPartitions][i] = 7 * i
	}
	upAt := time.Now()
	for _, n := range tc.nodes {
		var missing []int
		for p := range writerPartitions {
			got, failures := readPartition(t, n, p)
			if len(failures) > 0 {
				// Not fatal: the rows are still checked below, so one run reports both problems.
				t.Errorf("%d QUORUM reads of partition p%d through %s failed after every node saw %s UP (%v after that, the read succeeded), want none; first: %v",
					len(failures), p, n.Name, n3.Name, time.Since(upAt).Round(time.Millisecond), failures[0])
			}
			for c, v := range want[p] {
				gv, ok := got[c]
				switch {
				case !ok:
					missing = append(missing, c)
				case gv != v:
					t.Errorf("row %d read at QUORUM through %s has v = %d, want %d", c, n.Name, gv, v)
				}
			}
		}
		if len(missing) > 0 {
			sort.Ints(missing)
			t.Errorf("%d of %d acknowledged rows are missing from QUORUM reads through %s, for example rows %v", len(missing), len(acked), n.Name, missing[:min(len(missing), 10)])
		}
	}
}

// readPartition reads partition p of crash.t at QUORUM through n and returns its rows as c → v.
// A failed read is retried for up to readRetryTimeout; failures lists the errors of the failed
// attempts, and the test fails if none succeeded.
func readPartition(t *testing.T, n *node, p int) (rows map[int]int, failures []error) {
	t.Helper()
	stmt := fmt.Sprintf("SELECT c, v FROM crash.t WHERE k = 'p%d'", p)
	poll.Must(t, readRetryTimeout, fmt.Sprintf("%s at QUORUM through %s succeeds", stmt, n.Name), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		defer cancel()
		_, got, err := n.Client().Query(ctx, client.Quorum, stmt)
		if err != nil {
			failures = append(failures, err)
			return err
		}
		rows = make(map[int]int, len(got))
		for _, r := range got {
			c, ok1 := r[0].(int32)
			v, ok2 := r[1].(int32)
			if !ok1 || !ok2 {
				t.Fatalf("%s through %s returned row %v, want two ints", stmt, n.Name, r)
			}
			rows[int(c)] = int(v)
		}
		return nil
	})
	return rows, failures
}
