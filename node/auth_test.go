package node_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

const testSuperuserPassword = "s3cret admin"

// withAuth turns password authentication on, with a cheap bcrypt cost.
func withAuth(t *testing.T) func(*node.Config) {
	pwFile := filepath.Join(t.TempDir(), "superuser-password")
	if err := os.WriteFile(pwFile, []byte(testSuperuserPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *node.Config) {
		c.Authenticator = node.AuthenticatorPassword
		c.SuperuserPasswordFile = pwFile
		if c.Testing == nil {
			c.Testing = &node.TestingKnobs{}
		}
		c.Testing.AuthHashCost = 4
	}
}

// authClient dials node i as username; with an empty username, anonymously.
func (tc *testCluster) authClient(i int, username, password string) *client.Client {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var opts []client.Option
	if username != "" {
		opts = append(opts, client.WithCredentials(username, password))
	}
	c, err := client.Dial(ctx, tc.nodes[i].Addr(), opts...)
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { c.Close() })
	return c
}

// waitAdmin waits until the superuser role exists and node i lets it log in.
func (tc *testCluster) waitAdmin(i int) *client.Client {
	tc.t.Helper()
	admin := tc.authClient(i, "admin", testSuperuserPassword)
	poll.Must(tc.t, 30*time.Second, "the superuser role admin can log in", poll.Bool(func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := admin.Execute(ctx, client.One, "DESCRIBE KEYSPACES")
		return err == nil
	}))
	return admin
}

