package schema

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
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
	}
	return "no value"
}

var errBind = errors.New("bind marker ? has no value: prepared statements are not supported yet")

// literalValue converts v for type t. mismatch reports a literal of the
// wrong kind for t; err reports a literal of the right kind with a bad
// value.
func literalValue(t Type, v cql.Term) (b []byte, mismatch bool, err error) {
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
	case TypeBigInt:
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
