package shell

import (
	"fmt"

	"github.com/kvnode/kvnode/coordinator"
)

// DefaultMaxStatementSize is the default Options.MaxStatementSize: 1 MiB of CQL text, far above
// any statement a schema's limits let through (a CREATE TABLE at max_columns_per_table is well
// under it) and small enough that parsing one cannot hold a node's memory.
const DefaultMaxStatementSize = 1 << 20

// checkStatementSize refuses statement text longer than max bytes before it is parsed. what
// names the statement for the error ("this statement", "statement 3 of the BATCH").
func checkStatementSize(text, what string, max int) error {
	if len(text) <= max {
		return nil
	}
	return &coordinator.InvalidError{Err: fmt.Errorf("%s is %d bytes of CQL text; the largest statement is %d bytes (max_statement_size)", what, len(text), max)}
}
