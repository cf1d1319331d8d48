package shell

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// executeDDL applies a schema statement cluster wide through the SchemaManager, which agrees
// on it with the cluster (so that concurrent changes to one name have one winner) against the
// cluster's schema rather than this node's copy: there is no dry run here. The manager reports
// a statement that does not fit that schema as an *InvalidError (or an error wrapping one of the
// schema package's sentinel errors); any other error of it is internal, or one the front ends
// know how to render (a majority of the cluster unreachable).
func (e *Executor) executeDDL(ctx context.Context, stmt cql.Statement, keyspace string) (coordinator.Result, error) {
	if st, ok := stmt.(*cql.DropIndexStmt); ok {
		// The statement names the index only; the catalog agrees on its table's entry.
		resolved := *st
		e.schema.Schema().ResolveDropIndex(&resolved, keyspace)
		if resolved.Table.Name.Name == "" && st.IfExists {
			return coordinator.Result{Kind: coordinator.ResultVoid}, nil // no such index: a no-op
		}
		stmt = &resolved
	}
	rfBefore := 0
	if st, ok := stmt.(*cql.AlterKeyspaceStmt); ok {
		if k, ok := e.schema.Schema().Keyspace(st.Name.Name); ok {
			rfBefore = k.ReplicationFactor
		}
	}
	changed, warnings, err := e.schema.ApplyDDL(ctx, stmt, keyspace)
	var ie *coordinator.InvalidError
	switch {
	case err == nil:
	case errors.As(err, &ie):
		return coordinator.Result{}, invalid(stmt, ie.Err)
	case errors.Is(err, schema.ErrUnknownKeyspace), errors.Is(err, schema.ErrUnknownTable), errors.Is(err, schema.ErrExists):
		return coordinator.Result{}, invalid(stmt, err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return coordinator.Result{}, err
	default:
		return coordinator.Result{}, fmt.Errorf("coordinator: %s: %w", schema.StatementName(stmt), err)
	}
	if _, truncate := stmt.(*cql.TruncateStmt); !changed || truncate {
		// IF [NOT] EXISTS made the statement a no-op: nothing changed, as in Cassandra. A
		// TRUNCATE answers Void too, as in Cassandra: the schema's record of it is internal.
		return coordinator.Result{Kind: coordinator.ResultVoid, Warnings: warnings}, nil
	}
	if st, ok := stmt.(*cql.AlterKeyspaceStmt); ok {
		if k, ok := e.schema.Schema().Keyspace(st.Name.Name); ok && rfBefore > 0 && k.ReplicationFactor > rfBefore {
			// Cassandra 4.1's warning, with kvnode's repair: the new replicas have none of the
			// data written before.
			warnings = append(warnings, fmt.Sprintf("When increasing replication factor you need to run a repair (kvnode repair on every node, or wait for the automatic repair) to distribute the data: until then the new replicas of keyspace %s lack the rows written before, and reads at ONE or QUORUM may miss them (docs/operations.md, Changing replication)", cql.QuoteIdent(st.Name.Name)))
		}
	}
	return coordinator.Result{Kind: coordinator.ResultSchemaChange, SchemaChange: schemaChange(stmt, keyspace), Warnings: warnings}, nil
}

// schemaChange describes the change a successful schema statement made.
func schemaChange(stmt cql.Statement, keyspace string) coordinator.SchemaChange {
	table := func(change coordinator.SchemaChangeKind, tn cql.TableName) coordinator.SchemaChange {
		ks := tn.Keyspace.Name
		if ks == "" {
			ks = keyspace
		}
		return coordinator.SchemaChange{Change: change, Target: coordinator.TargetTable, Keyspace: ks, Table: tn.Name.Name}
	}
	userType := func(change coordinator.SchemaChangeKind, tn cql.TableName) coordinator.SchemaChange {
		sc := table(change, tn)
		sc.Target = coordinator.TargetType
		return sc
	}
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return coordinator.SchemaChange{Change: coordinator.Created, Target: coordinator.TargetKeyspace, Keyspace: st.Name.Name}
	case *cql.AlterKeyspaceStmt:
		return coordinator.SchemaChange{Change: coordinator.Updated, Target: coordinator.TargetKeyspace, Keyspace: st.Name.Name}
	case *cql.DropKeyspaceStmt:
		return coordinator.SchemaChange{Change: coordinator.Dropped, Target: coordinator.TargetKeyspace, Keyspace: st.Name.Name}
	case *cql.CreateTableStmt:
		return table(coordinator.Created, st.Table)
	case *cql.AlterTableStmt:
		return table(coordinator.Updated, st.Table)
	case *cql.DropTableStmt:
		return table(coordinator.Dropped, st.Table)
	case *cql.CreateTypeStmt:
		return userType(coordinator.Created, st.Name)
	case *cql.AlterTypeStmt:
		return userType(coordinator.Updated, st.Name)
	case *cql.DropTypeStmt:
		return userType(coordinator.Dropped, st.Name)
	case *cql.CreateIndexStmt: // as Cassandra: the table is updated
		tn := st.Table
		if tn.Keyspace.Name == "" {
			tn.Keyspace = st.Name.Keyspace
		}
		return table(coordinator.Updated, tn)
	case *cql.DropIndexStmt:
		return table(coordinator.Updated, st.Table)
	}
	return coordinator.SchemaChange{}
}

