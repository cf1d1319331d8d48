package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// execErr runs stmt through c and returns its error.
func execErr(c *client.Client, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Execute(ctx, client.One, stmt)
	return err
}

// race runs the statements at once, each through its own client, and returns their errors.
func race(clients []*client.Client, stmts ...string) []error {
	errs := make([]error, len(stmts))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, stmt := range stmts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = execErr(clients[i], stmt)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// isAlreadyExists reports whether err is the invalid-statement error for name existing already.
func isAlreadyExists(err error, name string) bool {
	var ie *client.InvalidError
	return errors.As(err, &ie) && strings.Contains(ie.Message, name+" already exists")
}

// waitSchema waits until every running node's schema satisfies cond.
func (tc *testCluster) waitSchema(what string, cond func(*schema.Schema) bool) {
	tc.t.Helper()
	poll.Must(tc.t, 20*time.Second, what, poll.Bool(func() bool {
		for _, nd := range tc.nodes {
			if nd != nil && !cond(nd.Schema()) {
				return false
			}
		}
		return true
	}))
}

const ddlRounds = 20

// TestConcurrentCreateTableHasOneWinner creates the same table with different columns through
// two nodes at once, round after round: exactly one CREATE succeeds, the other fails saying the
// table exists, and every node ends with the winner's definition.
func TestConcurrentCreateTableHasOneWinner(t *testing.T) {
	tc := startCluster(t, 3)
	clients := []*client.Client{tc.client(0), tc.client(1)}
	exec(t, clients[0], client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	for round := range ddlRounds {
		name := fmt.Sprintf("c%d", round)
		errs := race(clients,
			fmt.Sprintf("CREATE TABLE r.%s (k text PRIMARY KEY, from_a int)", name),
			fmt.Sprintf("CREATE TABLE r.%s (k text PRIMARY KEY, from_b text, also_b int)", name))
		winner := -1
		switch {
		case errs[0] == nil && isAlreadyExists(errs[1], "r."+name):
			winner = 0
		case errs[1] == nil && isAlreadyExists(errs[0], "r."+name):
			winner = 1
		default:
			t.Fatalf("round %d: concurrent CREATE TABLE r.%s through nodes 0 and 1 returned %v and %v, want one success and one 'table r.%s already exists'",
				round, name, errs[0], errs[1], name)
		}
		want := []string{"from_a", "from_b"}[winner]
		tc.waitSchema(fmt.Sprintf("round %d: every node has r.%s with column %s", round, name, want), func(s *schema.Schema) bool {
			tb, ok := s.Table("r", name)
			if !ok {
				return false
			}
			_, has := tb.Column(want)
			return has && len(tb.Columns) == 2+winner
		})
	}
}

// TestConcurrentCreateKeyspaceHasOneWinner is the same race for keyspaces, with different
// replication factors.
func TestConcurrentCreateKeyspaceHasOneWinner(t *testing.T) {
	tc := startCluster(t, 3)
	clients := []*client.Client{tc.client(1), tc.client(2)}
	for round := range ddlRounds {
		name := fmt.Sprintf("k%d", round)
		errs := race(clients,
			fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", name),
			fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}", name))
		winner := -1
		switch {
		case errs[0] == nil && isAlreadyExists(errs[1], name):
			winner = 0
		case errs[1] == nil && isAlreadyExists(errs[0], name):
			winner = 1
		default:
			t.Fatalf("round %d: concurrent CREATE KEYSPACE %s returned %v and %v, want one success and one 'keyspace %s already exists'",
				round, name, errs[0], errs[1], name)
		}
		tc.waitSchema(fmt.Sprintf("round %d: every node has keyspace %s with RF %d", round, name, winner+1), func(s *schema.Schema) bool {
			k, ok := s.Keyspace(name)
			return ok && k.ReplicationFactor == winner+1
		})
	}
}

// TestConcurrentDropAndCreateStayConsistent races DROP TABLE against CREATE TABLE of the same
// name, and DROP KEYSPACE against CREATE TABLE in it: whichever order consensus picks, the
// answers match it and every node ends in the state that order gives.
func TestConcurrentDropAndCreateStayConsistent(t *testing.T) {
	tc := startCluster(t, 3)
	clients := []*client.Client{tc.client(0), tc.client(2)}
	exec(t, clients[0], client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	for round := range ddlRounds {
		name := fmt.Sprintf("d%d", round)
		exec(t, clients[0], client.One, fmt.Sprintf("CREATE TABLE r.%s (k text PRIMARY KEY, old int)", name))
		errs := race(clients,
			fmt.Sprintf("DROP TABLE r.%s", name),
			fmt.Sprintf("CREATE TABLE r.%s (k text PRIMARY KEY, new int)", name))
		if errs[0] != nil {
			t.Fatalf("round %d: DROP TABLE r.%s racing a CREATE: %v, want success in either order", round, name, errs[0])
		}
		switch {
		case errs[1] == nil: // the drop, then the create
			tc.waitSchema(fmt.Sprintf("round %d: every node has the new r.%s", round, name), func(s *schema.Schema) bool {
				tb, ok := s.Table("r", name)
				if !ok {
					return false
				}
				_, has := tb.Column("new")
				return has
			})
		case isAlreadyExists(errs[1], "r."+name): // the create saw the old table, then the drop
			tc.waitSchema(fmt.Sprintf("round %d: no node has r.%s", round, name), func(s *schema.Schema) bool {
				_, ok := s.Table("r", name)
				return !ok
			})
		default:
			t.Fatalf("round %d: CREATE TABLE r.%s racing its DROP: %v, want success or 'already exists'", round, name, errs[1])
		}

		ks := fmt.Sprintf("dk%d", round)
		exec(t, clients[0], client.One, fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", ks))
		errs = race(clients, "DROP KEYSPACE "+ks, fmt.Sprintf("CREATE TABLE %s.t (k text PRIMARY KEY)", ks))
		if errs[0] != nil {
			t.Fatalf("round %d: DROP KEYSPACE %s racing a CREATE TABLE in it: %v, want success", round, ks, errs[0])
		}
		var ie *client.InvalidError
		if errs[1] != nil && !(errors.As(errs[1], &ie) && strings.Contains(ie.Message, "unknown keyspace "+ks)) {
			t.Fatalf("round %d: CREATE TABLE %s.t racing DROP KEYSPACE: %v, want success or 'unknown keyspace %s'", round, ks, errs[1], ks)
		}
		tc.waitSchema(fmt.Sprintf("round %d: no node has keyspace %s", round, ks), func(s *schema.Schema) bool {
			_, ok := s.Keyspace(ks)
			return !ok && len(s.Tables(ks)) == 0
		})
	}
}

// TestDDLWithMajorityDownFails stops two of three nodes: DDL through the third fails with an
// error saying a majority is needed and naming the down nodes, and changes nothing.
func TestDDLWithMajorityDownFails(t *testing.T) {
	tc := startCluster(t, 3)
	c0 := tc.client(0)
	exec(t, c0, client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	down := []string{tc.nodes[1].ID(), tc.nodes[2].ID()}
	tc.stop(1)
	tc.stop(2)
	err := execErr(c0, "CREATE TABLE r.t (k text PRIMARY KEY)")
	if err == nil || !strings.Contains(err.Error(), "needs 2 of the cluster's 3 nodes to agree") ||
		!strings.Contains(err.Error(), down[0]) || !strings.Contains(err.Error(), down[1]) {
		t.Fatalf("CREATE TABLE with 2 of 3 nodes down: %v, want an error saying 2 of 3 nodes must agree and naming %v", err, down)
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("CREATE TABLE with 2 of 3 nodes down: code %v, want Unavailable (retrying may succeed once nodes return)", status.Code(err))
	}
	if _, ok := tc.nodes[0].Schema().Table("r", "t"); ok {
		t.Errorf("the failed CREATE TABLE left r.t in node 0's schema")
	}
	if err := execErr(c0, "DROP KEYSPACE r"); err == nil || !strings.Contains(err.Error(), "needs 2 of the cluster's 3 nodes") {
		t.Errorf("DROP KEYSPACE with 2 of 3 nodes down: %v, want the majority error", err)
	}
	// With one node back there is a majority again.
	tc.restart(1)
	tc.waitLive(20*time.Second, 2)
	poll.Must(t, 20*time.Second, "CREATE TABLE succeeds with 2 of 3 nodes up", poll.Bool(func() bool {
		return execErr(c0, "CREATE TABLE IF NOT EXISTS r.t (k text PRIMARY KEY)") == nil
	}))
}

// tableSeries returns the metric families of g that have a series for table ks.table.
func tableSeries(t *testing.T, g prometheus.Gatherer, ks, table string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var names []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if hasLabels(m, []string{"keyspace", ks, "table", table}) {
				names = append(names, mf.GetName())
				break
			}
		}
	}
	return names
}

// tableKeys counts the keys node i stores for table id.
func (tc *testCluster) tableKeys(i int, id schema.TableID) int {
	tc.t.Helper()
	n, err := tc.nodes[i].Store().TableKeys(id)
	if err != nil {
		tc.t.Fatalf("node %d: count the keys of table id %d: %v", i, id, err)
	}
	return n
}

func tableID(t *testing.T, s *schema.Schema, ks, table string) schema.TableID {
	t.Helper()
	tb, ok := s.Table(ks, table)
	if !ok {
		t.Fatalf("no table %s.%s in the schema", ks, table)
	}
	return tb.ID
}

// TestDropTableDeletesDataAndStateOnEveryNode drops a table with data and limiter state on
// three nodes: its keys leave every node's store, its metric series leave every node's
// registry, a table beside it keeps its data, and a table created again under the name starts
// empty.
func TestDropTableDeletesDataAndStateOnEveryNode(t *testing.T) {
	tc := startCluster(t, 3)
	c := tc.client(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE r.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 1000}",
		"CREATE TABLE r.keep (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 1000}",
	} {
		exec(t, c, client.One, stmt)
	}
	for i := range 30 {
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO r.t (k, v) VALUES ('k%d', %d)", i, i))
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO r.keep (k, v) VALUES ('k%d', %d)", i, i))
	}
	id, keepID := tableID(t, tc.nodes[0].Schema(), "r", "t"), tableID(t, tc.nodes[0].Schema(), "r", "keep")
	keep := make([]int, 3)
	for i := range tc.nodes {
		if n := tc.tableKeys(i, id); n == 0 {
			t.Fatalf("node %d stores no keys of r.t before the drop; the test writes at ALL", i)
		}
		keep[i] = tc.tableKeys(i, keepID)
		if len(tableSeries(t, tc.nodes[i].Registry(), "r", "t")) == 0 {
			t.Fatalf("node %d exports no series for r.t before the drop; the test needs some to see them go", i)
		}
	}
	if s := tableSeries(t, tc.nodes[0].Registry(), "r", "t"); !slices.Contains(s, "kvnode_coordinator_table_requests_total") {
		t.Fatalf("coordinator node 0 exports %v for r.t, want kvnode_coordinator_table_requests_total among them", s)
	}

	exec(t, tc.client(1), client.One, "DROP TABLE r.t")
	tc.waitSchema("no node has r.t", func(s *schema.Schema) bool { _, ok := s.Table("r", "t"); return !ok })
	for i := range tc.nodes {
		if n := tc.tableKeys(i, id); n != 0 {
			t.Errorf("node %d still stores %d keys of the dropped table r.t", i, n)
		}
		if n := tc.tableKeys(i, keepID); n != keep[i] {
			t.Errorf("node %d stores %d keys of r.keep after r.t was dropped, want %d as before", i, n, keep[i])
		}
		if s := tableSeries(t, tc.nodes[i].Registry(), "r", "t"); len(s) != 0 {
			t.Errorf("node %d still exports series for the dropped table r.t in %v", i, s)
		}
		if s := tableSeries(t, tc.nodes[i].Registry(), "r", "keep"); len(s) == 0 {
			t.Errorf("node %d lost the series of r.keep when r.t was dropped", i)
		}
	}

	exec(t, c, client.One, "CREATE TABLE r.t (k text PRIMARY KEY, v int)")
	if newID := tableID(t, tc.nodes[0].Schema(), "r", "t"); newID == id {
		t.Fatalf("r.t created again has the dropped table's id %d", id)
	}
	for i := range 30 {
		if rows := exec(t, c, client.All, fmt.Sprintf("SELECT v FROM r.t WHERE k = 'k%d'", i)).Rows; len(rows) != 0 {
			t.Fatalf("r.t created again returns %v for k%d, want no rows", rows, i)
		}
	}
}

// TestDropReachesANodeThatWasDown drops a table and a keyspace while a node is down: when the
// node comes back and learns of the drops, their data leaves its store too.
func TestDropReachesANodeThatWasDown(t *testing.T) {
	tc := startCluster(t, 3)
	c := tc.client(0)
	for _, stmt := range []string{
		"CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE r.t (k text PRIMARY KEY, v int)",
		"CREATE KEYSPACE gone WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE gone.u (k text PRIMARY KEY, v int)",
	} {
		exec(t, c, client.One, stmt)
	}
	for i := range 20 {
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO r.t (k, v) VALUES ('k%d', %d)", i, i))
		exec(t, c, client.All, fmt.Sprintf("INSERT INTO gone.u (k, v) VALUES ('k%d', %d)", i, i))
	}
	tID, uID := tableID(t, tc.nodes[0].Schema(), "r", "t"), tableID(t, tc.nodes[0].Schema(), "gone", "u")
	tc.stop(2)
	exec(t, c, client.One, "DROP TABLE r.t")
	exec(t, c, client.One, "DROP KEYSPACE gone")
	tc.restart(2)
	tc.waitSchema("every node, the restarted one too, has neither r.t nor gone", func(s *schema.Schema) bool {
		_, hasT := s.Table("r", "t")
		_, hasK := s.Keyspace("gone")
		return !hasT && !hasK
	})
	for i := range tc.nodes {
		if n, m := tc.tableKeys(i, tID), tc.tableKeys(i, uID); n != 0 || m != 0 {
			t.Errorf("node %d stores %d keys of the dropped r.t and %d of gone.u, want none", i, n, m)
		}
	}
}

// TestDDLOnImpossibleKeyspaceNamesFailsAsInvalid: names no keyspace can have fail with the
// schema's own message, not a consensus error.
func TestDDLOnImpossibleKeyspaceNamesFailsAsInvalid(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(0)
	for stmt, want := range map[string]string{
		`CREATE KEYSPACE "a-b" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`: "may contain only letters, digits and underscores",
		`DROP KEYSPACE "a b"`:                      `unknown keyspace "a b"`,
		`CREATE TABLE "x.y".t (k int PRIMARY KEY)`: `unknown keyspace "x.y"`,
		"CREATE KEYSPACE " + strings.Repeat("k", 49) + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}": "the maximum is 48",
	} {
		var ie *client.InvalidError
		if err := execErr(c, stmt); !errors.As(err, &ie) || !strings.Contains(ie.Message, want) {
			t.Errorf("%s: %v, want an invalid-statement error containing %q", stmt, err, want)
		}
	}
}

// TestStartDeletesDataOfTablesNotInTheSchema plants keys of a table id the schema does not
// hold (as a write that landed after its table's drop would leave) in a stopped node's store:
// the node deletes them when it starts, and keeps its tables' data.
func TestStartDeletesDataOfTablesNotInTheSchema(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(0)
	exec(t, c, client.One, "CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.One, "CREATE TABLE r.t (k text PRIMARY KEY, v int)")
	exec(t, c, client.One, "INSERT INTO r.t (k, v) VALUES ('a', 1)")
	live := tableID(t, tc.nodes[0].Schema(), "r", "t")
	tc.stop(0)

	st, err := replica.Open(filepath.Join(tc.dirs[0], "data"), smallStorage)
	if err != nil {
		t.Fatal(err)
	}
	create, err := cql.ParseStatement("CREATE TABLE r.orphan (k text PRIMARY KEY, v int)")
	if err != nil {
		t.Fatal(err)
	}
	const orphan = schema.TableID(0xdead)
	tb, err := schema.NewTable(create.(*cql.CreateTableStmt), "r", orphan, schema.Version{Timestamp: 1, Node: "x"})
	if err != nil {
		t.Fatal(err)
	}
	v := int64(1)
	if err := st.Apply(tb, &replicapb.Mutation{
		TableId: uint64(orphan), PartitionKey: [][]byte{[]byte("a")}, Token: partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte("a")})),
		Rows: []*replicapb.Row{{Marker: &v}},
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.TableKeys(orphan); n == 0 {
		t.Fatal("planting the orphan keys wrote nothing")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	tc.restart(0)
	if n := tc.tableKeys(0, orphan); n != 0 {
		t.Errorf("after a start, %d keys of table id %#x (not in the schema) remain", n, uint64(orphan))
	}
	if n := tc.tableKeys(0, live); n == 0 {
		t.Errorf("the start deleted the keys of r.t, a table in the schema")
	}
}
