package shell_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// tokenOrder returns keys (single text partition keys) sorted by their tokens.
func tokenOrder(keys ...string) []string {
	out := slices.Clone(keys)
	slices.SortFunc(out, func(a, b string) int {
		ta := partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(a)}))
		tb := partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte(b)}))
		if ta < tb {
			return -1
		}
		if ta > tb {
			return 1
		}
		return 0
	})
	return out
}

func fillIN(t *testing.T, c *cluster, keys []string, rows int) {
	t.Helper()
	for _, k := range keys {
		for i := 1; i <= rows; i++ {
			v := fmt.Sprintf("'%s%d'", k, i)
			if i%3 == 0 {
				v = "null"
			}
			c.must(fmt.Sprintf("INSERT INTO t (k, c, v, w) VALUES ('%s', %d, %s, %d)", k, i, v, i*10))
		}
	}
}

func TestSelectInPartitions(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	keys := []string{"a", "b", "c", "d", "e"}
	fillIN(t, c, keys, 4)
	order := tokenOrder(keys...)
	var want []string
	for _, k := range order {
		for i := 1; i <= 4; i++ {
			want = append(want, fmt.Sprintf("'%s' %d", k, i))
		}
	}
	got, err := c.query("n2", quorum, "SELECT k, c FROM t WHERE k IN ('e', 'a', 'c', 'b', 'd', 'a')")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("IN = %q, %v; want %q (token order, each partition once)", got, err, want)
	}
	// Paged: every row once, in the same order, whatever the page size.
	for _, size := range []int{1, 3, 4, 7, 100} {
		var rows []string
		st := coordinator.Statement{Text: "SELECT k, c FROM t WHERE k IN ('a', 'b', 'c', 'd', 'e')", PageSize: size}
		for i := 0; ; i++ {
			res, err := c.run("n3", st)
			if err != nil {
				t.Fatalf("page size %d page %d: %v", size, i, err)
			}
			if n := len(res.Rows.Values); n > size {
				t.Fatalf("page size %d: a page of %d rows", size, n)
			}
			rows = append(rows, formatRows(res.Rows)...)
			if res.PagingState == nil {
				break
			}
			st.PagingState = res.PagingState
		}
		if !slices.Equal(rows, want) {
			t.Errorf("page size %d: %q, want %q", size, rows, want)
		}
	}
	// LIMIT across partitions, PER PARTITION LIMIT, paged and not.
	var perPart []string
	for _, k := range order {
		perPart = append(perPart, fmt.Sprintf("'%s' 1", k), fmt.Sprintf("'%s' 2", k))
	}
	for _, size := range []int{0, 3} {
		st := coordinator.Statement{Text: "SELECT k, c FROM t WHERE k IN ('a', 'b', 'c', 'd', 'e') PER PARTITION LIMIT 2 LIMIT 7", PageSize: size}
		var rows []string
		for {
			res, err := c.run("n1", st)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, formatRows(res.Rows)...)
			if res.PagingState == nil {
				break
			}
			st.PagingState = res.PagingState
		}
		if !slices.Equal(rows, perPart[:7]) {
			t.Errorf("PER PARTITION LIMIT 2 LIMIT 7 (page size %d) = %q, want %q", size, rows, perPart[:7])
		}
	}
	// DISTINCT: one row per partition that has rows.
	got, err = c.query("n1", quorum, "SELECT DISTINCT k FROM t WHERE k IN ('a', 'zz', 'c')")
	if w := tokenOrder("a", "c"); err != nil || len(got) != 2 || got[0] != "'"+w[0]+"'" || got[1] != "'"+w[1]+"'" {
		t.Errorf("DISTINCT = %q, %v; want %q", got, err, w)
	}
	// ORDER BY with IN: merged in clustering order unpaged, refused paged.
	got, err = c.query("n1", quorum, "SELECT c, k FROM t WHERE k IN ('a', 'b') ORDER BY c DESC LIMIT 3")
	if err != nil || len(got) != 3 || !strings.HasPrefix(got[0], "4 ") || !strings.HasPrefix(got[2], "3 ") {
		t.Errorf("ORDER BY c DESC over IN = %q, %v; want 4, 4, 3", got, err)
	}
	_, err = c.run("n1", coordinator.Statement{Text: "SELECT c FROM t WHERE k IN ('a', 'b') ORDER BY c DESC", PageSize: 10})
	if err == nil || !strings.Contains(err.Error(), "Cannot page queries with both ORDER BY and a IN restriction on the partition key") {
		t.Errorf("paged ORDER BY with IN: %v, want Cassandra's refusal", err)
	}
	// IN ? with a prepared statement.
	prep, err := c.executors["n1"].Prepare(t.Context(), "SELECT k, c FROM t WHERE k IN ? AND c = 2", "ks")
	if err != nil {
		t.Fatal(err)
	}
	list := schema.EncodeListText([]string{"d", "b"})
	res, err := c.run("n1", coordinator.Statement{Prepared: prep, Values: []coordinator.Value{val(list)}})
	if got := formatRows(res.Rows); err != nil || len(got) != 2 {
		t.Errorf("IN ? = %q, %v", got, err)
	}
}

