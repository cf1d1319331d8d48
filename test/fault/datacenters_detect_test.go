//go:build linux

package fault

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/loop"
)

// Bounds of TestDataCenterFailureDetection, from issue 35: a remote data center silent for less
// than 10 s (a blip) is never marked down; one cut for 30 s or more is, within those 30 s.
const (
	blipFor       = 8 * time.Second  // the blip
	blipWatch     = 40 * time.Second // from the blip's start: longer than any suspicion the blip could have started
	longCutFor    = 35 * time.Second // the long cut
	markedDownMax = 30 * time.Second // from the cut's start, for every node to see the other data center down
	upAgainMax    = 30 * time.Second // from the heal, for every node to see every other up
	watchEvery    = 200 * time.Millisecond
)

// memberWatch polls how every node sees every member (its member_up metric) until stopped, and
// records, per observer and member, when it was first seen down and, after that, first seen up
// again.
type memberWatch struct {
	c     *Cluster
	start time.Time
	l     *loop.Loop

	mu   sync.Mutex
	down map[[2]int]time.Duration // (observer, member) → first seen down, since start
	up   map[[2]int]time.Duration // (observer, member) → first seen up after down, since start
	errs int                      // failed scrapes
}

// watchMembers starts a memberWatch whose times count from now; stop it with Stop.
func watchMembers(c *Cluster) *memberWatch {
	w := &memberWatch{c: c, start: time.Now(), down: map[[2]int]time.Duration{}, up: map[[2]int]time.Duration{}}
	ids := map[string]int{}
	for i := range c.Size() {
		ids[c.Node(i).ID] = i
	}
	w.l = loop.Start(loop.Options{Every: watchEvery}, func(ctx context.Context) time.Duration {
		for obs := range c.Size() {
			states, err := c.Node(obs).MemberStates(ctx)
			at := time.Since(w.start)
			w.mu.Lock()
			if err != nil {
				w.errs++
			}
			for id, s := range states {
				k := [2]int{obs, ids[id]}
				_, wasDown := w.down[k]
				_, wasUp := w.up[k]
				switch {
				case s == "DOWN" && !wasDown:
					w.down[k] = at
				case s == "UP" && wasDown && !wasUp:
					w.up[k] = at
				}
			}
			w.mu.Unlock()
		}
		return 0
	})
	return w
}

// Stop stops the polling and returns what was seen: first down and first up again per
// (observer, member), and the number of failed scrapes.
func (w *memberWatch) Stop() (down, up map[[2]int]time.Duration, errs int) {
	w.l.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down, w.up, w.errs
}

// crossPairs returns every (observer, member) pair of nodes in different data centers.
func crossPairs(c *Cluster) [][2]int {
	var ps [][2]int
	for a := range c.Size() {
		for b := range c.Size() {
			if c.Places[a].DC != c.Places[b].DC {
				ps = append(ps, [2]int{a, b})
			}
		}
	}
	return ps
}

// holdFault keeps a fault on for d (the fault's length, not a wait for a condition), or until
// ctx ends.
func holdFault(ctx context.Context, d time.Duration) error { return loop.Sleep(ctx, d) }

// TestDataCenterFailureDetection measures failure detection across a real cut between two data
// centers of two processes each under the wan profile (a WAN delay between them): a blip of
// blipFor marks no node of the other data center down, as any node sees it, for blipWatch
// from its start; a cut of longCutFor marks every node of the other data center down at every
// node within markedDownMax of the cut, and every node sees every other up within upAgainMax
// of the heal. It logs the measured times. It runs under -fault.long (about two minutes).
func TestDataCenterFailureDetection(t *testing.T) {
	if !*long {
		t.Skip("fault: failure detection across a data-center cut runs under -fault.long (go test ./test/fault -run TestDataCenterFailureDetection -fault.long -v)")
	}
	ctx := prepare(t)
	c := startCluster(ctx, t, Options{Nodes: len(dcPlaces), Profile: "wan", Places: dcPlaces, WANDelay: wanDelay, WANGossipDelay: wanDelay}, "")
	cut := DCLink{A: "dc1", B: "dc2", Percent: 100}
	t.Cleanup(func() { cut.Heal(context.Background(), c) })
	pairs := crossPairs(c)
	name := func(p [2]int) string { return fmt.Sprintf("n%d sees n%d", p[0]+1, p[1]+1) }

	// The blip.
	w := watchMembers(c)
	if err := cut.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := holdFault(ctx, blipFor); err != nil {
		t.Fatal(err)
	}
	if err := cut.Heal(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := holdFault(ctx, blipWatch-time.Since(w.start)); err != nil {
		t.Fatal(err)
	}
	down, _, errs := w.Stop()
	var marked []string
	for p, at := range down {
		marked = append(marked, fmt.Sprintf("%s down %v after the blip began", name(p), at.Round(100*time.Millisecond)))
	}
	sort.Strings(marked)
	if len(marked) > 0 {
		t.Errorf("a blip of %v marked nodes down: %s", blipFor, strings.Join(marked, "; "))
	} else {
		t.Logf("a blip of %v: no node marked down (watched %v from its start, every %v; %d failed scrapes)", blipFor, blipWatch, watchEvery, errs)
	}
	if err := c.Proc.WaitStates(ctx, upAgainMax, c.Proc.Nodes, c.Proc.AllUp()); err != nil {
		t.Fatal(err)
	}

	// The long cut.
	w = watchMembers(c)
	if err := cut.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := holdFault(ctx, longCutFor); err != nil {
		t.Fatal(err)
	}
	if err := cut.Heal(ctx, c); err != nil {
		t.Fatal(err)
	}
	healedAt := time.Since(w.start)
	upErr := c.Proc.WaitStates(ctx, upAgainMax, c.Proc.Nodes, c.Proc.AllUp())
	down, up, errs := w.Stop()
	var first, last, lastUp time.Duration
	for _, p := range pairs {
		at, ok := down[p]
		switch {
		case !ok:
			t.Errorf("a cut of %v: %s never down", longCutFor, name(p))
			continue
		case at > markedDownMax:
			t.Errorf("a cut of %v: %s down only %v after the cut, want within %v", longCutFor, name(p), at.Round(100*time.Millisecond), markedDownMax)
		}
		if first == 0 || at < first {
			first = at
		}
		last = max(last, at)
		if u, ok := up[p]; ok {
			lastUp = max(lastUp, u-healedAt)
		}
	}
	for p, at := range down {
		if c.Places[p[0]].DC == c.Places[p[1]].DC {
			t.Errorf("a cut between the data centers: %s (same data center) down %v after the cut", name(p), at.Round(100*time.Millisecond))
		}
	}
	t.Logf("a cut of %v: the other data center's nodes marked down %v to %v after the cut (%d pairs; %d failed scrapes)",
		longCutFor, first.Round(100*time.Millisecond), last.Round(100*time.Millisecond), len(pairs), errs)
	if upErr != nil {
		t.Errorf("after the heal, not every node saw every other up within %v: %v", upAgainMax, upErr)
	} else {
		t.Logf("every node saw every other up %v after the heal", lastUp.Round(100*time.Millisecond))
	}
}
