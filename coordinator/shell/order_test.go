package shell_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// TestSelectInClusteringOrder reads tables of two clustering columns in each of the four
// clustering orders, with and without ORDER BY, through a replica (n1) and a coordinator that is
// not one (n3; the keyspace has RF 2 on n1 and n2), at each consistency level, and checks every
// answer against a model: the rows the WHERE clause selects, sorted column by column, each
// column descending when it is declared DESC or (exclusively) when ORDER BY reverses the
// table's order, cut at the LIMIT.
func TestSelectInClusteringOrder(t *testing.T) {
	orders := [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} // DESC per column
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	dir := func(desc bool) string {
		if desc {
			return "DESC"
		}
		return "ASC"
	}
	type key struct {
		c1 int32
		c2 string
	}
	r := rand.New(rand.NewPCG(3, 4))
	c1s, c2s := []int32{-1, 0, 1, 2}, []string{"", "a", "ab", "b"}
	for i, order := range orders {
		table := fmt.Sprintf("t%d", i)
		c.must(fmt.Sprintf("CREATE TABLE %s (k text, c1 int, c2 text, v int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 %s, c2 %s)",
			table, dir(order[0]), dir(order[1])))
		var rows []key
		for _, c1 := range c1s {
			for _, c2 := range c2s {
				if r.IntN(4) == 0 {
					continue
				}
				c.must(fmt.Sprintf("INSERT INTO %s (k, c1, c2, v) VALUES ('p', %d, '%s', 1)", table, c1, c2))
				if r.IntN(5) == 0 { // a deleted row: a tombstone in the scan, not an answer
					c.clock.Advance(time.Millisecond)
					c.must(fmt.Sprintf("DELETE FROM %s WHERE k = 'p' AND c1 = %d AND c2 = '%s'", table, c1, c2))
					continue
				}
				rows = append(rows, key{c1, c2})
			}
		}

		for range 150 {
			// WHERE: nothing, c1 = x, c1 = x and a bound on c2, or bounds on c1.
			where := []string{"k = 'p'"}
			keep := func(key) bool { return true }
			c1Eq := false
			addBound := func(col string, ops []string, val func() string, test func(k key, op, v string) bool) {
				if r.IntN(2) == 0 {
					return
				}
				op, v := ops[r.IntN(len(ops))], val()
				where = append(where, fmt.Sprintf("%s %s %s", col, op, v))
				prev := keep
				keep = func(k key) bool { return prev(k) && test(k, op, v) }
			}
			cmpOp := func(c int, op string) bool {
				switch op {
				case "<":
					return c < 0
				case "<=":
					return c <= 0
				case ">":
					return c > 0
				case ">=":
					return c >= 0
				}
				return c == 0
			}
			c1Val := func() string { return fmt.Sprint(c1s[r.IntN(len(c1s))]) }
			c2Val := func() string { return "'" + c2s[r.IntN(len(c2s))] + "'" }
			c1Test := func(k key, op, v string) bool {
				var x int32
				fmt.Sscan(v, &x)
				return cmpOp(cmp.Compare(k.c1, x), op)
			}
			c2Test := func(k key, op, v string) bool { return cmpOp(strings.Compare(k.c2, strings.Trim(v, "'")), op) }
			switch r.IntN(3) {
			case 1:
				addBound("c1", []string{"="}, c1Val, c1Test)
				c1Eq = len(where) == 2
				if c1Eq {
					addBound("c2", []string{">", ">="}, c2Val, c2Test)
					addBound("c2", []string{"<", "<="}, c2Val, c2Test)
				}
			case 2:
				addBound("c1", []string{">", ">="}, c1Val, c1Test)
				addBound("c1", []string{"<", "<="}, c1Val, c1Test)
			}

			// ORDER BY: the table's order or its reverse, spelled every way Cassandra allows.
			reversed := r.IntN(2) == 0
			var orderBy string
			switch form := r.IntN(4); {
			case form == 0:
				reversed = false
			case form == 1 || !c1Eq && form == 3:
				orderBy = fmt.Sprintf(" ORDER BY c1 %s", dir(order[0] != reversed))
			case form == 2:
				orderBy = fmt.Sprintf(" ORDER BY c1 %s, c2 %s", dir(order[0] != reversed), dir(order[1] != reversed))
			default: // c1 is restricted by =: it may be left out
				orderBy = fmt.Sprintf(" ORDER BY c2 %s", dir(order[1] != reversed))
			}
			limit := r.IntN(4)
			stmt := fmt.Sprintf("SELECT c1, c2 FROM %s WHERE %s%s", table, strings.Join(where, " AND "), orderBy)
			if limit > 0 {
				stmt += fmt.Sprintf(" LIMIT %d", limit)
			}

			var want []string
			sorted := slices.Clone(rows)
			slices.SortFunc(sorted, func(a, b key) int {
				x, y := cmp.Compare(a.c1, b.c1), strings.Compare(a.c2, b.c2)
				if order[0] != reversed {
					x = -x
				}
				if order[1] != reversed {
					y = -y
				}
				return cmp.Or(x, y)
			})
			for _, k := range sorted {
				if keep(k) && (limit == 0 || len(want) < limit) {
					want = append(want, fmt.Sprintf("%d '%s'", k.c1, k.c2))
				}
			}
			for _, coord := range []coordinator.NodeID{"n1", "n3"} {
				cl := []coordinator.Consistency{one, quorum, all}[r.IntN(3)]
				got, err := c.query(coord, cl, stmt)
				if err != nil || !slices.Equal(got, want) {
					t.Fatalf("%s at %v through %s = %q, %v\nwant %q", stmt, cl, coord, got, err, want)
				}
			}
		}
	}
}

// TestReversedShortReadIsCompleted is TestShortReadIsCompleted read backwards: n2 deleted the
// last rows but n1 did not hear of it. A QUORUM read ORDER BY c DESC LIMIT 2 gets n1's last two
// rows, which n2's tombstones delete; the coordinator must read past them, backwards.
func TestReversedShortReadIsCompleted(t *testing.T) {
	for _, tt := range []struct{ create, orderBy string }{
		{"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c))", "ORDER BY c DESC"},
		{"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)", ""},
	} {
		c := newCluster(t, options{})
		c.must(schemaRF3[0], tt.create)
		for i := 1; i <= 4; i++ {
			c.must(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('a', %d, 'v%d')", i, i))
		}
		c.transport.setFault(failWrites, "n1", "n3")
		for _, s := range []string{"DELETE FROM t WHERE k = 'a' AND c = 4", "DELETE FROM t WHERE k = 'a' AND c = 3"} {
			c.clock.Advance(time.Millisecond)
			if _, err := c.exec("n2", one, s); err != nil {
				t.Fatal(err)
			}
		}
		c.settle()
		c.transport.clearFaults()
		stmt := "SELECT c, v FROM t WHERE k = 'a' " + tt.orderBy + " LIMIT 2"
		got, err := c.query("n1", quorum, stmt)
		if want := []string{"2 'v2'", "1 'v1'"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("%s at QUORUM with disagreeing replicas (%s) = %q, %v; want %q", stmt, tt.create, got, err, want)
		}
	}
}
