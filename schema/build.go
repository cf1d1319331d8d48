package schema

import (
	"fmt"

	"github.com/kvnode/kvnode/cql"
)

// Build returns the schema that the schema statements in src create, applied
// in order to the empty schema. The i-th statement (from 1) gets version
// (i, "") and, if it creates a table, table id i. USE statements set the
// current keyspace for the statements after them. Build is meant for tests
// and tools that need a schema without a cluster.
func Build(src string) (*Schema, error) {
	stmts, err := cql.Parse(src)
	if err != nil {
		return nil, err
	}
	s := New()
	keyspace := ""
	for i, st := range stmts {
		if u, ok := st.(*cql.UseStmt); ok {
			if _, ok := s.Keyspace(u.Keyspace.Name); !ok {
				return nil, fmt.Errorf("%s: %w %s", u.Pos(), ErrUnknownKeyspace, cql.QuoteIdent(u.Keyspace.Name))
			}
			keyspace = u.Keyspace.Name
			continue
		}
		n := int64(i + 1)
		if s, err = s.Apply(st, keyspace, Change{Version: Version{Timestamp: n}, TableID: TableID(n)}); err != nil {
			return nil, fmt.Errorf("%s: %w", st.Pos(), err)
		}
	}
	return s, nil
}
