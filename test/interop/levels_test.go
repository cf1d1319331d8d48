package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/test/proc"
)

// testLevelAlterAtOnce checks, on the three processes of startAuthCluster, that a service
// level's ALTER is seen by open sessions on every node as soon as the statement returns, with no
// reconnect: a role whose level allows 1 write/s is rejected through each node's session, naming
// the level; after ALTER raises the level, the next write through every session is accepted;
// after ALTER lowers it again, every session is soon rejected once more.
func testLevelAlterAtOnce(t *testing.T, c *proc.Cluster) {
	admin := adminSession(t, c)
	defer admin.Close()
	const role, pw, level = "lv_app", "lv app password", "sl_alter"
	for _, st := range []string{
		"CREATE ROLE " + role + " WITH PASSWORD = '" + pw + "' AND LOGIN = true",
		"GRANT MODIFY ON KEYSPACE " + authKeyspace + " TO " + role,
		"CREATE SERVICE LEVEL " + level + " WITH max_writes_per_second = 1",
		"ATTACH SERVICE LEVEL " + level + " TO " + role,
	} {
		if err := admin.Query(st).Exec(); err != nil {
			t.Fatalf("%s as admin: %v", st, err)
		}
	}
	// One session per node, each pinned to its node: the level's budget is the cluster's, and
	// every node must judge by the new level once ALTER returns.
	var sessions []*gocql.Session
	for _, h := range c.Hosts() {
		cl := newGocqlCluster([]string{h}, c.CQLPort)
		cl.Keyspace = authKeyspace
		cl.Authenticator = gocql.PasswordAuthenticator{Username: role, Password: pw}
		cl.DisableInitialHostLookup = true
		cl.Events.DisableTopologyEvents = true
		cl.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
		s, err := cl.CreateSession()
		if err != nil {
			t.Fatalf("a session as %s on %s: %v", role, h, err)
		}
		defer s.Close()
		sessions = append(sessions, s)
	}
	write := func(s *gocql.Session, i int) error {
		return s.Query("INSERT INTO t (k, v) VALUES (?, ?)", fmt.Sprintf("lv-%d", i%50), i).Exec()
	}
	// untilRejected writes through s until the level rejects a write (at most 200 tries) and
	// checks the rejection names the level.
	untilRejected := func(s *gocql.Session, host, when string) {
		t.Helper()
		for i := range 200 {
			err := write(s, i)
			if err == nil {
				continue
			}
			var rl *gocql.RequestErrRateLimitReached
			if !errors.As(err, &rl) {
				t.Fatalf("%s: a write through %s failed with %v, want accepted or rate limited", when, host, err)
			}
			if msg := err.Error(); !strings.Contains(msg, level) || !strings.Contains(msg, "service level") {
				t.Errorf("%s: the rejection through %s says %q, want it to name service level %s", when, host, msg, level)
			}
			return
		}
		t.Fatalf("%s: 200 writes through %s at a level of 1 write/s were all accepted", when, host)
	}
	for i, s := range sessions {
		untilRejected(s, c.Hosts()[i], "at 1 write/s")
	}
	if err := admin.Query("ALTER SERVICE LEVEL " + level + " WITH max_writes_per_second = 100000").Exec(); err != nil {
		t.Fatalf("ALTER SERVICE LEVEL: %v", err)
	}
	// At 100,000 writes/s the counters (a few hundred at most) are far below twice the limit:
	// every write is admitted, so a rejection here can only be the old level.
	for i, s := range sessions {
		for j := range 5 {
			if err := write(s, j); err != nil {
				t.Fatalf("after ALTER to 100000 writes/s returned, write %d through %s (session opened before): %v", j, c.Hosts()[i], err)
			}
		}
	}
	if err := admin.Query("ALTER SERVICE LEVEL " + level + " WITH max_writes_per_second = 1").Exec(); err != nil {
		t.Fatalf("ALTER SERVICE LEVEL: %v", err)
	}
	for i, s := range sessions {
		untilRejected(s, c.Hosts()[i], "after ALTER back to 1 write/s")
	}
}

// adminSession logs in as the superuser of startAuthCluster.
func adminSession(t *testing.T, c *proc.Cluster) *gocql.Session {
	t.Helper()
	cl := newGocqlCluster(c.Hosts(), c.CQLPort)
	cl.Authenticator = gocql.PasswordAuthenticator{Username: "admin", Password: adminPass}
	s, err := cl.CreateSession()
	if err != nil {
		t.Fatalf("a session as admin: %v", err)
	}
	return s
}
