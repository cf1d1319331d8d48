package systables

import "testing"

// Drivers and tools read a table's speculative_retry from system_schema.tables: it is the
// table's, in the form Cassandra 4.1 writes it.
func TestTablesReportSpeculativeRetry(t *testing.T) {
	tb, err := New(fakeSource{sch: mustSchema(t,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.a (k text PRIMARY KEY, v int)",
		"CREATE TABLE ks.b (k text PRIMARY KEY, v int) WITH speculative_retry = '95PERCENTILE'",
		"CREATE TABLE ks.c (k text PRIMARY KEY, v int) WITH speculative_retry = '20MS'",
		"CREATE TABLE ks.d (k text PRIMARY KEY, v int) WITH speculative_retry = 'always'",
		"CREATE TABLE ks.e (k text PRIMARY KEY, v int) WITH speculative_retry = 'none'",
	)})
	if err != nil {
		t.Fatal(err)
	}
	rows := selectRows(t, tb, "SELECT speculative_retry FROM system_schema.tables WHERE keyspace_name = 'ks'")
	got := colValues(t, rows, "speculative_retry")
	want := []string{"99p", "95p", "20ms", "ALWAYS", "NONE"}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("table %d: speculative_retry %q, want %q", i, got[i], want[i])
		}
	}
	sys := colValues(t, selectRows(t, tb, "SELECT speculative_retry FROM system_schema.tables WHERE keyspace_name = 'system'"), "speculative_retry")
	if len(sys) == 0 || sys[0] != "99p" {
		t.Errorf("system tables report speculative_retry %q, want 99p", sys)
	}
}