// TestAuthGRPC checks authentication and authorization over the gRPC client API on a
// three-node cluster: an anonymous client is refused, a role granted SELECT and MODIFY on a
// keyspace reads and writes it (through any node: roles and grants are replicated) but is
// unauthorized to ALTER the table's rate limit or DROP it, and grants and role changes take
// effect.
func TestAuthGRPC(t *testing.T) {
	tc := startClusterWith(t, 3, withAuth(t))
	admin := tc.waitAdmin(0)

	anon := tc.authClient(1, "", "")
	var ae *client.AuthenticationError
	if err := execErr(anon, "DESCRIBE KEYSPACES"); !errors.As(err, &ae) {
		t.Fatalf("anonymous DESCRIBE KEYSPACES: error %v, want a *client.AuthenticationError", err)
	}
	wrong := tc.authClient(1, "admin", "not the password")
	if err := execErr(wrong, "DESCRIBE KEYSPACES"); !errors.As(err, &ae) || !strings.Contains(err.Error(), "Provided username admin and/or password are incorrect") {
		t.Fatalf("DESCRIBE KEYSPACES with a wrong password: error %v, want a *client.AuthenticationError", err)
	}

	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"CREATE TABLE ks.other (k text PRIMARY KEY, v int)",
		"CREATE KEYSPACE private WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE private.t (k text PRIMARY KEY, v int)",
		"CREATE ROLE app WITH PASSWORD = 'app pw' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE ks TO app",
		"GRANT MODIFY ON KEYSPACE ks TO app",
	} {
		exec(t, admin, client.Quorum, stmt)
	}

	// Another node, which learnt of the role through system_auth's replicas.
	app := tc.authClient(2, "app", "app pw")
	exec(t, app, client.Quorum, "INSERT INTO ks.t (k, v) VALUES ('a', 1)")
	exec(t, app, client.Quorum, "UPDATE ks.other SET v = 2 WHERE k = 'b'")
	if res := exec(t, app, client.Quorum, "SELECT v FROM ks.t WHERE k = 'a'"); len(res.Rows) != 1 {
		t.Fatalf("SELECT as app: %d rows, want 1", len(res.Rows))
	}
	exec(t, app, client.One, "SELECT * FROM system.local") // drivers need the system tables

	var ue *client.UnauthorizedError
	for _, tt := range []struct{ stmt, want string }{
		{"ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_writes_per_second': 1}", "User app has no ALTER permission on <table ks.t> or any of its parents"},
		{"DROP TABLE ks.t", "User app has no DROP permission on <table ks.t> or any of its parents"},
		{"DROP KEYSPACE ks", "User app has no DROP permission on <keyspace ks> or any of its parents"},
		{"CREATE TABLE ks.u (k text PRIMARY KEY)", "User app has no CREATE permission on <keyspace ks> or any of its parents"},
		{"CREATE KEYSPACE mine WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", "User app has no CREATE permission on <all keyspaces> or any of its parents"},
		{"SELECT * FROM private.t WHERE k = 'a'", "User app has no SELECT permission on <table private.t> or any of its parents"},
		{"INSERT INTO private.t (k, v) VALUES ('a', 1)", "User app has no MODIFY permission on <table private.t> or any of its parents"},
		{"BEGIN BATCH INSERT INTO ks.t (k, v) VALUES ('x', 1); INSERT INTO private.t (k, v) VALUES ('x', 1) APPLY BATCH", "User app has no MODIFY permission on <table private.t> or any of its parents"},
		{"CREATE ROLE other WITH PASSWORD = 'x' AND LOGIN = true", "User app is not a superuser"},
		{"GRANT ALTER ON TABLE ks.t TO app", "User app has no AUTHORIZE permission on <table ks.t> or any of its parents"},
	} {
		err := execErr(app, tt.stmt)
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s as app: error %v, want a *client.UnauthorizedError saying %q", tt.stmt, err, tt.want)
		}
	}
	if res := exec(t, admin, client.Quorum, "SELECT v FROM ks.t WHERE k = 'x'"); len(res.Rows) != 0 {
		t.Errorf("the refused batch wrote ks.t: %d rows, want 0", len(res.Rows))
	}

	// A grant made through node 0 reaches node 2 within the cache's lifetime; ALTER then works.
	exec(t, admin, client.Quorum, "GRANT ALTER ON TABLE ks.t TO app")
	poll.Must(t, 20*time.Second, "app may ALTER ks.t after the grant", poll.Bool(func() bool {
		return execErr(app, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_writes_per_second': 100}") == nil
	}))
	res := exec(t, admin, client.Quorum, "LIST ALL PERMISSIONS OF app")
	var got []string
	for _, r := range res.Rows {
		got = append(got, r[2].(string)+" "+r[3].(string))
	}
	want := "<keyspace ks> SELECT,<keyspace ks> MODIFY,<table ks.t> ALTER"
	if strings.Join(got, ",") != want {
		t.Errorf("LIST ALL PERMISSIONS OF app = %q, want %q", strings.Join(got, ","), want)
	}
	if err := execErr(app, "LIST ALL PERMISSIONS OF admin"); !errors.As(err, &ue) {
		t.Errorf("LIST ALL PERMISSIONS OF admin as app: error %v, want unauthorized", err)
	}

	// REVOKE takes the permission away; a password change and DROP ROLE end the login.
	exec(t, admin, client.Quorum, "REVOKE MODIFY ON KEYSPACE ks FROM app")
	poll.Must(t, 20*time.Second, "app may not write after the revoke", poll.Bool(func() bool {
		return errors.As(execErr(app, "INSERT INTO ks.t (k, v) VALUES ('a', 3)"), &ue)
	}))
	exec(t, app, client.Quorum, "ALTER ROLE app WITH PASSWORD = 'new pw'") // a role may change its own password
	poll.Must(t, 20*time.Second, "the old password stops working", poll.Bool(func() bool {
		return errors.As(execErr(app, "SELECT v FROM ks.t WHERE k = 'a'"), &ae)
	}))
	app2 := tc.authClient(1, "app", "new pw")
	exec(t, app2, client.Quorum, "SELECT v FROM ks.t WHERE k = 'a'")
	exec(t, admin, client.Quorum, "DROP ROLE app")
	poll.Must(t, 20*time.Second, "a dropped role cannot log in", poll.Bool(func() bool {
		return errors.As(execErr(app2, "SELECT v FROM ks.t WHERE k = 'a'"), &ae)
	}))
	if err := execErr(admin, "DROP ROLE app"); err == nil || !strings.Contains(err.Error(), "role app doesn't exist") {
		t.Errorf("DROP ROLE of a dropped role: error %v, want it named as not existing", err)
	}
	exec(t, admin, client.Quorum, "DROP ROLE IF EXISTS app")
}

