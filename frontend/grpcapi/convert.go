package grpcapi

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"net/netip"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// statement translates a client request into the domain API's statement; UNSPECIFIED is ONE,
// as in Cassandra.
func statement(req *kvnodepb.ExecuteRequest) (coordinator.Statement, error) {
	st := coordinator.Statement{Text: req.GetStatement(), Keyspace: req.GetKeyspace()}
	c := req.GetConsistency()
	switch c {
	case kvnodepb.Consistency_CONSISTENCY_UNSPECIFIED:
		c = kvnodepb.Consistency_CONSISTENCY_ONE
	case kvnodepb.Consistency_CONSISTENCY_SERIAL:
		st.Consistency = coordinator.Serial
		return st, nil
	case kvnodepb.Consistency_CONSISTENCY_LOCAL_SERIAL:
		st.Consistency = coordinator.LocalSerial
		return st, nil
	}
	for d := coordinator.One; d.Valid(); d++ {
		if consistencyToProto(d) == c {
			st.Consistency = d
			return st, nil
		}
	}
	return st, &coordinator.InvalidError{Err: fmt.Errorf("unknown consistency level %d (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)", int32(c))}
}

// consistencyToProto returns the client API's name of a level.
func consistencyToProto(c coordinator.Consistency) kvnodepb.Consistency {
	switch c {
	case coordinator.One:
		return kvnodepb.Consistency_CONSISTENCY_ONE
	case coordinator.Quorum:
		return kvnodepb.Consistency_CONSISTENCY_QUORUM
	case coordinator.All:
		return kvnodepb.Consistency_CONSISTENCY_ALL
	case coordinator.Two:
		return kvnodepb.Consistency_CONSISTENCY_TWO
	case coordinator.Three:
		return kvnodepb.Consistency_CONSISTENCY_THREE
	case coordinator.LocalOne:
		return kvnodepb.Consistency_CONSISTENCY_LOCAL_ONE
	case coordinator.LocalQuorum:
		return kvnodepb.Consistency_CONSISTENCY_LOCAL_QUORUM
	case coordinator.EachQuorum:
		return kvnodepb.Consistency_CONSISTENCY_EACH_QUORUM
	case coordinator.Serial:
		return kvnodepb.Consistency_CONSISTENCY_SERIAL
	case coordinator.LocalSerial:
		return kvnodepb.Consistency_CONSISTENCY_LOCAL_SERIAL
	}
	return kvnodepb.Consistency_CONSISTENCY_UNSPECIFIED
}

// opToProto returns the client API's name of an op.
func opToProto(op schema.Op) kvnodepb.Op {
	switch op {
	case schema.OpRead:
		return kvnodepb.Op_OP_READ
	case schema.OpWrite:
		return kvnodepb.Op_OP_WRITE
	}
	return kvnodepb.Op_OP_UNSPECIFIED
}

// response renders a domain result as the client API's response.
func response(res coordinator.Result) (*kvnodepb.ExecuteResponse, error) {
	resp := &kvnodepb.ExecuteResponse{Warnings: res.Warnings}
	switch res.Kind {
	case coordinator.ResultVoid:
		resp.Result = &kvnodepb.ExecuteResponse_Void{Void: &kvnodepb.Void{}}
	case coordinator.ResultRows:
		rows, err := rowsToProto(res.Rows)
		if err != nil {
			return nil, err
		}
		resp.Result = &kvnodepb.ExecuteResponse_Rows{Rows: rows}
	case coordinator.ResultSetKeyspace:
		resp.Result = &kvnodepb.ExecuteResponse_SetKeyspace{SetKeyspace: res.Keyspace}
	case coordinator.ResultSchemaChange:
		resp.Result = &kvnodepb.ExecuteResponse_SchemaChange{SchemaChange: schemaChangeToProto(res.SchemaChange)}
	case coordinator.ResultDescription:
		resp.Result = &kvnodepb.ExecuteResponse_Description{Description: res.Description}
	default:
		return nil, fmt.Errorf("grpcapi: unknown result kind %v", res.Kind)
	}
	return resp, nil
}

func schemaChangeToProto(sc coordinator.SchemaChange) *kvnodepb.SchemaChange {
	out := &kvnodepb.SchemaChange{Keyspace: sc.Keyspace, Table: sc.Table}
	switch sc.Change {
	case coordinator.Created:
		out.Change = kvnodepb.SchemaChange_CREATED
	case coordinator.Updated:
		out.Change = kvnodepb.SchemaChange_UPDATED
	case coordinator.Dropped:
		out.Change = kvnodepb.SchemaChange_DROPPED
	}
	return out
}

