package interop

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"
)

// testGocqlSelect runs IN over partitions and clustering keys, paged by the driver, the
// aggregates with aliases (their result metadata), GROUP BY, DISTINCT, PER PARTITION LIMIT and
// ALLOW FILTERING through gocql, prepared and not.
func testGocqlSelect(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf("CREATE TABLE %s.sel (k int, c int, v int, PRIMARY KEY (k, c))", keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	ins := fmt.Sprintf("INSERT INTO %s.sel (k, c, v) VALUES (?, ?, ?)", keyspace)
	for k := range 5 {
		for c := range 6 {
			if err := session.Query(ins, k, c, k*100+c).Exec(); err != nil {
				t.Fatalf("gocql: %s: %v", ins, err)
			}
		}
	}
	// IN over partitions, paged by the driver (3 rows a page): every row once, each
	// partition's rows together and in clustering order.
	iter := session.Query(fmt.Sprintf("SELECT k, c FROM %s.sel WHERE k IN ?", keyspace), []int{4, 0, 2}).PageSize(3).Iter()
	var k, c int
	seen := map[int][]int{}
	var order []int
	for iter.Scan(&k, &c) {
		if len(order) == 0 || order[len(order)-1] != k {
			order = append(order, k)
		}
		seen[k] = append(seen[k], c)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("gocql: IN paged: %v", err)
	}
	if len(order) != 3 || len(seen) != 3 {
		t.Errorf("gocql: IN (4, 0, 2) returned partitions in runs %v, want 3 partitions each once", order)
	}
	for _, pk := range []int{0, 2, 4} {
		if !slices.Equal(seen[pk], []int{0, 1, 2, 3, 4, 5}) {
			t.Errorf("gocql: IN: partition %d rows %v, want 0..5", pk, seen[pk])
		}
	}
	// Clustering IN and tuples.
	var cs []int
	iter = session.Query(fmt.Sprintf("SELECT c FROM %s.sel WHERE k = 1 AND (c) IN ((5), (1)) ", keyspace)).Iter()
	for iter.Scan(&c) {
		cs = append(cs, c)
	}
	if err := iter.Close(); err != nil || !slices.Equal(cs, []int{1, 5}) {
		t.Errorf("gocql: (c) IN ((5), (1)) = %v, %v; want [1 5]", cs, err)
	}
	// Aggregates with aliases: the result metadata has the aliases and Cassandra's types.
	iter = session.Query(fmt.Sprintf("SELECT count(*) AS n, max(v) AS top, avg(v) FROM %s.sel WHERE k IN (1, 2)", keyspace)).PageSize(2).Iter()
	var names []string
	for _, col := range iter.Columns() {
		names = append(names, col.Name+" "+col.TypeInfo.Type().String())
	}
	if got, want := strings.Join(names, ", "), "n bigint, top int, system.avg(v) int"; got != want {
		t.Errorf("gocql: aggregate metadata %q, want %q", got, want)
	}
	var n int64
	var top, avg int
	if !iter.Scan(&n, &top, &avg) || n != 12 || top != 205 || avg != 152 {
		t.Errorf("gocql: count, max, avg over IN (1, 2) = %d, %d, %d; want 12, 205, 152", n, top, avg)
	}
	if err := iter.Close(); err != nil {
		t.Errorf("gocql: aggregates: %v", err)
	}
	// GROUP BY, DISTINCT, PER PARTITION LIMIT, ALLOW FILTERING.
	var q string
	for _, tt := range []struct {
		q    string
		want int
	}{
		{"SELECT k, count(*) FROM %s.sel WHERE k IN (0, 1, 2) GROUP BY k", 3},
		{"SELECT DISTINCT k FROM %s.sel WHERE k IN (0, 1, 9)", 2},
		{"SELECT k, c FROM %s.sel WHERE k IN (0, 1) PER PARTITION LIMIT 2", 4},
		{"SELECT c FROM %s.sel WHERE k = 3 AND v > 302 ALLOW FILTERING", 3},
		// The same over scans.
		{"SELECT k, c FROM %s.sel WHERE v > 302 ALLOW FILTERING", 9},
		{"SELECT k, c FROM %s.sel WHERE c = 5 ALLOW FILTERING", 5},
		{"SELECT k, count(*) FROM %s.sel GROUP BY k", 5},
		{"SELECT k, c FROM %s.sel PER PARTITION LIMIT 2", 10},
		{"SELECT k FROM %s.sel WHERE c > 3 PER PARTITION LIMIT 1 ALLOW FILTERING", 5},
	} {
		q := fmt.Sprintf(tt.q, keyspace)
		for _, page := range []int{0, 2} { // unpaged, and paged by the driver
			rows, err := session.Query(q).PageSize(page).Iter().SliceMap()
			if err != nil || len(rows) != tt.want {
				t.Errorf("gocql: %s in pages of %d: %d rows, %v; want %d", q, page, len(rows), err, tt.want)
			}
		}
	}
	q = fmt.Sprintf("SELECT k, c FROM %s.sel WHERE v > 302", keyspace)
	if err := session.Query(q).Exec(); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("gocql: %s: %v, want Cassandra's ALLOW FILTERING refusal", q, err)
	}
	q = fmt.Sprintf("SELECT c FROM %s.sel WHERE k = 3 AND v > 302", keyspace)
	if err := session.Query(q).Exec(); err == nil || !strings.Contains(err.Error(), "ALLOW FILTERING") {
		t.Errorf("gocql: %s: %v, want Cassandra's ALLOW FILTERING refusal", q, err)
	}
	// JSON: INSERT JSON bound to a marker, DEFAULT UNSET, SELECT JSON, toJson, fromJson.
	if err := session.Query(fmt.Sprintf("INSERT INTO %s.sel JSON ?", keyspace), `{"k": 9, "c": 1, "v": 5}`).Exec(); err != nil {
		t.Fatalf("gocql: INSERT JSON ?: %v", err)
	}
	if err := session.Query(fmt.Sprintf(`INSERT INTO %s.sel JSON '{"k": 9, "c": 1}' DEFAULT UNSET`, keyspace)).Exec(); err != nil {
		t.Fatalf("gocql: INSERT JSON DEFAULT UNSET: %v", err)
	}
	var js string
	if err := session.Query(fmt.Sprintf("SELECT JSON k, c, v FROM %s.sel WHERE k = 9", keyspace)).Scan(&js); err != nil || js != `{"k": 9, "c": 1, "v": 5}` {
		t.Errorf("gocql: SELECT JSON = %q, %v; want {\"k\": 9, \"c\": 1, \"v\": 5}", js, err)
	}
	if err := session.Query(fmt.Sprintf("UPDATE %s.sel SET v = fromJson(?) WHERE k = 9 AND c = 1", keyspace), "6").Exec(); err != nil {
		t.Fatalf("gocql: fromJson(?): %v", err)
	}
	if err := session.Query(fmt.Sprintf("SELECT toJson(v) FROM %s.sel WHERE k = 9", keyspace)).Scan(&js); err != nil || js != "6" {
		t.Errorf("gocql: toJson(v) = %q, %v; want 6", js, err)
	}
}
