package client

import (
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"time"

	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/schema"
)

// The Go types of uuid, timeuuid, date and decimal values are the schema package's, so that a
// value means the same in the client, the server and the tests.
type (
	// UUID is a uuid or timeuuid value: its 16 bytes in RFC 4122 order.
	UUID = schema.UUID
	// Date is a date value: days since the Unix epoch (1970-01-01 is 0), negative before it.
	Date = schema.Date
	// Decimal is a decimal value, exactly: Unscaled × 10^-Scale (1.50 is {150, 2}).
	Decimal = schema.Decimal
	// Duration is a duration value: months, days and nanoseconds, all of one sign.
	Duration = schema.Duration
	// List, Set, Map and Tuple are the values of frozen collections and tuples: their elements'
	// Go values as Result.Rows gives them (nil for a null tuple component).
	List  = schema.List
	Set   = schema.Set
	Map   = schema.Map
	Tuple = schema.Tuple
	// UDT is a user-defined type's value: every field of the type in its declared order, a null
	// field's Value nil.
	UDT = schema.UDT
	// UDTField is one field of a UDT.
	UDTField = schema.UDTField
	// MapPair is one entry of a Map.
	MapPair = schema.MapPair
)

// decodeValues decodes the elements of a collection or tuple.
func decodeValues(vs []*kvnodepb.Value) ([]any, error) {
	out := make([]any, len(vs))
	for i, v := range vs {
		x, err := decodeValue(v)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// ParseUUID parses the canonical 36-character form (either case).
func ParseUUID(s string) (UUID, error) { return schema.ParseUUID(s) }

// ParseDecimal parses a decimal number exactly (1.50, -0.001, 1.2E+10), keeping its scale.
func ParseDecimal(s string) (Decimal, error) { return schema.ParseDecimal(s) }

// decodeValue returns the Go value of a client API value (see Result.Rows).
func decodeValue(v *kvnodepb.Value) (any, error) {
	switch k := v.GetKind().(type) {
	case *kvnodepb.Value_Text:
		return k.Text, nil
	case *kvnodepb.Value_Ascii:
		return k.Ascii, nil
	case *kvnodepb.Value_Int:
		return k.Int, nil
	case *kvnodepb.Value_Bigint:
		return k.Bigint, nil
	case *kvnodepb.Value_Smallint:
		if k.Smallint < math.MinInt16 || k.Smallint > math.MaxInt16 {
			return nil, fmt.Errorf("smallint %d is out of range", k.Smallint)
		}
		return int16(k.Smallint), nil
	case *kvnodepb.Value_Tinyint:
		if k.Tinyint < math.MinInt8 || k.Tinyint > math.MaxInt8 {
			return nil, fmt.Errorf("tinyint %d is out of range", k.Tinyint)
		}
		return int8(k.Tinyint), nil
	case *kvnodepb.Value_Double:
		return k.Double, nil
	case *kvnodepb.Value_Float:
		return k.Float, nil
	case *kvnodepb.Value_Boolean:
		return k.Boolean, nil
	case *kvnodepb.Value_Blob:
		return k.Blob, nil
	case *kvnodepb.Value_Timestamp:
		return time.UnixMilli(k.Timestamp).UTC(), nil
	case *kvnodepb.Value_Uuid:
		return ParseUUID(k.Uuid)
	case *kvnodepb.Value_Timeuuid:
		return ParseUUID(k.Timeuuid)
	case *kvnodepb.Value_Inet:
		a, err := netip.ParseAddr(k.Inet)
		if err != nil {
			return nil, fmt.Errorf("inet: %w", err)
		}
		return a, nil
	case *kvnodepb.Value_Date:
		return Date(k.Date), nil
	case *kvnodepb.Value_Time:
		if k.Time < 0 || k.Time >= int64(24*time.Hour) {
			return nil, fmt.Errorf("time %d ns is outside a day", k.Time)
		}
		return time.Duration(k.Time), nil
	case *kvnodepb.Value_Decimal:
		return ParseDecimal(k.Decimal)
	case *kvnodepb.Value_Varint:
		n, ok := new(big.Int).SetString(k.Varint, 10)
		if !ok {
			return nil, fmt.Errorf("varint %q is not a base-10 integer", k.Varint)
		}
		return n, nil
	case *kvnodepb.Value_SetText:
		return append([]string{}, k.SetText.GetValues()...), nil
	case *kvnodepb.Value_ListText:
		return append([]string{}, k.ListText.GetValues()...), nil
	case *kvnodepb.Value_MapTextText:
		m := make(map[string]string, len(k.MapTextText.GetEntries()))
		for key, val := range k.MapTextText.GetEntries() {
			m[key] = val
		}
		return m, nil
	case *kvnodepb.Value_MapTextBlob:
		m := make(map[string][]byte, len(k.MapTextBlob.GetEntries()))
		for key, val := range k.MapTextBlob.GetEntries() {
			m[key] = val
		}
		return m, nil
	case *kvnodepb.Value_List:
		vs, err := decodeValues(k.List.GetValues())
		return List(vs), err
	case *kvnodepb.Value_Set:
		vs, err := decodeValues(k.Set.GetValues())
		return Set(vs), err
	case *kvnodepb.Value_Tuple:
		vs, err := decodeValues(k.Tuple.GetValues())
		return Tuple(vs), err
	case *kvnodepb.Value_Map:
		m := make(Map, len(k.Map.GetEntries()))
		for i, e := range k.Map.GetEntries() {
			key, err := decodeValue(e.GetKey())
			if err != nil {
				return nil, err
			}
			val, err := decodeValue(e.GetValue())
			if err != nil {
				return nil, err
			}
			m[i] = MapPair{Key: key, Value: val}
		}
		return m, nil
	case *kvnodepb.Value_Udt:
		fs := k.Udt.GetFields()
		u := make(UDT, len(fs))
		for i, f := range fs {
			val, err := decodeValue(f.GetValue())
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.GetName(), err)
			}
			u[i] = UDTField{Name: f.GetName(), Value: val}
		}
		return u, nil
	case *kvnodepb.Value_Duration:
		d := Duration{Months: k.Duration.GetMonths(), Days: k.Duration.GetDays(), Nanoseconds: k.Duration.GetNanoseconds()}
		if (d.Months < 0 || d.Days < 0 || d.Nanoseconds < 0) && (d.Months > 0 || d.Days > 0 || d.Nanoseconds > 0) {
			return nil, fmt.Errorf("duration %+v has parts of both signs", d)
		}
		return d, nil
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("value of unknown kind %T", k)
	}
}
