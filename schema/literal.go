package schema

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// LiteralValue converts a literal of a statement to the canonical encoding
// of a value of type t (see Check). NULL gives nil. The conversions:
//
//	text       a string literal
//	int        an integer literal in -2147483648..2147483647
//	bigint     an integer literal in int64 range
//	double     an integer or float literal (NaN, Infinity, -Infinity included)
//	boolean    true or false
//	blob       a 0x hex literal
//	timestamp  an integer literal (milliseconds since the Unix epoch) or a
//	           string: yyyy-mm-dd[(T| )hh:mm[:ss[.fff]]][Z|+hh:mm|+hhmm|+hh];
//	           without a zone the time is UTC
//	ascii      a string literal of ASCII characters
//	smallint   an integer literal in -32768..32767
//	tinyint    an integer literal in -128..127
//	float      an integer or float literal within float range (NaN and
//	           ±Infinity included), rounded to the nearest float
//	uuid       an unquoted uuid: 123e4567-e89b-12d3-a456-426614174000
//	timeuuid   an unquoted version 1 uuid
//	inet       a string: '192.0.2.1' or '2001:db8::1'
//	date       a string 'yyyy-mm-dd', or an integer (or digit string) that
//	           is the encoded day number, 0..2^32-1 with 2^31 the epoch
//	time       a string 'hh:mm:ss[.fffffffff]', or an integer (or digit
//	           string) of nanoseconds since midnight
//	varint     an integer literal of any length
//	decimal    an integer or float literal, kept exactly with its scale
//	           (1.50 is 150 at scale 2)
//	duration   an unquoted duration: 1h30m, -2d, P1DT2H, P3W (see ParseDuration)
//
// A literal of another kind is an error naming the literal and the type,
// and so are a bind marker (prepared statements substitute them first) and
// a map.
func LiteralValue(t Type, v cql.Term) ([]byte, error) {
	b, mismatch, err := literalValue(t, v)
	if mismatch {
		return nil, fmt.Errorf("cannot use %s as %s", describeTerm(v), t)
	}
	return b, err
}

// Value converts a literal to a value for column c, as LiteralValue does,
// with errors that name the column: "column age is int; cannot assign
// string literal 'abc'".
func (c *Column) Value(v cql.Term) ([]byte, error) {
	b, mismatch, err := literalValue(c.Type, v)
	return c.assigned(v, b, mismatch, err)
}

// assigned returns b, the value converted from v for c, or the conversion's error naming the
// column: mismatch when v is no literal of c's type at all, err when it is one but invalid.
func (c *Column) assigned(v cql.Term, b []byte, mismatch bool, err error) ([]byte, error) {
	switch {
	case mismatch:
		return nil, fmt.Errorf("column %s is %s; cannot assign %s", cql.QuoteIdent(c.Name), c.Type, describeTerm(v))
	case err != nil:
		return nil, fmt.Errorf("column %s: %w", cql.QuoteIdent(c.Name), err)
	}
	return b, nil
}

// describeTerm names a term in messages: "string literal 'abc'",
// "integer literal 5", "map literal {...}", "bind marker ?".
func describeTerm(v cql.Term) string {
	switch v := v.(type) {
	case *cql.Literal:
		switch v.Kind {
		case cql.LitBind:
			return "bind marker ?"
		case cql.LitNull:
			return "NULL"
		}
		return v.Kind.String() + " literal " + describeValue(v)
	case *cql.MapLiteral:
		return "map literal " + describeValue(v)
	case *cql.CollectionLiteral:
		return v.Kind.String() + " literal " + describeValue(v)
	}
	return "no value"
}

var errBind = errors.New("bind marker ? has no value: prepared statements are not supported yet")

