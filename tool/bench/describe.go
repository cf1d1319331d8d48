package bench

import (
	"context"
	"fmt"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// executor runs one statement; *client.Client is one. Tests substitute fakes that need no
// network, so the scheduler can run under testing/synctest.
type executor interface {
	Execute(ctx context.Context, cl client.Consistency, stmt string) (*client.Result, error)
}

// describeTable learns the target table from the node behind ex: DESCRIBE TABLE answers with
// the CREATE TABLE statement, which schema turns into columns, types and the primary key.
func describeTable(ctx context.Context, ex executor, name cql.TableName) (*schema.Table, error) {
	qualified := cql.Format(name)
	res, err := ex.Execute(ctx, client.Default, "DESCRIBE TABLE "+qualified)
	if err != nil {
		return nil, fmt.Errorf("bench: describe table %s: %w", qualified, err)
	}
	return tableFromDescription(res.Description, name.Keyspace.Name)
}

// tableFromDescription builds the table a CREATE TABLE statement (the text of DESCRIBE TABLE)
// defines; keyspace applies when the statement does not name one.
func tableFromDescription(desc, keyspace string) (*schema.Table, error) {
	st, err := cql.ParseStatement(desc)
	if err != nil {
		return nil, fmt.Errorf("bench: cannot read the table description %q: %w", desc, err)
	}
	ct, ok := st.(*cql.CreateTableStmt)
	if !ok {
		return nil, fmt.Errorf("bench: the table description is %s, want CREATE TABLE: %q", schema.StatementName(st), desc)
	}
	if ct.Table.Keyspace.Name != "" {
		keyspace = ct.Table.Keyspace.Name
	}
	t, err := schema.NewTable(ct, keyspace, 1, schema.Version{})
	if err != nil {
		return nil, fmt.Errorf("bench: the table description does not define a usable table: %w", err)
	}
	return t, nil
}
