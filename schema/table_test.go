package schema

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

const ksDDL = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};\n"

// mustBuild builds a schema from DDL or fails the test.
func mustBuild(t *testing.T, src string) *Schema {
	t.Helper()
	s, err := Build(src)
	if err != nil {
		t.Fatalf("Build failed: %v\n%s", err, src)
	}
	return s
}

// apply applies one statement at version (ts, "n1") with table id ts.
func apply(s *Schema, src string, ts int64) (*Schema, error) {
	st, err := cql.ParseStatement(src)
	if err != nil {
		return nil, err
	}
	return s.Apply(st, "ks", Change{Version: Version{Timestamp: ts, Node: "n1"}, TableID: TableID(ts)})
}

func TestNewTableColumns(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (v2 text, c2 int, a int, v1 blob, b text, c1 timestamp, PRIMARY KEY ((a, b), c1, c2))")
	tb, ok := s.Table("ks", "t")
	if !ok {
		t.Fatal("table ks.t is missing after CREATE TABLE")
	}
	names := func(cols []Column) []string {
		var n []string
		for _, c := range cols {
			n = append(n, c.Name)
		}
		return n
	}
	if got, want := names(tb.Columns), []string{"a", "b", "c1", "c2", "v1", "v2"}; !slices.Equal(got, want) {
		t.Errorf("Columns = %v, want %v (key columns in key order, then regular ones by name)", got, want)
	}
	if got, want := names(tb.PartitionKey), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("PartitionKey = %v, want %v", got, want)
	}
	if got, want := names(tb.Clustering), []string{"c1", "c2"}; !slices.Equal(got, want) {
		t.Errorf("Clustering = %v, want %v", got, want)
	}
	if got, want := names(tb.Regular), []string{"v1", "v2"}; !slices.Equal(got, want) {
		t.Errorf("Regular = %v, want %v", got, want)
	}
	for i, c := range tb.Columns {
		if c.Index != i {
			t.Errorf("column %s has Index %d, want %d", c.Name, c.Index, i)
		}
		if got, ok := tb.Column(c.Name); !ok || got != &tb.Columns[i] {
			t.Errorf("Column(%q) does not return &Columns[%d]", c.Name, i)
		}
	}
	c, _ := tb.Column("c1")
	if c.Type != TypeTimestamp || c.Kind != ClusteringColumn {
		t.Errorf("column c1 = %v %v, want timestamp clustering", c.Type, c.Kind)
	}
	if _, ok := tb.Column("nope"); ok {
		t.Errorf("Column(\"nope\") found a column")
	}
	if tb.ID != 2 || tb.Version != (Version{Timestamp: 2}) || tb.KeyspaceVersion != (Version{Timestamp: 1}) {
		t.Errorf("table id %d, version %v, keyspace version %v; want 2, 2@, 1@", tb.ID, tb.Version, tb.KeyspaceVersion)
	}
}

