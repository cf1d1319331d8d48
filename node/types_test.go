package node_test

import (
	"fmt"
	"math/big"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

// TestEveryColumnTypeThroughTheClientAPI writes a value of every column type as a literal, reads
// it back through the gRPC client API, and checks that clustering columns of the new types
// order rows as Cassandra does, ascending and descending.
func TestEveryColumnTypeThroughTheClientAPI(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(0)
	exec(t, c, client.One, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.One, `CREATE TABLE ks.every (k int PRIMARY KEY, a ascii, f float, s smallint, y tinyint,
		u uuid, tu timeuuid, ip inet, d date, tm time, dec decimal, v varchar, vi varint)`)
	exec(t, c, client.One, `INSERT INTO ks.every (k, a, f, s, y, u, tu, ip, d, tm, dec, v, vi) VALUES (1, 'abc', 1.5,
		-32768, 127, 123e4567-e89b-42d3-a456-426614174000, 6ba7b810-9dad-11d1-80b4-00c04fd430c8, '2001:db8::1',
		'2024-02-29', '08:12:54.123456789', -1.50, 'x', 123456789012345678901234567890)`)
	res := exec(t, c, client.One, "SELECT a, f, s, y, u, tu, ip, d, tm, dec, v, vi FROM ks.every WHERE k = 1")
	vi, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	u, _ := client.ParseUUID("123e4567-e89b-42d3-a456-426614174000")
	tu, _ := client.ParseUUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	want := []any{"abc", float32(1.5), int16(-32768), int8(127), u, tu, netip.MustParseAddr("2001:db8::1"),
		client.Date(19782), 8*time.Hour + 12*time.Minute + 54*time.Second + 123456789,
		client.Decimal{Unscaled: big.NewInt(-150), Scale: 2}, "x", vi}
	wantTypes := []string{"ascii", "float", "smallint", "tinyint", "uuid", "timeuuid", "inet", "date", "time", "decimal", "text", "varint"}
	if len(res.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(res.Rows))
	}
	for i, w := range want {
		if !reflect.DeepEqual(res.Rows[0][i], w) || res.Columns[i].Type != wantTypes[i] {
			t.Errorf("column %s (%s) read back as %#v, want %s %#v", res.Columns[i].Name, res.Columns[i].Type, res.Rows[0][i], wantTypes[i], w)
		}
	}

	// Clustering order, one table per type: values inserted shuffled come back in order.
	orders := []struct {
		typ    string
		sorted []string // ascending, as literals
	}{
		{"tinyint", []string{"-128", "-1", "0", "127"}},
		{"smallint", []string{"-32768", "-1", "0", "32767"}},
		{"float", []string{"-Infinity", "-1.5", "0", "2.5", "Infinity"}},
		{"date", []string{"'1969-12-31'", "'1970-01-01'", "'2024-02-29'"}},
		{"time", []string{"'00:00:00'", "'00:00:00.000000001'", "'23:59:59.999999999'"}},
		{"inet", []string{"'::1'", "'1.2.3.4'", "'10.0.0.1'", "'fe80::1'"}},
		{"varint", []string{"-100000000000000000000", "-129", "-1", "0", "255", "100000000000000000000"}},
		{"decimal", []string{"-1e10", "-1.5", "0", "0.001", "1", "1.0000001", "12e3"}},
		{"uuid", []string{"ffffffff-0000-1000-8000-000000000000", "00000000-0001-1000-8000-000000000000", "00000000-0000-4000-8000-000000000000", "00000001-0000-4000-8000-000000000000"}},
		{"timeuuid", []string{"ffffffff-0000-1000-8000-000000000000", "00000000-0001-1000-8000-000000000000", "00000000-0001-1000-0000-000000000000", "00000000-0000-1001-8000-000000000000"}},
		{"ascii", []string{"''", "'A'", "'a'", "'ab'"}},
	}
	for i, o := range orders {
		for _, dir := range []string{"ASC", "DESC"} {
			table := fmt.Sprintf("ks.o%d_%s", i, dir)
			exec(t, c, client.One, fmt.Sprintf("CREATE TABLE %s (k int, c %s, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c %s)", table, o.typ, dir))
			for j := len(o.sorted) - 1; j >= 0; j-- {
				exec(t, c, client.One, fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES (0, %s, %d)", table, o.sorted[j], j))
			}
			res := exec(t, c, client.One, fmt.Sprintf("SELECT v FROM %s WHERE k = 0", table))
			var got []int32
			for _, r := range res.Rows {
				got = append(got, r[0].(int32))
			}
			var want []int32
			for j := range o.sorted {
				if dir == "ASC" {
					want = append(want, int32(j))
				} else {
					want = append(want, int32(len(o.sorted)-1-j))
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s clustering %s: rows came back in order %v, want %v", o.typ, dir, got, want)
			}
		}
	}

	// Equal decimals of different scales are one clustering key, as in Cassandra.
	exec(t, c, client.One, "CREATE TABLE ks.dec (k int, c decimal, v int, PRIMARY KEY (k, c))")
	exec(t, c, client.One, "INSERT INTO ks.dec (k, c, v) VALUES (0, 1.0, 1)")
	exec(t, c, client.One, "INSERT INTO ks.dec (k, c, v) VALUES (0, 1.00, 2)")
	res = exec(t, c, client.One, "SELECT c, v FROM ks.dec WHERE k = 0 AND c = 1")
	if len(res.Rows) != 1 || res.Rows[0][1] != int32(2) || res.Rows[0][0].(client.Decimal).String() != "1" {
		t.Errorf("decimal clustering 1.0 then 1.00: rows %v, want one row (1, 2)", res.Rows)
	}
}
