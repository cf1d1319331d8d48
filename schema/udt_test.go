package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

const udtDDL = ksDDL + `CREATE TYPE ks.address (street text, zip int);
CREATE TYPE ks.person (name text, home frozen<address>, tags frozen<set<text>>);
CREATE TABLE ks.u (k int PRIMARY KEY, a frozen<address>, p frozen<person>, l frozen<list<frozen<address>>>);
`

func applyUDT(t *testing.T, s *Schema, src string, ts int64) (*Schema, error) {
	t.Helper()
	st, err := cql.ParseStatement(src)
	if err != nil {
		t.Fatal(err)
	}
	return s.Apply(st, "ks", Change{Version: Version{Timestamp: ts, Node: "n1"}})
}

func mustApplyUDT(t *testing.T, s *Schema, src string, ts int64) *Schema {
	t.Helper()
	ns, err := applyUDT(t, s, src, ts)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return ns
}

func literal(t *testing.T, c *Column, src string) []byte {
	t.Helper()
	st, err := cql.ParseStatement("INSERT INTO x (a) VALUES (" + src + ")")
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Value(st.(*cql.InsertStmt).Values[0])
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

func TestUserTypes(t *testing.T) {
	s := mustBuild(t, udtDDL)
	k, _ := s.Keyspace("ks")
	if got := len(k.UserTypes()); got != 2 {
		t.Fatalf("%d user types, want 2", got)
	}
	tb, _ := s.Table("ks", "u")
	a, _ := tb.Column("a")
	p, _ := tb.Column("p")
	l, _ := tb.Column("l")
	if want := Type("frozen<udt<ks.address, street text, zip int>>"); a.Type != want {
		t.Errorf("a's type = %s, want %s", a.Type, want)
	}
	for c, want := range map[*Column]string{a: "frozen<address>", p: "frozen<person>", l: "frozen<list<frozen<address>>>"} {
		if got := c.Type.CQL(); got != want {
			t.Errorf("%s.CQL() = %s, want %s", c.Name, got, want)
		}
	}
	u, ok := p.Type.UserType()
	if !ok || u.Name != "person" || !reflect.DeepEqual(u.FieldNames, []string{"name", "home", "tags"}) || u.FieldTypes[1].CQL() != "frozen<address>" {
		t.Errorf("UserType() = %+v, %v", u, ok)
	}

	v := literal(t, p, `{name: 'ann', home: {street: 'main', zip: 5}}`)
	if err := p.Check(v); err != nil {
		t.Fatal(err)
	}
	got, err := p.Type.Decode(v)
	want := UDT{{"name", "ann"}, {"home", UDT{{"street", "main"}, {"zip", int32(5)}}}, {"tags", nil}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Decode = %#v, %v; want %#v", got, err, want)
	}
	// Trailing nulls are left out: a literal without zip equals one with zip null.
	if x, y := literal(t, a, `{street: 'x'}`), literal(t, a, `{street: 'x', zip: null}`); string(x) != string(y) || len(x) != 5 {
		t.Errorf("literals % x and % x, want one 5-byte value", x, y)
	}
	if n, err := a.Type.Normalize(elems([]byte("x"), nil)); err != nil || string(n) != string(elems([]byte("x"))) {
		t.Errorf("Normalize with a trailing null = % x, %v", n, err)
	}
	if err := a.Check(elems([]byte("x"), nil)); err == nil {
		t.Error("Check accepted a trailing null field")
	}
	if a.Compare(elems([]byte("x")), elems([]byte("x"), EncodeInt(1))) != -1 {
		t.Error("a missing field does not sort as null, before a value")
	}
	for src, msg := range map[string]string{
		`{street: 'x', nope: 1}`:     `unknown field nope`,
		`{street: 'x', street: 'y'}`: `given twice`,
		`{street: 1}`:                `field street`,
	} {
		st, _ := cql.ParseStatement("INSERT INTO x (a) VALUES (" + src + ")")
		if _, err := a.Value(st.(*cql.InsertStmt).Values[0]); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error containing %q", src, err, msg)
		}
	}

	// Encode and Decode keep the types and the columns.
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if d.Digest() != s.Digest() {
		t.Error("the decoded schema's digest differs")
	}
	dk, _ := d.Keyspace("ks")
	if !reflect.DeepEqual(dk.UserTypes(), k.UserTypes()) {
		t.Errorf("decoded types %+v, want %+v", dk.UserTypes(), k.UserTypes())
	}
	desc, err := d.Describe(&cql.DescribeStmt{Kind: cql.DescribeKeyspace}, "ks")
	if err != nil {
		t.Fatal(err)
	}
	ia, ip, it := strings.Index(desc, "CREATE TYPE ks.address"), strings.Index(desc, "CREATE TYPE ks.person"), strings.Index(desc, "CREATE TABLE")
	if ia < 0 || ip < ia || it < ip || !strings.Contains(desc, `"home" frozen<address>`) && !strings.Contains(desc, "home frozen<address>") || !strings.Contains(desc, "a frozen<address>,") {
		t.Errorf("DESCRIBE KEYSPACE:\n%s", desc)
	}
	// DESCRIBE's statements recreate the schema.
	if r, err := Build(desc); err != nil {
		t.Errorf("rebuilding from DESCRIBE: %v", err)
	} else if rt, _ := r.Table("ks", "u"); rt == nil || rt.Columns[2].Type != tb.Columns[2].Type {
		t.Errorf("rebuilt table differs")
	}
}