// rowsToProto renders rows as the client API's typed rows.
func rowsToProto(r *coordinator.Rows) (*kvnodepb.Rows, error) {
	if r == nil {
		return &kvnodepb.Rows{}, nil
	}
	out := &kvnodepb.Rows{
		Columns: make([]*kvnodepb.Column, len(r.Columns)),
		Rows:    make([]*kvnodepb.Row, len(r.Values)),
	}
	cols := make([]kvnodepb.Column, len(r.Columns))
	for i, c := range r.Columns {
		cols[i].Name, cols[i].Type, cols[i].TypeName = c.Name, ColumnType(c.Type), c.Type.CQL()
		out.Columns[i] = &cols[i]
	}
	prs := make([]kvnodepb.Row, len(r.Values))
	for i, row := range r.Values {
		if len(row) != len(r.Columns) {
			return nil, fmt.Errorf("grpcapi: row %d of %s.%s has %d values for %d columns", i, r.Keyspace, r.Table, len(row), len(r.Columns))
		}
		vals := make([]kvnodepb.Value, len(row))
		pr := &prs[i]
		pr.Values = make([]*kvnodepb.Value, len(row))
		for j, b := range row {
			if err := setValue(&vals[j], r.Columns[j].Type, b); err != nil {
				return nil, fmt.Errorf("grpcapi: table %s.%s column %s: %w", r.Keyspace, r.Table, r.Columns[j].Name, err)
			}
			pr.Values[j] = &vals[j]
		}
		out.Rows[i] = pr
	}
	return out, nil
}

// columnTypes maps each schema type to the client API's column type.
var columnTypes = map[schema.Type]kvnodepb.ColumnType{
	schema.TypeText:        kvnodepb.ColumnType_COLUMN_TYPE_TEXT,
	schema.TypeInt:         kvnodepb.ColumnType_COLUMN_TYPE_INT,
	schema.TypeBigInt:      kvnodepb.ColumnType_COLUMN_TYPE_BIGINT,
	schema.TypeDouble:      kvnodepb.ColumnType_COLUMN_TYPE_DOUBLE,
	schema.TypeBoolean:     kvnodepb.ColumnType_COLUMN_TYPE_BOOLEAN,
	schema.TypeBlob:        kvnodepb.ColumnType_COLUMN_TYPE_BLOB,
	schema.TypeTimestamp:   kvnodepb.ColumnType_COLUMN_TYPE_TIMESTAMP,
	schema.TypeASCII:       kvnodepb.ColumnType_COLUMN_TYPE_ASCII,
	schema.TypeFloat:       kvnodepb.ColumnType_COLUMN_TYPE_FLOAT,
	schema.TypeSmallInt:    kvnodepb.ColumnType_COLUMN_TYPE_SMALLINT,
	schema.TypeTinyInt:     kvnodepb.ColumnType_COLUMN_TYPE_TINYINT,
	schema.TypeUUID:        kvnodepb.ColumnType_COLUMN_TYPE_UUID,
	schema.TypeTimeUUID:    kvnodepb.ColumnType_COLUMN_TYPE_TIMEUUID,
	schema.TypeInet:        kvnodepb.ColumnType_COLUMN_TYPE_INET,
	schema.TypeDate:        kvnodepb.ColumnType_COLUMN_TYPE_DATE,
	schema.TypeTime:        kvnodepb.ColumnType_COLUMN_TYPE_TIME,
	schema.TypeDecimal:     kvnodepb.ColumnType_COLUMN_TYPE_DECIMAL,
	schema.TypeVarint:      kvnodepb.ColumnType_COLUMN_TYPE_VARINT,
	schema.TypeSetText:     kvnodepb.ColumnType_COLUMN_TYPE_SET_TEXT,
	schema.TypeListText:    kvnodepb.ColumnType_COLUMN_TYPE_LIST_TEXT,
	schema.TypeMapTextText: kvnodepb.ColumnType_COLUMN_TYPE_MAP_TEXT_TEXT,
	schema.TypeMapTextBlob: kvnodepb.ColumnType_COLUMN_TYPE_MAP_TEXT_BLOB,
	schema.TypeDuration:    kvnodepb.ColumnType_COLUMN_TYPE_DURATION,
	schema.TypeCounter:     kvnodepb.ColumnType_COLUMN_TYPE_COUNTER,
}

