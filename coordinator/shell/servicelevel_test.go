package shell_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/scopelimit"
)

// budgetsText renders Budgets' answer as "name:reads/writes[s]" in order.
func budgetsText(t testing.TB, c *cluster, node coordinator.NodeID, ctx context.Context, ks string) string {
	t.Helper()
	bs, err := c.executors[node].Budgets(ctx, ks)
	if err != nil {
		t.Fatalf("Budgets on %s: %v", node, err)
	}
	var parts []string
	for _, b := range bs {
		if b.ID != scopelimit.BudgetID(b.Kind, b.Name) {
			t.Errorf("budget %s has id %d, want BudgetID", b.Name, b.ID)
		}
		s := fmt.Sprintf("%s %s:%d/%d", b.Kind, b.Name, b.Reads, b.Writes)
		if b.Shadow {
			s += "s"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// cell renders a result cell for comparisons: text as is, 4-byte ints as numbers, null as "-".
func cell(b []byte, isInt bool) string {
	switch {
	case b == nil:
		return "-"
	case isInt:
		return fmt.Sprint(binary.BigEndian.Uint32(b))
	}
	return string(b)
}

func resultText(r coordinator.Result) string {
	if r.Rows == nil {
		return ""
	}
	var lines []string
	for _, row := range r.Rows.Values {
		var cells []string
		for i, v := range row {
			cells = append(cells, cell(v, r.Rows.Columns[i].Type.String() == "int"))
		}
		lines = append(lines, strings.Join(cells, " "))
	}
	return strings.Join(lines, "; ")
}

func fromClient(addr string) context.Context {
	return auth.WithClient(context.Background(), netip.MustParseAddr(addr))
}

// TestServiceLevelsByAddress: without authentication, levels attach to client addresses and
// blocks; Budgets answers most specific first, then the keyspace's rate_limit, on every node
// as soon as the statement returned.
func TestServiceLevelsByAddress(t *testing.T) {
	c := newCluster(t, options{})
	c.must("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	ctx := fromClient("10.0.0.7")
	if got := budgetsText(t, c, "n2", ctx, "ks"); got != "" {
		t.Fatalf("Budgets with no level = %q, want none", got)
	}
	c.must(
		"CREATE SERVICE LEVEL one WITH max_writes_per_second = 10",
		"CREATE SERVICE LEVEL subnet WITH max_reads_per_second = 100 AND max_writes_per_second = 50 AND mode = 'shadow'",
		"CREATE SERVICE LEVEL unlimited",
		"ATTACH SERVICE LEVEL one TO ADDRESS '10.0.0.7'",
		"ATTACH SERVICE LEVEL subnet TO ADDRESS '10.0.0.0/24'",
		"ATTACH SERVICE LEVEL unlimited TO ADDRESS '10.0.0.0/16'",
		"ALTER KEYSPACE ks WITH rate_limit = {'max_reads_per_second': 1000}",
	)
	for _, n := range nodes {
		if got, want := budgetsText(t, c, n, ctx, "ks"), "service level one:0/10, service level subnet:100/50s, keyspace ks:1000/0"; got != want {
			t.Errorf("Budgets on %s for 10.0.0.7 = %q, want %q", n, got, want)
		}
	}
	if got, want := budgetsText(t, c, "n3", fromClient("10.0.0.8"), "other"), "service level subnet:100/50s"; got != want {
		t.Errorf("Budgets for 10.0.0.8 on another keyspace = %q, want %q", got, want)
	}
	if got := budgetsText(t, c, "n3", fromClient("192.168.1.1"), "other"); got != "" {
		t.Errorf("Budgets for an address outside every block = %q, want none", got)
	}
	// An ALTER through n1 is what n2 answers with as soon as it returned.
	c.must("ALTER SERVICE LEVEL one WITH max_writes_per_second = 20 AND max_reads_per_second = 5")
	if got, want := budgetsText(t, c, "n2", ctx, "ks"), "service level one:5/20, service level subnet:100/50s, keyspace ks:1000/0"; got != want {
		t.Errorf("Budgets on n2 right after ALTER on n1 = %q, want %q", got, want)
	}
	res, err := c.exec("n2", quorum, "LIST ATTACHED SERVICE LEVEL OF ADDRESS '10.0.0.7'")
	if got, want := resultText(res), "- one 10.0.0.7/32; - subnet 10.0.0.0/24; - unlimited 10.0.0.0/16"; err != nil || got != want {
		t.Errorf("LIST ATTACHED OF ADDRESS '10.0.0.7' = %q, %v; want %q", got, err, want)
	}
	res, err = c.exec("n2", quorum, "LIST ALL SERVICE LEVELS")
	if got, want := resultText(res), "one - interactive 5 20 enforce; subnet - interactive 100 50 shadow; unlimited - interactive - - enforce"; err != nil || got != want {
		t.Errorf("LIST ALL SERVICE LEVELS = %q, %v; want %q", got, err, want)
	}
	if res.Rows != nil && res.Rows.Columns[0].Name != "service_level" {
		t.Errorf("LIST ALL SERVICE LEVELS' first column is %q, want service_level (ScyllaDB's)", res.Rows.Columns[0].Name)
	}
	c.must("DROP SERVICE LEVEL one", "DETACH SERVICE LEVEL FROM ADDRESS '10.0.0.0/24'")
	if got, want := budgetsText(t, c, "n3", ctx, "ks"), "keyspace ks:1000/0"; got != want {
		t.Errorf("Budgets after DROP and DETACH = %q, want %q", got, want)
	}
	res, err = c.exec("n1", quorum, "LIST ALL ATTACHED SERVICE LEVELS")
	if got, want := resultText(res), "- unlimited 10.0.0.0/16"; err != nil || got != want {
		t.Errorf("LIST ALL ATTACHED SERVICE LEVELS = %q, %v; want %q", got, err, want)
	}
	for _, tt := range []struct{ stmt, want string }{
		{"ATTACH SERVICE LEVEL unlimited TO alice", "ATTACH SERVICE LEVEL of a role needs authentication"},
		{"ATTACH SERVICE LEVEL unlimited TO ADDRESS 'localhost'", "address 'localhost' is not an IPv4 or IPv6 address"},
		{"ATTACH SERVICE LEVEL nope TO ADDRESS '1.2.3.4'", "unknown service level nope"},
		{"CREATE SERVICE LEVEL unlimited", "service level unlimited already exists"},
		{"CREATE SERVICE LEVEL x WITH max_reads_per_second = -1", "service level x: max_reads_per_second = -1 is negative"},
		{"GRANT a TO b", "GRANT ROLE needs authentication"},
	} {
		_, err := c.exec("n1", quorum, tt.stmt)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an invalid-statement error containing %q", tt.stmt, err, tt.want)
		}
	}
}

// TestServiceLevelsRoles: roles granted to roles form the chain Budgets and LIST EFFECTIVE
// follow; only roles with the permissions manage levels; DROP ROLE takes its level and grants.
func TestServiceLevelsRoles(t *testing.T) {
	c := newAuthCluster(t)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE ROLE app WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE dba WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE team", "CREATE ROLE org", "CREATE ROLE zeta",
		"CREATE SERVICE LEVEL client WITH max_writes_per_second = 10",
		"CREATE SERVICE LEVEL teamsl WITH max_writes_per_second = 100",
		"CREATE SERVICE LEVEL orgsl WITH max_writes_per_second = 1000",
		"CREATE SERVICE LEVEL zetasl WITH max_reads_per_second = 7",
		"GRANT team TO app", "GRANT zeta TO app", "GRANT org TO team", "GRANT org TO zeta",
		"ATTACH SERVICE LEVEL client TO app", "ATTACH SERVICE LEVEL teamsl TO team",
		"ATTACH SERVICE LEVEL orgsl TO org", "ATTACH SERVICE LEVEL zetasl TO zeta",
		"GRANT ALTER ON ALL SERVICE LEVELS TO dba",
	} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	c.settle()
	app := auth.WithRole(context.Background(), "app")
	want := "service level client:0/10, service level teamsl:0/100, service level zetasl:7/0, service level orgsl:0/1000"
	for _, n := range nodes {
		if got := budgetsText(t, c, n, app, "ks"); got != want {
			t.Errorf("Budgets of app on %s = %q, want %q (own, then distance 1 by name, then 2)", n, got, want)
		}
	}
	res, err := c.as("app", "n2", "LIST EFFECTIVE SERVICE LEVEL OF app")
	if got, w := resultText(res), "client app 0 - 10 enforce; teamsl team 1 - 100 enforce; zetasl zeta 1 7 - enforce; orgsl org 2 - 1000 enforce"; err != nil || got != w {
		t.Errorf("LIST EFFECTIVE SERVICE LEVEL OF app as app = %q, %v; want %q", got, err, w)
	}
	res, err = c.as("admin", "n3", "LIST ROLES OF app")
	var listed []string
	for _, row := range rowsOf(res) {
		listed = append(listed, string(row[0]))
	}
	if got, w := strings.Join(listed, " "), "app team zeta org"; err != nil || got != w {
		t.Errorf("LIST ROLES OF app lists %q, %v; want app and the roles granted to it, nearest first: %q", got, err, w)
	}
	res, err = c.as("app", "n3", "LIST ATTACHED SERVICE LEVEL OF app")
	if got, w := resultText(res), "app client -"; err != nil || got != w {
		t.Errorf("LIST ATTACHED SERVICE LEVEL OF app as app = %q, %v; want %q", got, err, w)
	}

	// Permissions: app may change nothing and list no other role; dba may ALTER and ATTACH, not CREATE or DROP.
	for _, tt := range []struct{ role, stmt, want string }{
		{"app", "CREATE SERVICE LEVEL x", "User app has no CREATE permission on <all service levels>"},
		{"app", "ALTER SERVICE LEVEL client WITH max_writes_per_second = 1000000", "User app has no ALTER permission on <all service levels>"},
		{"app", "LIST ALL SERVICE LEVELS", "User app has no permission on <all service levels>"},
		{"app", "LIST EFFECTIVE SERVICE LEVEL OF org", "User app has no permission on <all service levels>"},
		{"app", "GRANT org TO dba", "User app is not a superuser"},
		{"dba", "CREATE SERVICE LEVEL x", "User dba has no CREATE permission on <all service levels>"},
		{"dba", "DROP SERVICE LEVEL client", "User dba has no DROP permission on <all service levels>"},
		{"", "LIST ALL SERVICE LEVELS", "You have to be logged in"},
	} {
		_, err := c.as(tt.role, "n1", tt.stmt)
		var ue *auth.UnauthorizedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s as %q: %v, want unauthorized: %q", tt.stmt, tt.role, err, tt.want)
		}
	}
	for _, stmt := range []string{"ALTER SERVICE LEVEL client WITH max_writes_per_second = 20", "DETACH SERVICE LEVEL FROM zeta", "LIST ALL SERVICE LEVELS"} {
		if _, err := c.as("dba", "n2", stmt); err != nil {
			t.Errorf("%s as dba (ALTER on ALL SERVICE LEVELS): %v", stmt, err)
		}
	}
	if got, w := budgetsText(t, c, "n3", app, "ks"), "service level client:0/20, service level teamsl:0/100, service level orgsl:0/1000"; got != w {
		t.Errorf("Budgets of app after dba's ALTER and DETACH = %q, want %q", got, w)
	}

	// The role graph's errors, as Cassandra's.
	for _, tt := range []struct{ stmt, want string }{
		{"GRANT app TO org", "app is a member of org"},
		{"GRANT org TO app", "app is a member of org"},
		{"GRANT app TO app", "app is a member of app"},
		{"GRANT nobody TO app", "role nobody doesn't exist"},
		{"REVOKE org FROM app", "app is not a member of org"},
		{"ATTACH SERVICE LEVEL client TO nobody", "role nobody doesn't exist"},
	} {
		_, err := c.as("admin", "n1", tt.stmt)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an invalid-statement error containing %q", tt.stmt, err, tt.want)
		}
	}
	// REVOKE and DROP ROLE change the chain at once.
	if _, err := c.as("admin", "n1", "REVOKE team FROM app"); err != nil {
		t.Fatal(err)
	}
	if got, w := budgetsText(t, c, "n2", app, "ks"), "service level client:0/20, service level orgsl:0/1000"; got != w {
		t.Errorf("Budgets of app after REVOKE team = %q, want %q", got, w)
	}
	if _, err := c.as("admin", "n1", "DROP ROLE zeta"); err != nil {
		t.Fatal(err)
	}
	if got, w := budgetsText(t, c, "n3", app, "ks"), "service level client:0/20"; got != w {
		t.Errorf("Budgets of app after DROP ROLE zeta = %q, want %q", got, w)
	}
	if _, err := c.as("admin", "n1", "DROP ROLE app"); err != nil {
		t.Fatal(err)
	}
	res, _ = c.as("admin", "n1", "LIST ALL ATTACHED SERVICE LEVELS")
	if got, w := resultText(res), "org orgsl -; team teamsl -"; got != w {
		t.Errorf("attachments after DROP ROLE app = %q, want %q", got, w)
	}
}

