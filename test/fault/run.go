//go:build linux

package fault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
)

// Keyspace is the keyspace the workload's tables live in, at replication factor 3.
const Keyspace = "kvfault"

// Step is one fault of a scenario: the nemesis is started, left in place for For, and healed.
type Step struct {
	Nemesis Nemesis
	For     time.Duration
	// During, when set, runs once the nemesis has started, the workload going on; the fault
	// stays for For in all, or until During returns if it takes longer.
	During func(ctx context.Context)
	// Healed, when set, runs after the heal once every node sees every other up, before the
	// rows are read back (at ALL, which repairs what it reads).
	Healed func(ctx context.Context)
}

// Scenario is a run of the workload over a sequence of faults on one cluster.
type Scenario struct {
	Kinds   []Kind
	Weights []int
	Steps   []Step
	// Settle is how long the workload runs before the first fault and after each heal (once
	// every node sees every other up again).
	Settle time.Duration
	// Rate and Workers shape the workload (see Workload); zero means its defaults.
	Rate    float64
	Workers int
	Seed    uint64
	// Recover bounds the wait, after each heal, for every node to see every other up.
	Recover time.Duration
	// Replication is the keyspace's replication map (CQL); "" means SimpleStrategy with one
	// replica per node.
	Replication string
}

// Window is the span of one fault, from its start to its heal, on the events' clock.
type Window struct {
	Name       string
	Start, End time.Duration
	// Recovered is how long after the heal every node saw every other up again.
	Recovered time.Duration
	// Err is what went wrong starting or healing the fault, if anything.
	Err error
}

// wholeRun names the Availability window of the whole scenario, beside one per fault.
const wholeRun = "whole run"

// Availability is the share of failed operations per coordinator node in a window.
type Availability struct {
	Window string
	Total  []int // per node
	Failed []int
}

func (a Availability) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", a.Window)
	for i := range a.Total {
		pct := 0.0
		if a.Total[i] > 0 {
			pct = 100 * float64(a.Failed[i]) / float64(a.Total[i])
		}
		fmt.Fprintf(&b, "  n%d %4d/%-4d failed (%5.1f%%)", i+1, a.Failed[i], a.Total[i], pct)
	}
	return b.String()
}

// Report is what a scenario found.
type Report struct {
	Verdicts     []Verdict
	Windows      []Window
	Availability []Availability // per window, for the operations at QUORUM and of Local kinds
	// ReadBackErrors are the read-backs that failed even after retries (after the heal every
	// read at ALL and QUORUM through every node should succeed).
	ReadBackErrors []string
	Duration       time.Duration
}

// Verdict returns the verdict of the kind named name.
func (r Report) Verdict(name string) Verdict {
	for _, v := range r.Verdicts {
		if v.Kind == name {
			return v
		}
	}
	return Verdict{Kind: name}
}

// Log writes the report to t's log.
func (r Report) Log(t testing.TB) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "checker (%v):\n", r.Duration.Round(100*time.Millisecond))
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "  %s\n", v)
		for _, e := range v.Examples {
			fmt.Fprintf(&b, "      %s\n", e)
		}
	}
	fmt.Fprintf(&b, "availability at QUORUM (and of the Local kinds) per coordinator:\n")
	for _, a := range r.Availability {
		fmt.Fprintf(&b, "  %s\n", a)
	}
	for _, w := range r.Windows {
		fmt.Fprintf(&b, "  fault %q from %v to %v; all nodes saw each other up %v after the heal", w.Name,
			w.Start.Round(100*time.Millisecond), w.End.Round(100*time.Millisecond), w.Recovered.Round(100*time.Millisecond))
		if w.Err != nil {
			fmt.Fprintf(&b, "; error: %v", w.Err)
		}
		b.WriteString("\n")
	}
	for _, e := range r.ReadBackErrors {
		fmt.Fprintf(&b, "  read-back failed: %s\n", e)
	}
	t.Log(b.String())
}

