package schema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// applyChecked applies stmt to whole's state of keyspace ks and checks limits on the change.
func applyChecked(t *testing.T, l schema.Limits, whole *schema.Schema, ks, stmt string, v int64) (*schema.Schema, error) {
	t.Helper()
	st, err := cql.ParseStatement(stmt)
	if err != nil {
		t.Fatal(err)
	}
	base := whole.Restrict(ks)
	next, err := base.Apply(st, "", schema.Change{Version: schema.Version{Timestamp: v, Node: "n"}})
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	if err := l.Check(ks, base, next, whole); err != nil {
		return nil, err
	}
	return whole.Merge(next), nil
}

func columns(n int) string {
	var b strings.Builder
	b.WriteString("k int PRIMARY KEY")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, ", c%d int", i)
	}
	return b.String()
}

func TestLimits(t *testing.T) {
	l := schema.Limits{MaxColumnsPerTable: 10, MaxTablesPerKeyspace: 3}
	s, err := schema.Build("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	if err != nil {
		t.Fatal(err)
	}
	v := int64(10)
	apply := func(stmt string) error {
		t.Helper()
		v++
		next, err := applyChecked(t, l, s, "ks", stmt, v)
		if err == nil {
			s = next
		}
		return err
	}
	if err := apply("CREATE TABLE ks.wide (" + columns(10) + ")"); err != nil {
		t.Errorf("a table of exactly 10 columns: %v", err)
	}
	err = apply("CREATE TABLE ks.wider (" + columns(11) + ")")
	if want := "table ks.wider has 11 columns; the limit is 10 columns per table (max_columns_per_table)"; err == nil || err.Error() != want {
		t.Errorf("a table of 11 columns: %v, want %q", err, want)
	}
	for _, name := range []string{"t2", "t3"} {
		if err := apply("CREATE TABLE ks." + name + " (k int PRIMARY KEY)"); err != nil {
			t.Errorf("table %s of 3: %v", name, err)
		}
	}
	err = apply("CREATE TABLE ks.t4 (k int PRIMARY KEY)")
	if want := "keyspace ks would have 4 tables; the limit is 3 tables per keyspace (max_tables_per_keyspace)"; err == nil || err.Error() != want {
		t.Errorf("a fourth table: %v, want %q", err, want)
	}
	// Changes that do not grow the schema pass, even over a limit.
	if err := apply("ALTER TABLE ks.wide WITH per_partition_rate_limit = {'max_reads_per_second': 5}"); err != nil {
		t.Errorf("ALTER of a table at the column limit: %v", err)
	}
	if err := apply("DROP TABLE ks.t3"); err != nil {
		t.Errorf("DROP TABLE: %v", err)
	}
	if err := apply("CREATE TABLE ks.t4 (k int PRIMARY KEY)"); err != nil {
		t.Errorf("a third table after a drop: %v", err)
	}
	// The schema size: room for one more table, but not for one with long column names.
	if err := apply("DROP TABLE ks.t2"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200)
	l.MaxSchemaSize = len(s.Encode()) + 100
	err = apply("CREATE TABLE ks.big (k int PRIMARY KEY, " + long + "1 int, " + long + "2 int, " + long + "3 int)")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bytes; the limit is %d bytes (max_schema_size)", l.MaxSchemaSize)) {
		t.Errorf("a table that outgrows the schema size: %v, want an error naming max_schema_size", err)
	}
	// Lowered limits never block shrinking.
	l = schema.Limits{MaxColumnsPerTable: 1, MaxTablesPerKeyspace: 1, MaxSchemaSize: 1}
	if err := apply("DROP TABLE ks.wide"); err != nil {
		t.Errorf("DROP under limits the schema is already over: %v", err)
	}
}

func TestLimitsDefaults(t *testing.T) {
	var l schema.Limits
	l.EnsureDefaults()
	if l != (schema.Limits{MaxColumnsPerTable: schema.DefaultMaxColumnsPerTable, MaxTablesPerKeyspace: schema.DefaultMaxTablesPerKeyspace, MaxSchemaSize: schema.DefaultMaxSchemaSize}) {
		t.Errorf("EnsureDefaults on zero Limits = %+v", l)
	}
	if again := l; *again.EnsureDefaults() != l {
		t.Errorf("EnsureDefaults twice = %+v, want once = %+v", again, l)
	}
	set := schema.Limits{MaxColumnsPerTable: 3}
	if set.EnsureDefaults().MaxColumnsPerTable != 3 {
		t.Errorf("EnsureDefaults changed a set field: %+v", set)
	}
	if err := l.Validate(); err != nil {
		t.Errorf("Validate of the defaults: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		l    schema.Limits
		want string
	}{
		{schema.Limits{MaxColumnsPerTable: -1}, "Limits.MaxColumnsPerTable (max_columns_per_table) is -1, want 1 to 2147483647"},
		{schema.Limits{MaxTablesPerKeyspace: -2}, "Limits.MaxTablesPerKeyspace (max_tables_per_keyspace) is -2"},
		{schema.Limits{MaxSchemaSize: 1 << 31}, "Limits.MaxSchemaSize (max_schema_size) is 2147483648"},
	} {
		if err := tc.l.EnsureDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", tc.l, err, tc.want)
		}
	}
}
