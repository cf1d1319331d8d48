package shell_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
)

// as runs stmt through node's coordinator as role ("" for anonymous).
func (c *cluster) as(role string, node coordinator.NodeID, stmt string) (coordinator.Result, error) {
	ctx := context.Background()
	if role != "" {
		ctx = auth.WithRole(ctx, role)
	}
	return c.executors[node].Execute(ctx, coordinator.Statement{Text: stmt, Consistency: quorum, Keyspace: "ks"})
}

func newAuthCluster(t *testing.T) *cluster {
	t.Helper()
	c := newCluster(t, options{auth: &shell.AuthConfig{HashCost: 4}})
	created, err := c.executors["n1"].SetupAuth(context.Background(), "admin pw")
	if err != nil || !created {
		t.Fatalf("SetupAuth on an empty system_auth = %v, %v; want the superuser created", created, err)
	}
	if created, err := c.executors["n2"].SetupAuth(context.Background(), "another pw"); err != nil || created {
		t.Fatalf("SetupAuth once a role exists = %v, %v; want nothing created", created, err)
	}
	c.settle()
	return c
}

// TestAuthSetupAndLogin checks the superuser's creation, logins on every node, and that a
// second setup with another password changes nothing.
func TestAuthSetupAndLogin(t *testing.T) {
	c := newAuthCluster(t)
	ctx := context.Background()
	for _, n := range nodes {
		login, err := c.executors[n].Authenticate(ctx, "admin", "admin pw")
		if err != nil || login != (auth.Login{Role: "admin", Superuser: true}) {
			t.Errorf("Authenticate(admin) on %s = %+v, %v; want the superuser", n, login, err)
		}
	}
	var ae *auth.AuthenticationError
	// The message never tells which failed; the cause, for the node's logs and metrics, does.
	for _, tt := range []struct {
		user, pass string
		cause      auth.LoginFailure
	}{
		{"admin", "another pw", auth.FailureBadPassword},
		{"admin", "", auth.FailureBadPassword},
		{"nobody", "admin pw", auth.FailureUnknownRole},
		{"", "x", auth.FailureMalformed},
		{strings.Repeat("x", 1000), "x", auth.FailureMalformed},
	} {
		_, err := c.executors["n3"].Authenticate(ctx, tt.user, tt.pass)
		if !errors.As(err, &ae) || ae.Cause != tt.cause {
			t.Errorf("Authenticate(%.10q, %q): %v, want an *auth.AuthenticationError caused by %v", tt.user, tt.pass, err, tt.cause)
		}
	}
	// A role without LOGIN, and one without a password, cannot log in.
	for _, stmt := range []string{
		"CREATE ROLE nologin WITH PASSWORD = 'pw'",
		"CREATE ROLE nopass WITH LOGIN = true",
	} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	c.settle()
	if _, err := c.executors["n2"].Authenticate(ctx, "nologin", "pw"); !errors.As(err, &ae) || !strings.Contains(err.Error(), "nologin is not permitted to log in") || ae.Cause != auth.FailureNotPermitted {
		t.Errorf("Authenticate(nologin): %v, want not permitted to log in", err)
	}
	if _, err := c.executors["n2"].Authenticate(ctx, "nopass", ""); !errors.As(err, &ae) || ae.Cause != auth.FailureBadPassword {
		t.Errorf("Authenticate(nopass): %v, want refused", err)
	}
}

// TestLoginReadsTheSameForAnyUsername: a login whose role is not cached takes as many replica
// reads when the username exists as when it does not, so its time does not tell which
// usernames exist.
func TestLoginReadsTheSameForAnyUsername(t *testing.T) {
	c := newAuthCluster(t)
	ctx := context.Background()
	reads := func(user string) int {
		c.transport.mu.Lock()
		before := c.transport.reads
		c.transport.mu.Unlock()
		if _, err := c.executors["n2"].Authenticate(ctx, user, "wrong"); err == nil {
			t.Fatalf("Authenticate(%s, wrong) succeeded", user)
		}
		c.transport.mu.Lock()
		defer c.transport.mu.Unlock()
		return c.transport.reads - before
	}
	existing, missing := reads("admin"), reads("nobody")
	if existing == 0 || existing != missing {
		t.Errorf("an uncached login read %d times for an existing role and %d times for a missing one, want the same (and some)", existing, missing)
	}
}

