package schema

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cql"
)

const funcDDL = ksDDL + `
CREATE TABLE ks.f (k int, c timeuuid, ts timestamp, d date, tm time, id uuid, b blob, n bigint, v int, x text, PRIMARY KEY (k, c));
CREATE TABLE ks.f2 (a int, b text, v double, PRIMARY KEY ((a, b)));
`

// funcNow is the execution time the tests give statements.
var funcNow = time.Date(2024, 3, 5, 6, 7, 8, 123456789, time.UTC)

func bindWrite(t *testing.T, s *Schema, src string, values ...BindValue) (*Write, error) {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatalf("parse %s: %v", src, err)
	}
	return s.BindWriteAt(st, "ks", values, funcNow)
}

func cellOf(w *Write, name string) []byte {
	for _, c := range w.Cells {
		if c.Column.Name == name {
			return c.Value
		}
	}
	return nil
}

func TestFunctionValues(t *testing.T) {
	s := mustBuild(t, funcDDL)
	w, err := bindWrite(t, s, `INSERT INTO f (k, c, ts, d, tm, id, b, n) VALUES (1, now(), currentTimestamp(), currentDate(), currentTime(), uuid(), intAsBlob(7), toUnixTimestamp(minTimeuuid('2024-03-05 06:07:08.123')))`)
	if err != nil {
		t.Fatal(err)
	}
	c := UUID(w.Clustering.Prefix[0])
	if c.Version() != 1 || !c.Time().Equal(funcNow.Truncate(100)) {
		t.Errorf("now() = %v (version %d, time %v), want a version 1 uuid of %v", c, c.Version(), c.Time(), funcNow)
	}
	if got := int64(binary.BigEndian.Uint64(cellOf(w, "ts"))); got != funcNow.UnixMilli() {
		t.Errorf("currentTimestamp() = %d, want %d", got, funcNow.UnixMilli())
	}
	if got, _ := TypeDate.Decode(cellOf(w, "d")); got.(Date).String() != "2024-03-05" {
		t.Errorf("currentDate() = %v, want 2024-03-05", got)
	}
	if got, _ := TypeTime.Decode(cellOf(w, "tm")); got.(time.Duration) != 6*time.Hour+7*time.Minute+8*time.Second+123456789 {
		t.Errorf("currentTime() = %v", got)
	}
	if id := UUID(cellOf(w, "id")); id.Version() != 4 || id[8]&0xC0 != 0x80 {
		t.Errorf("uuid() = %v, want a random (version 4) uuid", id)
	}
	if got := cellOf(w, "b"); !bytes.Equal(got, EncodeInt(7)) {
		t.Errorf("intAsBlob(7) = %x", got)
	}
	if got := int64(binary.BigEndian.Uint64(cellOf(w, "n"))); got != funcNow.UnixMilli() {
		t.Errorf("toUnixTimestamp(minTimeuuid(...)) = %d, want %d", got, funcNow.UnixMilli())
	}

	// Each call of now() gives its own timeuuid of the statement's time.
	w, err = bindWrite(t, s, `INSERT INTO f (k, c, id) VALUES (1, now(), now())`)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := UUID(w.Clustering.Prefix[0]), UUID(cellOf(w, "id")); a == b || a.Time() != b.Time() {
		t.Errorf("two now() calls gave %v and %v: want distinct uuids of the same time", a, b)
	}
}

func TestFunctionWhereBounds(t *testing.T) {
	s := mustBuild(t, funcDDL)
	st, _ := cql.ParseStatement(`SELECT * FROM f WHERE k = 1 AND c > maxTimeuuid('2013-01-01 00:05+0000') AND c < minTimeuuid(?)`)
	r, err := s.BindReadAt(st.(*cql.SelectStmt), "ks", []BindValue{v(EncodeBigInt(1357000000000))}, funcNow)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := r.Clustering.Lower.Value, r.Clustering.Upper.Value
	ms := time.Date(2013, 1, 1, 0, 5, 0, 0, time.UTC).UnixMilli()
	if got := millisOf(TypeTimeUUID, lo); got != ms {
		t.Errorf("maxTimeuuid's millisecond = %d, want %d", got, ms)
	}
	// Every timeuuid of the millisecond sorts between minTimeuuid and maxTimeuuid of it.
	for _, node := range []uint64{0, 1<<48 - 1, 0x808080808080} {
		for _, seq := range []uint16{0, 1<<14 - 1, 0x2080} {
			u := MakeTimeUUID(time.UnixMilli(ms).Add(50*time.Microsecond), seq, node)
			if TypeTimeUUID.Compare(boundTimeUUID(ms, false), u[:]) >= 0 || TypeTimeUUID.Compare(u[:], lo) >= 0 {
				t.Errorf("timeuuid %v is not within minTimeuuid and maxTimeuuid of its millisecond", u)
			}
		}
	}
	if got := millisOf(TypeTimeUUID, hi); got != 1357000000000 {
		t.Errorf("minTimeuuid(?) bound to 1357000000000 = %d", got)
	}
}

