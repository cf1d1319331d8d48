package interop

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
)

// address is the Go side of the user type ks.address, mapped by gocql through its cql tags.
type address struct {
	Street string `cql:"street"`
	Zip    int    `cql:"zip"`
	City   string `cql:"city"`
}

// testGocqlUDT creates a user type and a table with a frozen<address> column, writes it with
// prepared statements from a struct and from a map and as a literal, reads it back into a
// struct, checks the result metadata (the protocol's UDT option) and gocql's keyspace metadata
// (system_schema.types), adds a field with ALTER TYPE and reads an old row with the new field
// empty, and checks that DROP TYPE is refused while the table uses the type.
func testGocqlUDT(t *testing.T, session *gocql.Session) {
	for _, ddl := range []string{
		fmt.Sprintf("CREATE TYPE %s.address (street text, zip int)", keyspace),
		fmt.Sprintf("CREATE TABLE %s.homes (k int PRIMARY KEY, a frozen<address>, l frozen<list<frozen<address>>>)", keyspace),
	} {
		if err := session.Query(ddl).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", ddl, err)
		}
	}
	ins := fmt.Sprintf("INSERT INTO %s.homes (k, a) VALUES (?, ?)", keyspace)
	if err := session.Query(ins, 1, address{Street: "main", Zip: 5}).Exec(); err != nil {
		t.Fatalf("gocql: %s with a struct: %v", ins, err)
	}
	if err := session.Query(ins, 2, map[string]any{"street": "side", "zip": 7}).Exec(); err != nil {
		t.Fatalf("gocql: %s with a map: %v", ins, err)
	}
	lit := fmt.Sprintf("INSERT INTO %s.homes (k, a, l) VALUES (3, {street: 'lit', zip: 9}, [{street: 'x'}])", keyspace)
	if err := session.Query(lit).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", lit, err)
	}
	read := func(k int) address {
		t.Helper()
		iter := session.Query(fmt.Sprintf("SELECT a FROM %s.homes WHERE k = ?", keyspace), k).Iter()
		cols := iter.Columns()
		if len(cols) != 1 || cols[0].TypeInfo.Type() != gocql.TypeUDT {
			t.Errorf("gocql: result metadata %v, want a of type udt", cols)
		} else if ut, ok := cols[0].TypeInfo.(gocql.UDTTypeInfo); !ok || ut.KeySpace != keyspace || ut.Name != "address" || len(ut.Elements) < 2 || ut.Elements[0].Name != "street" {
			t.Errorf("gocql: UDT metadata %+v, want %s.address with fields street, zip", cols[0].TypeInfo, keyspace)
		}
		var a address
		if !iter.Scan(&a) {
			t.Errorf("gocql: no row %d", k)
		}
		if err := iter.Close(); err != nil {
			t.Errorf("gocql: reading row %d: %v", k, err)
		}
		return a
	}
	for k, want := range map[int]address{1: {"main", 5, ""}, 2: {"side", 7, ""}, 3: {"lit", 9, ""}} {
		if got := read(k); got != want {
			t.Errorf("gocql: row %d reads %+v, want %+v", k, got, want)
		}
	}

	poll.Must(t, discoverTimeout, "gocql knows type address", func() error {
		km, err := session.KeyspaceMetadata(keyspace)
		if err != nil {
			return err
		}
		if _, ok := km.Types["address"]; !ok {
			return errors.New("no type address in the keyspace metadata")
		}
		return nil
	})
	km, err := session.KeyspaceMetadata(keyspace)
	if err != nil {
		t.Fatal(err)
	}
	if ty := km.Types["address"]; !reflect.DeepEqual(ty.FieldNames, []string{"street", "zip"}) || !reflect.DeepEqual(ty.FieldTypes, []string{"text", "int"}) {
		t.Errorf("gocql: type metadata %+v, want fields street text, zip int", ty)
	}
	tm, err := session.TableMetadata(keyspace, "homes")
	if err != nil {
		t.Fatalf("gocql: table metadata of homes: %v", err)
	}
	if col, ok := tm.Columns["a"]; !ok || col.Type != "frozen<address>" {
		t.Errorf("gocql sees column homes.a as %+v, want frozen<address>", col)
	}

	alter := fmt.Sprintf("ALTER TYPE %s.address ADD city text", keyspace)
	if err := session.Query(alter).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", alter, err)
	}
	if err := session.Query(ins, 4, address{Street: "new", Zip: 1, City: "c"}).Exec(); err != nil {
		t.Fatalf("gocql: %s after ALTER TYPE: %v", ins, err)
	}
	if got, want := read(1), (address{"main", 5, ""}); got != want {
		t.Errorf("gocql: a row written before ALTER TYPE ADD reads %+v, want %+v", got, want)
	}
	if got, want := read(4), (address{"new", 1, "c"}); got != want {
		t.Errorf("gocql: a row written after ALTER TYPE ADD reads %+v, want %+v", got, want)
	}
	drop := fmt.Sprintf("DROP TYPE %s.address", keyspace)
	err = session.Query(drop).Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "still used by table") {
		t.Errorf("gocql: %s answered %v, want Invalid naming the table that uses it", drop, err)
	}
	inKey := fmt.Sprintf("CREATE TABLE %s.nf (k address PRIMARY KEY, v int)", keyspace)
	err = session.Query(inKey).Exec()
	if err == nil || !strings.Contains(err.Error(), "invalid non-frozen user-defined type") {
		t.Errorf("gocql: %s answered %v, want the refusal of a non-frozen user type in a key", inKey, err)
	}
}

