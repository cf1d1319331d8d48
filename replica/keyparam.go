package replica

import (
	"encoding/binary"
	"fmt"

	"github.com/kvnode/kvnode/schema"
)

// Clustering components of the parametric types (frozen collections and tuples) sort as
// Cassandra compares them (schema.Type.Compare): element by element, then by count; a tuple
// component by component, null first. Their ascending encoding nests the components' own:
//
//	frozen<list<T>>, frozen<set<T>>
//	                 for each element 0x01 and the element's encoding, then 0x00
//	frozen<map<K, V>>
//	                 for each entry 0x01, the key's encoding and the value's, then 0x00
//	frozen<tuple<...>>
//	                 for each component 0x01 if it is null, else 0x02 and its encoding
//	frozen<udt<...>> for each field up to the last non-null one 0x01 if it is null, else 0x02
//	                 and its encoding, then 0x00
//
// A user type's value leaves out its trailing null fields (schema's canonical form), and ALTER
// TYPE ... ADD may give the type more fields than the keys written before it hold, so its
// encoding ends with 0x00 where a tuple's fixed count needs none: the end sorts below a null
// field's 0x01, which makes a value sort as if its missing fields were nulls, before any
// value that continues it.
//
// The end 0x00 sorts below the 0x01 of a further element, so a collection sorts before its
// extensions; each encoding is prefix-free because its parts are, so a DESC component is the
// complement, as for the scalar types.
const (
	paramEnd     byte = 0x00
	paramElem    byte = 0x01
	paramNull    byte = 0x01
	paramPresent byte = 0x02
)

// appendParamKey appends the ascending encoding of v, a well-formed value of the parametric
// type whose kind and element types are given.
func appendParamKey(dst []byte, kind schema.ParamKind, elems []schema.Type, v []byte) []byte {
	next := func() []byte {
		n := int32(binary.BigEndian.Uint32(v))
		v = v[4:]
		if n < 0 {
			return nil
		}
		e := v[:n]
		v = v[n:]
		return e
	}
	if kind == schema.ParamTuple || kind == schema.ParamUDT {
		for _, et := range elems {
			if kind == schema.ParamUDT && len(v) == 0 {
				break
			}
			c := next()
			if c == nil {
				dst = append(dst, paramNull)
				continue
			}
			dst = appendAscending(append(dst, paramPresent), et, c)
		}
		if kind == schema.ParamUDT {
			dst = append(dst, paramEnd)
		}
		return dst
	}
	count := int(binary.BigEndian.Uint32(v))
	v = v[4:]
	for range count {
		dst = appendAscending(append(dst, paramElem), elems[0], next())
		if kind == schema.ParamMap {
			dst = appendAscending(dst, elems[1], next())
		}
	}
	return append(dst, paramEnd)
}

// decodeParamKey is the inverse of appendParamKey: it rebuilds the value's encoding.
func decodeParamKey(src []byte, t schema.Type, kind schema.ParamKind, elems []schema.Type) (v, rest []byte, err error) {
	appendElem := func(dst, e []byte) []byte {
		if e == nil {
			return binary.BigEndian.AppendUint32(dst, ^uint32(0)) // -1: null
		}
		return append(binary.BigEndian.AppendUint32(dst, uint32(len(e))), e...)
	}
	truncated := fmt.Errorf("%w: %s clustering component truncated", errBadKey, t)
	if kind == schema.ParamTuple || kind == schema.ParamUDT {
		v = []byte{}
		lastNull := false // canonical user type values leave out their trailing null fields
		for _, et := range elems {
			if len(src) == 0 {
				return nil, nil, truncated
			}
			if kind == schema.ParamUDT && src[0] == paramEnd {
				break
			}
			switch src[0] {
			case paramNull:
				v, src, lastNull = appendElem(v, nil), src[1:], true
			case paramPresent:
				var c []byte
				if c, src, err = decodeAscending(src[1:], et); err != nil {
					return nil, nil, err
				}
				v, lastNull = appendElem(v, c), false
			default:
				return nil, nil, fmt.Errorf("%w: %s clustering component has a bad component marker 0x%02x", errBadKey, t, src[0])
			}
		}
		if kind == schema.ParamUDT {
			switch {
			case len(src) == 0:
				return nil, nil, truncated
			case src[0] != paramEnd:
				return nil, nil, fmt.Errorf("%w: %s clustering component has more fields than its type", errBadKey, t)
			case lastNull:
				return nil, nil, fmt.Errorf("%w: %s clustering component ends with a null field", errBadKey, t)
			}
			src = src[1:]
		}
		return checked(t, v, src)
	}
	v = make([]byte, 4)
	count := 0
	for {
		if len(src) == 0 {
			return nil, nil, truncated
		}
		marker := src[0]
		src = src[1:]
		if marker == paramEnd {
			break
		}
		if marker != paramElem {
			return nil, nil, fmt.Errorf("%w: %s clustering component has a bad element marker 0x%02x", errBadKey, t, marker)
		}
		var e []byte
		if e, src, err = decodeAscending(src, elems[0]); err != nil {
			return nil, nil, err
		}
		v = appendElem(v, e)
		if kind == schema.ParamMap {
			if e, src, err = decodeAscending(src, elems[1]); err != nil {
				return nil, nil, err
			}
			v = appendElem(v, e)
		}
		count++
	}
	binary.BigEndian.PutUint32(v, uint32(count))
	return checked(t, v, src)
}

// decodeParamDesc decodes the complemented (DESC) encoding of a parametric value at the start
// of src: it complements a copy of src, whose length it cannot know before decoding.
func decodeParamDesc(src []byte, t schema.Type) (v, rest []byte, err error) {
	asc := append([]byte(nil), src...)
	complement(asc)
	v, r, err := decodeAscending(asc, t)
	if err != nil {
		return nil, nil, err
	}
	return v, src[len(src)-len(r):], nil
}
