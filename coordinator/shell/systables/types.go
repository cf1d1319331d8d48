package systables

import "github.com/kvnode/kvnode/schema"

// The column types of the system tables: the schema's, with its read-only collection types
// (set<text>, list<text>, map<text, text>, map<text, blob>) for the columns drivers read as
// collections.
const (
	typeText        = schema.TypeText
	typeInt         = schema.TypeInt
	typeDouble      = schema.TypeDouble
	typeBoolean     = schema.TypeBoolean
	typeBlob        = schema.TypeBlob
	typeTimestamp   = schema.TypeTimestamp
	typeUUID        = schema.TypeUUID
	typeInet        = schema.TypeInet
	typeSetText     = schema.TypeSetText
	typeListText    = schema.TypeListText
	typeMapTextText = schema.TypeMapTextText
	typeMapTextBlob = schema.TypeMapTextBlob
)
