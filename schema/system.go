package schema

import (
	"fmt"

	"github.com/kvnode/kvnode/cql"
)

// SystemTable is a table of a replicated system keyspace: its CREATE TABLE text and its fixed id.
type SystemTable struct {
	// CQL is the table's CREATE TABLE statement, its name unqualified.
	CQL string
	// ID is the table's id, the same on every node and in every version: storage keys carry it.
	// It must not be 0.
	ID TableID
}

// SystemKeyspace returns a schema that holds only the system keyspace name (it must be a system
// name: "system_auth", ...) with replication factor rf and the given tables. Such a keyspace is
// replicated like any other (its tables' rows go to replicas through the ordinary write and read
// paths) but is defined by the code, not by DDL: every node builds the same one, so it is never
// merged, encoded or gossiped, and the cluster's schema (New, Apply, Merge) never holds it.
// Whoever owns it resolves its tables by id beside the cluster's schema (the replicas'
// TableByID) and binds statements to it with the usual methods (BindRead, BindWrite).
func SystemKeyspace(name string, rf int, tables []SystemTable) (*Schema, error) {
	if !isSystemName(name) {
		return nil, fmt.Errorf("schema: keyspace %s is not a system keyspace name (system_*)", cql.QuoteIdent(name))
	}
	if rf < 1 {
		return nil, fmt.Errorf("schema: keyspace %s: replication factor %d, want ≥ 1", name, rf)
	}
	ks := map[string]*Keyspace{name: {Name: name, ReplicationFactor: rf}}
	ts := make(map[tableKey]*Table, len(tables))
	ids := make(map[TableID]bool, len(tables))
	for _, st := range tables {
		stmt, err := cql.ParseStatement(st.CQL)
		if err != nil {
			return nil, fmt.Errorf("schema: keyspace %s: %w", name, err)
		}
		ct, ok := stmt.(*cql.CreateTableStmt)
		if !ok {
			return nil, fmt.Errorf("schema: keyspace %s: %q is not a CREATE TABLE", name, st.CQL)
		}
		if ids[st.ID] {
			return nil, fmt.Errorf("schema: keyspace %s: table id %d is used twice", name, st.ID)
		}
		ids[st.ID] = true
		t, err := NewTable(ct, name, st.ID, Version{})
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		key := tableKey{name, t.Name}
		if ts[key] != nil {
			return nil, fmt.Errorf("schema: keyspace %s: table %s is defined twice", name, t.Name)
		}
		ts[key] = t
	}
	return finish(ks, ts, 0), nil
}
