package interop

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gocql/gocql"
)

// TestGocqlLWT runs lightweight transactions through gocql's own APIs on a 3-node cluster:
// ScanCAS and MapScanCAS read [applied] and the current values, SERIAL reads see what a
// conditional write chose, and 16 clients racing INSERT ... IF NOT EXISTS on one key through
// every node get at most one applied, the row a SERIAL read shows.
func TestGocqlLWT(t *testing.T) {
	c := startCluster(t)
	cfg := newGocqlCluster(c.Hosts(), c.CQLPort)
	cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0} // a CAS timeout is an answer, not a retry
	session, err := cfg.CreateSession()
	if err != nil {
		t.Fatalf("gocql: connecting to %v: %v", c.CQLAddrs(), err)
	}
	defer session.Close()
	for _, ddl := range []string{
		"CREATE KEYSPACE lwt WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE lwt.kv (k text PRIMARY KEY, v int, o text)",
	} {
		if err := session.Query(ddl).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", ddl, err)
		}
	}

	ins := "INSERT INTO lwt.kv (k, v, o) VALUES (?, ?, ?) IF NOT EXISTS"
	var k, o string
	var v int
	applied, err := session.Query(ins, "a", 1, "first").ScanCAS(&k, &v, &o)
	if err != nil || !applied {
		t.Fatalf("gocql: %s: applied=%v, %v; want applied", ins, applied, err)
	}
	applied, err = session.Query(ins, "a", 2, "second").ScanCAS(&k, &o, &v) // columns in table order: k, o, v
	if err != nil || applied || k != "a" || v != 1 || o != "first" {
		t.Fatalf("gocql: %s again: applied=%v k=%q v=%d o=%q, %v; want not applied with the existing row", ins, applied, k, v, o, err)
	}
	upd := "UPDATE lwt.kv SET v = ? WHERE k = ? IF v = ?"
	m := map[string]any{}
	applied, err = session.Query(upd, 5, "a", 7).MapScanCAS(m)
	if err != nil || applied || m["v"] != 1 {
		t.Fatalf("gocql: %s with a false condition: applied=%v %v, %v; want not applied with v = 1", upd, applied, m, err)
	}
	if applied, err = session.Query(upd, 5, "a", 1).ScanCAS(); err != nil || !applied {
		t.Fatalf("gocql: %s with a true condition: applied=%v, %v", upd, applied, err)
	}
	if err := session.Query("SELECT v FROM lwt.kv WHERE k = ?", "a").SerialConsistency(gocql.Serial).Consistency(gocql.Serial).Scan(&v); err != nil || v != 5 {
		t.Fatalf("gocql: SERIAL read: v=%d, %v; want 5", v, err)
	}
	if err := session.Query("SELECT v FROM lwt.kv WHERE k = ?", "a").Consistency(gocql.LocalSerial).Scan(&v); err != nil || v != 5 {
		t.Fatalf("gocql: LOCAL_SERIAL read: v=%d, %v; want 5", v, err)
	}
	// A conditional batch on one partition.
	b := session.NewBatch(gocql.LoggedBatch)
	b.Query("UPDATE lwt.kv SET v = ? WHERE k = ? IF v = ?", 6, "a", 5)
	if applied, iter, err := session.ExecuteBatchCAS(b); err != nil || !applied {
		t.Fatalf("gocql: conditional batch: applied=%v, %v; want applied", applied, err)
	} else if err := iter.Close(); err != nil {
		t.Fatalf("gocql: conditional batch: %v", err)
	}
	mb := map[string]any{}
	if applied, iter, err := session.MapExecuteBatchCAS(b, mb); err != nil || applied || mb["v"] != 6 {
		t.Fatalf("gocql: conditional batch again: applied=%v %v, %v; want not applied with v = 6", applied, mb, err)
	} else {
		iter.Close()
	}
	err = session.Query("INSERT INTO lwt.kv (k, v) VALUES ('b', 1) IF NOT EXISTS USING TIMESTAMP 5").Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "Cannot provide custom timestamp for conditional updates") {
		t.Errorf("gocql: IF NOT EXISTS with USING TIMESTAMP: %v, want Invalid", err)
	}

	// The race, each client with its own connection to one node.
	const clients = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		winners  []string
		timedOut []string
	)
	hosts := c.Hosts()
	for i := range clients {
		cfg := newGocqlCluster([]string{hosts[i%len(hosts)]}, c.CQLPort)
		cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
		cfg.DisableInitialHostLookup = true
		cfg.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
		s, err := cfg.CreateSession()
		if err != nil {
			t.Fatalf("gocql: client %d: %v", i, err)
		}
		defer s.Close()
		wg.Go(func() {
			owner := fmt.Sprintf("client-%d", i)
			var k, o string
			var v int
			applied, err := s.Query(ins, "race", i, owner).ScanCAS(&k, &o, &v)
			mu.Lock()
			defer mu.Unlock()
			var wt *gocql.RequestErrWriteTimeout
			switch {
			case errors.As(err, &wt) && wt.WriteType == "CAS":
				timedOut = append(timedOut, owner)
			case err != nil:
				t.Errorf("gocql: %s: %v", owner, err)
			case applied:
				winners = append(winners, owner)
			case k != "race":
				t.Errorf("gocql: %s not applied with k=%q, want the existing row", owner, k)
			}
		})
	}
	wg.Wait()
	if len(winners) > 1 {
		t.Fatalf("gocql: %d racing inserts applied (%v), want at most 1", len(winners), winners)
	}
	if err := session.Query("SELECT o FROM lwt.kv WHERE k = 'race'").Consistency(gocql.Serial).Scan(&o); err != nil {
		t.Fatalf("gocql: SERIAL read of the race: %v", err)
	}
	if len(winners) == 1 && o != winners[0] || len(winners) == 0 && !contains(timedOut, o) {
		t.Errorf("gocql: SERIAL read shows %q; applied %v, timed out %v", o, winners, timedOut)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
