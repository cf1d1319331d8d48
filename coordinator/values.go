package coordinator

import (
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// ProtoValue returns the client API's value of type t encoded in b (nil b is null), as result
// rows carry it. It fails when b is not a valid encoding of t.
func ProtoValue(t schema.Type, b []byte) (*kvnodepb.Value, error) {
	v := &kvnodepb.Value{}
	if err := setValue(v, t, b); err != nil {
		return nil, err
	}
	return v, nil
}

// ProtoColumnType returns the client API's column type of t.
func ProtoColumnType(t schema.Type) kvnodepb.ColumnType { return columnType(t) }
