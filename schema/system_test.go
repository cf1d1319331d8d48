package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// TestSystemKeyspacesAreReadOnly checks that writes and schema changes naming a system keyspace say
// that it is read-only (its tables are computed by the node, for SELECT), not merely unknown.
func TestSystemKeyspacesAreReadOnly(t *testing.T) {
	s := New()
	for _, text := range []string{
		"INSERT INTO system.local (key) VALUES ('x')",
		"UPDATE system.peers SET rack = 'x' WHERE peer = 'y'",
		"DELETE FROM system_schema.tables WHERE keyspace_name = 'x'",
		"CREATE TABLE system.mine (k text PRIMARY KEY)",
		"DROP TABLE system_schema.columns",
		"DROP TABLE IF EXISTS system_schema.columns",
		"ALTER TABLE system.local WITH per_partition_rate_limit = {}",
		"DROP KEYSPACE system",
		"DROP KEYSPACE IF EXISTS system_schema",
	} {
		stmts, err := cql.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		switch stmts[0].(type) {
		case *cql.InsertStmt, *cql.UpdateStmt, *cql.DeleteStmt:
			_, err = s.PrepareWrite(stmts[0], "")
		default:
			_, err = s.Apply(stmts[0], "", Change{Version: Version{Timestamp: 1, Node: "n"}})
		}
		if !errors.Is(err, ErrUnknownKeyspace) || !strings.Contains(err.Error(), "system keyspaces are read-only") {
			t.Errorf("%s: error %v, want an unknown keyspace saying system keyspaces are read-only", text, err)
		}
	}
	stmts, _ := cql.Parse("CREATE KEYSPACE system WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	if _, err := s.Apply(stmts[0], "", Change{Version: Version{Timestamp: 1, Node: "n"}}); err == nil || !strings.Contains(err.Error(), "reserved for the system") {
		t.Errorf("CREATE KEYSPACE system: error %v, want the name reserved", err)
	}
}
