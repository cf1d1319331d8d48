package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// executeDDL applies a schema statement cluster wide through the SchemaManager, which agrees
// on it with the cluster (so that concurrent changes to one name have one winner) against the
// cluster's schema rather than this node's copy: there is no dry run here. The manager reports
// a statement that does not fit that schema as an *InvalidError (or an error wrapping one of the
// schema package's sentinel errors); any other error of it is internal, or carries its own gRPC
// status (a majority of the cluster unreachable).
func (e *Executor) executeDDL(ctx context.Context, stmt cql.Statement, keyspace string) (*kvnodepb.ExecuteResponse, error) {
	changed, warnings, err := e.schema.ApplyDDL(ctx, stmt, keyspace)
	var ie *InvalidError
	switch {
	case err == nil:
	case errors.As(err, &ie):
		return nil, invalid(stmt, ie.Err)
	case errors.Is(err, schema.ErrUnknownKeyspace), errors.Is(err, schema.ErrUnknownTable), errors.Is(err, schema.ErrExists):
		return nil, invalid(stmt, err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, err
	default:
		return nil, fmt.Errorf("coordinator: %s: %w", schema.StatementName(stmt), err)
	}
	resp := &kvnodepb.ExecuteResponse{Warnings: warnings}
	if !changed {
		// IF [NOT] EXISTS made the statement a no-op: nothing changed, as in Cassandra.
		resp.Result = &kvnodepb.ExecuteResponse_Void{Void: &kvnodepb.Void{}}
		return resp, nil
	}
	resp.Result = &kvnodepb.ExecuteResponse_SchemaChange{SchemaChange: schemaChange(stmt, keyspace)}
	return resp, nil
}

// schemaChange describes the change a successful schema statement made.
func schemaChange(stmt cql.Statement, keyspace string) *kvnodepb.SchemaChange {
	table := func(tn cql.TableName) *kvnodepb.SchemaChange {
		ks := tn.Keyspace.Name
		if ks == "" {
			ks = keyspace
		}
		return &kvnodepb.SchemaChange{Keyspace: ks, Table: tn.Name.Name}
	}
	var sc *kvnodepb.SchemaChange
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		sc = &kvnodepb.SchemaChange{Change: kvnodepb.SchemaChange_CREATED, Keyspace: st.Name.Name}
	case *cql.DropKeyspaceStmt:
		sc = &kvnodepb.SchemaChange{Change: kvnodepb.SchemaChange_DROPPED, Keyspace: st.Name.Name}
	case *cql.CreateTableStmt:
		sc = table(st.Table)
		sc.Change = kvnodepb.SchemaChange_CREATED
	case *cql.AlterTableStmt:
		sc = table(st.Table)
		sc.Change = kvnodepb.SchemaChange_UPDATED
	case *cql.DropTableStmt:
		sc = table(st.Table)
		sc.Change = kvnodepb.SchemaChange_DROPPED
	}
	return sc
}

// executeUse checks that the keyspace exists and tells the client to use it.
func (e *Executor) executeUse(st *cql.UseStmt) (*kvnodepb.ExecuteResponse, error) {
	name := st.Keyspace.Name
	if _, ok := e.schema.Schema().Keyspace(name); !ok {
		return nil, &InvalidError{Pos: st.Keyspace.Pos(), Err: fmt.Errorf("%w %s", schema.ErrUnknownKeyspace, cql.QuoteIdent(name))}
	}
	return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_SetKeyspace{SetKeyspace: name}}, nil
}

// executeDescribe renders a DESCRIBE from the schema, or from the ClusterDescriber for
// DESCRIBE CLUSTER.
func (e *Executor) executeDescribe(st *cql.DescribeStmt, keyspace string) (*kvnodepb.ExecuteResponse, error) {
	text, err := e.schema.Schema().Describe(st, keyspace)
	if errors.Is(err, schema.ErrDescribeCluster) {
		if e.cluster == nil {
			return nil, &InvalidError{Pos: st.Pos(), Err: errors.New("DESCRIBE CLUSTER is not available on this node")}
		}
		text, err = e.cluster.DescribeCluster(), nil
	}
	if err != nil {
		return nil, invalid(st, err)
	}
	return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Description{Description: text}}, nil
}