// paramColumnTypes are the client API's column types of the parametric kinds.
var paramColumnTypes = [...]kvnodepb.ColumnType{
	schema.ParamList: kvnodepb.ColumnType_COLUMN_TYPE_LIST, schema.ParamSet: kvnodepb.ColumnType_COLUMN_TYPE_SET,
	schema.ParamMap: kvnodepb.ColumnType_COLUMN_TYPE_MAP, schema.ParamTuple: kvnodepb.ColumnType_COLUMN_TYPE_TUPLE,
}

// ColumnType returns the client API's column type of t.
func ColumnType(t schema.Type) kvnodepb.ColumnType {
	if ct, ok := columnTypes[t]; ok { // set<text> and the like: a non-frozen column of them too
		return ct
	}
	if kind, _ := t.Params(); kind != schema.NotParametric {
		if kind == schema.ParamUDT {
			return kvnodepb.ColumnType_COLUMN_TYPE_UDT
		}
		return paramColumnTypes[kind]
	}
	return columnTypes[t] // COLUMN_TYPE_UNSPECIFIED for a type the map lacks
}

// Value returns the client API's value of type t encoded in b (nil b is null). It fails when b
// is not a valid encoding of t.
func Value(t schema.Type, b []byte) (*kvnodepb.Value, error) {
	v := &kvnodepb.Value{}
	if err := setValue(v, t, b); err != nil {
		return nil, err
	}
	return v, nil
}

// setValue sets v to the value of type t encoded in b; nil b (null) leaves v unset.
func setValue(v *kvnodepb.Value, t schema.Type, b []byte) error {
	if b == nil {
		return nil
	}
	if err := t.Check(b); err != nil {
		return err
	}
	switch t {
	case schema.TypeText:
		v.Kind = &kvnodepb.Value_Text{Text: string(b)}
	case schema.TypeInt:
		v.Kind = &kvnodepb.Value_Int{Int: int32(binary.BigEndian.Uint32(b))}
	case schema.TypeBigInt, schema.TypeCounter:
		v.Kind = &kvnodepb.Value_Bigint{Bigint: int64(binary.BigEndian.Uint64(b))}
	case schema.TypeDouble:
		v.Kind = &kvnodepb.Value_Double{Double: math.Float64frombits(binary.BigEndian.Uint64(b))}
	case schema.TypeBoolean:
		v.Kind = &kvnodepb.Value_Boolean{Boolean: b[0] == 1}
	case schema.TypeBlob:
		v.Kind = &kvnodepb.Value_Blob{Blob: b}
	case schema.TypeTimestamp:
		v.Kind = &kvnodepb.Value_Timestamp{Timestamp: int64(binary.BigEndian.Uint64(b))}
	case schema.TypeASCII:
		v.Kind = &kvnodepb.Value_Ascii{Ascii: string(b)}
	case schema.TypeFloat:
		v.Kind = &kvnodepb.Value_Float{Float: math.Float32frombits(binary.BigEndian.Uint32(b))}
	case schema.TypeSmallInt:
		v.Kind = &kvnodepb.Value_Smallint{Smallint: int32(int16(binary.BigEndian.Uint16(b)))}
	case schema.TypeTinyInt:
		v.Kind = &kvnodepb.Value_Tinyint{Tinyint: int32(int8(b[0]))}
	case schema.TypeUUID:
		v.Kind = &kvnodepb.Value_Uuid{Uuid: schema.UUID(b).String()}
	case schema.TypeTimeUUID:
		v.Kind = &kvnodepb.Value_Timeuuid{Timeuuid: schema.UUID(b).String()}
	case schema.TypeInet:
		a, _ := netip.AddrFromSlice(b)
		v.Kind = &kvnodepb.Value_Inet{Inet: a.String()}
	case schema.TypeDate:
		v.Kind = &kvnodepb.Value_Date{Date: int32(binary.BigEndian.Uint32(b) - 1<<31)}
	case schema.TypeTime:
		v.Kind = &kvnodepb.Value_Time{Time: int64(binary.BigEndian.Uint64(b))}
	case schema.TypeDecimal:
		v.Kind = &kvnodepb.Value_Decimal{Decimal: schema.DecodeDecimal(b).String()}
	case schema.TypeVarint:
		n, _ := t.Decode(b)
		v.Kind = &kvnodepb.Value_Varint{Varint: n.(*big.Int).String()}
	case schema.TypeSetText, schema.TypeListText:
		x, _ := t.Decode(b)
		list := &kvnodepb.TextList{Values: x.([]string)}
		if t == schema.TypeSetText {
			v.Kind = &kvnodepb.Value_SetText{SetText: list}
		} else {
			v.Kind = &kvnodepb.Value_ListText{ListText: list}
		}
	case schema.TypeMapTextText:
		x, _ := t.Decode(b)
		m := make(map[string]string)
		for _, e := range x.([]schema.MapEntry[string]) {
			m[e.Key] = e.Value
		}
		v.Kind = &kvnodepb.Value_MapTextText{MapTextText: &kvnodepb.TextMap{Entries: m}}
	case schema.TypeMapTextBlob:
		x, _ := t.Decode(b)
		m := make(map[string][]byte)
		for _, e := range x.([]schema.MapEntry[[]byte]) {
			m[e.Key] = e.Value
		}
		v.Kind = &kvnodepb.Value_MapTextBlob{MapTextBlob: &kvnodepb.BlobMap{Entries: m}}
	case schema.TypeDuration:
		x, _ := t.Decode(b)
		d := x.(schema.Duration)
		v.Kind = &kvnodepb.Value_Duration{Duration: &kvnodepb.Duration{Months: d.Months, Days: d.Days, Nanoseconds: d.Nanoseconds}}
	default:
		kind, elems := t.Params()
		if kind == schema.NotParametric {
			return fmt.Errorf("unsupported column type %v", t)
		}
		if kind == schema.ParamUDT {
			return setUserType(v, t, b)
		}
		return setParam(v, kind, elems, b)
	}
	return nil
}

