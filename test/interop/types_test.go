package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
)

// testGocqlDuration writes duration values through gocql, prepared (gocql.Duration, the
// protocol's vint triple) and as literals in the standard and ISO 8601 forms, reads them back,
// and checks that gocql's table metadata calls the column duration and that a duration in the
// primary key is refused as Cassandra refuses it.
func testGocqlDuration(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf("CREATE TABLE %s.durs (k text, c int, d duration, PRIMARY KEY (k, c))", keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	want := map[int]gocql.Duration{
		1: {Months: 14, Days: 3, Nanoseconds: int64(4*time.Hour + 5*time.Nanosecond)},
		2: {Months: -1, Days: -2, Nanoseconds: -3},
		3: {},
		4: {Nanoseconds: int64(90 * time.Minute)},       // 1h30m
		5: {Days: 1, Nanoseconds: int64(2 * time.Hour)}, // P1DT2H
		6: {Days: -21},                                  // -P3W
	}
	ins := fmt.Sprintf("INSERT INTO %s.durs (k, c, d) VALUES (?, ?, ?)", keyspace)
	for c := 1; c <= 3; c++ {
		if err := session.Query(ins, "d", c, want[c]).Exec(); err != nil {
			t.Fatalf("gocql: %s with %+v: %v", ins, want[c], err)
		}
	}
	for c, lit := range map[int]string{4: "1h30m", 5: "P1DT2H", 6: "-P3W"} {
		q := fmt.Sprintf("INSERT INTO %s.durs (k, c, d) VALUES ('d', %d, %s)", keyspace, c, lit)
		if err := session.Query(q).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", q, err)
		}
	}
	iter := session.Query(fmt.Sprintf("SELECT c, d FROM %s.durs WHERE k = ?", keyspace), "d").Iter()
	if cols := iter.Columns(); len(cols) != 2 || cols[1].TypeInfo.Type() != gocql.TypeDuration {
		t.Errorf("gocql: result metadata %v, want d of type duration", cols)
	}
	var (
		c    int
		d    gocql.Duration
		rows int
	)
	for iter.Scan(&c, &d) {
		rows++
		if d != want[c] {
			t.Errorf("gocql: row c=%d has d = %+v, want %+v", c, d, want[c])
		}
	}
	if err := iter.Close(); err != nil || rows != len(want) {
		t.Errorf("gocql: read %d rows, %v; want %d", rows, err, len(want))
	}
	poll.Must(t, discoverTimeout, "gocql knows table durs", func() error {
		_, err := session.TableMetadata(keyspace, "durs")
		return err
	})
	tm, err := session.TableMetadata(keyspace, "durs")
	if err != nil {
		t.Fatalf("gocql: table metadata of durs: %v", err)
	}
	if col, ok := tm.Columns["d"]; !ok || col.Type != "duration" {
		t.Errorf("gocql sees column durs.d as %+v, want type duration", col)
	}
	bad := fmt.Sprintf("CREATE TABLE %s.durkey (k text, d duration, PRIMARY KEY (k, d))", keyspace)
	err = session.Query(bad).Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "duration type is not supported for PRIMARY KEY column 'd'") {
		t.Errorf("gocql: %s answered %v, want Invalid (0x2200) naming the PRIMARY KEY column", bad, err)
	}
}