func TestNewTableErrors(t *testing.T) {
	tests := []struct{ ddl, want string }{
		{"CREATE TABLE t (a int PRIMARY KEY, a text)", "table ks.t: column a is defined twice"},
		{"CREATE TABLE t (m map<text, int> PRIMARY KEY)", `table ks.t: invalid non-frozen collection type map<text, int> for PRIMARY KEY component m`},
		{"CREATE TABLE t (a int PRIMARY KEY, f counter, g int)", `table ks.t: Cannot mix counter and non counter columns in the same table`},
		{"CREATE TABLE t (a int, s list<text>, PRIMARY KEY (a, s))", `table ks.t: invalid non-frozen collection type list<text> for PRIMARY KEY component s`},
		{"CREATE TABLE t (a int PRIMARY KEY, s map<text, set<int>>)", `table ks.t: column s: type "map<text, set<int>>": non-frozen collections are not allowed inside collections (use frozen<...>): "map<text, set<int>>"`},
		{"CREATE TABLE t (a int, b int)", "table ks.t: no PRIMARY KEY is declared"},
		{"CREATE TABLE t (a int PRIMARY KEY, b int PRIMARY KEY)", "table ks.t: columns a and b are both declared PRIMARY KEY; declare a composite key as PRIMARY KEY ((a, b))"},
		{"CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))", "table ks.t: the primary key is declared twice: inline on column a and in a PRIMARY KEY clause"},
		{"CREATE TABLE t (a int, PRIMARY KEY (x))", "table ks.t: PRIMARY KEY names column x, which is not defined"},
		{"CREATE TABLE t (a int, b int, PRIMARY KEY ((a, b), y))", "table ks.t: PRIMARY KEY names column y, which is not defined"},
		{"CREATE TABLE t (a int, b int, PRIMARY KEY (a, a))", "table ks.t: column a appears twice in the PRIMARY KEY"},
		{"CREATE TABLE t (PRIMARY KEY (a))", "table ks.t: no columns are defined"},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH frobnicate = 'x'", "table ks.t: unknown table option frobnicate (supported: per_partition_rate_limit, gc_grace_seconds, speculative_retry, default_time_to_live, and for compatibility, without effect: additional_write_policy, bloom_filter_fp_chance, caching, cdc, comment, compaction, compression, crc_check_chance, dclocal_read_repair_chance, max_index_interval, memtable, memtable_flush_period_in_ms, min_index_interval, read_repair, read_repair_chance)"},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH per_partition_rate_limit = {} AND per_partition_rate_limit = {}", "table ks.t: option per_partition_rate_limit is given twice"},
		{"CREATE TABLE \"t-1\" (a int PRIMARY KEY)", `table name "t-1" may contain only letters, digits and underscores`},
		{"CREATE TABLE " + strings.Repeat("x", 49) + " (a int PRIMARY KEY)", "table name " + strings.Repeat("x", 49) + " is 49 characters long; the maximum is 48"},
		{"CREATE TABLE nope.t (a int PRIMARY KEY)", "unknown keyspace nope"},
		{"CREATE TABLE t (\"\"\"\" int PRIMARY KEY)", ""},
	}
	s := mustBuild(t, ksDDL)
	for _, tt := range tests {
		_, err := apply(s, tt.ddl, 10)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s\n  gave error %q\n  want %q", tt.ddl, got, tt.want)
		}
	}
	st, _ := cql.ParseStatement("CREATE TABLE t (a int PRIMARY KEY)")
	if _, err := NewTable(st.(*cql.CreateTableStmt), "ks", 0, Version{}); err == nil || err.Error() != "table ks.t: table id 0 is not valid" {
		t.Errorf("NewTable with id 0: error %v, want it rejected", err)
	}
}

// rateLimitCases are the per_partition_rate_limit values the option accepts.
var rateLimitCases = []struct {
	value string
	want  RateLimit
}{
	{"{}", RateLimit{}},
	{"{'max_reads_per_second': 100}", RateLimit{MaxReadsPerSecond: 100}},
	{"{'max_writes_per_second': 7}", RateLimit{MaxWritesPerSecond: 7}},
	{"{'max_reads_per_second': 1, 'max_writes_per_second': 2147483647}", RateLimit{MaxReadsPerSecond: 1, MaxWritesPerSecond: 2147483647}},
	{"{'max_writes_per_second': '50', 'max_reads_per_second': '0010'}", RateLimit{MaxReadsPerSecond: 10, MaxWritesPerSecond: 50}},
	{"{'max_reads_per_second': '+5'}", RateLimit{MaxReadsPerSecond: 5}},
	{"{'max_writes_per_second': 50, 'mode': 'shadow'}", RateLimit{MaxWritesPerSecond: 50, Mode: Shadow}},
	{"{'mode': 'enforce', 'max_reads_per_second': 9}", RateLimit{MaxReadsPerSecond: 9}},
	{"{'mode': 'shadow'}", RateLimit{Mode: Shadow}},
}