// executeUse checks that the keyspace exists and tells the client to use it.
func (e *Executor) executeUse(st *cql.UseStmt) (coordinator.Result, error) {
	name := st.Keyspace.Name
	if e.system != nil && e.system.HasKeyspace(name) {
		return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: name}, nil
	}
	if _, ok := e.schema.Schema().Keyspace(name); !ok {
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Keyspace.Pos(), Err: fmt.Errorf("%w %s", schema.ErrUnknownKeyspace, cql.QuoteIdent(name))}
	}
	return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: name}, nil
}

// executeDescribe renders a DESCRIBE from the schema, or from the ClusterDescriber for
// DESCRIBE CLUSTER.
func (e *Executor) executeDescribe(st *cql.DescribeStmt, keyspace string) (coordinator.Result, error) {
	if els, ok := e.describeSystem(st, keyspace); ok {
		if st.Internals {
			return describeRows(els), nil
		}
		var b strings.Builder
		for i, el := range els {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(el.CreateStatement + "\n")
		}
		return coordinator.Result{Kind: coordinator.ResultDescription, Description: b.String()}, nil
	}
	if st.Internals && st.Kind != cql.DescribeCluster {
		return e.describeElements(st, keyspace)
	}
	text, err := e.schema.Schema().Describe(st, keyspace)
	if errors.Is(err, schema.ErrDescribeCluster) {
		if e.cluster == nil {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Pos(), Err: errors.New("DESCRIBE CLUSTER is not available on this node")}
		}
		text, err = e.cluster.DescribeCluster(), nil
	}
	if err != nil {
		return coordinator.Result{}, invalid(st, err)
	}
	return coordinator.Result{Kind: coordinator.ResultDescription, Description: text}, nil
}

// describeColumns are the columns of a DESCRIBE ... WITH INTERNALS answer, Cassandra 4's.
var describeColumns = []coordinator.RowColumn{
	{Name: "keyspace_name", Type: schema.TypeText},
	{Name: "type", Type: schema.TypeText},
	{Name: "name", Type: schema.TypeText},
	{Name: "create_statement", Type: schema.TypeText},
}

// describeElements answers DESCRIBE ... WITH INTERNALS as Cassandra 4 does: one row per
// element, (keyspace_name, type, name, create_statement). gocql sends it on every metadata
// refresh and reads the fourth column; a one-column answer would fail its refresh.
func (e *Executor) describeElements(st *cql.DescribeStmt, keyspace string) (coordinator.Result, error) {
	els, err := e.schema.Schema().DescribeElements(st, keyspace)
	if err != nil {
		return coordinator.Result{}, invalid(st, err)
	}
	return describeRows(els), nil
}

func describeRows(els []schema.Element) coordinator.Result {
	rows := &coordinator.Rows{Columns: describeColumns, Values: make([][][]byte, 0, len(els))}
	for _, el := range els {
		rows.Values = append(rows.Values, [][]byte{[]byte(el.Keyspace), []byte(el.Type), []byte(el.Name), []byte(el.CreateStatement)})
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}
}

// describeSystem answers DESCRIBE KEYSPACE and DESCRIBE TABLE of a keyspace of system tables
// (ok true), which the schema does not hold: gocql's tests and cqlsh describe system.
func (e *Executor) describeSystem(st *cql.DescribeStmt, keyspace string) ([]schema.Element, bool) {
	if e.system == nil {
		return nil, false
	}
	switch st.Kind {
	case cql.DescribeKeyspace:
		ks := st.Keyspace.Name
		if ks == "" {
			ks = keyspace
		}
		return e.system.Describe(ks, "")
	case cql.DescribeTable:
		ks := st.Table.Keyspace.Name
		if ks == "" {
			ks = keyspace
		}
		return e.system.Describe(ks, st.Table.Name.Name)
	}
	return nil, false
}

// typeName returns the type a CREATE, ALTER or DROP TYPE statement names.
func typeName(stmt cql.Statement) cql.TableName {
	switch st := stmt.(type) {
	case *cql.CreateTypeStmt:
		return st.Name
	case *cql.AlterTypeStmt:
		return st.Name
	case *cql.DropTypeStmt:
		return st.Name
	}
	return cql.TableName{}
}