func TestFunctionConversions(t *testing.T) {
	s := mustBuild(t, funcDDL)
	tests := []struct {
		src  string
		col  string
		want []byte
	}{
		{`UPDATE f SET ts = toTimestamp('2024-03-05') WHERE k = 1 AND c = now()`, "ts", EncodeBigInt(time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC).UnixMilli())},
		{`UPDATE f SET d = toDate(1709618828123) WHERE k = 1 AND c = now()`, "d", EncodeDate(DateOf(funcNow))},
		{`UPDATE f SET d = toDate(now()) WHERE k = 1 AND c = now()`, "d", EncodeDate(DateOf(funcNow))},
		{`UPDATE f SET ts = dateOf(now()) WHERE k = 1 AND c = now()`, "ts", EncodeBigInt(funcNow.UnixMilli())},
		{`UPDATE f SET n = unixTimestampOf(now()) WHERE k = 1 AND c = now()`, "n", EncodeBigInt(funcNow.UnixMilli())},
		{`UPDATE f SET n = toUnixTimestamp(currentDate()) WHERE k = 1 AND c = now()`, "n", EncodeBigInt(time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC).UnixMilli())},
		{`UPDATE f SET v = blobAsInt(0x0000002a) WHERE k = 1 AND c = now()`, "v", EncodeInt(42)},
		{`UPDATE f SET x = blobAsText(textAsBlob('hé')) WHERE k = 1 AND c = now()`, "x", []byte("hé")},
		{`UPDATE f SET x = blobAsVarchar(varcharAsBlob('a')) WHERE k = 1 AND c = now()`, "x", []byte("a")},
		{`UPDATE f SET b = bigintAsBlob(NULL) WHERE k = 1 AND c = now()`, "b", nil},
		// A function's value goes where Cassandra takes it: timeuuid into uuid, timestamp into bigint, anything into blob.
		{`UPDATE f SET id = now() WHERE k = 1 AND c = now()`, "id", nil},
		{`UPDATE f SET n = currentTimestamp() WHERE k = 1 AND c = now()`, "n", EncodeBigInt(funcNow.UnixMilli())},
		{`UPDATE f SET b = currentTimestamp() WHERE k = 1 AND c = now()`, "b", EncodeBigInt(funcNow.UnixMilli())},
		{`UPDATE f SET v = ? WHERE k = 1 AND c = now()`, "v", nil},
	}
	for _, tt := range tests {
		var vals []BindValue
		if strings.Contains(tt.src, "?") {
			vals = []BindValue{v(nil)}
		}
		w, err := bindWrite(t, s, tt.src, vals...)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		got := cellOf(w, tt.col)
		if tt.col == "id" {
			if UUID(got).Version() != 1 {
				t.Errorf("%s: %s = %x, want a timeuuid", tt.src, tt.col, got)
			}
			continue
		}
		if !bytes.Equal(got, tt.want) {
			t.Errorf("%s: %s = %x, want %x", tt.src, tt.col, got, tt.want)
		}
	}
}

