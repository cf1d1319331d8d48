package native

import (
	"testing"

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
