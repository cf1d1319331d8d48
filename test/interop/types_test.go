package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/schema"
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

// testGocqlFrozen writes a table with a frozen map (of frozen lists), a tuple clustering column
// (DESC) and a frozen set through gocql's prepared statements and literals, and checks the
// values, the clustering order (Cassandra's tuple order, reversed) and gocql's metadata types.
func testGocqlFrozen(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf(`CREATE TABLE %s.frozen (k frozen<list<int>>, c tuple<int, text>, m frozen<map<text, frozen<list<int>>>>,
		s frozen<set<text>>, d duration, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)`, keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	type row struct {
		c []any
		m map[string][]int
		s []string
		d gocql.Duration
	}
	key := []int{1, -2}
	// gocql cannot bind a whole tuple (it counts a tuple marker as one value per component but
	// marshals one value into it), so the components are bound inside a tuple literal.
	ins := fmt.Sprintf("INSERT INTO %s.frozen (k, c, m, s, d) VALUES (?, (?, ?), ?, ?, ?)", keyspace)
	rows := []row{
		{[]any{1, "b"}, map[string][]int{"x": {1, 2}, "a": {}}, []string{"q", "p"}, gocql.Duration{Days: 1}},
		{[]any{-5, "z"}, map[string][]int{}, nil, gocql.Duration{Nanoseconds: 7}},
		{[]any{1, "a"}, map[string][]int{"k": {3}}, []string{"only"}, gocql.Duration{Months: 2}},
	}
	for _, r := range rows {
		if err := session.Query(ins, key, r.c[0], r.c[1], r.m, r.s, r.d).Exec(); err != nil {
			t.Fatalf("gocql: %s with %+v: %v", ins, r, err)
		}
	}
	lit := fmt.Sprintf("INSERT INTO %s.frozen (k, c, m, s, d) VALUES ([1, -2], (1, NULL), {'b': [4, 4], 'a': [5]}, {'y', 'x', 'y'}, 1h)", keyspace)
	if err := session.Query(lit).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", lit, err)
	}
	// DESC: (1, 'b'), (1, 'a'), (1, null), (-5, 'z'); a null component sorts first ascending.
	want := []string{
		"(1, b) map[a:[] x:[1 2]] [p q] 1d",
		"(1, a) map[k:[3]] [only] 2mo",
		"(1, <nil>) map[a:[5] b:[4 4]] [x y] 1h",
		"(-5, z) map[] [] 7ns",
	}
	iter := session.Query(fmt.Sprintf("SELECT c, m, s, d FROM %s.frozen WHERE k = ?", keyspace), key).Iter()
	var got []string
	var (
		c1 *int
		c2 *string
		m  map[string][]int
		s  []string
		d  gocql.Duration
	)
	for iter.Scan(&c1, &c2, &m, &s, &d) { // gocql flattens a tuple into one destination per component
		show := func(p any) string {
			switch p := p.(type) {
			case *int:
				if p != nil {
					return fmt.Sprint(*p)
				}
			case *string:
				if p != nil {
					return *p
				}
			}
			return "<nil>"
		}
		got = append(got, fmt.Sprintf("(%s, %s) %v %v %s", show(c1), show(c2), m, s, durationString(d)))
		c1, c2 = nil, nil
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("gocql: reading the frozen table: %v", err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("gocql read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A clustering restriction on the tuple, its components bound.
	iter = session.Query(fmt.Sprintf("SELECT d FROM %s.frozen WHERE k = ? AND c > (?, ?)", keyspace), key, 1, "a").Iter()
	var ds []string
	for iter.Scan(&d) {
		ds = append(ds, durationString(d))
	}
	if err := iter.Close(); err != nil || strings.Join(ds, " ") != "1d" {
		t.Errorf("gocql: rows with c > (1, 'a') have d %q, %v; want only 1d, the row (1, 'b')", ds, err)
	}
	poll.Must(t, discoverTimeout, "gocql knows table frozen", func() error {
		_, err := session.TableMetadata(keyspace, "frozen")
		return err
	})
	tm, err := session.TableMetadata(keyspace, "frozen")
	if err != nil {
		t.Fatalf("gocql: table metadata of frozen: %v", err)
	}
	for col, typ := range map[string]string{
		"k": "frozen<list<int>>", "c": "frozen<tuple<int, text>>", "m": "frozen<map<text, frozen<list<int>>>>",
		"s": "frozen<set<text>>", "d": "duration",
	} {
		if cm, ok := tm.Columns[col]; !ok || cm.Type != typ {
			t.Errorf("gocql sees column frozen.%s as %+v, want type %s", col, cm, typ)
		}
	}
	bad := fmt.Sprintf("CREATE TABLE %s.nonfrozen (k int PRIMARY KEY, l list<list<int>>)", keyspace)
	err = session.Query(bad).Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "non-frozen collections are not allowed inside collections") {
		t.Errorf("gocql: %s answered %v, want Invalid saying non-frozen collections are not allowed inside collections", bad, err)
	}
}

// durationString prints d as Cassandra does.
func durationString(d gocql.Duration) string {
	return schema.Duration{Months: d.Months, Days: d.Days, Nanoseconds: d.Nanoseconds}.String()
}
