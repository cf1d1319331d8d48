package interop

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/partitioner"
)

// testGocqlFunctions writes and reads through gocql with Cassandra's native functions: now(),
// currentTimestamp() and blob conversions as values, minTimeuuid(?) and blobAsInt(?) with bound
// arguments, and function and CAST selectors, whose result metadata gocql decodes into Go
// values, prepared (with values) and unprepared (without).
func testGocqlFunctions(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf("CREATE TABLE %s.fns (k text, id timeuuid, at timestamp, v int, b blob, PRIMARY KEY (k, id))", keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	before := time.Now().Add(-time.Second)
	lit := fmt.Sprintf("INSERT INTO %s.fns (k, id, at, v, b) VALUES ('f', now(), currentTimestamp(), 7, bigintAsBlob(7))", keyspace)
	if err := session.Query(lit).Exec(); err != nil { // no values: sent unprepared
		t.Fatalf("gocql: %s: %v", lit, err)
	}
	at := time.Date(2024, 1, 2, 3, 4, 5, 6e6, time.UTC)
	prep := fmt.Sprintf("INSERT INTO %s.fns (k, id, at, v, b) VALUES (?, maxTimeuuid(?), ?, blobAsInt(?), bigintAsBlob(currentTimestamp()))", keyspace)
	if err := session.Query(prep, "f", at, at, []byte{0, 0, 0, 9}).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", prep, err)
	}

	sel := fmt.Sprintf("SELECT token(k), toDate(id), toTimestamp(id), CAST(v AS text), blobAsBigint(b), toUnixTimestamp(at), writetime(v) FROM %s.fns WHERE k = ", keyspace)
	wantCols := []struct {
		name string
		typ  gocql.Type
	}{
		{"system.token(k)", gocql.TypeBigInt}, {"system.todate(id)", gocql.TypeDate}, {"system.totimestamp(id)", gocql.TypeTimestamp},
		{"cast(v as text)", gocql.TypeVarchar}, {"system.blobasbigint(b)", gocql.TypeBigInt}, {"system.tounixtimestamp(at)", gocql.TypeBigInt},
		{"writetime(v)", gocql.TypeBigInt},
	}
	for _, q := range []*gocql.Query{session.Query(sel+"?", "f"), session.Query(sel + "'f'")} {
		iter := q.Iter()
		var gotCols []string
		for _, c := range iter.Columns() {
			gotCols = append(gotCols, fmt.Sprintf("%s %s", c.Name, c.TypeInfo.Type()))
		}
		var wantNames []string
		for _, c := range wantCols {
			wantNames = append(wantNames, fmt.Sprintf("%s %s", c.name, c.typ))
		}
		if !slices.Equal(gotCols, wantNames) {
			t.Errorf("%s: columns %q, want %q", q.Statement(), gotCols, wantNames)
		}
		var (
			token, unix, wt int64
			day, ts         time.Time
			text            string
			n               int64
			rows            int
		)
		for iter.Scan(&token, &day, &ts, &text, &n, &unix, &wt) {
			rows++
			if want := partitioner.Token([]byte("f")); token != want {
				t.Errorf("%s: token(k) = %d, want %d", q.Statement(), token, want)
			}
			switch rows {
			case 1: // maxTimeuuid(at), which sorts first
				if !ts.Equal(at) || day.Format(time.DateOnly) != "2024-01-02" || text != "9" || unix != at.UnixMilli() {
					t.Errorf("%s: row 1 = %v %v %q %d, want %v 2024-01-02 '9' %d", q.Statement(), ts, day, text, unix, at, at.UnixMilli())
				}
				if wt <= 0 || n < before.UnixMilli() { // b is bigintAsBlob(currentTimestamp())
					t.Errorf("%s: row 1 writetime(v) = %d, blobAsBigint(b) = %d, want the write's timestamp and time", q.Statement(), wt, n)
				}
			case 2: // now(), at the coordinator's time
				if ts.Before(before) || ts.After(time.Now().Add(time.Second)) || text != "7" || n != 7 || unix != ts.UnixMilli() {
					t.Errorf("%s: row 2 = %v %q %d %d, want now, '7', 7 and the same time", q.Statement(), ts, text, n, unix)
				}
			}
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("gocql: %s: %v", q.Statement(), err)
		}
		if rows != 2 {
			t.Errorf("%s: %d rows, want 2", q.Statement(), rows)
		}
	}

	rng := fmt.Sprintf("SELECT v FROM %s.fns WHERE k = ? AND id >= minTimeuuid(?) AND id <= maxTimeuuid(?)", keyspace)
	var v int
	if err := session.Query(rng, "f", at, at).Scan(&v); err != nil || v != 9 {
		t.Errorf("gocql: %s (%v): v = %d, %v; want 9", rng, at, v, err)
	}
	bad := fmt.Sprintf("SELECT nosuch(v) FROM %s.fns WHERE k = 'f'", keyspace)
	if err := session.Query(bad).Exec(); err == nil {
		t.Errorf("gocql: %s succeeded, want an error naming the function", bad)
	} else if want := "unknown function nosuch"; !strings.Contains(err.Error(), want) {
		t.Errorf("gocql: %s: %v, want %q", bad, err, want)
	}
}
