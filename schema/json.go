package schema

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// JSON returns v, a value of t (nil for null), as Cassandra 4.1's toJson writes it: numbers
// and booleans bare (floats as Java prints them), text, blobs ("0x..."), timestamps
// ("2024-03-01 10:00:00.000Z"), dates, times, uuids, inets and durations as strings, lists,
// sets and tuples as arrays, maps and user types as objects (a map's keys as strings: a
// non-text key is its own JSON in a string).
func (t Type) JSON(v []byte) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	if err := t.Check(v); err != nil {
		return nil, err
	}
	return appendJSON(nil, t, v)
}

func appendJSON(b []byte, t Type, v []byte) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	n := t.node()
	if n == nil {
		return appendScalarJSON(b, t, v)
	}
	switch n.kind {
	case ParamTuple, ParamUDT:
		if n.kind == ParamTuple {
			b = append(b, '[')
		} else {
			b = append(b, '{')
		}
		for i, e := range n.elems {
			if i > 0 {
				b = append(b, ", "...)
			}
			var c []byte
			if len(v) > 0 {
				var err error
				if c, v, err = paramElement(v); err != nil {
					return nil, err
				}
			}
			if n.kind == ParamUDT {
				b = appendJSONString(b, cql.QuoteIdent(n.udt.fields[i]))
				b = append(b, ": "...)
			}
			var err error
			if b, err = appendJSON(b, e.typ(), c); err != nil {
				return nil, err
			}
		}
		if n.kind == ParamTuple {
			return append(b, ']'), nil
		}
		return append(b, '}'), nil
	}
	count, rest, err := collectionCount(v)
	if err != nil {
		return nil, err
	}
	if n.kind == ParamMap {
		b = append(b, '{')
	} else {
		b = append(b, '[')
	}
	for i := range count {
		if i > 0 {
			b = append(b, ", "...)
		}
		var e []byte
		if e, rest, err = paramElement(rest); err != nil {
			return nil, err
		}
		if n.kind != ParamMap {
			if b, err = appendJSON(b, n.elems[0].typ(), e); err != nil {
				return nil, err
			}
			continue
		}
		kt := n.elems[0].typ()
		if kt == TypeText || kt == TypeASCII {
			b = appendJSONString(b, string(e))
		} else {
			k, err := appendJSON(nil, kt, e)
			if err != nil {
				return nil, err
			}
			b = appendJSONString(b, string(k))
		}
		b = append(b, ": "...)
		var val []byte
		if val, rest, err = paramElement(rest); err != nil {
			return nil, err
		}
		if b, err = appendJSON(b, n.elems[1].typ(), val); err != nil {
			return nil, err
		}
	}
	if n.kind == ParamMap {
		return append(b, '}'), nil
	}
	return append(b, ']'), nil
}

func appendScalarJSON(b []byte, t Type, v []byte) ([]byte, error) {
	d, err := t.Decode(v)
	if err != nil {
		return nil, err
	}
	switch x := d.(type) {
	case string:
		return appendJSONString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case []byte:
		return appendJSONString(b, "0x"+hex.EncodeToString(x)), nil
	case float64:
		return append(b, javaDouble(x, 64)...), nil
	case float32:
		return append(b, javaDouble(float64(x), 32)...), nil
	case time.Time:
		if t == TypeTimestamp {
			return appendJSONString(b, x.UTC().Format("2006-01-02 15:04:05.000Z")), nil
		}
	case netip.Addr:
		return appendJSONString(b, x.String()), nil
	case *big.Int:
		return append(b, x.String()...), nil
	}
	switch t {
	case TypeInt, TypeBigInt, TypeSmallInt, TypeTinyInt, TypeDecimal, TypeCounter:
		return append(b, fmt.Sprint(d)...), nil
	case TypeTime:
		return appendJSONString(b, castText(t, v)), nil
	}
	return appendJSONString(b, fmt.Sprint(d)), nil
}

// appendJSONString appends s as a JSON string, escaping only what JSON requires.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// FromJSON returns the value of type t that the JSON text gives, as Cassandra 4.1's fromJson
// reads it: what toJson writes, and also numbers, booleans and uuids given as strings, and
// timestamps as numbers (milliseconds). JSON null gives nil.
func FromJSON(t Type, text string) ([]byte, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("could not decode JSON string %q: %v", text, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("could not decode JSON string %q: trailing data", text)
	}
	return fromJSONValue(t, x)
}

func fromJSONValue(t Type, x any) ([]byte, error) {
	term, err := jsonTerm(t, x)
	if err != nil {
		return nil, err
	}
	b, mismatch, err := literalValue(t, term)
	switch {
	case mismatch:
		return nil, fmt.Errorf("expected a %s value, found %s", t, describeJSON(x))
	case err != nil:
		return nil, err
	}
	return b, nil
}

func describeJSON(x any) string {
	b, _ := json.Marshal(x)
	return "JSON " + string(b)
}

