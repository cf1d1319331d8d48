package shell

import (
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// FormatRing is implemented by a Ring that knows the data format version each member reports. A
// member of a format before schema.FormatExpiring stores an expiring cell as one that never
// expires, so the coordinator refuses writes with a TTL while one remains in the ring.
type FormatRing interface {
	// BelowFormat returns, sorted, the members of the ring (down ones and this node included)
	// whose data format version is below v, counting one that reports none as format 1. It is
	// called for every write with a TTL: it must be cheap.
	BelowFormat(v int) []coordinator.NodeID
}

// checkFormat refuses w, a write of stmt, when it expires (USING TTL, or its table's
// default_time_to_live) and a member of the ring runs a release of a data format before
// schema.FormatExpiring: that member would keep the value forever. A delete, and a write
// without a TTL, always pass.
func (e *Executor) checkFormat(stmt cql.Statement, w *schema.Write) error {
	if w.TTL <= 0 || w.Kind == schema.WriteDelete {
		return nil
	}
	fr, ok := e.ring.(FormatRing)
	if !ok {
		return nil
	}
	older := fr.BelowFormat(schema.FormatExpiring)
	if len(older) == 0 {
		return nil
	}
	what, pos := "USING TTL", stmt.Pos()
	if lit := ttlLiteral(stmt); lit != nil {
		pos = lit.Pos()
	} else {
		what = fmt.Sprintf("the default_time_to_live of table %s.%s (a write without USING TTL 0)", w.Table.Keyspace, w.Table.Name)
	}
	ids := make([]string, len(older))
	for i, id := range older {
		ids[i] = string(id)
	}
	return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("%s needs every node on data format %d or later, and nodes %s still run a release of an older format, which would keep the value forever; finish the rolling upgrade first (docs/operations.md, Upgrading)",
		what, schema.FormatExpiring, strings.Join(ids, ", "))}
}

// ttlLiteral returns stmt's USING TTL value, nil when it has none.
func ttlLiteral(stmt cql.Statement) *cql.Literal {
	switch s := stmt.(type) {
	case *cql.InsertStmt:
		return s.TTL
	case *cql.UpdateStmt:
		return s.TTL
	}
	return nil
}
