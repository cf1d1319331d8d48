package schema

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// v and unset build bind values for the tests.
func v(b []byte) BindValue { return BindValue{Bytes: b} }

var unset = BindValue{Unset: true}

func TestBindWrite(t *testing.T) {
	s := mustBuild(t, dataDDL)
	tests := []struct {
		src    string
		values []BindValue
		want   string
	}{
		{"INSERT INTO t (a, b, c1, c2, v) VALUES (?, ?, ?, ?, ?)",
			[]BindValue{v(EncodeInt(1)), v([]byte("x")), v(EncodeInt(2)), v([]byte("y")), v([]byte("z"))},
			"INSERT ks.t pk=[00000001 78] ck=[00000002 79] v=7a"},
		// An unset value leaves its cell unwritten; a null one deletes it.
		{"INSERT INTO t (a, b, c1, c2, v, w) VALUES (1, ?, 2, 'y', ?, ?)",
			[]BindValue{v([]byte("x")), unset, v(nil)},
			"INSERT ks.t pk=[00000001 78] ck=[00000002 79] w=null"},
		{"UPDATE kv USING TIMESTAMP ? SET v = ? WHERE k = ?",
			[]BindValue{v(EncodeBigInt(42)), v(EncodeBigInt(7)), v([]byte("a"))},
			"UPDATE ks.kv pk=[61] ck=[] v=0000000000000007 ts=42"},
		{"UPDATE kv USING TIMESTAMP ? SET v = ? WHERE k = ?",
			[]BindValue{unset, unset, v([]byte("a"))},
			"UPDATE ks.kv pk=[61] ck=[]"},
		{"DELETE FROM t WHERE a = ? AND b = ? AND c1 > ?",
			[]BindValue{v(EncodeInt(1)), v([]byte("x")), v(EncodeInt(5))},
			"DELETE ks.t pk=[00000001 78] ck=[] >00000005"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.BindWrite(st, "ks", tt.values)
		if err != nil {
			t.Errorf("BindWrite(%s) failed: %v", tt.src, err)
			continue
		}
		if got := describeWrite(w); got != tt.want {
			t.Errorf("BindWrite(%s)\n  = %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestBindRead(t *testing.T) {
	s := mustBuild(t, dataDDL)
	st, _ := cql.ParseStatement("SELECT v FROM t WHERE a = ? AND b = ? AND c1 >= ? LIMIT ? USING TIMEOUT 1m30s")
	r, err := s.BindRead(st.(*cql.SelectStmt), "ks", []BindValue{v(EncodeInt(1)), v([]byte("x")), v(EncodeInt(-1)), v(EncodeInt(10))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describeRead(r), "ks.t pk=[00000001 78] ck=[] >=ffffffff cols=v limit=10"; got != want {
		t.Errorf("BindRead = %s, want %s", got, want)
	}
	if r.Timeout != 90*time.Second {
		t.Errorf("BindRead: Timeout = %v, want 1m30s", r.Timeout)
	}
	r, err = s.BindRead(st.(*cql.SelectStmt), "ks", []BindValue{v(EncodeInt(1)), v([]byte("x")), v(EncodeInt(-1)), unset})
	if err != nil || r.Limit != 0 {
		t.Errorf("BindRead with LIMIT unset: limit %v, error %v; want no limit", r, err)
	}
}

func TestBindErrors(t *testing.T) {
	s := mustBuild(t, dataDDL)
	tests := []struct {
		src    string
		values []BindValue
		want   string
	}{
		{"SELECT * FROM kv WHERE k = ?", []BindValue{v([]byte("a")), v([]byte("b"))}, "the statement has 1 bind markers but 2 values were given"},
		{"SELECT * FROM kv WHERE k = ? LIMIT ?", []BindValue{v([]byte("a"))}, "the statement has 2 bind markers but 1 values were given"},
		{"SELECT * FROM kv WHERE k = ?", []BindValue{unset}, "bind marker 0 for partition key column k is unset: a primary key column needs a value"},
		{"INSERT INTO t (a, b, c1, c2) VALUES (1, 'x', 2, ?)", []BindValue{unset}, "bind marker 0 for clustering column c2 is unset: a primary key column needs a value"},
		{"SELECT * FROM kv WHERE k = ?", []BindValue{v(nil)}, "partition key column k cannot be NULL"},
		{"SELECT * FROM kv WHERE k = ?", []BindValue{v([]byte{0xff})}, "bind marker 0 (column k text): invalid text value: not valid UTF-8"},
		{"UPDATE kv SET v = ? WHERE k = 'a'", []BindValue{v(EncodeInt(1))}, "bind marker 0 (column v bigint): invalid bigint value: 4 bytes, want 8"},
		{"SELECT * FROM t WHERE a = 1 AND b = 'x' AND c1 > ? AND c1 < ?", []BindValue{v(EncodeInt(1)), v([]byte{1})}, "bind marker 1 (column c1 int): invalid int value: 1 bytes, want 4"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT ?", []BindValue{v(EncodeInt(0))}, "bind marker 0: LIMIT must be positive, not 0"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT ?", []BindValue{v(nil)}, "bind marker 0 (LIMIT) is null; leave it unset for no limit"},
		{"SELECT * FROM kv WHERE k = 'a' LIMIT ?", []BindValue{v(EncodeBigInt(1))}, "bind marker 0 (LIMIT int): invalid int value: 8 bytes, want 4"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMESTAMP ?", []BindValue{v(EncodeInt(1))}, "bind marker 0 (USING TIMESTAMP bigint): invalid bigint value: 4 bytes, want 8"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMESTAMP ?", []BindValue{v(nil)}, "bind marker 0 (USING TIMESTAMP) is null; leave it unset for the coordinator's timestamp"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMEOUT 1mo", nil, "USING TIMEOUT 1mo: months and years have no fixed length; use w, d, h, m, s, ms, us or ns"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMEOUT 0s", nil, "USING TIMEOUT 0s: the timeout must be positive"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMEOUT 2d", nil, "USING TIMEOUT 2d: too long; the maximum is 24h0m0s"},
		{"INSERT INTO kv (k) VALUES ('a') USING TIMEOUT 99999999999999999999ns", nil, "USING TIMEOUT 99999999999999999999ns: too long; the maximum is 24h0m0s"},
		{"SELECT * FROM kv WHERE k = 'a' USING TIMEOUT 9223372036854775807h", nil, "USING TIMEOUT 9223372036854775807h: too long; the maximum is 24h0m0s"},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if sel, ok := st.(*cql.SelectStmt); ok {
			_, err = s.BindRead(sel, "ks", tt.values)
		} else {
			_, err = s.BindWrite(st, "ks", tt.values)
		}
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s with %d values\n  gave error %v\n  want %q", tt.src, len(tt.values), err, tt.want)
		}
	}
}

func TestVariables(t *testing.T) {
	s := mustBuild(t, dataDDL)
	col := func(table, name string, typ Type) Variable {
		return Variable{Keyspace: "ks", Table: table, Name: name, Type: typ}
	}
	tests := []struct {
		src  string
		vars []Variable
		pk   []int
	}{
		{"SELECT * FROM t WHERE b = ? AND a = ? AND c1 > ? LIMIT ?",
			[]Variable{col("t", "b", TypeText), col("t", "a", TypeInt), col("t", "c1", TypeInt), col("t", "[limit]", TypeInt)}, []int{1, 0}},
		{"SELECT * FROM t WHERE a = 1 AND b = ?", []Variable{col("t", "b", TypeText)}, nil},
		{"INSERT INTO kv (v, k) VALUES (?, ?) USING TIMESTAMP ?",
			[]Variable{col("kv", "v", TypeBigInt), col("kv", "k", TypeText), col("kv", "[timestamp]", TypeBigInt)}, []int{1}},
		{"UPDATE kv USING TIMESTAMP ? SET v = ? WHERE k = ?",
			[]Variable{col("kv", "[timestamp]", TypeBigInt), col("kv", "v", TypeBigInt), col("kv", "k", TypeText)}, []int{2}},
		{"DELETE FROM kv WHERE k = ?", []Variable{col("kv", "k", TypeText)}, []int{0}},
		{"SELECT * FROM kv WHERE k = 'a'", nil, nil},
		{"BEGIN BATCH USING TIMESTAMP ? INSERT INTO kv (k, v) VALUES (?, ?); DELETE FROM t WHERE a = ? AND b = ? APPLY BATCH",
			[]Variable{{Name: "[timestamp]", Type: TypeBigInt}, col("kv", "k", TypeText), col("kv", "v", TypeBigInt), col("t", "a", TypeInt), col("t", "b", TypeText)}, nil},
		{"SELECT * FROM kv WHERE k = :key LIMIT :n", []Variable{col("kv", "key", TypeText), col("kv", "n", TypeInt)}, []int{0}},
		{"USE ks", nil, nil},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		vars, pk, err := s.Variables(st, "ks")
		if err != nil {
			t.Errorf("Variables(%s) failed: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(vars, tt.vars) || !reflect.DeepEqual(pk, tt.pk) {
			t.Errorf("Variables(%s)\n  = %v, pk %v\nwant %v, pk %v", tt.src, vars, pk, tt.vars, tt.pk)
		}
	}
	// Preparing validates the statement as far as it can without values.
	for _, tt := range []struct{ src, want string }{
		{"SELECT * FROM t WHERE a = ?", "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"},
		{"SELECT x FROM kv WHERE k = ?", "unknown column x in table ks.kv"},
		{"UPDATE kv SET k = ? WHERE k = ?", "cannot SET partition key column k: primary key columns identify the row; write the new row with INSERT"},
		{"BEGIN BATCH USING TIMESTAMP 1 INSERT INTO kv (k) VALUES (?) USING TIMESTAMP 2; APPLY BATCH",
			"statement 1 of the BATCH (INSERT) has its own USING TIMESTAMP, and so has the BATCH: give one or the other"},
		{"BEGIN BATCH INSERT INTO kv (k) VALUES (?) USING TIMEOUT 2s; APPLY BATCH",
			"statement 1 of the BATCH (INSERT) has its own USING TIMEOUT; give it once, after BEGIN BATCH"},
		{"BEGIN BATCH INSERT INTO kv (k) VALUES (1); APPLY BATCH", "statement 1 of the BATCH (INSERT): column k is text; cannot assign integer literal 1"},
		{"CREATE TABLE x (k int PRIMARY KEY) WITH comment = ?", "CREATE TABLE cannot have bind markers (it has 1)"},
	} {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Variables(st, "ks"); err == nil || err.Error() != tt.want {
			t.Errorf("Variables(%s): error %v, want %q", tt.src, err, tt.want)
		}
	}
}

func TestBindBatch(t *testing.T) {
	s := mustBuild(t, dataDDL)
	st, err := cql.ParseStatement("BEGIN UNLOGGED BATCH USING TIMESTAMP ? AND TIMEOUT 3s INSERT INTO kv (k, v) VALUES (?, ?); UPDATE kv SET v = ? WHERE k = 'b'; APPLY BATCH")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.BindBatch(st.(*cql.BatchStmt), "ks", []BindValue{v(EncodeBigInt(9)), v([]byte("a")), v(EncodeBigInt(1)), v(EncodeBigInt(2))})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range b.Writes {
		got = append(got, describeWrite(w))
	}
	want := []string{"INSERT ks.kv pk=[61] ck=[] v=0000000000000001 ts=9", "UPDATE ks.kv pk=[62] ck=[] v=0000000000000002 ts=9"}
	if !reflect.DeepEqual(got, want) || !b.Unlogged || b.Timeout != 3*time.Second || !b.HasTimestamp || b.Timestamp != 9 {
		t.Errorf("BindBatch = %q unlogged=%v timeout=%v ts=%d/%v\nwant %q unlogged timeout=3s ts=9", got, b.Unlogged, b.Timeout, b.Timestamp, b.HasTimestamp, want)
	}
	_, err = s.BindBatch(st.(*cql.BatchStmt), "ks", []BindValue{unset, v([]byte("a")), v([]byte("x")), unset})
	if want := "statement 1 of the BATCH (INSERT): bind marker 2 (column v bigint): invalid bigint value: 1 bytes, want 8"; err == nil || err.Error() != want {
		t.Errorf("BindBatch with a bad value: error %v, want %q", err, want)
	}
}

// FuzzBind binds fuzzed values (one byte string per marker, split on 0xff;
// a lone 0xfe is unset, an empty part null) to fuzzed statements and checks
// that nothing panics, that Variables agrees with the markers, and that
// every bound write and read holds only values of their columns' types.
func FuzzBind(f *testing.F) {
	f.Add("INSERT INTO t (a, b, c1, c2, v) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?", []byte("\x00\x00\x00\x01\xffx\xff\x00\x00\x00\x02\xffy\xff\xfe\xff\x00\x00\x00\x00\x00\x00\x00\x05"))
	f.Add("SELECT * FROM t WHERE a = ? AND b = ? AND c1 > ? LIMIT ?", []byte("\x00\x00\x00\x01\xffx\xff\x01\xff\x00\x00\x00\x03"))
	f.Add("BEGIN BATCH USING TIMESTAMP ? UPDATE kv SET v = ? WHERE k = ?; DELETE FROM kv WHERE k = ? APPLY BATCH", []byte("\xfe\xff\x00\x00\x00\x00\x00\x00\x00\x07\xffk\xff"))
	f.Add("SELECT blobAsInt(?), v FROM t WHERE a = blobAsInt(?) AND b = ? AND c1 > blobAsInt(?)", []byte("\x00\x00\x00\x01\xff\x00\x00\x00\x01\xffx\xff\x03"))
	s, err := Build(dataDDL)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string, raw []byte) {
		st, err := cql.ParseStatement(src)
		if err != nil {
			return
		}
		var values []BindValue
		if len(raw) > 0 {
			for _, part := range bytes.Split(raw, []byte{0xff}) {
				switch {
				case len(part) == 1 && part[0] == 0xfe:
					values = append(values, unset)
				case len(part) == 0:
					values = append(values, v(nil))
				default:
					values = append(values, v(part))
				}
			}
		}
		if vars, _, err := s.Variables(st, "ks"); err == nil && len(vars) != len(cql.BindMarkers(st)) {
			t.Fatalf("%s: %d variables for %d markers", src, len(vars), len(cql.BindMarkers(st)))
		}
		checkWrite := func(w *Write) {
			for _, c := range w.Cells {
				if err := c.Column.Type.Check(c.Value); err != nil {
					t.Fatalf("%s: cell %s is not a valid %s: %v", src, c.Column.Name, c.Column.Type, err)
				}
			}
			for i, pk := range w.PartitionKey {
				if pk == nil || w.Table.PartitionKey[i].Type.Check(pk) != nil {
					t.Fatalf("%s: partition key value %d (%x) is not a valid %s", src, i, pk, w.Table.PartitionKey[i].Type)
				}
			}
		}
		switch st := st.(type) {
		case *cql.SelectStmt:
			if r, err := s.BindRead(st, "ks", values); err == nil {
				for i, pk := range r.PartitionKey {
					if pk == nil || r.Table.PartitionKey[i].Type.Check(pk) != nil {
						t.Fatalf("%s: partition key value %d (%x) is not a valid %s", src, i, pk, r.Table.PartitionKey[i].Type)
					}
				}
			}
		case *cql.BatchStmt:
			if b, err := s.BindBatch(st, "ks", values); err == nil {
				for _, w := range b.Writes {
					checkWrite(w)
				}
			}
		default:
			if w, err := s.BindWrite(st, "ks", values); err == nil {
				checkWrite(w)
			}
		}
	})
}