// jsonTerm converts a decoded JSON value to the CQL literal of type t it stands for.
func jsonTerm(t Type, x any) (cql.Term, error) {
	if x == nil {
		return &cql.Literal{Kind: cql.LitNull}, nil
	}
	if n := t.node(); n != nil {
		switch n.kind {
		case ParamList, ParamSet, ParamTuple:
			arr, ok := x.([]any)
			if !ok {
				return nil, fmt.Errorf("expected a JSON array for %s, found %s", t, describeJSON(x))
			}
			kind := cql.ListLiteral
			switch n.kind {
			case ParamSet:
				kind = cql.SetLiteral
			case ParamTuple:
				kind = cql.TupleLiteral
				if len(arr) > len(n.elems) {
					return nil, fmt.Errorf("expected at most %d values for %s, found %d", len(n.elems), t, len(arr))
				}
			}
			lit := &cql.CollectionLiteral{Kind: kind, Elements: make([]cql.Term, len(arr))}
			for i, e := range arr {
				et := n.elems[0].typ()
				if n.kind == ParamTuple {
					et = n.elems[i].typ()
				}
				var err error
				if lit.Elements[i], err = jsonTerm(et, e); err != nil {
					return nil, err
				}
			}
			return lit, nil
		case ParamMap:
			obj, ok := x.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("expected a JSON object for %s, found %s", t, describeJSON(x))
			}
			m := &cql.MapLiteral{}
			for k, v := range obj {
				kt := n.elems[0].typ()
				var key any = k
				if kt != TypeText && kt != TypeASCII { // a non-text key is JSON in a string
					dec := json.NewDecoder(strings.NewReader(k))
					dec.UseNumber()
					if err := dec.Decode(&key); err != nil {
						key = k
					}
				}
				kterm, err := jsonTerm(kt, key)
				if err != nil {
					return nil, err
				}
				vterm, err := jsonTerm(n.elems[1].typ(), v)
				if err != nil {
					return nil, err
				}
				m.Entries = append(m.Entries, cql.MapEntry{Key: kterm, Value: vterm})
			}
			return m, nil
		case ParamUDT:
			obj, ok := x.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("expected a JSON object for %s, found %s", t, describeJSON(x))
			}
			u := &cql.UDTLiteral{}
			for k, v := range obj {
				name := jsonName(k)
				i := -1
				for j, f := range n.udt.fields {
					if f == name {
						i = j
					}
				}
				if i < 0 {
					return nil, fmt.Errorf("JSON value for %s has an unknown field %s", t, cql.QuoteIdent(name))
				}
				term, err := jsonTerm(n.elems[i].typ(), v)
				if err != nil {
					return nil, err
				}
				u.Fields = append(u.Fields, cql.UDTField{Name: cql.Ident{Name: name}, Value: term})
			}
			return u, nil
		}
	}
	switch v := x.(type) {
	case bool:
		return &cql.Literal{Kind: cql.LitBoolean, Value: strconv.FormatBool(v)}, nil
	case json.Number:
		s := v.String()
		if strings.ContainsAny(s, ".eE") {
			return &cql.Literal{Kind: cql.LitFloat, Value: s}, nil
		}
		return &cql.Literal{Kind: cql.LitInteger, Value: s}, nil
	case string:
		return stringTerm(t, v)
	}
	return nil, fmt.Errorf("expected a %s value, found %s", t, describeJSON(x))
}

// stringTerm converts a JSON string to the literal of scalar type t it spells.
func stringTerm(t Type, s string) (cql.Term, error) {
	switch t {
	case TypeText, TypeASCII, TypeTimestamp, TypeDate, TypeTime, TypeInet:
		return &cql.Literal{Kind: cql.LitString, Value: s}, nil
	case TypeBlob:
		if !strings.HasPrefix(strings.ToLower(s), "0x") {
			return nil, fmt.Errorf("blob value %q does not start with 0x", s)
		}
		return &cql.Literal{Kind: cql.LitBlob, Value: strings.ToLower(s)}, nil
	case TypeUUID, TypeTimeUUID:
		return &cql.Literal{Kind: cql.LitUUID, Value: strings.ToLower(s)}, nil
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true", "false":
			return &cql.Literal{Kind: cql.LitBoolean, Value: strings.ToLower(s)}, nil
		}
	case TypeDuration:
		return &cql.Literal{Kind: cql.LitDuration, Value: strings.ToLower(s)}, nil
	case TypeInt, TypeBigInt, TypeSmallInt, TypeTinyInt, TypeVarint, TypeCounter:
		if _, ok := new(big.Int).SetString(s, 10); ok {
			return &cql.Literal{Kind: cql.LitInteger, Value: s}, nil
		}
	case TypeFloat, TypeDouble, TypeDecimal:
		if _, err := strconv.ParseFloat(s, 64); err == nil || s == "NaN" || s == "Infinity" || s == "-Infinity" {
			return &cql.Literal{Kind: cql.LitFloat, Value: s}, nil
		}
	}
	return nil, fmt.Errorf("unable to make %s from %q", t, s)
}

// jsonName returns the column or field a JSON object's key names: lower-cased, unless the
// key is a quoted identifier ("\"Name\"").
func jsonName(k string) string {
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		return strings.ReplaceAll(k[1:len(k)-1], `""`, `"`)
	}
	return strings.ToLower(k)
}

// errJSONNotObject is INSERT JSON's refusal of a value that is no JSON object.
var errJSONNotObject = errors.New("INSERT JSON needs a JSON object")

// insertJSON reads the JSON object of INSERT JSON into values of t's columns: given[i]
// says column i has a key, set[i] that its value is known (nil for null).
func insertJSON(t *Table, text string, values [][]byte, given, set []bool) error {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("could not decode JSON string %q: %v", text, err)
	}
	if obj == nil {
		return errJSONNotObject
	}
	for k, raw := range obj {
		name := jsonName(k)
		c, ok := t.Column(name)
		if !ok {
			return fmt.Errorf("JSON values map contains unrecognized column: %s", name)
		}
		if given[c.Index] {
			return fmt.Errorf("column %s is given twice", cql.QuoteIdent(c.Name))
		}
		v, err := FromJSON(c.Type, string(raw))
		if err != nil {
			return fmt.Errorf("error decoding JSON value for %s: %w", cql.QuoteIdent(c.Name), err)
		}
		values[c.Index], given[c.Index], set[c.Index] = v, true, true
	}
	return nil
}
