package interop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/test/proc"
)

// The role the auth tests create: granted SELECT and MODIFY on authKeyspace only.
const (
	authKeyspace = "interop_auth"
	authRole     = "app"
	authPassword = "app password"
	adminPass    = "interop admin password"
)

// startAuthCluster starts three nodes like startCluster, with --authenticator password, and
// waits until the superuser admin can log in through gocql. It then creates authKeyspace with
// the table t (k text PRIMARY KEY, v int) and the role authRole, granted SELECT and MODIFY on
// the keyspace.
func startAuthCluster(t *testing.T) *proc.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("interop: skipped under -short (it builds kvnode and runs a 3-node cluster)")
	}
	root := t.TempDir()
	pwFile := filepath.Join(root, "superuser-password")
	if err := os.WriteFile(pwFile, []byte(adminPass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := make([][]string, 3)
	for i := range extra {
		extra[i] = []string{"--authenticator", "password", "--superuser-password-file", pwFile}
	}
	c, err := proc.Start(proc.Options{
		Binary: kvnodeBinary, Dir: root, Hosts: proc.LoopbackHosts(3), CQL: true, NumTokens: numTokens, ExtraArgs: extra,
	})
	if c != nil {
		t.Cleanup(func() {
			for _, err := range c.StopAll() {
				t.Error(err)
			}
			if t.Failed() {
				for _, n := range c.Nodes {
					for _, path := range n.Stderrs() {
						t.Logf("%s stderr (%s) ends:\n%s", n.Name, filepath.Base(path), proc.Tail(path, 40))
					}
				}
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStates(context.Background(), joinTimeout, c.Nodes, c.AllUp()); err != nil {
		t.Fatal(err)
	}
	var admin *gocql.Session
	poll.Must(t, joinTimeout, "the superuser admin can log in", poll.Bool(func() bool {
		cl := newGocqlCluster(c.Hosts(), c.CQLPort)
		cl.Authenticator = gocql.PasswordAuthenticator{Username: "admin", Password: adminPass}
		s, err := cl.CreateSession()
		if err != nil {
			return false
		}
		admin = s
		return true
	}))
	defer admin.Close()
	for _, stmt := range []string{
		"CREATE KEYSPACE " + authKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE " + authKeyspace + ".t (k text PRIMARY KEY, v int)",
		"CREATE ROLE " + authRole + " WITH PASSWORD = '" + authPassword + "' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE " + authKeyspace + " TO " + authRole,
		"GRANT MODIFY ON KEYSPACE " + authKeyspace + " TO " + authRole,
	} {
		if err := admin.Query(stmt).Exec(); err != nil {
			t.Fatalf("%s as admin: %v", stmt, err)
		}
	}
	return c
}

// TestAuthGocql checks password authentication with gocql against three kvnode processes: an
// anonymous client is refused, a role granted SELECT and MODIFY on a keyspace reads and writes
// it through every node and is Unauthorized (0x2100) for ALTER of the rate limit and for DROP;
// then a service level's ALTER reaches open sessions on every node at once.
func TestAuthGocql(t *testing.T) {
	c := startAuthCluster(t)
	anon := newGocqlCluster(c.Hosts(), c.CQLPort)
	if s, err := anon.CreateSession(); err == nil {
		s.Close()
		t.Fatal("an anonymous gocql session connected, want refused")
	}
	// docs:begin gocql-auth
	cluster := newGocqlCluster(c.Hosts(), c.CQLPort)
	cluster.Authenticator = gocql.PasswordAuthenticator{Username: authRole, Password: authPassword}
	// docs:end
	cluster.Keyspace = authKeyspace
	s, err := cluster.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := s.Query("INSERT INTO t (k, v) VALUES (?, ?)", k, i).Exec(); err != nil {
			t.Fatalf("INSERT %s as %s: %v", k, authRole, err)
		}
		var v int
		if err := s.Query("SELECT v FROM t WHERE k = ?", k).Scan(&v); err != nil || v != i {
			t.Fatalf("SELECT %s as %s: %d, %v; want %d", k, authRole, v, err, i)
		}
	}
	for _, tt := range []struct{ stmt, perm string }{
		{"ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 1}", "ALTER"},
		{"DROP TABLE t", "DROP"},
		{"DROP KEYSPACE " + authKeyspace, "DROP"},
	} {
		err := s.Query(tt.stmt).Exec()
		var re interface { // gocql's error frames
			GetCode() int
			GetMessage() string
		}
		want := "User " + authRole + " has no " + tt.perm + " permission"
		if !errors.As(err, &re) || re.GetCode() != gocql.ErrCodeUnauthorized || !strings.Contains(re.GetMessage(), want) {
			t.Errorf("%s as %s: %v, want Unauthorized (0x2100) saying %q", tt.stmt, authRole, err, want)
		}
	}
	t.Run("ServiceLevelAlterAtOnce", func(t *testing.T) { testLevelAlterAtOnce(t, c) })
}

// authDriverConfig is what the auth scripts read.
type authDriverConfig struct {
	Hosts    []string `json:"hosts"`
	Port     int      `json:"port"`
	Keyspace string   `json:"keyspace"`
	Username string   `json:"username"`
	Password string   `json:"password"`
	// The superuser, for the service-level and keyspace-limit DDL the scripts run.
	AdminUsername string `json:"admin_username"`
	AdminPassword string `json:"admin_password"`
}

// TestAuthDrivers runs the Python and Node.js drivers' plain-text authentication against three
// kvnode processes with --authenticator password: anonymous and wrong-password connections are
// refused, a role granted SELECT and MODIFY reads and writes and is Unauthorized for ALTER and
// DROP; then, as admin, the service-level statements and a keyspace's rate_limit, and a role's
// writes rejected by its level (python/auth.py, node/auth.js). It skips unless DriversEnv is
// set, as TestDrivers.
func TestAuthDrivers(t *testing.T) {
	nodePath := requireDrivers(t)
	c := startAuthCluster(t)
	cfg := authDriverConfig{Hosts: c.Hosts(), Port: c.CQLPort, Keyspace: authKeyspace, Username: authRole, Password: authPassword,
		AdminUsername: "admin", AdminPassword: adminPass,
	}
	for _, d := range []struct {
		name string
		argv []string
	}{
		{"python", []string{pythonPath, "-B", filepath.Join("python", "auth.py")}},
		{"node", []string{nodePath, filepath.Join("node", "auth.js")}},
	} {
		t.Run(d.name, func(t *testing.T) {
			if _, err := runScript(t, d.argv, cfg); err != nil {
				t.Errorf("the %s driver's auth checks failed (%v); its output is above", d.name, err)
			}
		})
	}
}
