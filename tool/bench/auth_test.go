package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestExecuteLogsIn runs the benchmark against a node with password authentication over both
// protocols: with --username it logs in and every operation succeeds; without, it cannot run.
func TestExecuteLogsIn(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("adminpw"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 1, Adjust: func(_ int, cfg *node.Config) {
		cfg.Authenticator, cfg.SuperuserPasswordFile = node.AuthenticatorPassword, pwFile
		cfg.Testing = &node.TestingKnobs{AuthHashCost: 4}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := c.Node(0)
	admin, err := client.Dial(ctx, n.Addr(), client.WithCredentials("admin", "adminpw"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	poll.Must(t, 30*time.Second, "admin can log in", poll.Bool(func() bool {
		_, err := admin.Execute(ctx, client.One, "LIST ROLES")
		return err == nil
	}))
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.kv (k text PRIMARY KEY, v int)",
		"CREATE ROLE loader WITH PASSWORD = 'lpw' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE ks TO loader",
		"GRANT MODIFY ON KEYSPACE ks TO loader",
	} {
		if _, err := admin.Execute(ctx, client.One, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, tc := range []struct {
		protocol Protocol
		coord    Coordinator
		addr     string
	}{
		{ProtocolCQL, TokenAware, n.Node().CQLAddr()},
		{ProtocolGRPC, RoundRobin, n.Addr()},
	} {
		cfg := DefaultConfig()
		cfg.Protocol, cfg.Coordinator, cfg.Addrs = tc.protocol, tc.coord, []string{tc.addr}
		cfg.Table, cfg.Partitions = "ks.kv", 10
		cfg.Rate, cfg.Duration, cfg.Concurrency = 200, 250*time.Millisecond, 4
		cfg.Username, cfg.Password = "loader", "lpw"
		s := execute(t, cfg)
		if s.Offered == 0 || len(s.Errors) != 0 {
			t.Errorf("%s as loader: offered %d with errors %v; want some and none", tc.protocol, s.Offered, s.Errors)
		}
		cfg.Username, cfg.Password = "", ""
		s, err := Execute(ctx, cfg, nil)
		if err == nil && len(s.Errors) == 0 {
			t.Errorf("%s without a login: ran with no error, want refused", tc.protocol)
		} else if err != nil && !strings.Contains(err.Error(), "auth") {
			t.Errorf("%s without a login: %v, want an authentication error", tc.protocol, err)
		}
	}
}