// rateLimitErrors are the values it rejects, each with its own message that
// names the key and the value.
var rateLimitErrors = []struct{ value, want string }{
	// not a map
	{"5", "per_partition_rate_limit = 5 is not a map; write per_partition_rate_limit = {'max_reads_per_second': N, 'max_writes_per_second': M}, leaving out a key for no limit"},
	{"'{}'", "per_partition_rate_limit = '{}' is not a map; write per_partition_rate_limit = {'max_reads_per_second': N, 'max_writes_per_second': M}, leaving out a key for no limit"},
	// unknown key
	{"{'max_read_per_second': 10}", "per_partition_rate_limit: unknown key 'max_read_per_second' (with value 10); valid keys are 'max_reads_per_second', 'max_writes_per_second' and 'mode'"},
	{"{'MAX_READS_PER_SECOND': 10}", "per_partition_rate_limit: unknown key 'MAX_READS_PER_SECOND' (with value 10); valid keys are 'max_reads_per_second', 'max_writes_per_second' and 'mode'"},
	{"{1: 10}", "per_partition_rate_limit: key 1 (with value 10) is not a string; valid keys are 'max_reads_per_second', 'max_writes_per_second' and 'mode'"},
	// a mode other than 'enforce' and 'shadow'
	{"{'max_writes_per_second': 50, 'mode': 'dry-run'}", "per_partition_rate_limit: 'mode' = 'dry-run' is not a mode; write 'enforce' (reject over the limit, the default) or 'shadow' (count and report, never reject)"},
	{"{'mode': 'SHADOW'}", "per_partition_rate_limit: 'mode' = 'SHADOW' is not a mode; write 'enforce' (reject over the limit, the default) or 'shadow' (count and report, never reject)"},
	{"{'mode': 1}", "per_partition_rate_limit: 'mode' = 1 is not a mode; write 'enforce' (reject over the limit, the default) or 'shadow' (count and report, never reject)"},
	{"{'mode': ''}", "per_partition_rate_limit: 'mode' = '' is not a mode; write 'enforce' (reject over the limit, the default) or 'shadow' (count and report, never reject)"},
	{"{'mode': 'shadow', 'mode': 'enforce'}", "per_partition_rate_limit: key 'mode' is given twice (values 'shadow' and 'enforce')"},
	// duplicated key
	{"{'max_reads_per_second': 10, 'max_reads_per_second': 20}", "per_partition_rate_limit: key 'max_reads_per_second' is given twice (values 10 and 20)"},
	// negative
	{"{'max_reads_per_second': -5}", "per_partition_rate_limit: 'max_reads_per_second' = -5 is negative; a limit is a positive integer (leave the key out for no limit)"},
	{"{'max_writes_per_second': '-5'}", "per_partition_rate_limit: 'max_writes_per_second' = '-5' is negative; a limit is a positive integer (leave the key out for no limit)"},
	{"{'max_writes_per_second': -99999999999999999999}", "per_partition_rate_limit: 'max_writes_per_second' = -99999999999999999999 is negative; a limit is a positive integer (leave the key out for no limit)"},
	// zero
	{"{'max_reads_per_second': 0}", "per_partition_rate_limit: 'max_reads_per_second' = 0 is zero; a limit is a positive integer (leave the key out for no limit)"},
	{"{'max_writes_per_second': '000'}", "per_partition_rate_limit: 'max_writes_per_second' = '000' is zero; a limit is a positive integer (leave the key out for no limit)"},
	{"{'max_writes_per_second': -0}", "per_partition_rate_limit: 'max_writes_per_second' = -0 is zero; a limit is a positive integer (leave the key out for no limit)"},
	// float
	{"{'max_reads_per_second': 10.5}", "per_partition_rate_limit: 'max_reads_per_second' = 10.5 is not an integer"},
	{"{'max_reads_per_second': 1e3}", "per_partition_rate_limit: 'max_reads_per_second' = 1e3 is not an integer"},
	{"{'max_reads_per_second': '10.0'}", "per_partition_rate_limit: 'max_reads_per_second' = '10.0' is not an integer"},
	{"{'max_reads_per_second': Infinity}", "per_partition_rate_limit: 'max_reads_per_second' = Infinity is not an integer"},
	// non-numeric
	{"{'max_reads_per_second': 'abc'}", "per_partition_rate_limit: 'max_reads_per_second' = 'abc' is not a number"},
	{"{'max_reads_per_second': ''}", "per_partition_rate_limit: 'max_reads_per_second' = '' is not a number"},
	{"{'max_reads_per_second': ' 10'}", "per_partition_rate_limit: 'max_reads_per_second' = ' 10' is not a number"},
	{"{'max_reads_per_second': true}", "per_partition_rate_limit: 'max_reads_per_second' = true is not a number"},
	{"{'max_reads_per_second': NULL}", "per_partition_rate_limit: 'max_reads_per_second' = NULL is not a number"},
	{"{'max_reads_per_second': 0x10}", "per_partition_rate_limit: 'max_reads_per_second' = 0x10 is not a number"},
	{"{'max_reads_per_second': {}}", "per_partition_rate_limit: 'max_reads_per_second' = {} is not a number"},
	{"{'max_reads_per_second': ?}", "per_partition_rate_limit: 'max_reads_per_second' = ?: bind markers cannot be used in schema statements"},
	// trailing garbage
	{"{'max_reads_per_second': '10abc'}", `per_partition_rate_limit: 'max_reads_per_second' = '10abc' has the characters "abc" after the number 10; write only digits`},
	{"{'max_writes_per_second': '10 '}", `per_partition_rate_limit: 'max_writes_per_second' = '10 ' has the character " " after the number 10; write only digits`},
	{"{'max_writes_per_second': '0x10'}", `per_partition_rate_limit: 'max_writes_per_second' = '0x10' has the characters "x10" after the number 0; write only digits`},
	// above 2^31-1
	{"{'max_reads_per_second': 2147483648}", "per_partition_rate_limit: 'max_reads_per_second' = 2147483648 is too large; the maximum is 2147483647"},
	{"{'max_writes_per_second': '4294967296'}", "per_partition_rate_limit: 'max_writes_per_second' = '4294967296' is too large; the maximum is 2147483647"},
	{"{'max_writes_per_second': 99999999999999999999999}", "per_partition_rate_limit: 'max_writes_per_second' = 99999999999999999999999 is too large; the maximum is 2147483647"},
}

