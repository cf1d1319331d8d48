package node_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/client"
)

// Index queries without a partition key run a scan's shapes: aggregates, GROUP BY (with
// LIMIT and PER PARTITION LIMIT), PER PARTITION LIMIT on rows and DISTINCT (an index on a
// static column), each unpaged and in pages small enough to stop inside partitions and groups.
func TestSecondaryIndexQueryShapes(t *testing.T) {
	tc := startCluster(t, 1)
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c0, client.One, "CREATE TABLE ks.g (k int, c int, v text, n int, s int STATIC, PRIMARY KEY (k, c))")
	exec(t, c0, client.One, "CREATE INDEX ON ks.g (v)")
	exec(t, c0, client.One, "CREATE INDEX ON ks.g (s)")
	const parts, rows = 12, 5
	ks := make([]int32, parts) // the partitions in token order
	for k := range int32(parts) {
		ks[k] = k
		for c := range int32(rows) {
			v := "a" // c = 0, 2, 4
			if c%2 == 1 {
				v = "b"
			}
			exec(t, c0, client.One, fmt.Sprintf("INSERT INTO ks.g (k, c, v, n, s) VALUES (%d, %d, '%s', %d, %d)", k, c, v, c, k%3))
		}
	}
	slices.SortFunc(ks, func(a, b int32) int {
		ta, tb := intToken(a), intToken(b)
		if ta < tb {
			return -1
		}
		if ta > tb {
			return 1
		}
		return 0
	})
	s := scanSession(t, tc, 0)
	waitIndexBuilt(t, s, "SELECT k FROM g WHERE v = 'a'")
	waitIndexBuilt(t, s, "SELECT k FROM g WHERE s = 1")

	var perPart, groupsPPL, groups, distinct [][]int32
	for _, k := range ks {
		perPart = append(perPart, []int32{k, 0}, []int32{k, 2})
		groupsPPL = append(groupsPPL, []int32{k, 0, 1}, []int32{k, 2, 1})
		groups = append(groups, []int32{k, 3, 4})
		if k%3 == 1 {
			distinct = append(distinct, []int32{k, 1})
		}
	}
	for _, tt := range []struct {
		q    string
		n    int
		want [][]int32
	}{
		{"SELECT count(*), max(n) FROM g WHERE v = 'a'", 2, [][]int32{{parts * 3, 4}}},
		{"SELECT count(*), min(n) FROM g WHERE v = 'b' AND n > 1 ALLOW FILTERING", 2, [][]int32{{parts, 3}}},
		{"SELECT count(*) FROM g WHERE v = 'none'", 1, [][]int32{{0}}},
		{"SELECT k, count(*), max(n) FROM g WHERE v = 'a' GROUP BY k", 3, groups},
		{"SELECT k, count(*), max(n) FROM g WHERE v = 'a' GROUP BY k LIMIT 5", 3, groups[:5]},
		{"SELECT k, c, count(*) FROM g WHERE v = 'a' GROUP BY k, c PER PARTITION LIMIT 2", 3, groupsPPL},
		{"SELECT k, c FROM g WHERE v = 'a' PER PARTITION LIMIT 2", 2, perPart},
		{"SELECT k, c FROM g WHERE v = 'a' PER PARTITION LIMIT 2 LIMIT 7", 2, perPart[:7]},
		{"SELECT DISTINCT k, s FROM g WHERE s = 1", 2, distinct},
	} {
		for _, page := range []int{0, 1, 2, 5} {
			if got := collectInts(t, s.Query(tt.q).PageSize(page), tt.n); !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("%s in pages of %d returned\n%v\nwant\n%v", tt.q, page, got, tt.want)
			}
		}
	}
}