func TestAlterType(t *testing.T) {
	s := mustBuild(t, udtDDL)
	tb, _ := s.Table("ks", "u")
	a, _ := tb.Column("a")
	old := literal(t, a, `{street: 'main', zip: 5}`)

	s2 := mustApplyUDT(t, s, `ALTER TYPE ks.address ADD city text`, 100)
	tb2, _ := s2.Table("ks", "u")
	a2, _ := tb2.Column("a")
	p2, _ := tb2.Column("p")
	if want := Type("frozen<udt<ks.address, street text, zip int, city text>>"); a2.Type != want {
		t.Fatalf("after ADD a's type = %s, want %s", a2.Type, want)
	}
	if !strings.Contains(string(p2.Type), "home frozen<udt<ks.address, street text, zip int, city text>>") {
		t.Errorf("the type using address was not rewritten: %s", p2.Type)
	}
	if tb2.Version.Compare(tb.Version) <= 0 {
		t.Error("the table's version did not move with the type's change")
	}
	if err := a2.Check(old); err != nil {
		t.Fatalf("a value written before ADD: %v", err)
	}
	got, _ := a2.Type.Decode(old)
	if want := (UDT{{"street", "main"}, {"zip", int32(5)}, {"city", nil}}); !reflect.DeepEqual(got, want) {
		t.Errorf("old value reads %#v, want %#v", got, want)
	}

	s3 := mustApplyUDT(t, s2, `ALTER TYPE ks.address RENAME zip TO code AND street TO road`, 101)
	tb3, _ := s3.Table("ks", "u")
	if a3, _ := tb3.Column("a"); a3.Type != "frozen<udt<ks.address, road text, code int, city text>>" {
		t.Errorf("after RENAME a's type = %s", a3.Type)
	}
	for src, msg := range map[string]string{
		`ALTER TYPE ks.address ADD road int`:             "duplicate field name road",
		`ALTER TYPE ks.address RENAME nope TO x`:         "has no field nope",
		`ALTER TYPE ks.address ADD self frozen<address>`: "cannot refer to the type itself",
		`ALTER TYPE ks.nope ADD x int`:                   "unknown type ks.nope",
	} {
		if _, err := applyUDT(t, s3, src, 102); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error containing %q", src, err, msg)
		}
	}
	// The change survives Encode and Decode, and Merge takes the later keyspace and tables.
	d, err := Decode(s3.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Merge(d); m.Digest() != s3.Digest() {
		t.Error("merging the altered schema into the old one does not give the altered one")
	}
}

