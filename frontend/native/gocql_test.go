package native_test

import (
	"errors"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// TestGocql runs a real driver, ScyllaDB's gocql (github.com/scylladb/gocql v1.19.0 through
// go.mod's replace), against one in-process node: the handshake and the system tables it reads
// on connect, DDL, prepared statements, paging, a batch and the rate-limit error as its typed
// error. The three-node driver checks are test/interop's.
func TestGocql(t *testing.T) {
	nd := startNode(t)
	host, portStr, _ := net.SplitHostPort(nd.CQLAddr())
	port, _ := strconv.Atoi(portStr)
	cluster := gocql.NewCluster(host)
	cluster.Port = port
	cluster.ProtoVersion = 4
	cluster.Consistency = gocql.Quorum
	cluster.Timeout = waitLimit
	cluster.ConnectTimeout = waitLimit
	cluster.NumConns = 1
	cluster.Logger = log.New(io.Discard, "", 0)
	sess, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql could not connect: %v", err)
	}
	defer sess.Close()

	for _, ddl := range []string{
		"CREATE KEYSPACE gk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE gk.t (k text, c int, v blob, PRIMARY KEY (k, c))",
		"CREATE TABLE gk.hot (k text, c int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 1}",
	} {
		if err := sess.Query(ddl).Exec(); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	err = sess.Query("CREATE KEYSPACE gk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").Exec()
	var exists *gocql.RequestErrAlreadyExists
	if !errors.As(err, &exists) || exists.Keyspace != "gk" {
		t.Errorf("CREATE KEYSPACE again: %v, want *gocql.RequestErrAlreadyExists naming gk", err)
	}

	// Prepared statements: gocql prepares every statement with values, then executes it.
	const rows = 20
	for i := range rows {
		if err := sess.Query("INSERT INTO gk.t (k, c, v) VALUES (?, ?, ?)", "p", i, []byte{byte(i)}).Exec(); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	var v []byte
	if err := sess.Query("SELECT v FROM gk.t WHERE k = ? AND c = ?", "p", 7).Scan(&v); err != nil || len(v) != 1 || v[0] != 7 {
		t.Fatalf("select c=7: v=%v err=%v", v, err)
	}

	// Paging by hand: pages of 7 rows, each with the state for the next.
	var (
		state []byte
		got   []int
		pages int
	)
	for {
		iter := sess.Query("SELECT c FROM gk.t WHERE k = ?", "p").PageSize(7).PageState(state).Iter()
		next := iter.PageState()
		sc := iter.Scanner()
		for sc.Next() {
			var c int
			if err := sc.Scan(&c); err != nil {
				t.Fatal(err)
			}
			got = append(got, c)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if len(next) == 0 || pages > rows {
			break
		}
		state = next
	}
	if len(got) != rows || pages != 3 {
		t.Fatalf("paging read %d rows in %d pages, want %d in 3", len(got), pages, rows)
	}
	for i, c := range got {
		if c != i {
			t.Fatalf("paging read %v, want 0..%d in order", got, rows-1)
		}
	}
	// Automatic paging through the same rows.
	n := 0
	iter := sess.Query("SELECT c FROM gk.t WHERE k = ?", "p").PageSize(6).Iter()
	for var_c := 0; iter.Scan(&var_c); n++ {
	}
	if err := iter.Close(); err != nil || n != rows {
		t.Fatalf("automatic paging read %d rows (err %v), want %d", n, err, rows)
	}

	// A logged batch of a prepared child and a query-string child.
	b := sess.NewBatch(gocql.LoggedBatch)
	b.Query("INSERT INTO gk.t (k, c, v) VALUES (?, ?, ?)", "b", 1, []byte("x"))
	b.Query("INSERT INTO gk.t (k, c, v) VALUES ('b', 2, 0x79)")
	if err := sess.ExecuteBatch(b); err != nil {
		t.Fatalf("batch: %v", err)
	}
	var count int
	if err := sess.Query("SELECT COUNT(*) FROM gk.t WHERE k = 'b'").Scan(&count); err != nil {
		// COUNT may be unsupported: count rows instead.
		count = 0
		it := sess.Query("SELECT c FROM gk.t WHERE k = ?", "b").Iter()
		for var_c := 0; it.Scan(&var_c); count++ {
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if count != 2 {
		t.Fatalf("the batch wrote %d rows, want 2", count)
	}

	// The rate limit: 1 write/s per partition. gocql opts in, so the error is its typed one.
	var rl *gocql.RequestErrRateLimitReached
	deadline := time.Now().Add(waitLimit)
	for i := 0; ; i++ {
		err := sess.Query("INSERT INTO gk.hot (k, c) VALUES (?, ?)", "h", i).Exec()
		if errors.As(err, &rl) {
			break
		}
		if err != nil {
			t.Fatalf("insert %d into the limited table: %v, want success or *gocql.RequestErrRateLimitReached", i, err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no rate-limit error from a partition written far above its limit")
		}
	}
	if rl.OpType != gocql.OpTypeWrite || !rl.RejectedByCoordinator {
		t.Errorf("rate-limit error %+v, want a write rejected by the coordinator", rl)
	}
	if want := "rate limit exceeded for writes on gk.hot (limit 1/s)"; !strings.Contains(rl.Error(), want) {
		t.Errorf("rate-limit message %q does not say %q", rl.Error(), want)
	}
}
