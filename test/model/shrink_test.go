package model

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
)

var shrinkFlag = flag.Duration("model.shrink", 90*time.Second, "how long to spend shrinking a failing history by replay (0: do not shrink)")

// shrink looks for a shorter history that still fails: it replays the writes of the failing
// read's partition, then the read, on a fresh in-process cluster of the same size with every
// node up, each attempt on a new copy of the table, reading through every node, and drops writes one at a time while the
// failure persists. It logs what it found, and returns it as a description.
func shrink(t *testing.T, v *Violation, nodes int) string {
	t.Helper()
	if *shrinkFlag <= 0 {
		return "shrinking is off (-model.shrink 0)"
	}
	deadline := time.Now().Add(*shrinkFlag)
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: nodes})
	if err != nil {
		return fmt.Sprintf("cannot shrink: %v", err)
	}
	defer tc.Close()
	orig := v.Read.Table
	c := tc.Node(0).Client()
	if _, err := c.Execute(ctx, client.All, fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", orig.Keyspace, orig.RF)); err != nil {
		return fmt.Sprintf("cannot shrink: %v", err)
	}
	attempts := 0
	// The replicas of the partition on the new cluster are not the original ones, so the read
	// is sent through every node, twice (a read at a weak level may pick any replica).
	var reads []*Op
	for range 2 {
		for n := range nodes {
			rd := *v.Read
			rd.Node = n
			reads = append(reads, &rd)
		}
	}
	// replay runs writes then the reads on a new table and returns the first violation.
	replay := func(writes []*Op) (*Violation, error) {
		attempts++
		tbl := *orig
		tbl.Name = fmt.Sprintf("%s_shrink%d", orig.Name, attempts)
		if _, err := c.Execute(ctx, client.All, tbl.CreateStatement()); err != nil {
			return nil, err
		}
		r := NewRunner(&Workload{Seed: v.Seed, Nodes: nodes, High: v.High})
		r.Replay = "(shrunk history: not replayable by seed; replay the original with " + v.Replay + ")"
		target := inProcess{tc}
		for i, op := range append(append([]*Op{}, writes...), reads...) {
			cp := *op
			cp.Table, cp.Outcome = &tbl, Outcome{}
			cp.Seq = i
			cp.Stmt = cp.statement()
			if err := r.Run(ctx, &cp, target); err != nil {
				if vv, ok := err.(*Violation); ok {
					return vv, nil
				}
				return nil, err
			}
		}
		return nil, nil
	}
	writes := append([]*Op{}, v.History...)
	last, err := replay(writes)
	if err != nil {
		return fmt.Sprintf("cannot shrink: %v", err)
	}
	if last == nil {
		return fmt.Sprintf("the partition's %d writes and the read through every node, replayed alone with every node up, did not fail: the failure needs the rest of the history (replay it with -model.seed %d)", len(writes), v.Seed)
	}
	for i := 0; i < len(writes) && time.Now().Before(deadline); {
		fewer := append(append([]*Op{}, writes[:i]...), writes[i+1:]...)
		vv, err := replay(fewer)
		if err != nil {
			return fmt.Sprintf("shrinking stopped: %v", err)
		}
		if vv != nil {
			writes, last = fewer, vv
		} else {
			i++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "shrunk by %d replays to %d writes of the partition's %d (every node up, table renamed):\n%v", attempts, len(writes), len(v.History), last)
	return b.String()
}
