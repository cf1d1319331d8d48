package shell

import (
	"fmt"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// DefaultMaxMutationSize is the default Options.MaxMutationSize: 16 MiB, Cassandra's
// max_mutation_size (half its default commit log segment). Key components are bounded by the
// schema package (64 KiB, as in Cassandra).
const DefaultMaxMutationSize = 16 << 20

// cellOverhead is what a key component or cell costs on the wire besides its name and value: the
// timestamp, the tombstone flag, and the field tags and lengths of replicapb.Cell.
const cellOverhead = 24

// checkWriteSize refuses a write whose mutation would exceed maxMutation bytes (keys, column
// names and values, with a per-cell overhead: an upper bound of the replicas' message, so that a
// write that passes always fits the message limit the node derives from maxMutation). It runs
// before the limiter counts the write and before any replica is contacted.
func checkWriteSize(w *schema.Write, pos cql.Pos, maxMutation int) error {
	size := 0
	for _, v := range w.PartitionKey {
		size += len(v) + cellOverhead
	}
	for _, v := range w.Clustering.Prefix {
		size += len(v) + cellOverhead
	}
	for _, b := range []*schema.Bound{w.Clustering.Lower, w.Clustering.Upper} {
		if b != nil {
			size += len(b.Value) + cellOverhead
		}
	}
	for _, c := range w.Cells {
		if len(c.Value) > maxMutation {
			return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("the value of column %s is %d bytes; the largest write is %d bytes (max_mutation_size)",
				cql.QuoteIdent(c.Column.Name), len(c.Value), maxMutation)}
		}
		size += len(c.Column.Name) + len(c.Element) + len(c.Value) + cellOverhead
	}
	if size > maxMutation {
		return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("this write to %s is %d bytes; the largest write is %d bytes (max_mutation_size)",
			w.Table.QualifiedName(), size, maxMutation)}
	}
	return nil
}