func TestSelectInGuardrails(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	in := make([]string, 101)
	for i := range in {
		in[i] = fmt.Sprintf("'k%d'", i)
	}
	_, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k IN ("+strings.Join(in, ", ")+")")
	if err == nil || !strings.Contains(err.Error(), "guardrail partition_keys_in_select violated") || !strings.Contains(err.Error(), "101 exceeds fail threshold of 100") {
		t.Errorf("101 keys: %v, want the partition_keys_in_select guardrail", err)
	}
	cs := make([]string, 11)
	for i := range cs {
		cs[i] = fmt.Sprint(i)
	}
	_, err = c.exec("n1", quorum, "SELECT * FROM t WHERE k IN ("+strings.Join(in[:100], ", ")+") AND c IN ("+strings.Join(cs, ", ")+")")
	if err == nil || !strings.Contains(err.Error(), "guardrail in_select_cartesian_product violated") {
		t.Errorf("100 × 11 keys: %v, want the in_select_cartesian_product guardrail", err)
	}
}

func TestSelectClusteringInAndFiltering(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t2 (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)")
	for c1 := 1; c1 <= 4; c1++ {
		for c2 := 1; c2 <= 3; c2++ {
			c.must(fmt.Sprintf("INSERT INTO t2 (k, c1, c2, v) VALUES (1, %d, %d, %d)", c1, c2, c1*c2))
		}
	}
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND c1 IN (3, 1)", []string{"1 3", "1 2", "1 1", "3 3", "3 2", "3 1"}},
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND c1 IN (1, 4) AND c2 IN (1, 3)", []string{"1 3", "1 1", "4 3", "4 1"}},
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND (c1, c2) IN ((2, 1), (4, 2), (9, 9))", []string{"2 1", "4 2"}},
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND (c1, c2) > (3, 2) AND (c1, c2) <= (4, 1)", []string{"3 3", "4 1"}},
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND c2 = 2 ALLOW FILTERING", []string{"1 2", "2 2", "3 2", "4 2"}},
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND v >= 6 ALLOW FILTERING", []string{"2 3", "3 3", "3 2", "4 3", "4 2"}},
		{"SELECT c1, c2 FROM t2 WHERE k IN (1, 2) AND c1 > 3 AND v < 8 ALLOW FILTERING", []string{"4 1"}},
		{"SELECT c1, c2 FROM t2 WHERE k = 1 AND v >= 6 LIMIT 2 ALLOW FILTERING", []string{"2 3", "3 3"}},
	} {
		got, err := c.query("n1", quorum, tt.q)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s = %q, %v; want %q", tt.q, got, err, tt.want)
		}
	}
	// Filtering pages.
	st := coordinator.Statement{Text: "SELECT c1, c2 FROM t2 WHERE k = 1 AND v >= 3 ALLOW FILTERING", PageSize: 2}
	var rows []string
	for {
		res, err := c.run("n2", st)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, formatRows(res.Rows)...)
		if res.PagingState == nil {
			break
		}
		st.PagingState = res.PagingState
	}
	if want := []string{"1 3", "2 3", "2 2", "3 3", "3 2", "3 1", "4 3", "4 2", "4 1"}; !slices.Equal(rows, want) {
		t.Errorf("filtering paged by 2 = %q, want %q", rows, want)
	}
	_, err := c.exec("n1", quorum, "SELECT * FROM t2 WHERE k = 1 AND v = 3")
	if err == nil || !strings.Contains(err.Error(), "use ALLOW FILTERING") {
		t.Errorf("filtering without ALLOW FILTERING: %v", err)
	}
}