// BenchmarkBudgets measures Budgets on the request path: with no level at all, and warm with a
// client's level, a role's chain of three levels and a keyspace limit.
func BenchmarkBudgets(b *testing.B) {
	c := newCluster(b, options{noObserver: true, auth: &shell.AuthConfig{HashCost: 4}})
	if _, err := c.executors["n1"].SetupAuth(context.Background(), "pw"); err != nil {
		b.Fatal(err)
	}
	c.settle()
	admin := func(stmts ...string) {
		for _, s := range stmts {
			if _, err := c.as("admin", "n1", s); err != nil {
				b.Fatalf("%s: %v", s, err)
			}
		}
		c.settle()
	}
	admin("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", "CREATE ROLE app", "CREATE ROLE org")
	e := c.executors["n1"]
	ctx := auth.WithRole(fromClient("10.0.0.7"), "app")
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if bs, _ := e.Budgets(ctx, "ks"); bs != nil {
				b.Fatal(bs)
			}
		}
	})
	admin(
		"CREATE SERVICE LEVEL one WITH max_writes_per_second = 10", "CREATE SERVICE LEVEL two WITH max_writes_per_second = 100",
		"CREATE SERVICE LEVEL three WITH max_writes_per_second = 1000",
		"ATTACH SERVICE LEVEL one TO ADDRESS '10.0.0.0/24'", "ATTACH SERVICE LEVEL two TO app", "GRANT org TO app",
		"ATTACH SERVICE LEVEL three TO org", "ALTER KEYSPACE ks WITH rate_limit = {'max_writes_per_second': 5000}",
	)
	b.Run("warm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if bs, _ := e.Budgets(ctx, "ks"); len(bs) != 4 {
				b.Fatal(bs)
			}
		}
	})
}

