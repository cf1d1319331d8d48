package native

import (
	"fmt"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// wireType returns the protocol's type option of a column type. The values need no
// conversion: the schema's canonical encodings are the protocol's (a collection's too: an
// [int] count, then each element, key and value as [bytes]).
func wireType(t schema.Type) (cqlwire.Type, error) {
	if u, ok := t.UserType(); ok { // the protocol's UDT option: keyspace, name, fields
		wt := cqlwire.Type{ID: cqlwire.TypeUDT, Keyspace: u.Keyspace, Name: u.Name, Fields: u.FieldNames, Elems: make([]cqlwire.Type, len(u.FieldTypes))}
		for i, e := range u.FieldTypes {
			w, err := wireType(e)
			if err != nil {
				return cqlwire.Type{}, err
			}
			wt.Elems[i] = w
		}
		return wt, nil
	}
	if kind, elems := t.Params(); kind != schema.NotParametric {
		wt := cqlwire.Type{ID: paramIDs[kind], Elems: make([]cqlwire.Type, len(elems))}
		for i, e := range elems {
			w, err := wireType(e)
			if err != nil {
				return cqlwire.Type{}, err
			}
			wt.Elems[i] = w
		}
		return wt, nil
	}
	if kind, key, value := t.Elements(); kind != schema.NotCollection {
		k, err := wireType(key)
		if err != nil {
			return cqlwire.Type{}, err
		}
		switch kind {
		case schema.CollectionSet:
			return cqlwire.Type{ID: cqlwire.TypeSet, Elems: []cqlwire.Type{k}}, nil
		case schema.CollectionList:
			return cqlwire.Type{ID: cqlwire.TypeList, Elems: []cqlwire.Type{k}}, nil
		case schema.CollectionMap:
			v, err := wireType(value)
			if err != nil {
				return cqlwire.Type{}, err
			}
			return cqlwire.Type{ID: cqlwire.TypeMap, Elems: []cqlwire.Type{k, v}}, nil
		}
	}
	if id, ok := scalarID(t); ok {
		return cqlwire.Type{ID: id}, nil
	}
	return cqlwire.Type{}, fmt.Errorf("column type %v has no native protocol type", t)
}

// paramIDs are the protocol's ids of the parametric kinds (frozen or not: the protocol does not
// say).
var paramIDs = [...]cqlwire.TypeID{
	schema.ParamList: cqlwire.TypeList, schema.ParamSet: cqlwire.TypeSet, schema.ParamMap: cqlwire.TypeMap,
	schema.ParamTuple: cqlwire.TypeTuple,
}

// scalarID returns the protocol's id of a scalar type.
func scalarID(t schema.Type) (cqlwire.TypeID, bool) {
	switch t {
	case schema.TypeText:
		return cqlwire.TypeVarchar, true
	case schema.TypeASCII:
		return cqlwire.TypeASCII, true
	case schema.TypeInt:
		return cqlwire.TypeInt, true
	case schema.TypeBigInt:
		return cqlwire.TypeBigint, true
	case schema.TypeCounter:
		return cqlwire.TypeCounter, true
	case schema.TypeSmallInt:
		return cqlwire.TypeSmallint, true
	case schema.TypeTinyInt:
		return cqlwire.TypeTinyint, true
	case schema.TypeVarint:
		return cqlwire.TypeVarint, true
	case schema.TypeDouble:
		return cqlwire.TypeDouble, true
	case schema.TypeFloat:
		return cqlwire.TypeFloat, true
	case schema.TypeDecimal:
		return cqlwire.TypeDecimal, true
	case schema.TypeBoolean:
		return cqlwire.TypeBoolean, true
	case schema.TypeBlob:
		return cqlwire.TypeBlob, true
	case schema.TypeTimestamp:
		return cqlwire.TypeTimestamp, true
	case schema.TypeDate:
		return cqlwire.TypeDate, true
	case schema.TypeTime:
		return cqlwire.TypeTime, true
	case schema.TypeUUID:
		return cqlwire.TypeUUID, true
	case schema.TypeTimeUUID:
		return cqlwire.TypeTimeUUID, true
	case schema.TypeInet:
		return cqlwire.TypeInet, true
	case schema.TypeDuration:
		return cqlwire.TypeDuration, true
	}
	return 0, false
}
