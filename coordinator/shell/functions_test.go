package shell_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

var schemaEvents = []string{
	schemaRF3[0],
	"CREATE TABLE ks.ev (k text, id timeuuid, at timestamp, v int, PRIMARY KEY (k, id))",
}

// TestFunctionValuesWriteAndRestrict writes timeuuids with now() at three times of the
// coordinator's clock, finds them back with minTimeuuid and maxTimeuuid, and shows that every
// replica holds the values the coordinator computed: a function's value reconciles like any.
func TestFunctionValuesWriteAndRestrict(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaEvents...)
	var times []time.Time
	for i := range 3 {
		times = append(times, c.clock.Now())
		c.must(fmt.Sprintf("INSERT INTO ev (k, id, at, v) VALUES ('a', now(), currentTimestamp(), %d)", i))
		c.clock.Advance(time.Second)
	}
	ms := func(i int) string { return times[i].UTC().Format("2006-01-02 15:04:05.000Z") }
	sel := fmt.Sprintf("SELECT v, toTimestamp(id), at FROM ev WHERE k = 'a' AND id >= minTimeuuid('%s') AND id <= maxTimeuuid('%s')", ms(1), ms(1))
	want := times[1].UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	if got := c.rowsAt(quorum, sel); !slices.Equal(got, []string{"1 " + want + " " + want}) {
		t.Errorf("%s = %q, want the row written at %s", sel, got, want)
	}
	all := c.rowsAt(all, "SELECT id, v FROM ev WHERE k = 'a'")
	if len(all) != 3 {
		t.Fatalf("rows = %q, want 3", all)
	}
	for _, n := range []coordinator.NodeID{"n1", "n2", "n3"} {
		if got := c.localRows(n, "SELECT id, v FROM ev WHERE k = 'a'"); !slices.Equal(got, all) {
			t.Errorf("replica %s holds %q, want %q: now() is evaluated once, on the coordinator", n, got, all)
		}
	}
}

func TestFunctionSelectorsResultMetadata(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaEvents...)
	c.must("INSERT INTO ev (k, id, at, v) VALUES ('a', 5b6962dd-3f90-11ec-8a2a-0242ac120002, '2021-11-06 12:00:00.250Z', 42) USING TIMESTAMP 1636200000250000")
	res, err := c.exec("n1", quorum, "SELECT token(k), toDate(id), CAST(v AS text), blobAsInt(intAsBlob(v)), toUnixTimestamp(at), system.toTimestamp(toDate(at)), writetime(v), CAST(CAST(v AS double) AS text), dateOf(id), unixTimestampOf(id) FROM ev WHERE k = 'a'")
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []coordinator.RowColumn{
		{Name: "system.token(k)", Type: schema.TypeBigInt},
		{Name: "system.todate(id)", Type: schema.TypeDate},
		{Name: "cast(v as text)", Type: schema.TypeText},
		{Name: "system.blobasint(system.intasblob(v))", Type: schema.TypeInt},
		{Name: "system.tounixtimestamp(at)", Type: schema.TypeBigInt},
		{Name: "system.totimestamp(system.todate(at))", Type: schema.TypeTimestamp},
		{Name: "writetime(v)", Type: schema.TypeBigInt},
		{Name: "cast(cast(v as double) as text)", Type: schema.TypeText},
		{Name: "system.dateof(id)", Type: schema.TypeTimestamp},
		{Name: "system.unixtimestampof(id)", Type: schema.TypeBigInt},
	}
	if !slices.Equal(res.Rows.Columns, wantCols) {
		t.Errorf("columns = %v\nwant %v", res.Rows.Columns, wantCols)
	}
	token := partitioner.Token([]byte("a"))
	// The timeuuid is of 2021-11-07 06:02:58.311650 UTC (Python's uuid.UUID(...).time says so).
	want := fmt.Sprintf("%d 2021-11-07 '42' 42 1636200000250 2021-11-06T00:00:00Z 1636200000250000 '42.0' 2021-11-07T06:02:58.311Z 1636264978311", token)
	if got := formatRows(res.Rows); len(got) != 1 || got[0] != want {
		t.Errorf("row = %q\nwant %q", got, want)
	}
	// A value a function refuses in a row is the statement's error (Invalid), as in Cassandra.
	_, err = c.exec("n1", quorum, "SELECT blobAsBigint(intAsBlob(v)) FROM ev WHERE k = 'a'")
	var inv *coordinator.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "is not a valid binary representation for type bigint") {
		t.Errorf("blobAsBigint of 4 bytes: %v, want an InvalidError", err)
	}
}