// TestAuthNativeGocql checks the native protocol's SASL PLAIN login with gocql's
// PasswordAuthenticator: without credentials the driver cannot connect, with them it reads and
// writes what it was granted and gets Unauthorized (0x2100) for the rest.
func TestAuthNativeGocql(t *testing.T) {
	tc := startClusterWith(t, 1, withAuth(t))
	admin := tc.waitAdmin(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"CREATE ROLE app WITH PASSWORD = 'app pw' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE ks TO app",
		"GRANT MODIFY ON KEYSPACE ks TO app",
	} {
		exec(t, admin, client.Quorum, stmt)
	}
	cluster := func(auth gocql.Authenticator) *gocql.ClusterConfig {
		c := gocql.NewCluster(tc.nodes[0].CQLAddr())
		c.ProtoVersion = 4
		c.Timeout = 20 * time.Second
		c.ConnectTimeout = 10 * time.Second
		c.DisableInitialHostLookup = true
		c.Authenticator = auth
		c.Keyspace = "ks"
		return c
	}
	if s, err := cluster(nil).CreateSession(); err == nil {
		s.Close()
		t.Fatal("gocql without credentials connected, want refused")
	}
	if s, err := cluster(gocql.PasswordAuthenticator{Username: "app", Password: "wrong"}).CreateSession(); err == nil {
		s.Close()
		t.Fatal("gocql with a wrong password connected, want refused")
	} else if !strings.Contains(err.Error(), "Provided username app and/or password are incorrect") {
		t.Errorf("gocql with a wrong password: %v, want the bad-credentials message", err)
	}
	s, err := cluster(gocql.PasswordAuthenticator{Username: "app", Password: "app pw"}).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Query("INSERT INTO t (k, v) VALUES (?, ?)", "a", 7).Exec(); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := s.Query("SELECT v FROM t WHERE k = ?", "a").Scan(&v); err != nil || v != 7 {
		t.Fatalf("SELECT as app: v = %d, %v; want 7", v, err)
	}
	for _, stmt := range []string{
		"ALTER TABLE t WITH per_partition_rate_limit = {'max_reads_per_second': 5}",
		"DROP TABLE t",
	} {
		err := s.Query(stmt).Exec()
		var re interface { // gocql's error frames
			GetCode() int
			GetMessage() string
		}
		if !errors.As(err, &re) || re.GetCode() != gocql.ErrCodeUnauthorized || !strings.Contains(re.GetMessage(), "User app has no") {
			t.Errorf("%s as app: error %v, want Unauthorized (0x2100) naming the role", stmt, err)
		}
	}
}

// TestAuthConfigErrors checks that a node with authentication on and no usable superuser
// password file does not start, and says why.
func TestAuthConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		auth, file, want string
	}{
		{"password", "", "superuser_password_file) is empty"},
		{"password", filepath.Join(dir, "missing"), "no such file"},
		{"password", empty, "is empty: it must hold the initial password of the superuser role admin"},
		{"ldap", "", `authenticator) is "ldap", want none or password`},
		{"none", empty, "superuser_password_file) is set but"},
	} {
		cfg := nodeConfig(filepath.Join(dir, "data-"+tt.auth), nil)
		cfg.Authenticator, cfg.SuperuserPasswordFile = tt.auth, tt.file
		n, err := node.Start(context.Background(), cfg)
		if err == nil {
			n.Close()
			t.Errorf("Start with authenticator %q, file %q: no error, want one saying %q", tt.auth, tt.file, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start with authenticator %q, file %q: %v, want one saying %q", tt.auth, tt.file, err, tt.want)
		}
	}
}

// TestAuthSurvivesRestart checks that roles and grants outlive a restart: system_auth is not in
// the cluster's schema, and the sweep of dropped tables' data at start must not take it for one.
func TestAuthSurvivesRestart(t *testing.T) {
	tc := startClusterWith(t, 1, withAuth(t))
	admin := tc.waitAdmin(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"CREATE ROLE app WITH PASSWORD = 'app pw' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE ks TO app",
	} {
		exec(t, admin, client.Quorum, stmt)
	}
	tc.stop(0)
	tc.restart(0)
	app := tc.authClient(0, "app", "app pw")
	exec(t, app, client.One, "SELECT v FROM ks.t WHERE k = 'a'")
}

