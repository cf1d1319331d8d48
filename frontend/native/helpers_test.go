package native

import (
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
)

func parseForTest(src string) ([]cql.Statement, error) { return cql.Parse(src) }

func errClosedForTest() error { return coordinator.ErrClosed }
