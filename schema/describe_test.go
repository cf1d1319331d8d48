package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

func describe(t *testing.T, s *Schema, src, keyspace string) (string, error) {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	return s.Describe(st.(*cql.DescribeStmt), keyspace)
}

func TestDescribe(t *testing.T) {
	s := richSchema(t)
	tests := []struct {
		src, keyspace, want string
	}{
		{"DESCRIBE KEYSPACES", "", "\"Other\"\nks\n"},
		{"DESCRIBE TABLES", "", "\"Other\".kv\nks.all_types\n"},
		{"DESCRIBE TABLES", "ks", "all_types\n"},
		{"DESCRIBE TABLE \"Other\".kv", "", `CREATE TABLE "Other".kv (
    k blob,
    v blob,
    PRIMARY KEY (k)
) WITH per_partition_rate_limit = {'max_writes_per_second': 7}
    AND gc_grace_seconds = 864000
    AND speculative_retry = '99p';
`},
		{"DESCRIBE TABLE all_types", "ks", `CREATE TABLE ks.all_types (
    a text,
    b int,
    c bigint,
    d double,
    "Quoted col" text,
    e boolean,
    f blob,
    g timestamp,
    PRIMARY KEY ((a, b), c, d)
) WITH per_partition_rate_limit = {'max_reads_per_second': 100, 'max_writes_per_second': 50}
    AND gc_grace_seconds = 864000
    AND speculative_retry = '99p';
`},
		{"DESCRIBE KEYSPACE", "Other", `CREATE KEYSPACE "Other" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};

CREATE TABLE "Other".kv (
    k blob,
    v blob,
    PRIMARY KEY (k)
) WITH per_partition_rate_limit = {'max_writes_per_second': 7}
    AND gc_grace_seconds = 864000
    AND speculative_retry = '99p';
`},
	}
	for _, tt := range tests {
		got, err := describe(t, s, tt.src, tt.keyspace)
		if err != nil || got != tt.want {
			t.Errorf("%s (keyspace %q) = %v\n%s\nwant\n%s", tt.src, tt.keyspace, err, got, tt.want)
		}
	}
	errTests := []struct{ src, keyspace, want string }{
		{"DESCRIBE KEYSPACE", "", "no keyspace to describe: USE a keyspace or write DESCRIBE KEYSPACE name"},
		{"DESCRIBE KEYSPACE gone", "", "unknown keyspace gone"},
		{"DESCRIBE TABLE ks.dropped", "", "unknown table ks.dropped"},
		{"DESCRIBE TABLES", "gone", "unknown keyspace gone"},
		{"DESCRIBE TABLE t", "", "no keyspace for table t: USE a keyspace or write keyspace.t"},
	}
	for _, tt := range errTests {
		if _, err := describe(t, s, tt.src, tt.keyspace); err == nil || err.Error() != tt.want {
			t.Errorf("%s (keyspace %q) error = %v, want %q", tt.src, tt.keyspace, err, tt.want)
		}
	}
	if _, err := describe(t, s, "DESCRIBE CLUSTER", ""); !errors.Is(err, ErrDescribeCluster) {
		t.Errorf("DESCRIBE CLUSTER error = %v, want ErrDescribeCluster", err)
	}
	if got, err := describe(t, New(), "DESCRIBE KEYSPACES", ""); got != "" || err != nil {
		t.Errorf("DESCRIBE KEYSPACES of the empty schema = %q, %v; want nothing", got, err)
	}
}

// TestDescribeRecreates runs the output of DESCRIBE KEYSPACE as a script
// and checks it recreates the keyspace and its tables, limits included.
func TestDescribeRecreates(t *testing.T) {
	s := richSchema(t)
	for _, k := range s.Keyspaces() {
		out, err := describe(t, s, "DESCRIBE KEYSPACE "+cql.QuoteIdent(k.Name), "")
		if err != nil {
			t.Fatal(err)
		}
		again, err := Build(out)
		if err != nil {
			t.Fatalf("the output of DESCRIBE KEYSPACE %s does not run: %v\n%s", k.Name, err, out)
		}
		k2, ok := again.Keyspace(k.Name)
		if !ok || k2.ReplicationFactor != k.ReplicationFactor {
			t.Errorf("DESCRIBE KEYSPACE %s recreated keyspace %+v, want RF %d", k.Name, k2, k.ReplicationFactor)
		}
		want, got := s.Tables(k.Name), again.Tables(k.Name)
		if len(got) != len(want) {
			t.Fatalf("DESCRIBE KEYSPACE %s recreated %d tables, want %d", k.Name, len(got), len(want))
		}
		for i := range want {
			if got[i].CreateStatement() != want[i].CreateStatement() || got[i].RateLimit != want[i].RateLimit {
				t.Errorf("table %s recreated as\n%s\nwant\n%s", want[i].QualifiedName(), got[i].CreateStatement(), want[i].CreateStatement())
			}
			for j, c := range want[i].Columns {
				if g := got[i].Columns[j]; g != c {
					t.Errorf("table %s column %d recreated as %+v, want %+v", want[i].QualifiedName(), j, g, c)
				}
			}
		}
	}
}

// TestDescribeSchemaRecreates checks that DESCRIBE SCHEMA, run again, recreates every keyspace
// and table as they were, and that its elements (WITH INTERNALS) are the same statements.
func TestDescribeSchemaRecreates(t *testing.T) {
	s := richSchema(t)
	out, err := describe(t, s, "DESCRIBE SCHEMA", "")
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(out)
	if err != nil {
		t.Fatalf("the output of DESCRIBE SCHEMA does not run: %v\n%s", err, out)
	}
	if len(again.Keyspaces()) != len(s.Keyspaces()) || len(s.Keyspaces()) < 2 {
		t.Fatalf("DESCRIBE SCHEMA recreated %d keyspaces, want %d (at least 2)", len(again.Keyspaces()), len(s.Keyspaces()))
	}
	var joined []string
	for _, k := range s.Keyspaces() {
		want, _ := describe(t, s, "DESCRIBE KEYSPACE "+cql.QuoteIdent(k.Name), "")
		got, _ := describe(t, again, "DESCRIBE KEYSPACE "+cql.QuoteIdent(k.Name), "")
		if got != want {
			t.Errorf("DESCRIBE SCHEMA recreated keyspace %s as\n%s\nwant\n%s", k.Name, got, want)
		}
		joined = append(joined, want)
	}
	if out != strings.Join(joined, "\n") {
		t.Errorf("DESCRIBE SCHEMA is not each keyspace's DESCRIBE KEYSPACE in turn:\n%s", out)
	}
	st, _ := cql.ParseStatement("DESCRIBE SCHEMA WITH INTERNALS")
	els, err := s.DescribeElements(st.(*cql.DescribeStmt), "")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, el := range els {
		stmts = append(stmts, el.CreateStatement)
	}
	if got := strings.Join(stmts, "\n"); strings.ReplaceAll(out, "\n\n", "\n") != got+"\n" {
		t.Errorf("DESCRIBE SCHEMA WITH INTERNALS gives the statements\n%s\nwant those of DESCRIBE SCHEMA\n%s", got, out)
	}
}