// TestUserTypeInPrimaryKey: a user type may be a partition or clustering key column, nested or
// not; ALTER TYPE ... ADD is refused, as in Cassandra, while the type (at any depth) is in a
// partition key, whose values would change bytes and token, and allowed in a clustering key
// (replica's key encoding orders a value with fewer fields as if the missing ones were null).
func TestUserTypeInPrimaryKey(t *testing.T) {
	s := mustBuild(t, udtDDL)
	s = mustApplyUDT(t, s, `CREATE TABLE ks.pk (k frozen<person> PRIMARY KEY, v int)`, 100)
	s = mustApplyUDT(t, s, `CREATE TABLE ks.ck (k int, c frozen<address>, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)`, 101)
	for _, src := range []string{`ALTER TYPE ks.address ADD country text`, `ALTER TYPE ks.person ADD age int`} {
		_, err := applyUDT(t, s, src, 102)
		if err == nil || !strings.Contains(err.Error(), "because it is used in the partition key column k of table ks.pk") {
			t.Errorf("%s: %v, want the partition key refusal", src, err)
		}
	}
	s = mustApplyUDT(t, s, `DROP TABLE ks.pk`, 103)
	s = mustApplyUDT(t, s, `ALTER TYPE ks.address ADD country text`, 104)
	tb, ok := s.Table("ks", "ck")
	if !ok {
		t.Fatal("no table ks.ck")
	}
	if got := tb.Clustering[0].Type.CQL(); got != "frozen<address>" {
		t.Errorf("clustering column type after ADD: %s", got)
	}
	if kind, elems := tb.Clustering[0].Type.Params(); kind != ParamUDT || len(elems) != 3 {
		t.Errorf("clustering column after ADD has kind %v and %d fields, want a user type of 3", kind, len(elems))
	}
}

func TestDropAndCreateTypeRefusals(t *testing.T) {
	s := mustBuild(t, udtDDL)
	for src, msg := range map[string]string{
		`DROP TYPE ks.address`:                                   "still used by user type ks.person",
		`DROP TYPE ks.person`:                                    "still used by table ks.u (column p)",
		`DROP TYPE ks.nope`:                                      "unknown type ks.nope",
		`CREATE TYPE ks.address (x int)`:                         "already exists",
		`CREATE TYPE ks.int (x int)`:                             "reserved type name",
		`CREATE TYPE ks.t (x int, x text)`:                       "duplicate field name x",
		`CREATE TYPE ks.t (x frozen<nope>)`:                      "unknown type ks.nope",
		`CREATE TABLE ks.v (k int PRIMARY KEY, a list<address>)`: "non-frozen user-defined types are not allowed inside collections (use frozen<address>)",
		`CREATE TYPE nope.t (x int)`:                             "unknown keyspace",
	} {
		if _, err := applyUDT(t, s, src, 100); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error containing %q", src, err, msg)
		}
	}
	if _, err := LookupType("frozen<udt<ks.x, a int>>"); err == nil {
		t.Error("LookupType accepted the canonical form of a user type, which no statement may write")
	}
	if s2, err := applyUDT(t, s, `DROP TYPE IF EXISTS ks.nope`, 100); err != nil || s2 != s {
		t.Errorf("DROP TYPE IF EXISTS of a missing type: %v, changed %v", err, s2 != s)
	}
	if s2, err := applyUDT(t, s, `CREATE TYPE IF NOT EXISTS ks.address (x int)`, 100); err != nil || s2 != s {
		t.Errorf("CREATE TYPE IF NOT EXISTS of an existing type: %v, changed %v", err, s2 != s)
	}
	s = mustApplyUDT(t, s, `DROP TABLE ks.u`, 100)
	s = mustApplyUDT(t, s, `DROP TYPE ks.person`, 101)
	s = mustApplyUDT(t, s, `DROP TYPE address`, 102)
	if k, _ := s.Keyspace("ks"); len(k.UserTypes()) != 0 {
		t.Errorf("types left after dropping both: %v", k.UserTypes())
	}
	if _, err := Decode(s.Encode()); err != nil {
		t.Error(err)
	}
}

func TestQuotedUserTypeNames(t *testing.T) {
	s := mustBuild(t, ksDDL+`CREATE TYPE ks."MyType" ("F" int);
CREATE TABLE ks.q (k int PRIMARY KEY, a frozen<"MyType">, b frozen<ks."MyType">)`)
	tb, _ := s.Table("ks", "q")
	for _, c := range tb.Regular {
		if c.Type != `frozen<udt<ks.MyType, F int>>` || c.Type.CQL() != `frozen<"MyType">` {
			t.Errorf("column %s: type %s (%s)", c.Name, c.Type, c.Type.CQL())
		}
	}
	if _, err := Build(ksDDL + `CREATE TYPE ks."MyType" (f int); CREATE TABLE ks.q (k int PRIMARY KEY, a frozen<mytype>)`); err == nil || !strings.Contains(err.Error(), "unknown type ks.mytype") {
		t.Errorf("an unquoted name found the quoted type: %v", err)
	}
}
