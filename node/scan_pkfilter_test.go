package node_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
)

// checkPartitionKeyFilters checks, on the cluster of checkScanShapes, the restrictions that do
// not name whole partition keys (Cassandra 4.1's PartitionKeySingleRestrictionSet.needFiltering):
// = and IN on one column of a composite partition key and slices of its columns scan the ring
// and filter, with ALLOW FILTERING; and restrictions on primary key columns beside an indexed
// column without the whole partition key filter the index query, with ALLOW FILTERING. Without
// it, and for IN on the partition key beside an index, Cassandra's refusals.
func checkPartitionKeyFilters(t *testing.T, c0 *client.Client, sessions []*gocql.Session) {
	exec(t, c0, client.One, "CREATE TABLE ks.pk2 (k1 int, k2 int, c int, v int, PRIMARY KEY ((k1, k2), c))")
	exec(t, c0, client.One, "CREATE INDEX ON ks.pk2 (v)")
	for k1 := range int32(6) {
		for k2 := range int32(4) {
			var b strings.Builder
			b.WriteString("BEGIN UNLOGGED BATCH\n")
			for c := range int32(3) {
				fmt.Fprintf(&b, "INSERT INTO ks.pk2 (k1, k2, c, v) VALUES (%d, %d, %d, %d);\n", k1, k2, c, (k1+k2+c)%3)
			}
			b.WriteString("APPLY BATCH")
			exec(t, c0, client.Quorum, b.String())
		}
	}
	waitIndexBuilt(t, sessions[0], "SELECT k1 FROM pk2 WHERE v = 1")
	// The model: the unfiltered scan, in its order.
	rows := collectInts(t, sessions[0].Query("SELECT k1, k2, c, v FROM pk2"), 4)
	if len(rows) != 6*4*3 {
		t.Fatalf("the plain scan of ks.pk2 returned %d rows, want %d", len(rows), 6*4*3)
	}
	keep := func(f func(k1, k2, c, v int32) bool) [][]int32 {
		var out [][]int32
		for _, r := range rows {
			if f(r[0], r[1], r[2], r[3]) {
				out = append(out, r)
			}
		}
		return out
	}
	check := func(q string, n int, want [][]int32, args ...any) {
		t.Helper()
		if len(want) == 0 {
			t.Fatalf("%s: the model selects no rows: not a test", q)
		}
		for i, p := range []int{0, 1, 2, 5} {
			cl := []gocql.Consistency{gocql.One, gocql.Quorum, gocql.All}[i%3]
			got := collectInts(t, sessions[i%len(sessions)].Query(q, args...).PageSize(p).Consistency(cl), n)
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s (%v) at %v in pages of %d returned %d rows\n%v\nwant %d\n%v", q, args, cl, p, len(got), got, len(want), want)
			}
		}
	}
	const cols = "SELECT k1, k2, c, v FROM pk2 WHERE "

	// Part of the partition key, its slices and IN on one column: a filtered scan.
	check(cols+"k1 = 2 ALLOW FILTERING", 4, keep(func(k1, _, _, _ int32) bool { return k1 == 2 }))
	check(cols+"k2 = ? ALLOW FILTERING", 4, keep(func(_, k2, _, _ int32) bool { return k2 == 1 }), 1)
	check(cols+"k1 IN (1, 4) ALLOW FILTERING", 4, keep(func(k1, _, _, _ int32) bool { return k1 == 1 || k1 == 4 }))
	check(cols+"k1 > 1 AND k1 <= 3 AND k2 = 0 ALLOW FILTERING", 4, keep(func(k1, k2, _, _ int32) bool { return k1 > 1 && k1 <= 3 && k2 == 0 }))
	check(cols+"k1 = 2 AND k2 >= 2 ALLOW FILTERING", 4, keep(func(k1, k2, _, _ int32) bool { return k1 == 2 && k2 >= 2 }))
	check(cols+"k1 = 2 AND c = 1 ALLOW FILTERING", 4, keep(func(k1, _, c, _ int32) bool { return k1 == 2 && c == 1 }))
	var distinct [][]int32
	for _, r := range keep(func(k1, _, _, _ int32) bool { return k1 == 3 }) {
		if n := len(distinct); n == 0 || distinct[n-1][1] != r[1] {
			distinct = append(distinct, []int32{r[0], r[1]})
		}
	}
	check("SELECT DISTINCT k1, k2 FROM pk2 WHERE k1 = 3 ALLOW FILTERING", 2, distinct)
	var count int64
	if err := sessions[1].Query("SELECT COUNT(*) FROM pk2 WHERE k2 = 3 ALLOW FILTERING").Scan(&count); err != nil || count != 6*3 {
		t.Errorf("COUNT(*) WHERE k2 = 3 over a scan = %d (%v), want %d", count, err, 6*3)
	}

	// Beside an indexed column: the index query, filtered on the primary key columns.
	check(cols+"v = 1 AND c = 2 ALLOW FILTERING", 4, keep(func(_, _, c, v int32) bool { return v == 1 && c == 2 }))
	check(cols+"v = 1 AND k1 = 3 ALLOW FILTERING", 4, keep(func(k1, _, _, v int32) bool { return v == 1 && k1 == 3 }))
	check(cols+"v = ? AND k1 = ? AND k2 < 2 AND c >= 1 ALLOW FILTERING", 4,
		keep(func(k1, k2, c, v int32) bool { return v == 0 && k1 == 4 && k2 < 2 && c >= 1 }), 0, 4)
	// The whole partition key with the indexed column needs no ALLOW FILTERING (as before).
	check(cols+"k1 = 1 AND k2 = 1 AND v = 2", 4, keep(func(k1, k2, _, v int32) bool { return k1 == 1 && k2 == 1 && v == 2 }))

	const needs = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"
	for q, want := range map[string]string{
		cols + "k1 = 2":                                       needs,
		cols + "k1 IN (1, 2)":                                 needs,
		cols + "k1 > 2 AND k2 = 1":                            needs,
		cols + "v = 1 AND c = 2":                              needs,
		cols + "v = 1 AND k1 = 3":                             needs,
		cols + "v = 1 AND k1 IN (1, 2) ALLOW FILTERING":       "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
		cols + "k1 = 2 AND token(k1, k2) > 0 ALLOW FILTERING": "cannot be restricted by both a normal relation and a token relation",
		cols + "k1 = 2 ORDER BY c DESC ALLOW FILTERING":       "ORDER BY is only supported when the partition key is restricted by an EQ or an IN",
	} {
		if err := sessions[1].Query(q).Exec(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", q, err, want)
		}
	}
}
