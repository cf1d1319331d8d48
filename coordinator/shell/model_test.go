package shell_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

// modelRow is the reference model's state of one row: every write to it, kept whole.
type modelRow struct {
	marker, del int64
	v, w        modelCell
}

type modelCell struct {
	ts   int64
	val  int
	null bool // a tombstone
}

func (c *modelCell) write(ts int64, val int, null bool) {
	if ts > c.ts {
		*c = modelCell{ts: ts, val: val, null: null}
	}
}

// modelRange is a range tombstone of the model: c1 in [lo1, hi1] and, when c1 is fixed, c2 in
// [lo2, hi2] (inclusive bounds over the small integer domain).
type modelRange struct {
	lo1, hi1, lo2, hi2 int
	ts                 int64
}

const modelSide = 6 // c1 and c2 take the values 0 .. modelSide-1

// TestRangeTombstonesAgainstAModel runs random histories of writes, row, range and partition
// deletes with out-of-order timestamps at ONE, with replicas dropping writes, on tables with
// ascending and descending clustering columns, and checks every read at ALL (random clustering
// ranges, limits and directions, in small pages) against a last-write-wins reference model; at the end, after a full read at ALL repaired them, every replica alone
// must agree with the model too.
func TestRangeTombstonesAgainstAModel(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		// The table's clustering order: c1 and c2 descending or not.
		desc := [2]bool{seed%3 == 1, seed%3 == 2}
		t.Run(fmt.Sprintf("seed %d desc %v", seed, desc), func(t *testing.T) { runModel(t, uint64(seed), desc) })
	}
}

