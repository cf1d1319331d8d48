package shell

import (
	"context"
	"errors"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// executeConditional runs a conditional INSERT, UPDATE or DELETE (a lightweight transaction).
func (e *Executor) executeConditional(ctx context.Context, st cql.Statement, keyspace string, cl coordinator.Consistency, req *coordinator.Statement) (*schema.Table, coordinator.Result, error) {
	return nil, coordinator.Result{}, &coordinator.InvalidError{Pos: cql.ConditionsOf(st).IfPos, Err: errors.New("lightweight transactions (IF conditions) are not supported yet")}
}
