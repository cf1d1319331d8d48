package cqlsh

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestLoginBothProtocols checks --username with the password from KVNODE_PASSWORD over the
// native protocol and gRPC, and the errors of a missing or wrong login.
func TestLoginBothProtocols(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("adminpw\n"), 0o600); err != nil {
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
	grpcAddr, cqlAddr := c.Node(0).Addr(), c.Node(0).Node().CQLAddr()
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := Run(ctx, args, strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), err
	}
	t.Setenv(PasswordEnv, "adminpw")
	poll.Must(t, 30*time.Second, "admin can log in", poll.Bool(func() bool {
		_, _, err := run("--addr", cqlAddr, "-u", "admin", "-e", "LIST ROLES")
		return err == nil
	}))
	out, _ := runBoth(t, grpcAddr, cqlAddr, "-u", "admin", "-e", "LIST ROLES OF admin")
	if !strings.Contains(out, "admin") || !strings.Contains(out, "True") && !strings.Contains(out, "true") {
		t.Errorf("LIST ROLES OF admin printed:\n%s\nwant the admin row", out)
	}
	_, errOut := runBoth(t, grpcAddr, cqlAddr, "-u", "admin", "-e", "CREATE ROLE IF NOT EXISTS app WITH PASSWORD = 'apw' AND LOGIN = true; LIST ROLES OF nobody")
	if !strings.Contains(errOut, "role nobody doesn't exist") {
		t.Errorf("LIST ROLES OF nobody printed %q, want the role named as missing", errOut)
	}
	t.Setenv(PasswordEnv, "apw")
	_, errOut = runBoth(t, grpcAddr, cqlAddr, "-u", "app", "-e", "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	if !strings.Contains(errOut, "Unauthorized: User app has no CREATE permission on <all keyspaces> or any of its parents") {
		t.Errorf("CREATE KEYSPACE as app printed %q, want Unauthorized", errOut)
	}

	t.Setenv(PasswordEnv, "")
	if _, _, err := run("--addr", cqlAddr, "-e", "LIST ROLES"); err == nil || !strings.Contains(err.Error(), "cannot log in to kvnode at "+cqlAddr+": the node requires authentication") {
		t.Errorf("native without a login: %v, want the node asking for one", err)
	}
	_, errOut, _ = run("--protocol", "grpc", "--addr", grpcAddr, "-e", "LIST ROLES")
	if !strings.Contains(errOut, "AuthenticationFailed:") || !strings.Contains(errOut, "requires authentication") {
		t.Errorf("gRPC without a login printed %q, want AuthenticationFailed", errOut)
	}
	if _, _, err := run("--addr", cqlAddr, "-u", "admin", "-p", "wrong", "-e", "LIST ROLES"); err == nil || !strings.Contains(err.Error(), "Provided username admin and/or password are incorrect") {
		t.Errorf("native with a wrong password: %v, want bad credentials", err)
	}
	if _, _, err := run("--addr", cqlAddr, "-u", "admin", "-e", "LIST ROLES"); err == nil || !strings.Contains(err.Error(), "--username admin needs a password: set KVNODE_PASSWORD") {
		t.Errorf("--username without a password: %v, want it asked for", err)
	}
}
