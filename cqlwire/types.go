package cqlwire

import "fmt"

// TypeID is the id of a column type [option] (spec 4.2.5.2).
type TypeID uint16

// Type ids.
const (
	TypeCustom    TypeID = 0x0000
	TypeASCII     TypeID = 0x0001
	TypeBigint    TypeID = 0x0002
	TypeBlob      TypeID = 0x0003
	TypeBoolean   TypeID = 0x0004
	TypeCounter   TypeID = 0x0005
	TypeDecimal   TypeID = 0x0006
	TypeDouble    TypeID = 0x0007
	TypeFloat     TypeID = 0x0008
	TypeInt       TypeID = 0x0009
	TypeTimestamp TypeID = 0x000B
	TypeUUID      TypeID = 0x000C
	TypeVarchar   TypeID = 0x000D
	TypeVarint    TypeID = 0x000E
	TypeTimeUUID  TypeID = 0x000F
	TypeInet      TypeID = 0x0010
	TypeDate      TypeID = 0x0011
	TypeTime      TypeID = 0x0012
	TypeSmallint  TypeID = 0x0013
	TypeTinyint   TypeID = 0x0014
	TypeDuration  TypeID = 0x0015
	TypeList      TypeID = 0x0020
	TypeMap       TypeID = 0x0021
	TypeSet       TypeID = 0x0022
	TypeUDT       TypeID = 0x0030
	TypeTuple     TypeID = 0x0031
)

// Type is a column type. Custom is the class name of TypeCustom; Elems are
// the element type of list and set, key and value of map, the components
// of tuple and the field types of udt; Keyspace, Name and Fields describe a
// udt.
type Type struct {
	ID       TypeID
	Custom   string
	Elems    []Type
	Keyspace string
	Name     string
	Fields   []string
}

// ColumnSpec is a column of result or bind metadata.
type ColumnSpec struct {
	Keyspace, Table, Name string
	Type                  Type
}

// maxTypeDepth bounds the nesting of decoded types, so that hostile input
// cannot recurse deeply (real schemas nest a handful of levels).
const maxTypeDepth = 32

func (t *Type) append(dst []byte) []byte {
	dst = appendShort(dst, uint16(t.ID))
	switch t.ID {
	case TypeCustom:
		dst = appendString(dst, t.Custom)
	case TypeList, TypeSet:
		dst = t.Elems[0].append(dst)
	case TypeMap:
		dst = t.Elems[0].append(dst)
		dst = t.Elems[1].append(dst)
	case TypeUDT:
		dst = appendString(dst, t.Keyspace)
		dst = appendString(dst, t.Name)
		dst = appendShort(dst, uint16(len(t.Fields)))
		for i, f := range t.Fields {
			dst = appendString(dst, f)
			dst = t.Elems[i].append(dst)
		}
	case TypeTuple:
		dst = appendShort(dst, uint16(len(t.Elems)))
		for i := range t.Elems {
			dst = t.Elems[i].append(dst)
		}
	}
	return dst
}

func decodeType(r *reader, depth int) Type {
	t := Type{ID: TypeID(r.short("type id"))}
	if r.err != nil {
		return t
	}
	if depth >= maxTypeDepth {
		r.failf("type nested deeper than %d levels", maxTypeDepth)
		return t
	}
	switch t.ID {
	case TypeCustom:
		t.Custom = r.string("custom type class")
	case TypeASCII, TypeBigint, TypeBlob, TypeBoolean, TypeCounter, TypeDecimal, TypeDouble,
		TypeFloat, TypeInt, TypeTimestamp, TypeUUID, TypeVarchar, TypeVarint, TypeTimeUUID,
		TypeInet, TypeDate, TypeTime, TypeSmallint, TypeTinyint, TypeDuration:
	case TypeList, TypeSet:
		t.Elems = []Type{decodeType(r, depth+1)}
	case TypeMap:
		k := decodeType(r, depth+1)
		t.Elems = []Type{k, decodeType(r, depth+1)}
	case TypeUDT:
		t.Keyspace = r.string("udt keyspace")
		t.Name = r.string("udt name")
		n := r.count(int(r.short("udt field count")), 4, "udt fields")
		t.Fields = make([]string, n)
		t.Elems = make([]Type, n)
		for i := range n {
			t.Fields[i] = r.string("udt field name")
			t.Elems[i] = decodeType(r, depth+1)
		}
	case TypeTuple:
		n := r.count(int(r.short("tuple size")), 2, "tuple types")
		t.Elems = make([]Type, n)
		for i := range n {
			t.Elems[i] = decodeType(r, depth+1)
		}
	default:
		r.failf("unknown type id 0x%04x", uint16(t.ID))
	}
	return t
}

func (t Type) String() string {
	switch t.ID {
	case TypeCustom:
		return fmt.Sprintf("'%s'", t.Custom)
	case TypeList, TypeSet:
		return fmt.Sprintf("%s<%v>", typeNames[t.ID], t.Elems[0])
	case TypeMap:
		return fmt.Sprintf("map<%v, %v>", t.Elems[0], t.Elems[1])
	case TypeUDT:
		return t.Keyspace + "." + t.Name
	case TypeTuple:
		return fmt.Sprintf("tuple%v", t.Elems)
	}
	if n, ok := typeNames[t.ID]; ok {
		return n
	}
	return fmt.Sprintf("type(0x%04x)", uint16(t.ID))
}

var typeNames = map[TypeID]string{
	TypeASCII: "ascii", TypeBigint: "bigint", TypeBlob: "blob", TypeBoolean: "boolean",
	TypeCounter: "counter", TypeDecimal: "decimal", TypeDouble: "double", TypeFloat: "float",
	TypeInt: "int", TypeTimestamp: "timestamp", TypeUUID: "uuid", TypeVarchar: "varchar",
	TypeVarint: "varint", TypeTimeUUID: "timeuuid", TypeInet: "inet", TypeDate: "date",
	TypeTime: "time", TypeSmallint: "smallint", TypeTinyint: "tinyint", TypeDuration: "duration",
	TypeList: "list", TypeSet: "set",
}