func TestSelectAggregates(t *testing.T) {
	c := newCluster(t, options{pageBytes: 64}) // replicas answer in many pages
	c.must(schemaRF3...)
	fillIN(t, c, []string{"a", "b"}, 9)
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"SELECT count(*), count(v), min(w), max(w), sum(w), avg(w) FROM t WHERE k = 'a'", []string{"9 6 10 90 450 50"}},
		{"SELECT count(*) AS n FROM t WHERE k = 'nothing'", []string{"0"}},
		{"SELECT max(w), sum(w) FROM t WHERE k = 'nothing'", []string{"null 0"}},
		{"SELECT k, count(*) FROM t WHERE k IN ('a', 'b') AND c > 6", []string{"'" + tokenOrder("a", "b")[0] + "' 6"}},
		{"SELECT k, c, count(*) FROM t WHERE k IN ('a', 'b') AND c <= 2 GROUP BY k, c", nil},
		{"SELECT k, max(c) FROM t WHERE k IN ('a', 'b') GROUP BY k PER PARTITION LIMIT 1 LIMIT 1", []string{"'" + tokenOrder("a", "b")[0] + "' 9"}},
		{"SELECT count(*) FROM t WHERE k = 'a' PER PARTITION LIMIT 4", []string{"4"}},
		{"SELECT count(*) FROM t WHERE k = 'a' AND v = 'a1' ALLOW FILTERING", []string{"1"}},
	} {
		got, err := c.query("n3", quorum, tt.q)
		if tt.want == nil {
			if err != nil || len(got) != 4 {
				t.Errorf("%s = %q, %v; want 4 groups", tt.q, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s = %q, %v; want %q", tt.q, got, err, tt.want)
		}
	}
	// Aggregates are computed whole, whatever the client's page size.
	res, err := c.run("n1", coordinator.Statement{Text: "SELECT count(*) FROM t WHERE k IN ('a', 'b')", PageSize: 2})
	if got := formatRows(res.Rows); err != nil || !slices.Equal(got, []string{"18"}) || res.PagingState != nil {
		t.Errorf("count(*) paged by 2 = %q, %v (paging state %x); want 18, one page", got, err, res.PagingState)
	}
	if !slices.Contains(res.Warnings, "Aggregation query used on multiple partition keys (IN restriction)") {
		t.Errorf("an aggregate over IN warned %q, want Cassandra's warning", res.Warnings)
	}
	if cols := res.Rows.Columns; len(cols) != 1 || cols[0].Name != "count" || cols[0].Type != schema.TypeBigInt {
		t.Errorf("count(*) metadata %+v, want count bigint", cols)
	}
	res, err = c.exec("n1", quorum, "SELECT k AS key, max(w) AS top, avg(w) FROM t WHERE k = 'a'")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range res.Rows.Columns {
		names = append(names, col.Name+" "+string(col.Type))
	}
	if got, want := strings.Join(names, ", "), "key text, top int, system.avg(w) int"; got != want {
		t.Errorf("metadata %s, want %s", got, want)
	}
}

func TestSelectInRateLimit(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, c int, v text, w int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_reads_per_second': 1}")
	fillIN(t, c, []string{"hot", "cold", "x", "y", "z"}, 3)
	// Paged by one row, an IN over 3 partitions of 3 rows each takes 9 pages; each partition
	// counts once (on the page that first reads it), so a limit of 1/s admits it all.
	st := coordinator.Statement{Text: "SELECT c FROM t WHERE k IN ('x', 'y', 'z')", PageSize: 1}
	n := 0
	for {
		res, err := c.run("n1", st)
		if err != nil {
			t.Fatalf("page %d: %v (each partition must count once)", n+1, err)
		}
		n += len(res.Rows.Values)
		if res.PagingState == nil {
			break
		}
		st.PagingState = res.PagingState
	}
	if n != 9 {
		t.Fatalf("paged IN returned %d rows, want 9", n)
	}
	// Make "hot" hot: with the harness's draw 0.99, the third read in a second is rejected.
	for range 2 {
		if _, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'hot'"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k IN ('cold', 'hot')")
	if err == nil || !strings.Contains(err.Error(), "rate limit exceeded for reads on ks.t") || !strings.Contains(err.Error(), `for partition (k="hot")`) {
		t.Fatalf("IN with a hot partition: %v, want the rate-limit error naming k='hot'", err)
	}
	// "cold" was admitted and stays counted: one more read admits (2 ≤ 2L), the next rejects.
	if _, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'cold'"); err != nil {
		t.Fatalf("second read of cold: %v", err)
	}
	if _, err := c.exec("n1", quorum, "SELECT * FROM t WHERE k = 'cold'"); err == nil {
		t.Fatalf("third read of cold in one second was admitted: the IN did not count it")
	}
}

