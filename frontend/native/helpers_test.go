package native

import (
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/cql"
)

func parseForTest(src string) ([]cql.Statement, error) { return cql.Parse(src) }

func errClosedForTest() error { return shell.ErrClosed }