func runModel(t *testing.T, seed uint64, desc [2]bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	c := newCluster(t, options{pageBytes: 40})
	dir := func(d bool) string {
		if d {
			return "DESC"
		}
		return "ASC"
	}
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		fmt.Sprintf("CREATE TABLE ks.m (k text, c1 int, c2 int, v int, w int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 %s, c2 %s)", dir(desc[0]), dir(desc[1])),
	)
	// values returns 0 .. modelSide-1 in the order of a column that is descending or not.
	values := func(d bool) []int {
		out := make([]int, modelSide)
		for i := range out {
			out[i] = i
			if d {
				out[i] = modelSide - 1 - i
			}
		}
		return out
	}
	var (
		rows    [modelSide][modelSide]modelRow
		ranges  []modelRange
		partDel int64
		history []string
	)
	used := map[int64]bool{}
	stamp := func() int64 {
		for {
			ts := 1 + rng.Int64N(1_000_000)
			if !used[ts] {
				used[ts] = true
				return ts
			}
		}
	}
	// restriction returns a random clustering restriction and the model's test for it.
	restriction := func(ranged bool) (string, func(c1, c2 int) bool, modelRange) {
		x := rng.IntN(modelSide)
		switch n := rng.IntN(4); {
		case n == 0 && !ranged:
			return "", func(int, int) bool { return true }, modelRange{0, modelSide - 1, 0, modelSide - 1, 0}
		case n <= 1:
			return fmt.Sprintf(" AND c1 = %d", x), func(c1, _ int) bool { return c1 == x }, modelRange{x, x, 0, modelSide - 1, 0}
		default:
			on := "c1"
			if n == 3 {
				on = "c2"
			}
			lo, hi := 0, modelSide-1
			var b strings.Builder
			if n == 3 {
				fmt.Fprintf(&b, " AND c1 = %d", x)
			}
			if rng.IntN(3) > 0 {
				v := rng.IntN(modelSide)
				if rng.IntN(2) == 0 {
					fmt.Fprintf(&b, " AND %s >= %d", on, v)
					lo = v
				} else {
					fmt.Fprintf(&b, " AND %s > %d", on, v)
					lo = v + 1
				}
			}
			if rng.IntN(3) > 0 || b.Len() == 0 || n == 3 && !strings.Contains(b.String(), on) {
				v := rng.IntN(modelSide)
				if rng.IntN(2) == 0 {
					fmt.Fprintf(&b, " AND %s <= %d", on, v)
					hi = v
				} else {
					fmt.Fprintf(&b, " AND %s < %d", on, v)
					hi = v - 1
				}
			}
			if n == 3 {
				return b.String(), func(c1, c2 int) bool { return c1 == x && c2 >= lo && c2 <= hi }, modelRange{x, x, lo, hi, 0}
			}
			return b.String(), func(c1, _ int) bool { return c1 >= lo && c1 <= hi }, modelRange{lo, hi, 0, modelSide - 1, 0}
		}
	}
	deletedAt := func(c1, c2 int) int64 {
		d := max(partDel, rows[c1][c2].del)
		for _, r := range ranges {
			if c1 >= r.lo1 && c1 <= r.hi1 && c2 >= r.lo2 && c2 <= r.hi2 {
				d = max(d, r.ts)
			}
		}
		return d
	}
	expect := func(in func(c1, c2 int) bool, limit int, reversed bool) []string {
		out := []string{}
		for _, c1 := range values(desc[0]) {
			for _, c2 := range values(desc[1]) {
				r, d := &rows[c1][c2], deletedAt(c1, c2)
				if !in(c1, c2) {
					continue
				}
				show := func(c modelCell) string {
					if c.ts > d && !c.null && c.ts != 0 {
						return fmt.Sprint(c.val)
					}
					return "null"
				}
				v, w := show(r.v), show(r.w)
				if r.marker > d || v != "null" || w != "null" {
					out = append(out, fmt.Sprintf("%d %d %s %s", c1, c2, v, w))
				}
			}
		}
		if reversed {
			slices.Reverse(out)
		}
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
		return out
	}
	write := func(stmt string) {
		t.Helper()
		// Up to two replicas drop the write; the coordinator still gets one ack at ONE.
		var dropping []coordinator.NodeID
		for _, n := range nodes {
			if len(dropping) < 2 && rng.IntN(3) == 0 {
				dropping = append(dropping, n)
			}
		}
		c.transport.setFault(failWrites, dropping...)
		history = append(history, fmt.Sprintf("%s  -- dropped by %v", stmt, dropping))
		if _, err := c.exec(nodes[rng.IntN(len(nodes))], one, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		c.settle()
		c.transport.clearFaults()
	}
	check := func(node coordinator.NodeID, stmt string, want []string, local bool) {
		t.Helper()
		var got []string
		var err error
		if local {
			got = c.localRows(node, stmt)
		} else {
			got, err = c.query(node, all, stmt)
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("after\n  %s\n%s (on %s, local %t) = %q, %v\nwant %q", strings.Join(history, "\n  "), stmt, node, local, got, err, want)
		}
	}

	for range 80 {
		ts := stamp()
		c1, c2 := rng.IntN(modelSide), rng.IntN(modelSide)
		r := &rows[c1][c2]
		val := rng.IntN(100)
		switch op := rng.IntN(20); {
		case op < 6:
			write(fmt.Sprintf("INSERT INTO m (k, c1, c2, v) VALUES ('a', %d, %d, %d) USING TIMESTAMP %d", c1, c2, val, ts))
			r.marker = max(r.marker, ts)
			r.v.write(ts, val, false)
		case op < 9:
			if rng.IntN(3) == 0 {
				write(fmt.Sprintf("UPDATE m USING TIMESTAMP %d SET w = null WHERE k = 'a' AND c1 = %d AND c2 = %d", ts, c1, c2))
				r.w.write(ts, 0, true)
			} else {
				write(fmt.Sprintf("UPDATE m USING TIMESTAMP %d SET w = %d WHERE k = 'a' AND c1 = %d AND c2 = %d", ts, val, c1, c2))
				r.w.write(ts, val, false)
			}
		case op < 10:
			write(fmt.Sprintf("DELETE v FROM m USING TIMESTAMP %d WHERE k = 'a' AND c1 = %d AND c2 = %d", ts, c1, c2))
			r.v.write(ts, 0, true)
		case op < 12:
			write(fmt.Sprintf("DELETE FROM m USING TIMESTAMP %d WHERE k = 'a' AND c1 = %d AND c2 = %d", ts, c1, c2))
			r.del = max(r.del, ts)
		case op < 19:
			where, _, mr := restriction(true)
			write(fmt.Sprintf("DELETE FROM m USING TIMESTAMP %d WHERE k = 'a'%s", ts, where))
			mr.ts = ts
			ranges = append(ranges, mr)
		default:
			if rng.IntN(3) == 0 {
				write(fmt.Sprintf("DELETE FROM m USING TIMESTAMP %d WHERE k = 'a'", ts))
				partDel = max(partDel, ts)
			}
		}
		where, in, _ := restriction(false)
		limit := 0
		stmt := "SELECT c1, c2, v, w FROM m WHERE k = 'a'" + where
		reversed := rng.IntN(3) == 0
		if reversed {
			stmt += fmt.Sprintf(" ORDER BY c1 %s, c2 %s", dir(!desc[0]), dir(!desc[1]))
		}
		if rng.IntN(2) == 0 {
			limit = 1 + rng.IntN(8)
			stmt += fmt.Sprintf(" LIMIT %d", limit)
		}
		check(nodes[rng.IntN(len(nodes))], stmt, expect(in, limit, reversed), false)
	}
	all := func(int, int) bool { return true }
	check("n1", "SELECT c1, c2, v, w FROM m WHERE k = 'a'", expect(all, 0, false), false)
	for _, n := range nodes {
		check(n, "SELECT c1, c2, v, w FROM m WHERE k = 'a'", expect(all, 0, false), true)
	}
}