func TestSelectJSON(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	c.must(`INSERT INTO t JSON '{"k": "a", "c": 1, "v": "x \"q\"", "w": 7}'`,
		`INSERT INTO t JSON '{"k": "a", "c": 2, "w": 8}'`,
		`INSERT INTO t JSON '{"k": "a", "c": 1, "w": 9}' DEFAULT UNSET`,
		"INSERT INTO t (k, c, v) VALUES ('b', 1, fromJson('\"from\"'))")
	got, err := c.query("n1", quorum, "SELECT JSON c, v, w AS \"W\" FROM t WHERE k = 'a'")
	want := []string{`'{"c": 1, "v": "x \"q\"", "\"W\"": 9}'`, `'{"c": 2, "v": null, "\"W\"": 8}'`}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SELECT JSON = %q, %v; want %q", got, err, want)
	}
	res, err := c.exec("n1", quorum, "SELECT JSON * FROM t WHERE k IN ('a', 'b') AND c = 1")
	if err != nil || len(res.Rows.Values) != 2 || res.Rows.Columns[0].Name != "[json]" || len(res.Rows.Columns) != 1 {
		t.Fatalf("SELECT JSON * over IN: %+v, %v", res.Rows, err)
	}
	c.must(`UPDATE t SET v = fromJson('"u"') WHERE k = 'b' AND c = 1`)
	got, err = c.query("n1", quorum, "SELECT toJson(v), toJson(c) FROM t WHERE k = 'b'")
	if err != nil || !slices.Equal(got, []string{`'"u"' '1'`}) {
		t.Errorf("toJson = %q, %v", got, err)
	}
	got, err = c.query("n1", quorum, "SELECT JSON count(*) FROM t WHERE k = 'a'")
	if err != nil || !slices.Equal(got, []string{`'{"count": 2}'`}) {
		t.Errorf("SELECT JSON count(*) = %q, %v", got, err)
	}
	if _, err := c.exec("n1", quorum, "SELECT fromJson(v) FROM t WHERE k = 'b'"); err == nil || !strings.Contains(err.Error(), "fromJson() cannot be used in the selection clause") {
		t.Errorf("fromJson as a selector: %v", err)
	}
}

// TestGroupByPages pages the groups of GROUP BY: every group once, in order, whatever the page
// size, with PER PARTITION LIMIT and LIMIT counting groups across pages.
func TestGroupByPages(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.g (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2))")
	for k := range 3 {
		for c1 := range 4 {
			for c2 := range 3 {
				c.must(fmt.Sprintf("INSERT INTO g (k, c1, c2, v) VALUES (%d, %d, %d, %d)", k, c1, c2, k*100+c1*10+c2))
			}
		}
	}
	for _, tt := range []struct {
		q      string
		groups int
	}{
		{"SELECT k, c1, count(*), max(v) FROM g WHERE k IN (0, 1, 2) GROUP BY k, c1", 12},
		{"SELECT k, c1, sum(v) FROM g WHERE k IN (0, 1, 2) GROUP BY k, c1 PER PARTITION LIMIT 3", 9},
		{"SELECT k, c1, sum(v) FROM g WHERE k IN (0, 1, 2) GROUP BY k, c1 LIMIT 7", 7},
		{"SELECT k, count(*) FROM g WHERE k IN (0, 1, 2) GROUP BY k", 3},
		{"SELECT k, c1, c2, v FROM g WHERE k = 1 GROUP BY k, c1, c2", 12},
	} {
		q := tt.q
		want, err := c.query("n1", quorum, q)
		if err != nil || len(want) != tt.groups {
			t.Fatalf("%s unpaged: %d groups, %v; want %d", q, len(want), err, tt.groups)
		}
		for _, size := range []int{1, 2, 5} {
			st := coordinator.Statement{Text: q, PageSize: size}
			var got []string
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatalf("%s by %d: paging does not end", q, size)
				}
				res, err := c.run("n2", st)
				if err != nil {
					t.Fatalf("%s by %d: %v", q, size, err)
				}
				if len(res.Rows.Values) > size {
					t.Fatalf("%s by %d: a page of %d groups", q, size, len(res.Rows.Values))
				}
				got = append(got, formatRows(res.Rows)...)
				if res.PagingState == nil {
					break
				}
				st.PagingState = res.PagingState
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s paged by %d = %q, want %q", q, size, got, want)
			}
		}
	}
}