// TestAuthorization checks the executor's permission checks for every kind of statement, for
// an anonymous caller and for a role with some grants, and that the cache expires.
func TestAuthorization(t *testing.T) {
	c := newAuthCluster(t)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"CREATE ROLE app WITH PASSWORD = 'pw' AND LOGIN = true",
		"GRANT SELECT ON TABLE ks.t TO app",
		"GRANT MODIFY ON KEYSPACE ks TO app",
	} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Fatalf("%s as admin: %v", stmt, err)
		}
	}
	c.settle()
	var ue *auth.UnauthorizedError
	if _, err := c.as("", "n1", "SELECT * FROM ks.t WHERE k = 'a'"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "You have to be logged in") {
		t.Errorf("an anonymous SELECT: %v, want refused", err)
	}
	if _, err := c.as("ghost", "n1", "SELECT * FROM ks.t WHERE k = 'a'"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "User ghost does not exist") {
		t.Errorf("a SELECT as a role that does not exist: %v, want refused", err)
	}
	for _, stmt := range []string{
		"INSERT INTO t (k, v) VALUES ('a', 1)",
		"UPDATE t SET v = 2 WHERE k = 'a'",
		"SELECT * FROM t WHERE k = 'a'",
		"DELETE FROM t WHERE k = 'b'",
		"BEGIN BATCH INSERT INTO t (k, v) VALUES ('c', 3) APPLY BATCH",
		"DESCRIBE KEYSPACES",
		"USE ks",
		"LIST ROLES",
		"LIST ALL PERMISSIONS",
		"ALTER ROLE app WITH PASSWORD = 'pw2'",
	} {
		if _, err := c.as("app", "n2", stmt); err != nil {
			t.Errorf("%s as app: %v, want allowed", stmt, err)
		}
	}
	// The system tables drivers read need only a login (this harness serves none of them);
	// the hot partitions' keys only superusers see.
	if _, err := c.as("app", "n2", "SELECT * FROM system.local"); errors.As(err, &ue) {
		t.Errorf("SELECT * FROM system.local as app: %v, want no permission needed", err)
	}
	if _, err := c.as("app", "n2", "SELECT * FROM system.top_partitions"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "only superusers read system.top_partitions") {
		t.Errorf("SELECT * FROM system.top_partitions as app: %v, want refused", err)
	}
	if _, err := c.as("admin", "n2", "SELECT * FROM system.top_partitions"); errors.As(err, &ue) {
		t.Errorf("SELECT * FROM system.top_partitions as admin: %v, want allowed", err)
	}
	// Who spends each budget: superusers, and roles with a permission on ALL SERVICE LEVELS.
	if _, err := c.as("app", "n2", "SELECT * FROM system.top_clients"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "system.top_clients shows every role's spending") {
		t.Errorf("SELECT * FROM system.top_clients as app: %v, want refused", err)
	}
	if _, err := c.as("admin", "n2", "SELECT * FROM system.top_clients"); errors.As(err, &ue) {
		t.Errorf("SELECT * FROM system.top_clients as admin: %v, want allowed", err)
	}
	if _, err := c.as("admin", "n2", "GRANT SELECT ON ALL SERVICE LEVELS TO app"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.as("app", "n2", "SELECT * FROM system.top_clients"); errors.As(err, &ue) {
		t.Errorf("SELECT * FROM system.top_clients as app granted SELECT on ALL SERVICE LEVELS: %v, want allowed", err)
	}
	if _, err := c.as("admin", "n2", "REVOKE SELECT ON ALL SERVICE LEVELS FROM app"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ stmt, want string }{
		{"ALTER TABLE t WITH per_partition_rate_limit = {'max_reads_per_second': 1}", "User app has no ALTER permission on <table ks.t> or any of its parents"},
		{"DROP TABLE t", "User app has no DROP permission on <table ks.t>"},
		{"DROP KEYSPACE ks", "User app has no DROP permission on <keyspace ks>"},
		{"ALTER KEYSPACE ks WITH durable_writes = true", "User app has no ALTER permission on <keyspace ks>"},
		{"CREATE TABLE u (k text PRIMARY KEY)", "User app has no CREATE permission on <keyspace ks>"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", "User app has no CREATE permission on <all keyspaces>"},
		{"CREATE ROLE x", "User app is not a superuser"},
		{"DROP ROLE admin", "User app is not a superuser"},
		{"ALTER ROLE app WITH SUPERUSER = true", "User app is not a superuser"},
		{"ALTER ROLE admin WITH PASSWORD = 'mine'", "User app is not a superuser"},
		{"GRANT SELECT ON KEYSPACE ks TO app", "User app has no AUTHORIZE permission on <keyspace ks>"},
		{"LIST ROLES OF admin", "may list only its own role"},
		{"LIST ALL PERMISSIONS OF admin", "may list only its own permissions"},
	} {
		if _, err := c.as("app", "n2", tt.stmt); !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s as app: %v, want an *auth.UnauthorizedError saying %q", tt.stmt, err, tt.want)
		}
	}
	// A protocol BATCH is checked per table as well.
	_, err := c.executors["n2"].ExecuteBatch(auth.WithRole(context.Background(), "app"), coordinator.BatchStatement{
		Keyspace: "ks", Consistency: quorum,
		Children: []coordinator.BatchChild{{Text: "INSERT INTO t (k, v) VALUES ('d', 4)"}},
	})
	if err != nil {
		t.Errorf("a protocol BATCH as app: %v, want allowed", err)
	}
	if _, err := c.executors["n2"].ExecuteBatch(context.Background(), coordinator.BatchStatement{
		Keyspace: "ks", Consistency: quorum, Children: []coordinator.BatchChild{{Text: "INSERT INTO t (k, v) VALUES ('d', 4)"}},
	}); !errors.As(err, &ue) {
		t.Errorf("an anonymous protocol BATCH: %v, want refused", err)
	}

	// The grant made through n1 reaches n2 once n2's cached grants of app expire.
	if _, err := c.as("admin", "n1", "GRANT ALTER ON TABLE ks.t TO app"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	alter := "ALTER TABLE t WITH per_partition_rate_limit = {'max_reads_per_second': 100}"
	if _, err := c.as("app", "n2", alter); !errors.As(err, &ue) {
		t.Errorf("ALTER as app on n2 within the cache's lifetime: %v, want still refused (cached grants)", err)
	}
	if _, err := c.as("app", "n1", alter); err != nil {
		t.Errorf("ALTER as app on n1, which made the grant: %v, want allowed at once", err)
	}
	c.clock.Advance(shell.DefaultAuthCacheTTL + time.Millisecond)
	if _, err := c.as("app", "n2", alter); err != nil {
		t.Errorf("ALTER as app on n2 after the cache expired: %v, want allowed", err)
	}

	// Dropping the table revokes the grants on it.
	if _, err := c.as("admin", "n1", "DROP TABLE ks.t"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	res, err := c.as("admin", "n1", "LIST ALL PERMISSIONS OF app")
	if err != nil {
		t.Fatal(err)
	}
	if got := formatRows(res.Rows); strings.Join(got, ",") != "'app' 'app' '<keyspace ks>' 'MODIFY'" {
		t.Errorf("app's grants after DROP TABLE ks.t: %q, want only MODIFY on the keyspace", got)
	}
}

// TestAuthStatementsWithoutAuth checks that role statements are refused, naming the flag, when
// authentication is off, and that nothing else changes.
func TestAuthStatementsWithoutAuth(t *testing.T) {
	c := newCluster(t, options{})
	var inv *coordinator.InvalidError
	for _, stmt := range []string{"CREATE ROLE a WITH PASSWORD = 'x'", "GRANT SELECT ON ALL KEYSPACES TO a", "LIST ROLES"} {
		if _, err := c.exec("n1", quorum, stmt); !errors.As(err, &inv) || !strings.Contains(err.Error(), "--authenticator password") {
			t.Errorf("%s without authentication: %v, want invalid naming --authenticator password", stmt, err)
		}
	}
	if _, err := c.exec("n1", quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"); err != nil {
		t.Errorf("an anonymous CREATE KEYSPACE without authentication: %v, want allowed", err)
	}
	if _, err := c.executors["n1"].Authenticate(context.Background(), "admin", "x"); err == nil {
		t.Error("Authenticate without authentication succeeded, want refused")
	}
}

// TestRoleStatementErrors checks the errors of malformed and impossible role statements.
func TestRoleStatementErrors(t *testing.T) {
	c := newAuthCluster(t)
	if _, err := c.as("admin", "n1", "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ stmt, want string }{
		{"CREATE ROLE r WITH PASSWORD = 1", "option password must be a string, found a integer"},
		{"CREATE ROLE r WITH LOGIN = 'yes'", "option login must be a boolean (true or false), found a string"},
		{"CREATE ROLE r WITH PASSWORD = ?", "bind markers are not supported in role statements"},
		{"CREATE ROLE r WITH OPTIONS = {'a': 'b'}", "unknown role option options (valid: PASSWORD, LOGIN, SUPERUSER)"},
		{"CREATE ROLE r WITH LOGIN = true AND LOGIN = false", "option login is given twice"},
		{"CREATE ROLE r WITH PASSWORD = ''", "the password must not be empty"},
		{"CREATE ROLE r WITH PASSWORD = '" + strings.Repeat("x", 73) + "'", "the password is 73 bytes long; the maximum is 72"},
		{"CREATE ROLE admin WITH PASSWORD = 'x'", "role admin already exists"},
		{"ALTER ROLE nobody WITH PASSWORD = 'x'", "role nobody doesn't exist"},
		{"ALTER ROLE admin WITH SUPERUSER = false", "may not alter its own superuser status"},
		{"DROP ROLE admin", "it cannot drop itself"},
		{"DROP ROLE nobody", "role nobody doesn't exist"},
		{"GRANT SELECT ON KEYSPACE nope TO admin", "resource <keyspace nope> doesn't exist"},
		{"GRANT SELECT ON TABLE ks.nope TO admin", "resource <table ks.nope> doesn't exist"},
		{"GRANT CREATE ON TABLE ks.t TO admin", "resource <table ks.t> doesn't exist"},
		{"GRANT SELECT ON KEYSPACE ks TO nobody", "role nobody doesn't exist"},
	} {
		if _, err := c.as("admin", "n1", tt.stmt); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.stmt, err, tt.want)
		}
	}
	if _, err := c.as("admin", "n1", "CREATE TABLE ks.t (k text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.as("admin", "n1", "GRANT CREATE ON TABLE ks.t TO admin"); err == nil || !strings.Contains(err.Error(), "permission CREATE does not apply to <table ks.t>") {
		t.Errorf("GRANT CREATE on a table: %v, want it refused", err)
	}
	for _, stmt := range []string{"CREATE ROLE IF NOT EXISTS admin", "DROP ROLE IF EXISTS nobody"} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Errorf("%s: %v, want a no-op", stmt, err)
		}
	}
}

// BenchmarkAuthenticate measures a login: "cached" is a password this node verified within the
// cache's lifetime (every gRPC call after the first), "bcrypt" a first login at bcrypt's default
// cost, which every native connection and each new gRPC password pays once.
func BenchmarkAuthenticate(b *testing.B) {
	c := newCluster(b, options{auth: &shell.AuthConfig{CacheTTL: time.Hour}})
	e := c.executors["n1"]
	ctx := context.Background()
	if _, err := e.SetupAuth(ctx, "admin pw"); err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		if _, err := e.Authenticate(ctx, "admin", "admin pw"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Authenticate(ctx, "admin", "admin pw"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bcrypt", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Authenticate(ctx, "admin", "wrong pw"); err == nil {
				b.Fatal("a wrong password logged in")
			}
		}
	})
}
