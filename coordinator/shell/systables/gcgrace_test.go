package systables

import (
	"encoding/binary"
	"testing"
)

// Drivers read a table's gc_grace_seconds from system_schema.tables: it is the table's.
func TestTablesReportGCGraceSeconds(t *testing.T) {
	tb, err := New(fakeSource{sch: mustSchema(t,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.a (k text PRIMARY KEY, v int)",
		"CREATE TABLE ks.b (k text PRIMARY KEY, v int) WITH gc_grace_seconds = 3600",
	)})
	if err != nil {
		t.Fatal(err)
	}
	rows := selectRows(t, tb, "SELECT gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = 'ks'")
	got := colValues(t, rows, "gc_grace_seconds")
	if len(got) != 2 {
		t.Fatalf("%d rows, want 2", len(got))
	}
	for i, want := range []uint32{864000, 3600} {
		if v := binary.BigEndian.Uint32([]byte(got[i])); v != want {
			t.Errorf("table %d: gc_grace_seconds %d, want %d", i, v, want)
		}
	}
}
