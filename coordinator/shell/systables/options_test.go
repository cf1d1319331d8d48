package systables

import (
	"encoding/binary"
	"math"
	"testing"
)

// Drivers export a table's options from system_schema.tables: each compatibility option is
// the table's, or its default, in the column type drivers expect.
func TestTablesReportCompatOptions(t *testing.T) {
	tb, err := New(fakeSource{sch: mustSchema(t,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.a (k text PRIMARY KEY, v int)",
		"CREATE TABLE ks.b (k text PRIMARY KEY, v int) WITH comment = 'hi' AND bloom_filter_fp_chance = 0.1 AND min_index_interval = 64 AND read_repair = 'NONE' AND compaction = {'class': 'LeveledCompactionStrategy'}",
	)})
	if err != nil {
		t.Fatal(err)
	}
	rows := selectRows(t, tb, "SELECT comment, bloom_filter_fp_chance, min_index_interval, read_repair, cdc FROM system_schema.tables WHERE keyspace_name = 'ks'")
	comment := colValues(t, rows, "comment")
	bloom := colValues(t, rows, "bloom_filter_fp_chance")
	minIdx := colValues(t, rows, "min_index_interval")
	rr := colValues(t, rows, "read_repair")
	cdc := colValues(t, rows, "cdc")
	if len(comment) != 2 {
		t.Fatalf("%d rows, want 2", len(comment))
	}
	double := func(s string) float64 { return math.Float64frombits(binary.BigEndian.Uint64([]byte(s))) }
	integer := func(s string) int32 { return int32(binary.BigEndian.Uint32([]byte(s))) }
	for i, want := range []struct {
		comment string
		bloom   float64
		minIdx  int32
		rr      string
	}{{"", 0.01, 128, "BLOCKING"}, {"hi", 0.1, 64, "NONE"}} {
		if comment[i] != want.comment || double(bloom[i]) != want.bloom || integer(minIdx[i]) != want.minIdx || rr[i] != want.rr || cdc[i] != "\x00" {
			t.Errorf("table %d: comment %q, bloom_filter_fp_chance %v, min_index_interval %d, read_repair %q, cdc %q; want %+v and cdc false",
				i, comment[i], double(bloom[i]), integer(minIdx[i]), rr[i], cdc[i], want)
		}
	}
}