// TestRolesInheritPermissions: a role granted another holds its permissions, from the moment
// the GRANT returns until the REVOKE returns, on every node.
func TestRolesInheritPermissions(t *testing.T) {
	c := newAuthCluster(t)
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
		"CREATE ROLE app WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE reader",
		"GRANT SELECT ON KEYSPACE ks TO reader",
	} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	c.settle()
	var ue *auth.UnauthorizedError
	if _, err := c.as("app", "n2", "SELECT * FROM ks.t WHERE k = 1"); !errors.As(err, &ue) {
		t.Fatalf("SELECT as app before GRANT reader: %v, want unauthorized", err)
	}
	if _, err := c.as("admin", "n1", "GRANT reader TO app"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.as("app", "n2", "SELECT * FROM ks.t WHERE k = 1"); err != nil {
		t.Errorf("SELECT as app right after GRANT reader TO app: %v, want allowed", err)
	}
	if _, err := c.as("app", "n2", "INSERT INTO ks.t (k, v) VALUES (1, 1)"); !errors.As(err, &ue) {
		t.Errorf("INSERT as app holding only reader: %v, want unauthorized", err)
	}
	if _, err := c.as("admin", "n1", "REVOKE reader FROM app"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.as("app", "n2", "SELECT * FROM ks.t WHERE k = 1"); !errors.As(err, &ue) {
		t.Errorf("SELECT as app right after REVOKE: %v, want unauthorized", err)
	}
}

// TestDropRoleFinishesItsCleanUp: a DROP ROLE whose agreement on forgetting the role's level
// failed says so, and running it again finishes it.
func TestDropRoleFinishesItsCleanUp(t *testing.T) {
	c := newAuthCluster(t)
	for _, stmt := range []string{"CREATE ROLE app", "CREATE SERVICE LEVEL sl", "ATTACH SERVICE LEVEL sl TO app"} {
		if _, err := c.as("admin", "n1", stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	c.schema.mu.Lock()
	c.schema.fail = errors.New("no majority")
	c.schema.mu.Unlock()
	if _, err := c.as("admin", "n1", "DROP ROLE app"); err == nil || !strings.Contains(err.Error(), "run DROP ROLE again") {
		t.Fatalf("DROP ROLE with agreement failing: %v, want an error asking to run it again", err)
	}
	c.schema.mu.Lock()
	c.schema.fail = nil
	c.schema.mu.Unlock()
	if _, err := c.as("admin", "n1", "DROP ROLE app"); err != nil {
		t.Fatalf("DROP ROLE again: %v", err)
	}
	if _, ok := c.schema.Schema().RoleAttachment("app"); ok {
		t.Errorf("the dropped role's level is still attached")
	}
	var ie *coordinator.InvalidError
	if _, err := c.as("admin", "n1", "DROP ROLE app"); !errors.As(err, &ie) || !strings.Contains(err.Error(), "role app doesn't exist") {
		t.Errorf("a third DROP ROLE: %v, want role app doesn't exist", err)
	}
}
