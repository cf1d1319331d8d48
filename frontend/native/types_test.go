package native

import (
	"reflect"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

func TestWireTypes(t *testing.T) {
	set := func(e cqlwire.TypeID) string {
		return cqlwire.Type{ID: cqlwire.TypeSet, Elems: []cqlwire.Type{{ID: e}}}.String()
	}
	for st, want := range map[schema.Type]string{
		schema.TypeText: "varchar", schema.TypeASCII: "ascii", schema.TypeInt: "int", schema.TypeBigInt: "bigint",
		schema.TypeSmallInt: "smallint", schema.TypeTinyInt: "tinyint", schema.TypeVarint: "varint",
		schema.TypeDouble: "double", schema.TypeFloat: "float", schema.TypeDecimal: "decimal",
		schema.TypeBoolean: "boolean", schema.TypeBlob: "blob", schema.TypeTimestamp: "timestamp",
		schema.TypeDate: "date", schema.TypeTime: "time", schema.TypeUUID: "uuid", schema.TypeTimeUUID: "timeuuid",
		schema.TypeInet: "inet", schema.TypeDuration: "duration", schema.TypeSetText: set(cqlwire.TypeVarchar),
		schema.TypeListText:    cqlwire.Type{ID: cqlwire.TypeList, Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}}}.String(),
		schema.TypeMapTextText: cqlwire.Type{ID: cqlwire.TypeMap, Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}, {ID: cqlwire.TypeVarchar}}}.String(),
		schema.TypeMapTextBlob: cqlwire.Type{ID: cqlwire.TypeMap, Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}, {ID: cqlwire.TypeBlob}}}.String(),
		// Non-frozen collections have their frozen collection's option, as in Cassandra.
		"map<int, frozen<list<int>>>": cqlwire.Type{ID: cqlwire.TypeMap, Elems: []cqlwire.Type{{ID: cqlwire.TypeInt}, {ID: cqlwire.TypeList, Elems: []cqlwire.Type{{ID: cqlwire.TypeInt}}}}}.String(),
		"set<int>":                    set(cqlwire.TypeInt),
	} {
		got, err := wireType(st)
		if err != nil || got.String() != want {
			t.Errorf("wireType(%v) = %v, %v; want %s", st, got, err, want)
		}
	}
	// Every valid type has a protocol type.
	for _, st := range schema.Types() {
		if _, err := wireType(st); err != nil {
			t.Errorf("wireType(%v): %v", st, err)
		}
	}
	if _, err := wireType(schema.TypeInvalid); err == nil {
		t.Error("wireType(invalid) succeeded")
	}
}

// TestWireTypeUDT: a user type's column is the protocol's UDT option with the type's keyspace,
// name and fields, nested types included.
func TestWireTypeUDT(t *testing.T) {
	s, err := schema.Build(`CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE TYPE ks.address (street text, zip int);
CREATE TYPE ks.person (name text, homes frozen<list<frozen<address>>>);
CREATE TABLE ks.t (k int PRIMARY KEY, p frozen<person>)`)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("ks", "t")
	c, _ := tb.Column("p")
	got, err := wireType(c.Type)
	addr := cqlwire.Type{ID: cqlwire.TypeUDT, Keyspace: "ks", Name: "address", Fields: []string{"street", "zip"},
		Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}, {ID: cqlwire.TypeInt}}}
	want := cqlwire.Type{ID: cqlwire.TypeUDT, Keyspace: "ks", Name: "person", Fields: []string{"name", "homes"},
		Elems: []cqlwire.Type{{ID: cqlwire.TypeVarchar}, {ID: cqlwire.TypeList, Elems: []cqlwire.Type{addr}}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("wireType(%s) = %+v, %v; want %+v", c.Type, got, err, want)
	}
	sc := schemaChange(coordinator.SchemaChange{Change: coordinator.Created, Target: coordinator.TargetType, Keyspace: "ks", Table: "address"})
	if sc.Target != "TYPE" || sc.Name != "address" || sc.Keyspace != "ks" {
		t.Errorf("schema change of CREATE TYPE = %+v, want TYPE ks address", sc)
	}
}