// literalValue converts v for type t. mismatch reports a literal of the
// wrong kind for t; err reports a literal of the right kind with a bad
// value.
func literalValue(t Type, v cql.Term) (b []byte, mismatch bool, err error) {
	if n := t.node(); n != nil {
		return n.literal(v, nil) // params.go
	}
	lit, ok := v.(*cql.Literal)
	if !ok {
		return nil, true, nil
	}
	switch lit.Kind {
	case cql.LitNull:
		return nil, false, nil
	case cql.LitBind:
		return nil, false, errBind
	}
	switch t {
	case TypeText:
		if lit.Kind == cql.LitString {
			return EncodeText(lit.Value), false, nil
		}
	case TypeInt:
		if lit.Kind == cql.LitInteger {
			n, err := strconv.ParseInt(lit.Value, 10, 32)
			if err != nil {
				return nil, false, fmt.Errorf("int value %s is out of range (%d to %d)", describeValue(lit), math.MinInt32, math.MaxInt32)
			}
			return EncodeInt(int32(n)), false, nil
		}
	case TypeBigInt, TypeCounter:
		if lit.Kind == cql.LitInteger {
			n, err := strconv.ParseInt(lit.Value, 10, 64)
			if err != nil {
				return nil, false, fmt.Errorf("bigint value %s is out of range (%d to %d)", describeValue(lit), math.MinInt64, math.MaxInt64)
			}
			return EncodeBigInt(n), false, nil
		}
	case TypeDouble:
		if lit.Kind == cql.LitInteger || lit.Kind == cql.LitFloat {
			f, err := strconv.ParseFloat(lit.Value, 64)
			if err != nil && math.IsInf(f, 0) {
				return nil, false, fmt.Errorf("double value %s is out of range", describeValue(lit))
			}
			return EncodeDouble(f), false, nil
		}
	case TypeBoolean:
		if lit.Kind == cql.LitBoolean {
			return EncodeBoolean(lit.Value == "true"), false, nil
		}
	case TypeBlob:
		if lit.Kind == cql.LitBlob {
			b, err := hex.DecodeString(lit.Value[2:])
			if err != nil {
				return nil, false, fmt.Errorf("blob value %s is not valid hex", describeValue(lit))
			}
			return EncodeBlob(b), false, nil
		}
	case TypeASCII:
		if lit.Kind == cql.LitString {
			b, err := EncodeASCII(lit.Value)
			if err != nil {
				return nil, false, fmt.Errorf("ascii value %s is not ASCII: %w", describeValue(lit), err)
			}
			return b, false, nil
		}
	case TypeSmallInt, TypeTinyInt:
		if lit.Kind == cql.LitInteger {
			bits, lo, hi := 16, math.MinInt16, math.MaxInt16
			if t == TypeTinyInt {
				bits, lo, hi = 8, math.MinInt8, math.MaxInt8
			}
			n, err := strconv.ParseInt(lit.Value, 10, bits)
			if err != nil {
				return nil, false, fmt.Errorf("%s value %s is out of range (%d to %d)", t, describeValue(lit), lo, hi)
			}
			if t == TypeTinyInt {
				return EncodeTinyInt(int8(n)), false, nil
			}
			return EncodeSmallInt(int16(n)), false, nil
		}
	case TypeFloat:
		if lit.Kind == cql.LitInteger || lit.Kind == cql.LitFloat {
			f, err := strconv.ParseFloat(lit.Value, 32)
			if err != nil && math.IsInf(f, 0) {
				return nil, false, fmt.Errorf("float value %s is out of range (a float is at most %g in magnitude; use double)", describeValue(lit), math.MaxFloat32)
			}
			return EncodeFloat(float32(f)), false, nil
		}
	case TypeUUID, TypeTimeUUID:
		if lit.Kind == cql.LitUUID {
			u, err := ParseUUID(lit.Value)
			if err != nil {
				return nil, false, fmt.Errorf("%s value: %w", t, err)
			}
			if t == TypeTimeUUID && u.Version() != 1 {
				return nil, false, fmt.Errorf("timeuuid value %s is a version %d uuid; a timeuuid is version 1 (time-based)", lit.Value, u.Version())
			}
			return EncodeUUID(u), false, nil
		}
	case TypeInet:
		if lit.Kind == cql.LitString {
			a, err := netip.ParseAddr(lit.Value)
			if err != nil || a.Zone() != "" {
				return nil, false, fmt.Errorf("inet value %s is not an IPv4 or IPv6 address (write '192.0.2.1' or '2001:db8::1', no zone)", describeValue(lit))
			}
			return EncodeInet(a), false, nil
		}
	case TypeDate:
		switch lit.Kind {
		case cql.LitInteger:
			return rawDate(lit)
		case cql.LitString:
			if isDigits(lit.Value) {
				return rawDate(lit)
			}
			d, err := ParseDate(lit.Value)
			if err != nil {
				return nil, false, fmt.Errorf("date value: %w", err)
			}
			return EncodeDate(d), false, nil
		}
	case TypeTime:
		switch lit.Kind {
		case cql.LitInteger:
			return rawTime(lit)
		case cql.LitString:
			if isDigits(lit.Value) {
				return rawTime(lit)
			}
			d, err := ParseTimeOfDay(lit.Value)
			if err != nil {
				return nil, false, fmt.Errorf("time value: %w", err)
			}
			b, _ := EncodeTime(d)
			return b, false, nil
		}
	case TypeDuration:
		if lit.Kind == cql.LitDuration {
			d, err := ParseDuration(lit.Value)
			if err != nil {
				return nil, false, err
			}
			return EncodeDuration(d), false, nil
		}
	case TypeVarint:
		if lit.Kind == cql.LitInteger {
			n, ok := new(big.Int).SetString(lit.Value, 10)
			if !ok {
				return nil, false, fmt.Errorf("varint value %s is not an integer", describeValue(lit))
			}
			return EncodeVarint(n), false, nil
		}
	case TypeDecimal:
		if lit.Kind == cql.LitInteger || lit.Kind == cql.LitFloat {
			d, err := ParseDecimal(lit.Value)
			if err != nil {
				return nil, false, fmt.Errorf("decimal value %s: %w (NaN and Infinity have no decimal value)", describeValue(lit), err)
			}
			return EncodeDecimal(d), false, nil
		}
	case TypeTimestamp:
		switch lit.Kind {
		case cql.LitInteger:
			n, err := strconv.ParseInt(lit.Value, 10, 64)
			if err != nil {
				return nil, false, fmt.Errorf("timestamp value %s is out of range", describeValue(lit))
			}
			return EncodeBigInt(n), false, nil
		case cql.LitString:
			tm, err := ParseTimestamp(lit.Value)
			if err != nil {
				return nil, false, err
			}
			return EncodeTimestamp(tm), false, nil
		}
	}
	return nil, true, nil
}