// coord is the Go side of the user type ks.coord.
type coord struct {
	X     int    `cql:"x"`
	Y     int    `cql:"y"`
	Label string `cql:"label"`
}

// testGocqlUDTKeys uses a user type as a partition key and as a DESC clustering key through
// prepared statements: rows read back by key, in the type's order (field by field, a null or
// missing field first). ALTER TYPE ADD is refused while a partition key uses the type, and
// after that table is dropped, rows clustered by the old, shorter values keep their order
// beside rows written with the new field.
func testGocqlUDTKeys(t *testing.T, session *gocql.Session) {
	for _, ddl := range []string{
		fmt.Sprintf("CREATE TYPE %s.coord (x int, y int)", keyspace),
		fmt.Sprintf("CREATE TABLE %s.bypoint (p frozen<coord> PRIMARY KEY, v int)", keyspace),
		fmt.Sprintf("CREATE TABLE %s.path (k int, p frozen<coord>, v int, PRIMARY KEY (k, p)) WITH CLUSTERING ORDER BY (p DESC)", keyspace),
	} {
		if err := session.Query(ddl).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", ddl, err)
		}
	}
	insPK := fmt.Sprintf("INSERT INTO %s.bypoint (p, v) VALUES (?, ?)", keyspace)
	insCK := fmt.Sprintf("INSERT INTO %s.path (k, p, v) VALUES (0, ?, ?)", keyspace)
	for i, p := range []coord{{X: 1, Y: 2}, {X: 1}, {X: 0, Y: 9}} {
		if err := session.Query(insPK, p, i).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", insPK, err)
		}
		if err := session.Query(insCK, p, i).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", insCK, err)
		}
	}
	var v int
	if err := session.Query(fmt.Sprintf("SELECT v FROM %s.bypoint WHERE p = ?", keyspace), coord{X: 1, Y: 2}).Scan(&v); err != nil || v != 0 {
		t.Errorf("gocql: row of partition {x: 1, y: 2}: v=%d, %v; want 0", v, err)
	}
	if err := session.Query(fmt.Sprintf("SELECT v FROM %s.bypoint WHERE p = {x: 0, y: 9}", keyspace)).Scan(&v); err != nil || v != 2 {
		t.Errorf("gocql: row of partition {x: 0, y: 9} (literal): v=%d, %v; want 2", v, err)
	}
	// A bound value's null trailing field and a literal's missing one are the same partition.
	if err := session.Query(insPK, map[string]any{"x": 7}, 7).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", insPK, err)
	}
	if err := session.Query(fmt.Sprintf("SELECT v FROM %s.bypoint WHERE p = {x: 7}", keyspace)).Scan(&v); err != nil || v != 7 {
		t.Errorf("gocql: row of partition {x: 7} written as {x: 7, y: null}: v=%d, %v; want 7", v, err)
	}
	order := func() []int {
		t.Helper()
		iter := session.Query(fmt.Sprintf("SELECT v FROM %s.path WHERE k = 0", keyspace)).Iter()
		var got []int
		for iter.Scan(&v) {
			got = append(got, v)
		}
		if err := iter.Close(); err != nil {
			t.Errorf("gocql: reading ks.path: %v", err)
		}
		return got
	}
	// DESC: {1, 2} > {1, null} > {0, 9}.
	if got := order(); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Errorf("gocql: clustering by frozen<coord> DESC reads rows %v, want [0 1 2]", got)
	}
	alter := fmt.Sprintf("ALTER TYPE %s.coord ADD label text", keyspace)
	err := session.Query(alter).Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "used in the partition key column p of table "+keyspace+".bypoint") {
		t.Errorf("gocql: %s answered %v, want Invalid naming the partition key", alter, err)
	}
	if err := session.Query(fmt.Sprintf("DROP TABLE %s.bypoint", keyspace)).Exec(); err != nil {
		t.Fatal(err)
	}
	if err := session.Query(alter).Exec(); err != nil {
		t.Fatalf("gocql: %s once no partition key uses it: %v", alter, err)
	}
	// gocql sends a map's missing fields as nulls: {x: 1, y: 2, label: null} is the value
	// written before the ALTER as {x: 1, y: 2}, and a Go struct's empty Label is '', not null.
	// DESC: {1, 2, 'a'} > {1, 2, ''} > {1, 2} = {1, 2, null} > {1, 0} > {0, 9}.
	for v, p := range map[int]any{3: coord{X: 1, Y: 2, Label: "a"}, 4: coord{X: 1, Y: 2}, 5: map[string]any{"x": 1, "y": 2}} {
		if err := session.Query(insCK, p, v).Exec(); err != nil {
			t.Fatalf("gocql: %s after ALTER TYPE ADD: %v", insCK, err)
		}
	}
	if got := order(); !reflect.DeepEqual(got, []int{3, 4, 5, 1, 2}) {
		t.Errorf("gocql: after ALTER TYPE ADD, rows read %v, want [3 4 5 1 2] (row 0's key overwritten by 5)", got)
	}
	var p coord
	if err := session.Query(fmt.Sprintf("SELECT p FROM %s.path WHERE k = 0 AND p = ?", keyspace), map[string]any{"x": 1, "y": 0}).Scan(&p); err != nil || p != (coord{X: 1}) {
		t.Errorf("gocql: clustering key {x: 1, y: 0} written before ALTER reads %+v, %v", p, err)
	}

}
