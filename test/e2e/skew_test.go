package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/test/proc"
)

// skewLimit is the hot table's per-partition limit for reads and for writes, and skewWorkers the
// closed-loop clients per op: enough to offer well over 2·skewLimit per second even on a busy
// machine (a rejection costs the replicas almost nothing).
const (
	skewLimit   = 100
	skewWorkers = 6
)

// skewTally counts one op's operations that started inside the measurement window.
type skewTally struct {
	mu                         sync.Mutex
	offered, accepted, limited int
	perSecond                  []int // accepted, by second of the window
	failed                     []error
}

func (s *skewTally) add(sec int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offered++
	var rl *client.RateLimitError
	switch {
	case err == nil:
		s.accepted++
		for len(s.perSecond) <= sec {
			s.perSecond = append(s.perSecond, 0)
		}
		s.perSecond[sec]++
	case errors.As(err, &rl):
		s.limited++
	default:
		s.failed = append(s.failed, err)
	}
}

// TestClockSkewHoldsTheLimit runs 4 real nodes at RF=3 whose clocks are off by −500 ms, 0 and
// +250 ms (the three replicas of the hot partition) and 0 (the fourth), and drives writes at ALL
// and reads at QUORUM on one hot partition through the node that is not one of its replicas,
// so that every replica enforces. Before coordinator-clock stamps the replicas' counters halved
// at three different moments and writes at ALL admitted 0.71–0.80·L (docs/accuracy.md); now
// they account on the coordinator's clock and must admit 0.9–1.15·L of each op. The window is
// measured with the test's own clock (the coordinator's, offset 0).
//
// The window is 30 s because one second's admissions have a standard deviation of 10–15% of L
// on the loaded 2-core machine: over 10 s the mean's was 3–5%, and reads at QUORUM, whose mean
// sits near 0.96·L, fell to 0.896·L in a CI run with other packages' tests on the cores. Over
// 30 s it is about 2–2.7%, which puts 0.9·L between 2.5 and 3 of them under the usual mean.
func TestClockSkewHoldsTheLimit(t *testing.T) {
	skipShort(t)
	offsets := []time.Duration{-500 * time.Millisecond, 0, 250 * time.Millisecond, 0}
	warmup, window := 3*time.Second, 30*time.Second

	tc := &testCluster{t: t, pc: &proc.Cluster{}}
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	args := make([][]string, len(offsets))
	for i, off := range offsets {
		args[i] = []string{"--testing-clock-offset", off.String()}
	}
	pc, err := proc.Start(proc.Options{Binary: kvnodeBinary, Dir: root, Nodes: len(offsets), ExtraArgs: args})
	if pc != nil {
		tc.pc, tc.nodes = pc, pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())

	// A key whose replicas are n1, n2 and n3, so that n4 coordinates from outside.
	var ringNodes []cluster.RingNode
	for _, n := range tc.nodes {
		id := cluster.NodeID(n.ID)
		ringNodes = append(ringNodes, cluster.RingNode{ID: id, Tokens: cluster.NodeTokens(id, cluster.DefaultNumTokens)})
	}
	ring := cluster.NewRing(ringNodes)
	coord := tc.nodes[3]
	hot := ""
	for i := 0; hot == ""; i++ {
		k := fmt.Sprintf("hot-%d", i)
		outside := true
		for _, r := range ring.Replicas(partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(k)})), 3) {
			outside = outside && string(r) != coord.ID
		}
		if outside {
			hot = k
		}
	}

	c := coord.Client()
	execute(t, c, client.All, "CREATE KEYSPACE skew WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	execute(t, c, client.All, fmt.Sprintf("CREATE TABLE skew.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': %d, 'max_reads_per_second': %d}", skewLimit, skewLimit))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	w0, w1 := start.Add(warmup), start.Add(warmup+window)
	var writes, reads skewTally
	var wg sync.WaitGroup
	for i := range 2 * skewWorkers {
		tally, cl, stmt := &writes, client.All, fmt.Sprintf("INSERT INTO skew.t (k, v) VALUES ('%s', %d)", hot, i)
		if i%2 == 1 {
			tally, cl, stmt = &reads, client.Quorum, fmt.Sprintf("SELECT v FROM skew.t WHERE k = '%s'", hot)
		}
		wg.Go(func() {
			for {
				at := time.Now()
				if !at.Before(w1) || ctx.Err() != nil {
					return
				}
				rctx, rcancel := context.WithTimeout(ctx, rpcTimeout)
				_, err := c.Execute(rctx, cl, stmt)
				rcancel()
				if !at.Before(w0) {
					tally.add(int(at.Sub(w0)/time.Second), err)
				}
			}
		})
	}
	wg.Wait()

	for _, op := range []struct {
		name string
		t    *skewTally
	}{{"writes at ALL", &writes}, {"reads at QUORUM", &reads}} {
		sec := window.Seconds()
		offered, accepted := float64(op.t.offered)/sec, float64(op.t.accepted)/sec/skewLimit
		t.Logf("%s through %s (replicas at −500, 0, +250 ms): offered %.0f/s, accepted %.3f·L (per second %v), %d rate limited, %d failed over %v",
			op.name, coord.Name, offered, accepted, op.t.perSecond, op.t.limited, len(op.t.failed), window)
		if offered < 2*skewLimit {
			t.Fatalf("%s: the machine offered only %.0f/s, under the 2·L = %d/s the measurement needs", op.name, offered, 2*skewLimit)
		}
		if len(op.t.failed) > op.t.offered/100 {
			t.Errorf("%s: %d of %d failed other than rate limited, want at most 1%% (first: %v)", op.name, len(op.t.failed), op.t.offered, op.t.failed[0])
		}
		if accepted < 0.9 || accepted > 1.15 {
			t.Errorf("%s: accepted %.3f·L with replica clocks at −500, 0 and +250 ms, want 0.9–1.15·L", op.name, accepted)
		}
	}
	for _, n := range tc.nodes {
		v, err := scrapeCounter(n, "kvnode_limiter_clamped_stamps_total")
		if err != nil {
			t.Error(err)
		} else if v != 0 {
			t.Errorf("%s clamped %v coordinator stamps, want none with clocks at most 750 ms apart", n.Name, v)
		}
	}
}

// scrapeCounter reads one unlabelled counter from n's metrics.
func scrapeCounter(n *node, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), proc.ScrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.MetricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("%s: metrics do not parse: %w", n.Name, err)
	}
	mf, ok := families[name]
	if !ok || len(mf.GetMetric()) != 1 {
		return 0, fmt.Errorf("%s: metrics have no single %s", n.Name, name)
	}
	return mf.GetMetric()[0].GetCounter().GetValue(), nil
}