func TestFunctionErrors(t *testing.T) {
	s := mustBuild(t, funcDDL)
	tests := []struct{ src, want string }{
		{`INSERT INTO f (k, c, v) VALUES (1, now(), now())`, `1:43: column v: function now returns timeuuid, which cannot be assigned to int`},
		{`INSERT INTO f (k, c, v) VALUES (1, now(), toDate(1, 2))`, `1:43: column v: invalid arguments to function todate(integer literal 1, integer literal 2): it is system.todate(timeuuid) or system.todate(timestamp)`},
		{`INSERT INTO f (k, c, x) VALUES (1, now(), now(1))`, `1:43: column x: function now takes 0 arguments, not 1: system.now()`},
		{`INSERT INTO f (k, c, ts) VALUES (1, now(), toTimestamp(4.2))`, `1:44: column ts: invalid arguments to function totimestamp(float literal 4.2): it is system.totimestamp(timeuuid) or system.totimestamp(date)`},
		{`INSERT INTO f (k, c, n) VALUES (1, now(), toUnixTimestamp(?))`, `1:43: column n: ambiguous call to function tounixtimestamp`},
		{`INSERT INTO f (k, c, v) VALUES (1, now(), blobAsInt(0x01))`, `1:43: in call to function system.blobasint, value 0x01 is not a valid binary representation for type int`},
		{`INSERT INTO f (k, c, v) VALUES (1, now(), blobAsNothing(0x01))`, `1:43: column v: unknown function blobasnothing`},
		{`INSERT INTO f (k, c, n) VALUES (1, now(), token(1))`, `token() is only a selector`},
		{`SELECT token(c) FROM f WHERE k = 1`, `1:8: token() takes the partition key columns of table ks.f in order: token(k)`},
		{`SELECT token(b, a) FROM f2 WHERE a = 1 AND b = 'x'`, `token(a, b)`},
		{`SELECT CAST(b AS int) FROM f WHERE k = 1`, `1:8: cannot CAST b from blob to int`},
		{`SELECT CAST(x AS int) FROM f WHERE k = 1`, `cannot CAST x from text to int`},
		{`SELECT CAST(v AS duration) FROM f WHERE k = 1`, `duration`},
		{`SELECT toDate(v) FROM f WHERE k = 1`, `invalid arguments to function todate(int)`},
		{`SELECT writetime(k), v FROM f WHERE k = 1`, `primary key columns have no write time`},
		{`SELECT toUnixTimestamp(writetime(k)) FROM f WHERE k = 1`, `primary key columns have no write time`},
		{`SELECT blobAsInt(nope) FROM f WHERE k = 1`, `unknown column nope`},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatalf("parse %s: %v", tt.src, err)
		}
		if sel, ok := st.(*cql.SelectStmt); ok {
			_, err = s.BindReadAt(sel, "ks", nil, funcNow)
		} else {
			_, err = s.BindWriteAt(st, "ks", nil, funcNow)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.src, err, tt.want)
		}
	}
}