func TestParseRateLimit(t *testing.T) {
	for _, tt := range rateLimitCases {
		got, err := ParseRateLimit(term(t, tt.value))
		if err != nil || got != tt.want {
			t.Errorf("ParseRateLimit(%s) = %+v, %v; want %+v", tt.value, got, err, tt.want)
		}
	}
	for _, tt := range rateLimitErrors {
		got, err := ParseRateLimit(term(t, tt.value))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseRateLimit(%s) error = %v\n  want %q", tt.value, err, tt.want)
		}
		if got != (RateLimit{}) {
			t.Errorf("ParseRateLimit(%s) returned %+v with its error, want the zero RateLimit", tt.value, got)
		}
	}
}

func TestRateLimitOnCreateAndAlter(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY) WITH per_partition_rate_limit = {'max_reads_per_second': 100, 'max_writes_per_second': 50}")
	steps := []struct {
		alter string
		want  RateLimit
	}{
		// ALTER replaces the whole map: a key it leaves out loses its limit.
		{"{'max_writes_per_second': 20}", RateLimit{MaxWritesPerSecond: 20}},
		{"{'max_reads_per_second': '30', 'max_writes_per_second': 40}", RateLimit{MaxReadsPerSecond: 30, MaxWritesPerSecond: 40}},
		{"{}", RateLimit{}},
		{"{'max_reads_per_second': 1}", RateLimit{MaxReadsPerSecond: 1}},
		// Switching the mode: ALTER replaces the mode with the map, like the limits.
		{"{'max_reads_per_second': 1, 'mode': 'shadow'}", RateLimit{MaxReadsPerSecond: 1, Mode: Shadow}},
		{"{'max_reads_per_second': 1}", RateLimit{MaxReadsPerSecond: 1}},
	}
	tb, _ := s.Table("ks", "t")
	if tb.RateLimit != (RateLimit{MaxReadsPerSecond: 100, MaxWritesPerSecond: 50}) {
		t.Fatalf("CREATE TABLE set %+v, want {100 50}", tb.RateLimit)
	}
	for i, step := range steps {
		old := s
		var err error
		s, err = apply(s, "ALTER TABLE t WITH per_partition_rate_limit = "+step.alter, int64(10+i))
		if err != nil {
			t.Fatalf("ALTER to %s failed: %v", step.alter, err)
		}
		got, _ := s.Table("ks", "t")
		if got.RateLimit != step.want {
			t.Errorf("after ALTER ... = %s the limit is %+v, want %+v", step.alter, got.RateLimit, step.want)
		}
		if byID, _ := s.TableByID(got.ID); byID != got {
			t.Errorf("TableByID(%d) does not return the altered table", got.ID)
		}
		if got.ID != tb.ID {
			t.Errorf("ALTER changed the table id from %d to %d", tb.ID, got.ID)
		}
		if got.Version.Compare(tb.Version) <= 0 {
			t.Errorf("ALTER did not advance the version: %v after %v", got.Version, tb.Version)
		}
		if prev, _ := old.Table("ks", "t"); prev == got {
			t.Errorf("ALTER modified the previous schema value in place")
		}
		tb = got
	}
	for _, tt := range rateLimitErrors {
		_, err := apply(s, "ALTER TABLE t WITH per_partition_rate_limit = "+tt.value, 100)
		if want := "table ks.t: " + tt.want; err == nil || err.Error() != want {
			t.Errorf("ALTER TABLE t WITH per_partition_rate_limit = %s\n  error %v\n  want %q", tt.value, err, want)
		}
	}
	if _, err := apply(s, "ALTER TABLE t WITH frobnicate = 'x'", 100); err == nil || err.Error() != "table ks.t: unknown table option frobnicate (supported: per_partition_rate_limit, gc_grace_seconds, speculative_retry, default_time_to_live, and for compatibility, without effect: additional_write_policy, bloom_filter_fp_chance, caching, cdc, comment, compaction, compression, crc_check_chance, dclocal_read_repair_chance, max_index_interval, memtable, memtable_flush_period_in_ms, min_index_interval, read_repair, read_repair_chance)" {
		t.Errorf("ALTER with an unknown option: error %v", err)
	}
	if _, err := apply(s, "ALTER TABLE nope WITH per_partition_rate_limit = {}", 100); !errors.Is(err, ErrUnknownTable) || err.Error() != "unknown table ks.nope" {
		t.Errorf("ALTER of a missing table: error %v, want unknown table ks.nope", err)
	}
}

