package shell_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

// val and unsetVal build bound values.
func val(b []byte) coordinator.Value { return coordinator.Value{Bytes: b} }

var unsetVal = coordinator.Value{Unset: true}

func text(s string) coordinator.Value { return val(schema.EncodeText(s)) }
func intv(n int32) coordinator.Value  { return val(schema.EncodeInt(n)) }

// prepare prepares text on node in keyspace ks, failing the test on an error.
func (c *cluster) prepare(node coordinator.NodeID, text string) *coordinator.Prepared {
	c.t.Helper()
	p, err := c.executors[node].Prepare(context.Background(), text, "ks")
	if err != nil {
		c.t.Fatalf("Prepare(%s) on %s: %v", text, node, err)
	}
	return p
}

// run executes a statement through node at QUORUM.
func (c *cluster) run(node coordinator.NodeID, st coordinator.Statement) (coordinator.Result, error) {
	if st.Consistency == 0 {
		st.Consistency = quorum
	}
	if st.Keyspace == "" {
		st.Keyspace = "ks"
	}
	return c.executors[node].Execute(context.Background(), st)
}

func TestPrepareDescribesMarkersAndColumns(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	const q = "SELECT v, c FROM t WHERE k = ? AND c > ? LIMIT ?"
	p := c.prepare("n1", q)
	wantVars := []coordinator.Variable{
		{Keyspace: "ks", Table: "t", Name: "k", Type: schema.TypeText},
		{Keyspace: "ks", Table: "t", Name: "c", Type: schema.TypeInt},
		{Keyspace: "ks", Table: "t", Name: "[limit]", Type: schema.TypeInt},
	}
	if !reflect.DeepEqual(p.Variables, wantVars) || !slices.Equal(p.PKIndexes, []int{0}) {
		t.Errorf("Prepare(%s): Variables %v, PKIndexes %v; want %v, [0]", q, p.Variables, p.PKIndexes, wantVars)
	}
	wantCols := []coordinator.RowColumn{{Name: "v", Type: schema.TypeText}, {Name: "c", Type: schema.TypeInt}}
	if !reflect.DeepEqual(p.Columns, wantCols) || p.RowsKeyspace != "ks" || p.RowsTable != "t" {
		t.Errorf("Prepare(%s): Columns %v of %s.%s, want %v of ks.t", q, p.Columns, p.RowsKeyspace, p.RowsTable, wantCols)
	}
	if p2 := c.prepare("n2", q); p2.ID != p.ID || p.ID != coordinator.PreparedID(q, "ks") {
		t.Errorf("the same statement prepared on n1 and n2 has IDs %x and %x; want both %x", p.ID, p2.ID, coordinator.PreparedID(q, "ks"))
	}
	if coordinator.PreparedID(q, "other") == p.ID || coordinator.PreparedID(q+" ", "ks") == p.ID {
		t.Error("PreparedID does not depend on the keyspace and the text")
	}
	p = c.prepare("n1", "INSERT INTO t (v, c, k) VALUES (?, ?, ?) USING TIMESTAMP ?")
	if !slices.Equal(p.PKIndexes, []int{2}) || p.Columns != nil || len(p.Variables) != 4 || p.Variables[3].Name != "[timestamp]" {
		t.Errorf("Prepare(INSERT): Variables %v, PKIndexes %v, Columns %v", p.Variables, p.PKIndexes, p.Columns)
	}
	for _, tt := range []struct{ text, want string }{
		{"SELECT * FROM nope WHERE k = ?", "unknown table ks.nope"},
		{"SELECT * FROM t WHERE c = ?", "might involve data filtering"},
		{"SELECT * FROM t WHERE k = ?; SELECT * FROM t WHERE k = ?", "one statement per request, found 2"},
		{"SELECT * FROM t WHERE k = ? AND", "expected column name, found end of input"},
	} {
		_, err := c.executors["n1"].Prepare(context.Background(), tt.text, "ks")
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Prepare(%s): error %v, want an *InvalidError containing %q", tt.text, err, tt.want)
		}
	}
}