// TestAuthEarlyRejectionPath checks that a prepared write to a rate-limited table, which the
// native front end may admit from its partition key alone before the statement is executed,
// still needs MODIFY: a role with SELECT only gets Unauthorized and writes nothing, however its
// grants were cached, and a role with MODIFY writes.
func TestAuthEarlyRejectionPath(t *testing.T) {
	tc := startClusterWith(t, 1, withAuth(t))
	admin := tc.waitAdmin(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 1000}",
		"CREATE ROLE reader WITH PASSWORD = 'r' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE ks TO reader",
		"CREATE ROLE writer WITH PASSWORD = 'w' AND LOGIN = true",
		"GRANT MODIFY ON KEYSPACE ks TO writer",
	} {
		exec(t, admin, client.Quorum, stmt)
	}
	session := func(user, pass string) *gocql.Session {
		c := gocql.NewCluster(tc.nodes[0].CQLAddr())
		c.ProtoVersion, c.Timeout, c.ConnectTimeout = 4, 20*time.Second, 10*time.Second
		c.DisableInitialHostLookup = true
		c.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: pass}
		c.Keyspace = "ks"
		s, err := c.CreateSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	reader, writer := session("reader", "r"), session("writer", "w")
	for i := range 3 { // the first runs fill the caches; the later ones take the early path
		var v int
		_ = reader.Query("SELECT v FROM t WHERE k = ?", "x").Scan(&v)
		err := reader.Query("INSERT INTO t (k, v) VALUES (?, ?)", "x", i).Exec()
		var re interface {
			GetCode() int
			GetMessage() string
		}
		if !errors.As(err, &re) || re.GetCode() != gocql.ErrCodeUnauthorized {
			t.Fatalf("prepared INSERT #%d as reader: %v, want Unauthorized (0x2100)", i, err)
		}
		if err := writer.Query("INSERT INTO t (k, v) VALUES (?, ?)", "y", i).Exec(); err != nil {
			t.Fatalf("prepared INSERT #%d as writer: %v", i, err)
		}
	}
	if res := exec(t, admin, client.One, "SELECT v FROM ks.t WHERE k = 'x'"); len(res.Rows) != 0 {
		t.Errorf("the reader's writes were applied: %v", res.Rows)
	}
}