func TestRateLimitString(t *testing.T) {
	for _, tt := range rateLimitCases {
		got := tt.want.String()
		back, err := ParseRateLimit(term(t, got))
		if err != nil || back != tt.want {
			t.Errorf("RateLimit%+v.String() = %s, which parses to %+v, %v", tt.want, got, back, err)
		}
	}
}

func TestKeyspaceOptions(t *testing.T) {
	tests := []struct{ ddl, want string }{
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '2'} AND durable_writes = true", ""},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': 1}", ""},
		{"CREATE KEYSPACE k2 WITH durable_writes = true", "keyspace k2: the replication option is missing; write WITH replication = {'class': 'SimpleStrategy', 'replication_factor': N}"},
		{"CREATE KEYSPACE k2 WITH replication = 3", "keyspace k2: replication = 3 is not a map; write replication = {'class': 'SimpleStrategy', 'replication_factor': N}"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'OldNetworkTopologyStrategy', 'dc1': 3}", "keyspace k2: replication: class 'OldNetworkTopologyStrategy' is not supported (supported: 'SimpleStrategy', 'NetworkTopologyStrategy')"},
		{"CREATE KEYSPACE k2 WITH replication = {'replication_factor': 3}", "keyspace k2: replication: 'class' is missing; write 'class': 'SimpleStrategy' or 'NetworkTopologyStrategy'"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 0}", "keyspace k2: replication: NetworkTopologyStrategy places no replica; give at least one data center a replication factor"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': -1}", "keyspace k2: replication: 'dc1' = -1 is negative; a replication factor is a non-negative integer"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc 1': 1}", "keyspace k2: replication: data center name 'dc 1' has byte 0x20 at offset 2; allowed are printable ASCII characters other than space, quotes and backslash"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}", "keyspace k2: replication: 'replication_factor' for NetworkTopologyStrategy gives every data center of the cluster that factor, and this node does not know them yet; name the data centers"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy'}", "keyspace k2: replication: 'replication_factor' is missing"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 0}", "keyspace k2: replication: 'replication_factor' = 0 is zero; the replication factor is a positive integer"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '3x'}", `keyspace k2: replication: 'replication_factor' = '3x' has the character "x" after the number 3; write only digits`},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3, 'rf': 1}", "keyspace k2: replication: unknown key 'rf' for SimpleStrategy; valid keys are 'class' and 'replication_factor'"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'class': 'SimpleStrategy'}", "keyspace k2: replication: key 'class' is given twice"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3} AND durable_writes = false", "keyspace k2: durable_writes = false is not supported: writes are always durable"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3} AND replication = {}", "keyspace k2: option replication is given twice"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3} AND x = 1", "keyspace k2: unknown keyspace option x (supported: replication, durable_writes, rate_limit)"},
		{"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", "keyspace ks already exists"},
		{"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 5}", ""},
		{"CREATE KEYSPACE system WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", "keyspace name system is reserved for the system"},
		{"CREATE KEYSPACE \"System_Auth\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", `keyspace name "System_Auth" is reserved for the system`},
		{"CREATE KEYSPACE systems WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", ""},
		{"CREATE KEYSPACE \"a b\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", `keyspace name "a b" may contain only letters, digits and underscores`},
	}
	s := mustBuild(t, ksDDL)
	for _, tt := range tests {
		_, err := apply(s, tt.ddl, 10)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s\n  gave error %q\n  want %q", tt.ddl, got, tt.want)
		}
	}
}
