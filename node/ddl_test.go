package node_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
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
	waitFor(tc.t, 20*time.Second, what, func() bool {
		for _, nd := range tc.nodes {
			if nd != nil && !cond(nd.Schema()) {
				return false
			}
		}
		return true
	})
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
	if _, ok := tc.nodes[0].Schema().Table("r", "t"); ok {
		t.Errorf("the failed CREATE TABLE left r.t in node 0's schema")
	}
	if err := execErr(c0, "DROP KEYSPACE r"); err == nil || !strings.Contains(err.Error(), "needs 2 of the cluster's 3 nodes") {
		t.Errorf("DROP KEYSPACE with 2 of 3 nodes down: %v, want the majority error", err)
	}
	// With one node back there is a majority again.
	tc.restart(1)
	tc.waitLive(20*time.Second, 2)
	waitFor(t, 20*time.Second, "CREATE TABLE succeeds with 2 of 3 nodes up", func() bool {
		return execErr(c0, "CREATE TABLE IF NOT EXISTS r.t (k text PRIMARY KEY)") == nil
	})
}