func TestPreparedFunctionArguments(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaEvents...)
	ins := c.prepare("n1", "INSERT INTO ev (k, id, v) VALUES (?, maxTimeuuid(?), blobAsInt(?))")
	wantVars := []string{"k text", "arg0(system.maxtimeuuid) timestamp", "arg0(system.blobasint) blob"}
	var got []string
	for _, v := range ins.Variables {
		got = append(got, v.Name+" "+v.Type.String())
	}
	if !slices.Equal(got, wantVars) {
		t.Errorf("PREPARED variables %q, want %q", got, wantVars)
	}
	at := time.Date(2024, 1, 2, 3, 4, 5, 6e6, time.UTC)
	if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text("b"), val(schema.EncodeTimestamp(at)), val(schema.EncodeInt(9))}}); err != nil {
		t.Fatal(err)
	}
	c.settle()
	sel := c.prepare("n1", "SELECT v, toUnixTimestamp(id) FROM ev WHERE k = ? AND id > minTimeuuid(?)")
	if len(sel.Variables) != 2 || sel.Variables[1].Name != "arg0(system.mintimeuuid)" || sel.Variables[1].Type != schema.TypeTimestamp {
		t.Errorf("PREPARED variables %v, want the second arg0(system.mintimeuuid) timestamp", sel.Variables)
	}
	if cols := sel.Columns; len(cols) != 2 || cols[1] != (coordinator.RowColumn{Name: "system.tounixtimestamp(id)", Type: schema.TypeBigInt}) {
		t.Errorf("PREPARED columns %v", cols)
	}
	row := []string{fmt.Sprintf("9 %d", at.UnixMilli())}
	for _, tt := range []struct {
		after time.Time
		want  []string
	}{
		{at.Add(-time.Millisecond), row},
		{at, row}, // maxTimeuuid(at) sorts after minTimeuuid(at)
		{at.Add(time.Millisecond), []string{}},
	} {
		res, err := c.run("n1", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("b"), val(schema.EncodeTimestamp(tt.after))}})
		if err != nil {
			t.Fatal(err)
		}
		if got := formatRows(res.Rows); !slices.Equal(got, tt.want) {
			t.Errorf("id > minTimeuuid(%v): %q, want %q", tt.after, got, tt.want)
		}
	}
	if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text("b"), val(schema.EncodeTimestamp(at)), val([]byte{1})}}); err == nil || !strings.Contains(err.Error(), "not a valid binary representation for type int") {
		t.Errorf("blobAsInt(0x01) = %v, want a refusal", err)
	}
}

func TestFunctionErrorsNameTheFunction(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaEvents...)
	for _, tt := range []struct{ stmt, want string }{
		{"SELECT floor(v) FROM ev WHERE k = 'a'", "function floor is not supported"},
		{"SELECT nosuch(v) FROM ev WHERE k = 'a'", "unknown function nosuch"},
		{"SELECT toDate(count(*)) FROM ev WHERE k = 'a'", "aggregate functions (COUNT) are only supported as selectors of their own"},
		{"INSERT INTO ev (k, id, v) VALUES ('a', now(), toDate(now()))", "1:47: column v: function todate returns date, which cannot be assigned to int"},
	} {
		_, err := c.exec("n1", quorum, tt.stmt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.stmt, err, tt.want)
		}
	}
}