func TestFunctionSelectors(t *testing.T) {
	s := mustBuild(t, funcDDL)
	ts := time.Date(2023, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
	c := MakeTimeUUID(ts, 7, 9)
	row := map[string][]byte{"k": EncodeInt(5), "c": c[:], "ts": EncodeTimestamp(ts), "v": EncodeInt(-3), "x": []byte("hi"), "n": EncodeBigInt(1 << 40)}
	tests := []struct {
		sel      string
		name     string
		typ      Type
		want     string // fmt of the decoded value
		wantNull bool
	}{
		{"token(k)", "system.token(k)", TypeBigInt, fmt.Sprint(tokenOf([][]byte{EncodeInt(5)})), false},
		{"system.toDate(c)", "system.todate(c)", TypeDate, "2023-12-31", false},
		{"toTimestamp(c)", "system.totimestamp(c)", TypeTimestamp, ts.String(), false},
		{"toUnixTimestamp(ts)", "system.tounixtimestamp(ts)", TypeBigInt, fmt.Sprint(ts.UnixMilli()), false},
		{"dateOf(c)", "system.dateof(c)", TypeTimestamp, ts.String(), false},
		{"blobAsInt(intAsBlob(v))", "system.blobasint(system.intasblob(v))", TypeInt, "-3", false},
		{"CAST(v AS text)", "cast(v as text)", TypeText, "-3", false},
		{"CAST(v AS double)", "cast(v as double)", TypeDouble, "-3", false},
		{"CAST(v AS tinyint)", "cast(v as tinyint)", TypeTinyInt, "-3", false},
		{"CAST(n AS int)", "cast(n as int)", TypeInt, "0", false},
		{"CAST(n AS float)", "cast(n as float)", TypeFloat, "1.0995116e+12", false},
		{"CAST(CAST(n AS float) AS text)", "cast(cast(n as float) as text)", TypeText, "1.0995116E12", false},
		{"CAST(v AS decimal)", "cast(v as decimal)", TypeDecimal, "-3.0", false},
		{"CAST(ts AS text)", "cast(ts as text)", TypeText, "2023-12-31T23:59:59.999Z", false},
		{"CAST(ts AS date)", "cast(ts as date)", TypeDate, "2023-12-31", false},
		{"CAST(c AS timestamp)", "cast(c as timestamp)", TypeTimestamp, ts.String(), false},
		{"toDate(d)", "", TypeInvalid, "", true}, // todate(date) does not exist: see errors
		{"CAST(d AS timestamp)", "cast(d as timestamp)", TypeTimestamp, "", true},
		{"blobAsText(?)", "system.blobastext(?)", TypeText, "", true},
		{"toUnixTimestamp(writetime(v))", "", TypeInvalid, "", true},
		{"now()", "system.now()", TypeTimeUUID, "", false},
		{"currentTimestamp()", "system.currenttimestamp()", TypeTimestamp, funcNow.Truncate(time.Millisecond).String(), false},
		{"blobAsBigint(0x0000000000000001)", "system.blobasbigint(0x0000000000000001)", TypeBigInt, "1", false},
		{"maxTimeuuid('2024-01-01')", "system.maxtimeuuid('2024-01-01')", TypeTimeUUID, "", false},
	}
	for _, tt := range tests {
		if tt.name == "" {
			continue
		}
		src := "SELECT " + tt.sel + " FROM f WHERE k = 5"
		st, err := cql.ParseStatement(src)
		if err != nil {
			t.Fatalf("parse %s: %v", src, err)
		}
		var vals []BindValue
		if strings.Contains(src, "?") {
			vals = []BindValue{v(nil)}
		}
		r, err := s.BindReadAt(st.(*cql.SelectStmt), "ks", vals, funcNow)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := r.ResultColumns()[0]; got.Name != tt.name || got.Type != tt.typ {
			t.Errorf("%s: column %s %s, want %s %s", src, got.Name, got.Type, tt.name, tt.typ)
		}
		b, err := r.Eval(0, func(c *Column, kind cql.SelectKind) []byte { return row[c.Name] })
		switch {
		case err != nil:
			t.Errorf("%s: %v", src, err)
		case tt.wantNull != (b == nil):
			t.Errorf("%s = %x, want null %v", src, b, tt.wantNull)
		case tt.want != "":
			d, _ := tt.typ.Decode(b)
			if got := fmt.Sprint(d); got != tt.want {
				t.Errorf("%s = %s, want %s", src, got, tt.want)
			}
		}
	}
}

func TestFunctionVariables(t *testing.T) {
	s := mustBuild(t, funcDDL)
	tests := []struct {
		src  string
		vars []Variable
	}{
		{"SELECT blobAsInt(?), v FROM f WHERE k = ? AND c > minTimeuuid(:lo)", []Variable{
			{"ks", "f", "arg0(system.blobasint)", TypeBlob}, {"ks", "f", "k", TypeInt}, {"ks", "f", "lo", TypeTimestamp}}},
		{"INSERT INTO f (k, c, v) VALUES (?, maxTimeuuid(?), blobAsInt(?))", []Variable{
			{"ks", "f", "k", TypeInt}, {"ks", "f", "arg0(system.maxtimeuuid)", TypeTimestamp}, {"ks", "f", "arg0(system.blobasint)", TypeBlob}}},
	}
	for _, tt := range tests {
		st, err := cql.ParseStatement(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		vars, _, err := s.Variables(st, "ks")
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(vars, tt.vars) {
			t.Errorf("Variables(%s)\n  = %v\nwant %v", tt.src, vars, tt.vars)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{1: "1.0", -3: "-3.0", 0.001: "0.001", 1e7: "1.0E7", 1.5e-4: "1.5E-4", 123.25: "123.25", 1e21: "1.0E21"} {
		if got := javaDouble(f, 64); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestFunctionsInBatch(t *testing.T) {
	s := mustBuild(t, funcDDL)
	st, err := cql.ParseStatement("BEGIN BATCH INSERT INTO f (k, c) VALUES (1, now()); UPDATE f SET ts = currentTimestamp() WHERE k = 1 AND c = now() APPLY BATCH")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.BindBatchAt(st.(*cql.BatchStmt), "ks", nil, funcNow)
	if err != nil {
		t.Fatal(err)
	}
	a, c := UUID(b.Writes[0].Clustering.Prefix[0]), UUID(b.Writes[1].Clustering.Prefix[0])
	if a == c || !a.Time().Equal(funcNow.Truncate(100)) || !c.Time().Equal(funcNow.Truncate(100)) {
		t.Errorf("now() in a BATCH gave %v and %v: want distinct timeuuids of the batch's time %v", a, c, funcNow)
	}
	if got := cellOf(b.Writes[1], "ts"); !bytes.Equal(got, EncodeTimestamp(funcNow)) {
		t.Errorf("currentTimestamp() in a BATCH = %x", got)
	}
}
