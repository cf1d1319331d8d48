package shell

import (
	"context"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
)

// SystemTables serves the tables that are not stored but computed (system.local, system.peers,
// system_schema.*: what drivers read). The executor asks it first for every SELECT; ok false
// hands the statement on to the schema's tables. Its methods are called concurrently.
type SystemTables interface {
	// Select answers st when it reads a system table, with values binding its markers.
	Select(ctx context.Context, st *cql.SelectStmt, keyspace string, values []coordinator.Value) (res coordinator.Result, ok bool, err error)
	// Prepare describes st's bind markers and result columns when it reads a system table.
	Prepare(st *cql.SelectStmt, keyspace string) (vars []coordinator.Variable, cols []coordinator.RowColumn, ok bool, err error)
}
