package systables

import "github.com/kvnode/kvnode/schema"

// The column types of the system tables.
//
// Until the schema's uuid, inet and read-only collection types are merged, the columns of those
// types are declared as blob (their values are already encoded as the native protocol encodes
// the real types); these constants switch to schema.TypeUUID, schema.TypeInet,
// schema.TypeSetText, schema.TypeListText, schema.TypeMapTextText and schema.TypeMapTextBlob
// then, and nothing else changes.
const (
	typeText        = schema.TypeText
	typeInt         = schema.TypeInt
	typeDouble      = schema.TypeDouble
	typeBoolean     = schema.TypeBoolean
	typeBlob        = schema.TypeBlob
	typeTimestamp   = schema.TypeTimestamp
	typeUUID        = schema.TypeBlob
	typeInet        = schema.TypeBlob
	typeSetText     = schema.TypeBlob
	typeListText    = schema.TypeBlob
	typeMapTextText = schema.TypeBlob
	typeMapTextBlob = schema.TypeBlob
)