// ParseTimestamp parses a timestamp string, yyyy-mm-dd optionally followed
// by a time (T or a space, then hh:mm, hh:mm:ss or hh:mm:ss.fff) and a zone
// (Z, +hh:mm, +hhmm or +hh). Without a zone the time is UTC.
// rawDate converts a date given as its encoded number (0 to 2^32-1, with
// 2^31 the Unix epoch), as Cassandra reads integer dates.
func rawDate(lit *cql.Literal) ([]byte, bool, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(lit.Value, "+"), 10, 32)
	if err != nil {
		return nil, false, fmt.Errorf("date value %s is out of range (an integer date is days from 0 to %d, with %d the Unix epoch; or write 'yyyy-mm-dd')", describeValue(lit), uint32(math.MaxUint32), uint32(dateEpoch))
	}
	return binary.BigEndian.AppendUint32(nil, uint32(n)), false, nil
}

// rawTime converts a time given as nanoseconds since midnight.
func rawTime(lit *cql.Literal) ([]byte, bool, error) {
	n, err := strconv.ParseInt(lit.Value, 10, 64)
	if err != nil || n < 0 || n > maxTimeNanos {
		return nil, false, fmt.Errorf("time value %s is out of range (nanoseconds from 0 to %d; or write 'hh:mm:ss[.fffffffff]')", describeValue(lit), maxTimeNanos)
	}
	return EncodeBigInt(n), false, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || i == 0 && s[i] == '-') {
			return false
		}
	}
	return true
}

func ParseTimestamp(s string) (time.Time, error) {
	for _, clock := range [...]string{"", "T15:04", "T15:04:05", " 15:04", " 15:04:05"} {
		for _, zone := range [...]string{"", "Z07:00", "Z0700", "Z07"} {
			if tm, err := time.Parse("2006-01-02"+clock+zone, s); err == nil {
				return tm, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("invalid timestamp %s: write milliseconds since the Unix epoch or 'yyyy-mm-dd[ hh:mm[:ss[.fff]]][+hh:mm]'", describeValue(&cql.Literal{Kind: cql.LitString, Value: s}))
}
