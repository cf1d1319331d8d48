package interop

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gocql/gocql"
)

// TestGocqlCounter runs counters through gocql on a 3-node cluster: the table's metadata says
// counter, a prepared UPDATE ... SET c = c + ? binds an int64 (its marker is of type counter),
// concurrent increments through every node sum exactly at every consistency level, COUNTER
// batches apply, and INSERT is refused as Invalid.
func TestGocqlCounter(t *testing.T) {
	c := startCluster(t)
	cfg := newGocqlCluster(c.Hosts(), c.CQLPort)
	cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0} // a counter update is never retried
	session, err := cfg.CreateSession()
	if err != nil {
		t.Fatalf("gocql: connecting to %v: %v", c.CQLAddrs(), err)
	}
	defer session.Close()
	for _, ddl := range []string{
		"CREATE KEYSPACE ctr WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ctr.hits (page text, day int, views counter, clicks counter, PRIMARY KEY (page, day))",
	} {
		if err := session.Query(ddl).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", ddl, err)
		}
	}
	if err := session.AwaitSchemaAgreement(t.Context()); err != nil {
		t.Fatalf("gocql: schema agreement: %v", err)
	}
	km, err := session.KeyspaceMetadata("ctr")
	if err != nil {
		t.Fatalf("gocql: KeyspaceMetadata: %v", err)
	}
	if col, ok := km.Tables["hits"].Columns["views"]; !ok || col.Type != "counter" {
		t.Errorf("gocql: metadata of hits.views = %+v, want type counter", col)
	}

	upd := "UPDATE ctr.hits SET views = views + ? WHERE page = ? AND day = ?"
	var wg sync.WaitGroup
	var mu sync.Mutex
	want := int64(0)
	for w := range 6 {
		wg.Go(func() {
			s, err := newGocqlCluster(c.Hosts()[w%3:w%3+1], c.CQLPort).CreateSession()
			if err != nil {
				t.Errorf("gocql: session to node %d: %v", w%3, err)
				return
			}
			defer s.Close()
			for i := range 20 {
				n := int64(w*100 + i)
				if err := s.Query(upd, n, "home", 1).Consistency(gocql.Quorum).Exec(); err != nil {
					t.Errorf("gocql: %s (%d): %v", upd, n, err)
					return
				}
				mu.Lock()
				want += n
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := session.Query("UPDATE ctr.hits SET clicks = clicks - ? WHERE page = ? AND day = ?", int64(3), "home", 1).Exec(); err != nil {
		t.Fatalf("gocql: decrement: %v", err)
	}
	for _, cl := range []gocql.Consistency{gocql.One, gocql.Quorum, gocql.All} {
		var views, clicks int64
		if err := session.Query("SELECT views, clicks FROM ctr.hits WHERE page = ? AND day = ?", "home", 1).Consistency(cl).Scan(&views, &clicks); err != nil || views != want || clicks != -3 {
			t.Errorf("gocql: read at %v: views=%d clicks=%d, %v; want %d and -3", cl, views, clicks, err, want)
		}
	}

	b := session.NewBatch(gocql.CounterBatch)
	b.Query(upd, int64(2), "a", 1)
	b.Query(upd, int64(3), "a", 1)
	b.Query(upd, int64(4), "b", 1)
	if err := session.ExecuteBatch(b); err != nil {
		t.Fatalf("gocql: COUNTER batch: %v", err)
	}
	var a int64
	if err := session.Query("SELECT views FROM ctr.hits WHERE page = 'a' AND day = 1").Consistency(gocql.All).Scan(&a); err != nil || a != 5 {
		t.Errorf("gocql: after a COUNTER batch views = %d, %v; want 5", a, err)
	}
	lb := session.NewBatch(gocql.LoggedBatch)
	lb.Query(upd, int64(1), "a", 1)
	if err := session.ExecuteBatch(lb); err == nil || !strings.Contains(err.Error(), "Cannot include a counter statement in a logged batch") {
		t.Errorf("gocql: counter update in a LOGGED batch: %v, want Cassandra's refusal", err)
	}
	err = session.Query("INSERT INTO ctr.hits (page, day, views) VALUES ('x', 1, 1)").Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "INSERT statements are not allowed on counter tables") {
		t.Errorf("gocql: INSERT into a counter table: %v, want Invalid", err)
	}
}