func TestExecutePreparedWithValues(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	ins := c.prepare("n1", "INSERT INTO t (k, c, v, w) VALUES (?, ?, ?, ?)")
	for i := int32(1); i <= 3; i++ {
		if _, err := c.run("n2", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text("a"), intv(i), text(fmt.Sprint("v", i)), intv(i * 10)}}); err != nil {
			t.Fatalf("INSERT %d: %v", i, err)
		}
	}
	// An unset value leaves the cell as it was; a null deletes it.
	c.clock.Advance(time.Millisecond) // a later timestamp than n2's writes
	if _, err := c.run("n3", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text("a"), intv(2), unsetVal, val(nil)}}); err != nil {
		t.Fatal(err)
	}
	sel := c.prepare("n1", "SELECT c, v, w FROM t WHERE k = ? AND c >= ? LIMIT ?")
	res, err := c.run("n3", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a"), intv(2), intv(5)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatRows(res.Rows), []string{"2 'v2' null", "3 'v3' 30"}; !slices.Equal(got, want) {
		t.Errorf("prepared SELECT = %q, want %q", got, want)
	}
	// The same statement as text, with values.
	res, err = c.run("n1", coordinator.Statement{Text: "SELECT c FROM t WHERE k = ? LIMIT ?", Values: []coordinator.Value{text("a"), unsetVal}})
	if got := formatRows(res.Rows); err != nil || !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("SELECT text with values = %q, %v", got, err)
	}
	for _, tt := range []struct {
		st   coordinator.Statement
		want string
	}{
		{coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a")}}, "the statement has 3 bind markers but 1 values were given"},
		{coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a"), text("x"), intv(1)}}, "bind marker 1 (column c int): invalid int value: 1 bytes, want 4"},
		{coordinator.Statement{Prepared: sel, Values: []coordinator.Value{unsetVal, intv(1), intv(1)}}, "bind marker 0 for partition key column k is unset"},
		{coordinator.Statement{Prepared: ins, Values: []coordinator.Value{text("a"), intv(1), text("x"), val([]byte{1, 2})}}, "bind marker 3 (column w int): invalid int value: 2 bytes, want 4"},
		{coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", Values: []coordinator.Value{text("a")}}, "the statement has 0 bind markers but 1 values were given"},
		{coordinator.Statement{Text: "USE ks", Values: []coordinator.Value{text("a")}}, "USE has no bind markers but 1 values were given"},
		{coordinator.Statement{Prepared: &coordinator.Prepared{}}, "the prepared statement has no parsed statement"},
	} {
		_, err := c.run("n1", tt.st)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Execute(%q, %d values): error %v, want an *InvalidError containing %q", tt.st.Text, len(tt.st.Values), err, tt.want)
		}
	}
}

// TestPreparedStatementSurvivesDropAndCreate: a prepared statement is resolved against the
// schema each time it runs, so it fails clearly while its table is gone and works again, on
// the new table, once it is back.
func TestPreparedStatementSurvivesDropAndCreate(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	ins := c.prepare("n1", "INSERT INTO t (k, c, v) VALUES (?, ?, ?)")
	sel := c.prepare("n1", "SELECT v FROM t WHERE k = ?")
	values := []coordinator.Value{text("a"), intv(1), text("x")}
	if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: values}); err != nil {
		t.Fatal(err)
	}
	c.must("DROP TABLE ks.t")
	_, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: values})
	var ie *coordinator.InvalidError
	if !errors.As(err, &ie) || !errors.Is(err, schema.ErrUnknownTable) || !strings.Contains(err.Error(), "unknown table ks.t") {
		t.Fatalf("the prepared INSERT after DROP TABLE: error %v, want an *InvalidError for unknown table ks.t", err)
	}
	c.must("CREATE TABLE ks.t (k text, c int, v text, PRIMARY KEY (k, c))")
	res, err := c.run("n2", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a")}})
	if err != nil || len(res.Rows.Values) != 0 {
		t.Fatalf("the prepared SELECT on the new table = %v, %v; want no rows (the old table's data is gone)", res.Rows, err)
	}
	if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: values}); err != nil {
		t.Fatalf("the prepared INSERT on the new table: %v", err)
	}
	res, err = c.run("n2", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a")}})
	if got := formatRows(res.Rows); err != nil || !slices.Equal(got, []string{"'x'"}) {
		t.Fatalf("the prepared SELECT on the new table = %q, %v; want 'x'", got, err)
	}
	// A new table whose column has another type: the old values no longer fit, and say so.
	c.must("DROP TABLE ks.t", "CREATE TABLE ks.t (k text, c int, v int, PRIMARY KEY (k, c))")
	_, err = c.run("n1", coordinator.Statement{Prepared: ins, Values: values})
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "bind marker 2 (column v int): invalid int value") {
		t.Fatalf("the prepared INSERT with a text value on an int column: error %v", err)
	}
}

func TestDefaultTimestamp(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	now := c.clock.Now().UnixMicro()
	write := func(stmt string, ts int64) {
		t.Helper()
		if _, err := c.run("n1", coordinator.Statement{Text: stmt, Timestamp: ts, HasTimestamp: true}); err != nil {
			t.Fatalf("%s with default timestamp %d: %v", stmt, ts, err)
		}
	}
	write("INSERT INTO t (k, c, v) VALUES ('a', 1, 'new')", now)
	write("INSERT INTO t (k, c, v) VALUES ('a', 1, 'old')", now-10) // older: loses
	if got, _ := c.query("n1", quorum, "SELECT v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"'new'"}) {
		t.Errorf("after a write with an older default timestamp: %q, want 'new'", got)
	}
	write(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('a', 1, 'using') USING TIMESTAMP %d", now+5), now-20) // USING TIMESTAMP wins
	if got, _ := c.query("n1", quorum, "SELECT v FROM t WHERE k = 'a'"); !slices.Equal(got, []string{"'using'"}) {
		t.Errorf("after a write whose USING TIMESTAMP is newer than its default: %q, want 'using'", got)
	}
	_, err := c.run("n1", coordinator.Statement{Text: "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", Timestamp: now + 10*int64(time.Hour/time.Microsecond), HasTimestamp: true})
	var ie *coordinator.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "ahead of this coordinator's clock") {
		t.Errorf("a default timestamp 10 h ahead: error %v, want it refused", err)
	}
}

// TestUsingTimeoutBoundsTheRequest: a read with USING TIMEOUT times out after it, not after the
// configured read timeout (an hour here, which the test would never see end).
func TestUsingTimeoutBoundsTheRequest(t *testing.T) {
	c := newCluster(t, options{readTimeout: time.Hour, writeTimeout: time.Hour})
	c.must(schemaRF3...)
	c.transport.setFault(hang, "n2", "n3")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stmt := range []string{
		"SELECT * FROM t WHERE k = 'a' USING TIMEOUT 20ms",
		"INSERT INTO t (k, c) VALUES ('a', 1) USING TIMEOUT 20ms",
	} {
		_, err := c.executors["n1"].Execute(ctx, coordinator.Statement{Text: stmt, Keyspace: "ks", Consistency: quorum})
		var te *coordinator.TimeoutError
		if !errors.As(err, &te) {
			t.Errorf("%s with two replicas hanging: error %v, want a *TimeoutError", stmt, err)
		}
	}
	c.transport.clearFaults()
}