// hold lets the workload run for d.
func hold(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// CreateSchema creates the keyspace with replication (a CQL map; "" means SimpleStrategy with
// one replica per node) and every kind's tables through node 0.
func CreateSchema(c *Cluster, replication string, kinds []Kind) error {
	s, err := c.Session(0)
	if err != nil {
		return err
	}
	defer s.Close()
	if replication == "" {
		replication = fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", c.Size())
	}
	stmts := []string{fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", Keyspace, replication)}
	for _, k := range kinds {
		stmts = append(stmts, k.Schema()...)
	}
	for _, st := range stmts {
		// A schema change waits for the members to agree, which on a loaded machine can take
		// longer than the driver's request timeout: the statements are idempotent (IF NOT
		// EXISTS), so a timed-out one is sent again until schemaTimeout.
		if err := poll.Until(context.Background(), schemaTimeout, st, func() error {
			return s.Query(st).Consistency(gocql.All).Exec()
		}); err != nil {
			return err
		}
	}
	return nil
}

// schemaTimeout bounds the creation of each of the workload's keyspace and tables.
const schemaTimeout = time.Minute

// RunScenario runs the workload on c through every fault of sc, healing each (and registering
// every heal with t.Cleanup, so a failing test leaves no fault behind), then reads every kind's
// rows back at ALL and at QUORUM through every node and checks them.
func RunScenario(ctx context.Context, t testing.TB, c *Cluster, sc Scenario) Report {
	t.Helper()
	began := time.Now()
	if sc.Recover == 0 {
		sc.Recover = 90 * time.Second
	}
	if err := CreateSchema(c, sc.Replication, sc.Kinds); err != nil {
		t.Fatalf("create the workload's schema: %v", err)
	}
	sessions := make([]*gocql.Session, c.Size())
	for i := range sessions {
		s, err := c.Session(i)
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = s
		defer s.Close()
	}
	w := &Workload{Kinds: sc.Kinds, Weights: sc.Weights, Sessions: sessions, Rate: sc.Rate, Workers: sc.Workers, Seed: sc.Seed}
	w.Start()
	defer w.Stop()

	var rep Report
	finals := map[string][]Final{}
	readBack := func() {
		rep.ReadBackErrors = append(rep.ReadBackErrors, readBackAll(ctx, c, w, sc.Kinds, func(k Kind, f Final) {
			finals[k.Name()] = append(finals[k.Name()], f)
		})...)
	}
	hold(ctx, sc.Settle)
	for _, st := range sc.Steps {
		nem := st.Nemesis
		t.Cleanup(func() {
			// A heal that fails here was already reported by the run (Window.Err); what a
			// fault leaves in a namespace goes with the namespace.
			if err := nem.Heal(context.Background(), c); err != nil {
				t.Logf("heal %s at cleanup: %v", nem.Name(), err)
			}
		})
		win := Window{Name: nem.Name(), Start: w.Since()}
		if err := nem.Start(ctx, c); err != nil {
			win.Err = fmt.Errorf("start: %w", err)
			t.Logf("%s: %v", nem.Name(), win.Err)
		} else {
			started := time.Now()
			if st.During != nil {
				st.During(ctx)
			}
			hold(ctx, st.For-time.Since(started))
		}
		if err := nem.Heal(ctx, c); err != nil {
			win.Err = errors.Join(win.Err, fmt.Errorf("heal: %w", err))
		}
		win.End = w.Since()
		healed := time.Now()
		if down := notRunning(c); len(down) > 0 {
			win.Err = errors.Join(win.Err, fmt.Errorf("after the heal, %s not running", strings.Join(down, ", ")))
		} else if err := c.Proc.WaitStates(ctx, sc.Recover, c.Proc.Nodes, c.Proc.AllUp()); err != nil {
			win.Err = errors.Join(win.Err, fmt.Errorf("after the heal: %w", err))
		}
		win.Recovered = time.Since(healed)
		rep.Windows = append(rep.Windows, win)
		if st.Healed != nil {
			st.Healed(ctx)
		}
		readBack() // while the workload goes on
		hold(ctx, sc.Settle)
	}
	w.Stop()
	readBack() // once nothing is in flight
	for _, k := range sc.Kinds {
		rep.Verdicts = append(rep.Verdicts, k.Check(w.Events(k.Name()), finals[k.Name()]))
	}
	rep.Availability = availability(w, sc.Kinds, rep.Windows, c.Size())
	rep.Duration = time.Since(began)
	return rep
}

// Bounds of the read-backs: a broken node must not hold a scenario for long.
const (
	readBackAttempt = 15 * time.Second // one read-back of one kind
	readBackRetry   = 20 * time.Second // retrying it
	readBackRound   = 60 * time.Second // every read-back after one heal
)

// notRunning names the nodes whose process is not running.
func notRunning(c *Cluster) []string {
	var down []string
	for _, n := range c.Proc.Nodes {
		if !n.Running() {
			down = append(down, n.Name)
		}
	}
	return down
}

// readBackAll reads every kind's rows at ALL and at QUORUM through every node (the nodes in
// parallel), with fresh sessions, retrying each read-back for a while; it returns the
// read-backs that kept failing. After one fails, the other kinds are not read through that
// node at that level.
func readBackAll(ctx context.Context, c *Cluster, w *Workload, kinds []Kind, got func(Kind, Final)) []string {
	ctx, cancel := context.WithTimeout(ctx, readBackRound)
	defer cancel()
	var mu sync.Mutex // guards errs and calls of got
	var errs []string
	fail := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, msg)
	}
	var wg sync.WaitGroup
	for i := range c.Size() {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			s, err := c.Session(i)
			if err != nil {
				fail(err.Error())
				return
			}
			defer s.Close()
			for _, cl := range []gocql.Consistency{gocql.All, gocql.Quorum} {
				for j, k := range kinds {
					var f Final
					err := poll.Until(ctx, readBackRetry, fmt.Sprintf("%s read back at %v through n%d", k.Name(), cl, i+1), func() error {
						actx, cancel := context.WithTimeout(ctx, readBackAttempt)
						defer cancel()
						f = Final{Node: i, CL: cl, At: w.Since()}
						var err error
						f.Rows, err = k.ReadBack(actx, s, cl)
						f.End = w.Since()
						return err
					})
					if err != nil {
						fail(fmt.Sprintf("%v (%d more kinds not read back through n%d at %v)", err, len(kinds)-j-1, i+1, cl))
						break
					}
					mu.Lock()
					got(k, f)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	slices.Sort(errs)
	return errs
}

// availability counts, per window and per coordinator, the operations at QUORUM (and of the
// Local kinds, at their LOCAL_* level) that began in
// the window and how many of them failed; the last entry covers the whole run.
func availability(w *Workload, kinds []Kind, windows []Window, nodes int) []Availability {
	var evs []Event
	for _, k := range kinds {
		if _, lwt := k.(lwtKind); lwt {
			continue // a contended LWT may time out with nothing wrong
		}
		if _, local := k.(Local); local || !strings.Contains(k.Name(), "@") { // QUORUM and Local kinds
			evs = append(evs, w.Events(k.Name())...)
		}
	}
	count := func(name string, from, to time.Duration) Availability {
		a := Availability{Window: name, Total: make([]int, nodes), Failed: make([]int, nodes)}
		for _, ev := range evs {
			if ev.Start >= from && ev.Start < to {
				a.Total[ev.Node]++
				if ev.Err != nil {
					a.Failed[ev.Node]++
				}
			}
		}
		return a
	}
	var out []Availability
	for _, win := range windows {
		out = append(out, count(win.Name, win.Start, win.End))
	}
	return append(out, count(wholeRun, 0, time.Duration(1<<62)))
}
