package interop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
)

// testGocqlSchemaEvolution migrates a table's schema with gocql while the application writes to
// it through prepared statements: ALTER TABLE ADD, then INSERT and SELECT of the new columns
// through a statement prepared before the ALTER (the server answers Unprepared and gocql
// prepares it again, so SELECT * sees the new columns), DROP and ADD of a column of the same
// name (its old values stay gone), and TRUNCATE.
func testGocqlSchemaEvolution(t *testing.T, session *gocql.Session) {
	exec := func(stmt string, values ...any) {
		t.Helper()
		if err := session.Query(stmt, values...).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", stmt, err)
		}
	}
	row := func(k string) map[string]any {
		t.Helper()
		m := map[string]any{}
		if err := session.Query("SELECT * FROM "+keyspace+".evolve WHERE k = ?", k).Consistency(gocql.All).MapScan(m); err != nil {
			if err == gocql.ErrNotFound {
				return nil
			}
			t.Fatalf("gocql: SELECT * of %s: %v", k, err)
		}
		return m
	}
	exec("CREATE TABLE " + keyspace + ".evolve (k text PRIMARY KEY, v int)")
	exec("INSERT INTO "+keyspace+".evolve (k, v) VALUES (?, ?)", "a", 1)
	if got := row("a"); len(got) != 2 || got["v"] != 1 {
		t.Fatalf("before ALTER, SELECT * reads %v, want k and v = 1", got)
	}

	// The application writes through a prepared INSERT during the migration.
	var wrote atomic.Int64
	var writeErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := session.Query("INSERT INTO "+keyspace+".evolve (k, v) VALUES (?, ?)", fmt.Sprintf("app%d", i), i).Exec(); err != nil {
				writeErr = err
				return
			}
			wrote.Add(1)
		}
	}()
	exec("ALTER TABLE " + keyspace + ".evolve ADD (w text, n bigint)")
	exec("INSERT INTO "+keyspace+".evolve (k, v, w, n) VALUES (?, ?, ?, ?)", "b", 2, "new", int64(7))
	got := row("b")
	if got["w"] != "new" || got["n"] != int64(7) || got["v"] != 2 {
		t.Errorf("after ALTER ADD, SELECT * (prepared before it) reads %v, want v = 2, w = new, n = 7", got)
	}
	if got := row("a"); len(got) != 4 || got["w"] != "" || got["v"] != 1 {
		t.Errorf("after ALTER ADD, the old row reads %v, want k, v = 1 and empty w, n", got)
	}
	exec("ALTER TABLE " + keyspace + ".evolve DROP w")
	if got := row("b"); len(got) != 3 || got["n"] != int64(7) {
		t.Errorf("after DROP w, SELECT * reads %v, want k, v and n", got)
	}
	exec("ALTER TABLE " + keyspace + ".evolve ADD w text")
	if got := row("b"); got["w"] != "" {
		t.Errorf("after DROP w and ADD w, the dropped value came back: %v", got)
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("the application's prepared INSERT failed during the migration: %v", writeErr)
	}
	if n := wrote.Load(); n == 0 {
		t.Errorf("the application wrote nothing during the migration")
	}
	if got := row("app0"); got == nil || got["v"] != 0 {
		t.Errorf("the application's first row reads %v, want v = 0", got)
	}

	exec("TRUNCATE " + keyspace + ".evolve")
	for _, k := range []string{"a", "b", "app0"} {
		if got := row(k); got != nil {
			t.Errorf("after TRUNCATE, %s reads %v, want no row", k, got)
		}
	}
	exec("INSERT INTO "+keyspace+".evolve (k, v) VALUES (?, ?)", "c", 3)
	if got := row("c"); got["v"] != 3 {
		t.Errorf("a write after TRUNCATE reads %v, want v = 3", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := session.AwaitSchemaAgreement(ctx); err != nil {
		t.Errorf("gocql: schema agreement after the migration: %v", err)
	}
}

// testGocqlAlterKeyspace raises a keyspace's replication factor with gocql: the driver gets a
// schema change (its Exec succeeds after agreement) and the SCHEMA_CHANGE UPDATED KEYSPACE event,
// which makes it read the keyspace's metadata again and see the new factor; an ALTER of a
// keyspace that does not exist is Invalid (0x2200), and one WITH IF EXISTS does nothing.
func testGocqlAlterKeyspace(t *testing.T, session *gocql.Session) {
	const ks = "interop_altered"
	exec := func(stmt string) {
		t.Helper()
		if err := session.Query(stmt).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", stmt, err)
		}
	}
	factor := func() string {
		m, err := session.KeyspaceMetadata(ks)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(m.StrategyOptions["replication_factor"])
	}
	exec("DROP KEYSPACE IF EXISTS " + ks)
	exec("CREATE KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec("CREATE TABLE " + ks + ".t (k text PRIMARY KEY, v int)")
	poll.Must(t, discoverTimeout, "gocql sees "+ks+" at replication factor 1", func() error {
		if got := factor(); got != "1" {
			return fmt.Errorf("replication_factor %s", got)
		}
		return nil
	})
	exec("INSERT INTO " + ks + ".t (k, v) VALUES ('a', 1)")
	exec("ALTER KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2} AND durable_writes = true")
	poll.Must(t, discoverTimeout, "gocql sees "+ks+" at replication factor 2 after ALTER KEYSPACE", func() error {
		if got := factor(); got != "2" {
			return fmt.Errorf("replication_factor %s", got)
		}
		return nil
	})
	if _, err := session.TableMetadata(ks, "t"); err != nil {
		t.Errorf("gocql: table %s.t after ALTER KEYSPACE: %v", ks, err)
	}
	var v int
	// At ALL, both replicas answer and the old one has the row; ONE could ask the new replica,
	// which lacks it until a repair (docs/operations.md, Changing replication).
	if err := session.Query("SELECT v FROM " + ks + ".t WHERE k = 'a'").Consistency(gocql.All).Scan(&v); err != nil || v != 1 {
		t.Errorf("gocql: the row written before ALTER KEYSPACE reads %d, %v; want 1", v, err)
	}
	err := session.Query("ALTER KEYSPACE " + ks + "_nope WITH durable_writes = true").Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "unknown keyspace") {
		t.Errorf("gocql: ALTER KEYSPACE of a missing keyspace answered %v, want Invalid (0x2200) naming the unknown keyspace", err)
	}
	exec("ALTER KEYSPACE IF EXISTS " + ks + "_nope WITH durable_writes = true")
	exec("DROP KEYSPACE " + ks)
}
