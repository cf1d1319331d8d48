package native

import (
	"context"
	"errors"
	"testing"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
)

// TestStatementsCarryTheClientAddress checks that the executor finds the connection's client
// address in each statement's context (auth.ClientFrom), for service levels attached to
// addresses.
func TestStatementsCarryTheClientAddress(t *testing.T) {
	ex := &fakeExecutor{execute: func(ctx context.Context, _ coordinator.Statement) (coordinator.Result, error) {
		a, ok := auth.ClientFrom(ctx)
		if !ok {
			return coordinator.Result{}, &coordinator.InvalidError{Err: errors.New("no client address")}
		}
		return coordinator.Result{}, &coordinator.InvalidError{Err: errors.New("client " + a.String())}
	}}
	_, addr := startServer(t, Config{Executor: ex})
	c := dial(t, addr)
	c.startup(nil)
	m := c.roundTrip(&cqlwire.Query{Query: "SELECT * FROM ks.t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	if e, ok := m.(*cqlwire.Error); !ok || e.Message != "client 127.0.0.1" {
		t.Errorf("QUERY answered %#v, want the executor to see client 127.0.0.1", m)
	}
}