// TestAuthSurvivesTopologyChanges: roles and grants live in system_auth on replicas as any rows
// do, so a bootstrap streams them and a decommission hands them on. After a second node joins
// and the first leaves, a role still logs in through the second node and keeps its grant
// (neither was streamed before: every grant was lost once its replicas had all been replaced).
func TestAuthSurvivesTopologyChanges(t *testing.T) {
	tc := startClusterWith(t, 1, withAuth(t))
	admin := tc.waitAdmin(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"INSERT INTO ks.t (k, v) VALUES ('a', 1)",
		"CREATE ROLE app WITH PASSWORD = 'app pw' AND LOGIN = true",
		"GRANT SELECT ON KEYSPACE ks TO app",
	} {
		exec(t, admin, client.Quorum, stmt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	i, err := tc.c.Add(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes = append(tc.nodes, tc.c.Node(i).Node())
	if _, err := tc.nodes[0].Decommission(ctx); err != nil {
		t.Fatalf("decommission of the first node: %v", err)
	}
	tc.stop(0)
	app := tc.authClient(i, "app", "app pw")
	if got := exec(t, app, client.One, "SELECT v FROM ks.t WHERE k = 'a'"); len(got.Rows) != 1 {
		t.Errorf("the role's SELECT through the node that joined returned %d rows, want 1", len(got.Rows))
	}

	// Repair covers system_auth too, with every table or when named.
	conn, err := grpc.NewClient(tc.nodes[i].Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(client.Credentials("admin", testSuperuserPassword)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, ks := range []string{"", "system_auth"} {
		resp, err := kvnodepb.NewRepairClient(conn).Repair(ctx, &kvnodepb.RepairRequest{Keyspace: ks})
		if err != nil {
			t.Fatalf("repair of keyspace %q: %v", ks, err)
		}
		var repaired []string
		for _, tr := range resp.GetTables() {
			repaired = append(repaired, tr.GetKeyspace()+"."+tr.GetTable())
		}
		if !slices.Contains(repaired, "system_auth.roles") || !slices.Contains(repaired, "system_auth.role_permissions") {
			t.Errorf("repair of keyspace %q repaired %v, want system_auth's tables among them", ks, repaired)
		}
	}
}

// TestAuthBruteForceSlowed: failed logins over both protocols show in
// kvnode_auth_failures_total; once an address has failed 10 times, its next attempt waits
// before its password is checked (kvnode_auth_waiting_logins), while a client on another
// address is served at once. (frontend/loginguard's and the front ends' tests check the 1 s on
// a manual clock; this one only watches the wait begin, and cancels it.)
func TestAuthBruteForceSlowed(t *testing.T) {
	tc := startClusterWith(t, 1, withAuth(t))
	tc.waitAdmin(0)
	reg := tc.nodes[0].Registry()
	failures := func(protocol string) float64 {
		return metricValue(t, reg, "kvnode_auth_failures_total", "protocol", protocol, "reason", "bad_password")
	}

	// Native protocol: gocql's login fails on its control connection.
	nc := gocql.NewCluster(tc.nodes[0].CQLAddr())
	nc.ProtoVersion, nc.ConnectTimeout, nc.DisableInitialHostLookup = 4, 10*time.Second, true
	nc.Authenticator = gocql.PasswordAuthenticator{Username: "admin", Password: "guess"}
	if s, err := nc.CreateSession(); err == nil {
		s.Close()
		t.Fatal("gocql with a wrong password connected")
	}
	if got := failures("native"); got < 1 {
		t.Fatalf("kvnode_auth_failures_total{protocol=native,reason=bad_password} = %v after a failed gocql login, want ≥ 1", got)
	}
	native := failures("native")

	// gRPC: 10 failures in all from 127.0.0.1, without waiting.
	wrong := tc.authClient(0, "admin", "guess")
	var ae *client.AuthenticationError
	for i := int(native); i < 10; i++ {
		if err := execErr(wrong, "DESCRIBE KEYSPACES"); !errors.As(err, &ae) {
			t.Fatalf("guess %d: %v, want a failed login", i+1, err)
		}
	}
	if got := failures("grpc") + failures("native"); got != 10 {
		t.Fatalf("kvnode_auth_failures_total{reason=bad_password} = %v over both protocols, want 10", got)
	}
	if got := metricValue(t, reg, "kvnode_auth_delayed_logins_total", "protocol", "grpc"); got != 0 {
		t.Fatalf("kvnode_auth_delayed_logins_total = %v after 10 failures, want 0", got)
	}

	// The 11th waits before its check.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := wrong.Execute(ctx, client.One, "DESCRIBE KEYSPACES")
		done <- err
	}()
	poll.Must(t, 20*time.Second, "the 11th guess waits", poll.Bool(func() bool {
		return metricValue(t, reg, "kvnode_auth_waiting_logins") == 1
	}))
	if got := failures("grpc") + failures("native"); got != 10 {
		t.Errorf("kvnode_auth_failures_total = %v while the 11th guess waits, want 10: its password is checked after the wait", got)
	}

	// Meanwhile, admin from another address is served at once.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	conn, err := grpc.NewClient(tc.nodes[0].Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	octx, ocancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ocancel()
	octx = metadata.AppendToOutgoingContext(octx, grpcapi.AuthMetadataKey, grpcapi.BasicCredentials("admin", testSuperuserPassword))
	if _, err := kvnodepb.NewKVNodeClient(conn).Execute(octx, &kvnodepb.ExecuteRequest{Statement: "DESCRIBE KEYSPACES"}); err != nil {
		t.Errorf("admin from 127.0.0.2 while 127.0.0.1's guess waits: %v, want served", err)
	}
	if got := metricValue(t, reg, "kvnode_auth_waiting_logins"); got != 1 {
		t.Errorf("kvnode_auth_waiting_logins = %v after the other address's login, want 1 (it did not wait)", got)
	}
	cancel()
	if err := <-done; err == nil {
		t.Errorf("the canceled guess succeeded")
	}
	if got := metricValue(t, reg, "kvnode_auth_delayed_logins_total", "protocol", "grpc"); got != 1 {
		t.Errorf("kvnode_auth_delayed_logins_total{protocol=grpc} = %v, want 1", got)
	}
}