// setParam sets v to the frozen collection or tuple b (well-formed: setValue checked it) of the
// parametric kind with element types elems.
func setParam(v *kvnodepb.Value, kind schema.ParamKind, elems []schema.Type, b []byte) error {
	next := func() []byte {
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if n < 0 {
			return nil
		}
		e := b[:n]
		b = b[n:]
		return e
	}
	value := func(t schema.Type, e []byte) (*kvnodepb.Value, error) { return Value(t, e) }
	if kind == schema.ParamTuple {
		vs := &kvnodepb.Values{Values: make([]*kvnodepb.Value, len(elems))}
		for i, et := range elems {
			x, err := value(et, next())
			if err != nil {
				return err
			}
			vs.Values[i] = x
		}
		v.Kind = &kvnodepb.Value_Tuple{Tuple: vs}
		return nil
	}
	count := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	if kind == schema.ParamMap {
		m := &kvnodepb.MapEntries{Entries: make([]*kvnodepb.MapEntry, count)}
		for i := range count {
			k, err := value(elems[0], next())
			if err != nil {
				return err
			}
			x, err := value(elems[1], next())
			if err != nil {
				return err
			}
			m.Entries[i] = &kvnodepb.MapEntry{Key: k, Value: x}
		}
		v.Kind = &kvnodepb.Value_Map{Map: m}
		return nil
	}
	vs := &kvnodepb.Values{Values: make([]*kvnodepb.Value, count)}
	for i := range count {
		x, err := value(elems[0], next())
		if err != nil {
			return err
		}
		vs.Values[i] = x
	}
	if kind == schema.ParamSet {
		v.Kind = &kvnodepb.Value_Set{Set: vs}
	} else {
		v.Kind = &kvnodepb.Value_List{List: vs}
	}
	return nil
}

// setUserType sets v to the user type value b (well-formed: setValue checked it) of type t: every
// field of the type, a field missing from b's end null, as Cassandra reads a value written before
// ALTER TYPE ADD.
func setUserType(v *kvnodepb.Value, t schema.Type, b []byte) error {
	u, _ := t.UserType()
	fields := make([]*kvnodepb.UserTypeField, len(u.FieldNames))
	for i, name := range u.FieldNames {
		var e []byte
		if len(b) >= 4 {
			n := int32(binary.BigEndian.Uint32(b))
			b = b[4:]
			if n >= 0 {
				e, b = b[:n], b[n:]
			}
		}
		x, err := Value(u.FieldTypes[i], e)
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		fields[i] = &kvnodepb.UserTypeField{Name: name, Value: x}
	}
	v.Kind = &kvnodepb.Value_Udt{Udt: &kvnodepb.UserTypeValue{Fields: fields}}
	return nil
}
