package shell_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// Linearizability of lightweight transactions, checked with porcupine over histories of CAS
// operations (UPDATE ... IF w = old) and SERIAL reads on a few registers (rows of ks.t), from
// several clients through every node of the in-process cluster.

// regInput is one operation on register key: a SERIAL read, or CAS(old → new).
type regInput struct {
	key      int
	cas      bool
	old, new int
}

// regOutput is its result: the value read, or whether the CAS applied; unknown for a CAS that
// timed out (it may or may not have taken effect).
type regOutput struct {
	value   int
	applied bool
	unknown bool
}

// registerModel is a register per key, starting at 0.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		var keys []int
		for _, op := range history {
			k := op.Input.(regInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(int), input.(regInput), output.(regOutput)
		switch {
		case !in.cas:
			return out.value == st, st
		case out.unknown: // its return is at the end of time: linearized where it applies, or never
			if st == in.old {
				return true, in.new
			}
			return true, st
		case out.applied:
			return st == in.old, in.new
		}
		return st != in.old, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		if !in.cas {
			return fmt.Sprintf("r%d read -> %d", in.key, out.value)
		}
		return fmt.Sprintf("r%d cas(%d->%d) -> applied=%v unknown=%v", in.key, in.old, in.new, out.applied, out.unknown)
	},
}

// history records operations with call and return times from one counter, so that their
// real-time order is what the executions' order was.
type history struct {
	clock atomic.Int64
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// run executes one operation for client through node and records it.
func (h *history) run(t *testing.T, c *cluster, client int, node coordinator.NodeID, in regInput) regOutput {
	call := h.clock.Add(1)
	var out regOutput
	var err error
	if in.cas {
		var res coordinator.Result
		res, err = c.exec(node, quorum, fmt.Sprintf("UPDATE t SET w = %d WHERE k = 'r%d' AND c = 1 IF w = %d", in.new, in.key, in.old))
		if err == nil {
			out.applied = formatRows(res.Rows)[0] == "true"
		}
	} else {
		var got []string
		got, err = c.query(node, serial, fmt.Sprintf("SELECT w FROM t WHERE k = 'r%d' AND c = 1", in.key))
		if err == nil {
			_, err = fmt.Sscan(got[0], &out.value)
		}
	}
	ret := h.clock.Add(1)
	var to *coordinator.TimeoutError
	switch {
	case in.cas && errors.As(err, &to) && to.CAS:
		out.unknown, ret = true, math.MaxInt64
	case err != nil:
		t.Errorf("client %d through %s: %+v: %v", client, node, in, err)
		return out
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
	return out
}

// registers creates ks.t with one row per register, w = 0.
func registers(c *cluster, n int) {
	c.must(schemaRF3...)
	for k := range n {
		c.must(fmt.Sprintf("INSERT INTO t (k, c, w) VALUES ('r%d', 1, 0)", k))
	}
}

// TestLWTLinearizable: clients with fixed seeds run CAS operations and SERIAL reads on three
// registers through every node, concurrently; porcupine finds the history linearizable.
func TestLWTLinearizable(t *testing.T) {
	const (
		clients = 6
		ops     = 25
		regs    = 3
	)
	for round := range 3 {
		c := newCluster(t, options{})
		registers(c, regs)
		var h history
		var wg sync.WaitGroup
		for client := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(client)))
				last := make([]int, regs)
				for i := range ops {
					node := nodes[(client+i)%len(nodes)]
					in := regInput{key: rng.IntN(regs)}
					if rng.IntN(5) < 3 {
						in.cas, in.old, in.new = true, last[in.key], (client+1)*1000+i
						if rng.IntN(4) == 0 {
							in.old = rng.IntN(3) // often stale: a CAS that does not apply
						}
					}
					out := h.run(t, c, client, node, in)
					switch {
					case !in.cas:
						last[in.key] = out.value
					case out.applied:
						last[in.key] = in.new
					}
				}
			})
		}
		wg.Wait()
		if res, info := porcupine.CheckOperationsVerbose(registerModel, h.ops, 0); res != porcupine.Ok {
			t.Fatalf("round %d: the history of %d operations is not linearizable (%v):\n%s", round, len(h.ops), res, describeHistory(h.ops, info))
		}
	}
}

// TestLWTCheckerCatchesSkippedCompletion: the check catches an injected bug. A's CAS(0 → 1) is
// accepted by every replica and its commit held back; B's CAS(0 → 2) through another node
// must complete A's proposal first and then not apply. A proposer that skips completing it
// (BreakLWTCompletion) decides on a read without A's value and applies too: two CAS from 0
// both applied, which porcupine finds not linearizable.
func TestLWTCheckerCatchesSkippedCompletion(t *testing.T) {
	for _, broken := range []bool{false, true} {
		c := newCluster(t, options{})
		registers(c, 1)
		if broken {
			for _, e := range c.executors {
				e.BreakLWTCompletion()
			}
		}
		blocked, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		c.transport.beforeCommit = func(ctx context.Context, _ coordinator.NodeID, req *replicapb.PaxosCommitRequest) {
			if req.GetProposal().GetBallot().GetNode() != "n1" { // A's own commit, not B's completion of it
				return
			}
			once.Do(func() { close(blocked) })
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		var h history
		done := make(chan regOutput)
		go func() { done <- h.run(t, c, 0, "n1", regInput{cas: true, old: 0, new: 1}) }()
		<-blocked // A's proposal is chosen; its commit waits
		b := h.run(t, c, 1, "n2", regInput{cas: true, old: 0, new: 2})
		close(release)
		a := <-done
		h.run(t, c, 2, "n3", regInput{})
		ok := porcupine.CheckOperations(registerModel, h.ops)
		switch {
		case !broken && (!ok || b.applied || !a.applied):
			t.Errorf("correct proposers: A applied=%v, B applied=%v, linearizable=%v; want A alone applied, linearizable", a.applied, b.applied, ok)
		case broken && ok:
			t.Errorf("proposers that skip completion: A applied=%v, B applied=%v, and porcupine found the history linearizable; want an anomaly caught", a.applied, b.applied)
		}
	}
}

// describeHistory renders the operations of the registers whose history porcupine could not
// linearize, in call order.
func describeHistory(ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var b strings.Builder
	for _, part := range info.PartialLinearizationsOperations() {
		if len(part) == 0 || len(part[0]) == 0 {
			continue
		}
		key := part[0][0].Input.(regInput).key
		var mine []porcupine.Operation
		for _, op := range ops {
			if op.Input.(regInput).key == key {
				mine = append(mine, op)
			}
		}
		if len(mine) == len(part[0]) {
			continue // linearized whole
		}
		slices.SortFunc(mine, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
		fmt.Fprintf(&b, "register %d (longest linearization %d of %d):\n", key, len(part[0]), len(mine))
		for _, op := range mine {
			ret := fmt.Sprint(op.Return)
			if op.Return == math.MaxInt64 {
				ret = "∞"
			}
			fmt.Fprintf(&b, "  [%d, %s] client %d %s\n", op.Call, ret, op.ClientId, registerModel.DescribeOperation(op.Input, op.Output))
		}
	}
	return b.String()
}
