package native

import (
	"fmt"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// wireType returns the protocol's type option of a column type. The values need no
// conversion: the schema's canonical encodings are the protocol's.
func wireType(t schema.Type) (cqlwire.Type, error) {
	switch t {
	case schema.TypeText:
		return cqlwire.Type{ID: cqlwire.TypeVarchar}, nil
	case schema.TypeInt:
		return cqlwire.Type{ID: cqlwire.TypeInt}, nil
	case schema.TypeBigInt:
		return cqlwire.Type{ID: cqlwire.TypeBigint}, nil
	case schema.TypeDouble:
		return cqlwire.Type{ID: cqlwire.TypeDouble}, nil
	case schema.TypeBoolean:
		return cqlwire.Type{ID: cqlwire.TypeBoolean}, nil
	case schema.TypeBlob:
		return cqlwire.Type{ID: cqlwire.TypeBlob}, nil
	case schema.TypeTimestamp:
		return cqlwire.Type{ID: cqlwire.TypeTimestamp}, nil
	}
	return cqlwire.Type{}, fmt.Errorf("column type %v has no native protocol type", t)
}
