package shell

import (
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// invalid wraps err, a schema error about stmt, as an *InvalidError. Unknown and existing
// keyspaces and tables are positioned at the name the statement gives them.
func invalid(stmt cql.Statement, err error) error {
	e := &coordinator.InvalidError{Err: err}
	if errors.Is(err, schema.ErrUnknownKeyspace) || errors.Is(err, schema.ErrUnknownTable) || errors.Is(err, schema.ErrExists) {
		e.Pos = namePos(stmt)
	}
	return e
}

// namePos returns the position of the keyspace or table name stmt operates on.
func namePos(stmt cql.Statement) cql.Pos {
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return st.Name.Pos()
	case *cql.AlterKeyspaceStmt:
		return st.Name.Pos()
	case *cql.DropKeyspaceStmt:
		return st.Name.Pos()
	case *cql.UseStmt:
		return st.Keyspace.Pos()
	case *cql.CreateTableStmt:
		return st.Table.Pos()
	case *cql.AlterTableStmt:
		return st.Table.Pos()
	case *cql.DropTableStmt:
		return st.Table.Pos()
	case *cql.TruncateStmt:
		return st.Table.Pos()
	case *cql.CreateTypeStmt:
		return st.Name.Pos()
	case *cql.AlterTypeStmt:
		return st.Name.Pos()
	case *cql.DropTypeStmt:
		return st.Name.Pos()
	case *cql.CreateIndexStmt:
		return st.Table.Pos()
	case *cql.DropIndexStmt:
		return st.Name.Pos()
	case *cql.InsertStmt:
		return st.Table.Pos()
	case *cql.UpdateStmt:
		return st.Table.Pos()
	case *cql.DeleteStmt:
		return st.Table.Pos()
	case *cql.SelectStmt:
		return st.Table.Pos()
	case *cql.DescribeStmt:
		if st.Kind == cql.DescribeTable {
			return st.Table.Pos()
		}
		if st.Keyspace.Name != "" {
			return st.Keyspace.Pos()
		}
	}
	return stmt.Pos()
}

// transportError wraps the error of a replica call that got no answer.
func transportError(to coordinator.NodeID, err error) error {
	return fmt.Errorf("replica %s unreachable: %w", to, err)
}

// namedDC returns o with its short data center's name when it is EACH_QUORUM's Unavailable
// (the core numbers data centers; the error names the one short, as Cassandra's does): the
// ring's data center of a replica of req numbered so.
func (e *Executor) namedDC(o coordinator.Outcome, req *coordinator.Request) coordinator.Outcome {
	u, ok := o.(coordinator.Unavailable)
	if !ok || !u.InDC {
		return o
	}
	for _, rep := range req.Params().Replicas {
		if rep.DC == u.DC {
			u.DataCenter = e.ring.DataCenter(rep.ID)
			break
		}
	}
	return u
}
