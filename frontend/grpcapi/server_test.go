package grpcapi_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/schema"
)

// TestResultOverTheMessageLimitIsRefused: a result larger than the node's message limit is an
// error that says so and how to ask for less, not a transport failure; a smaller one arrives.
func TestResultOverTheMessageLimitIsRefused(t *testing.T) {
	rows := func(n int) coordinator.Result {
		return coordinator.Result{Kind: coordinator.ResultRows, Rows: &coordinator.Rows{
			Keyspace: "ks", Table: "t",
			Columns: []coordinator.RowColumn{{Name: "k", Type: schema.TypeText}, {Name: "b", Type: schema.TypeBlob}},
			Values:  [][][]byte{{[]byte("a"), make([]byte, n)}},
		}}
	}
	exec := &fixed{res: rows(1000)}
	cl := serve(t, exec, 4096)
	cols, got, err := cl.Query(context.Background(), client.One, "SELECT * FROM t")
	wantCols := []client.Column{{Name: "k", Type: "text"}, {Name: "b", Type: "blob"}}
	if err != nil || !reflect.DeepEqual(cols, wantCols) || len(got) != 1 || got[0][0] != "a" || len(got[0][1].([]byte)) != 1000 {
		t.Fatalf("a 1000-byte result under a 4096-byte limit: %v %v, %v", cols, len(got), err)
	}
	exec.res = rows(5000)
	_, _, err = cl.Query(context.Background(), client.One, "SELECT * FROM t")
	if err == nil || !strings.Contains(err.Error(), "more than this node's message limit of 4096 bytes") || !strings.Contains(err.Error(), "LIMIT") {
		t.Errorf("a 5000-byte result under a 4096-byte limit: %v, want an error naming the limit and LIMIT", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  grpcapi.Config
		want string
	}{
		{grpcapi.Config{}, "grpcapi: Config.Executor is nil"},
		{grpcapi.Config{Executor: &fixed{}, MessageLimit: -1}, "grpcapi: Config.MessageLimit is -1, want ≥ 0 bytes (0: no check)"},
	} {
		if _, err := grpcapi.New(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if cfg := (grpcapi.Config{Executor: &fixed{}, MessageLimit: 5}); *cfg.EnsureDefaults() != cfg {
		t.Errorf("EnsureDefaults changed set fields: %+v", cfg)
	}
}
