package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// executeDDL applies a schema statement cluster wide through the SchemaManager, which agrees
// on it with the cluster (so that concurrent changes to one name have one winner) against the
// cluster's schema rather than this node's copy: there is no dry run here. The manager reports
// a statement that does not fit that schema as an *InvalidError (or an error wrapping one of the
// schema package's sentinel errors); any other error of it is internal, or one the front ends
// know how to render (a majority of the cluster unreachable).
func (e *Executor) executeDDL(ctx context.Context, stmt cql.Statement, keyspace string) (Result, error) {
	changed, warnings, err := e.schema.ApplyDDL(ctx, stmt, keyspace)
	var ie *InvalidError
	switch {
	case err == nil:
	case errors.As(err, &ie):
		return Result{}, invalid(stmt, ie.Err)
	case errors.Is(err, schema.ErrUnknownKeyspace), errors.Is(err, schema.ErrUnknownTable), errors.Is(err, schema.ErrExists):
		return Result{}, invalid(stmt, err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return Result{}, err
	default:
		return Result{}, fmt.Errorf("coordinator: %s: %w", schema.StatementName(stmt), err)
	}
	if !changed {
		// IF [NOT] EXISTS made the statement a no-op: nothing changed, as in Cassandra.
		return Result{Kind: ResultVoid, Warnings: warnings}, nil
	}
	return Result{Kind: ResultSchemaChange, SchemaChange: schemaChange(stmt, keyspace), Warnings: warnings}, nil
}

// schemaChange describes the change a successful schema statement made.
func schemaChange(stmt cql.Statement, keyspace string) SchemaChange {
	table := func(change SchemaChangeKind, tn cql.TableName) SchemaChange {
		ks := tn.Keyspace.Name
		if ks == "" {
			ks = keyspace
		}
		return SchemaChange{Change: change, Target: TargetTable, Keyspace: ks, Table: tn.Name.Name}
	}
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return SchemaChange{Change: Created, Target: TargetKeyspace, Keyspace: st.Name.Name}
	case *cql.DropKeyspaceStmt:
		return SchemaChange{Change: Dropped, Target: TargetKeyspace, Keyspace: st.Name.Name}
	case *cql.CreateTableStmt:
		return table(Created, st.Table)
	case *cql.AlterTableStmt:
		return table(Updated, st.Table)
	case *cql.DropTableStmt:
		return table(Dropped, st.Table)
	}
	return SchemaChange{}
}

// executeUse checks that the keyspace exists and tells the client to use it.
func (e *Executor) executeUse(st *cql.UseStmt) (Result, error) {
	name := st.Keyspace.Name
	if _, ok := e.schema.Schema().Keyspace(name); !ok {
		return Result{}, &InvalidError{Pos: st.Keyspace.Pos(), Err: fmt.Errorf("%w %s", schema.ErrUnknownKeyspace, cql.QuoteIdent(name))}
	}
	return Result{Kind: ResultSetKeyspace, Keyspace: name}, nil
}

// executeDescribe renders a DESCRIBE from the schema, or from the ClusterDescriber for
// DESCRIBE CLUSTER.
func (e *Executor) executeDescribe(st *cql.DescribeStmt, keyspace string) (Result, error) {
	text, err := e.schema.Schema().Describe(st, keyspace)
	if errors.Is(err, schema.ErrDescribeCluster) {
		if e.cluster == nil {
			return Result{}, &InvalidError{Pos: st.Pos(), Err: errors.New("DESCRIBE CLUSTER is not available on this node")}
		}
		text, err = e.cluster.DescribeCluster(), nil
	}
	if err != nil {
		return Result{}, invalid(st, err)
	}
	return Result{Kind: ResultDescription, Description: text}, nil
}
