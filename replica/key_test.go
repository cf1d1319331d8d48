package replica

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/schema"
)

var clusteringTypes = []schema.Type{
	schema.TypeText, schema.TypeInt, schema.TypeBigInt, schema.TypeDouble,
	schema.TypeBoolean, schema.TypeBlob, schema.TypeTimestamp,
	schema.TypeASCII, schema.TypeFloat, schema.TypeSmallInt, schema.TypeTinyInt,
	schema.TypeUUID, schema.TypeTimeUUID, schema.TypeInet, schema.TypeDate,
	schema.TypeTime, schema.TypeDecimal, schema.TypeVarint,
}

// randomValue returns a well-formed value of type t from a small domain, so
// that equal values, zero bytes and extremes are common.
func randomValue(r *rand.Rand, t schema.Type) []byte {
	switch t {
	case schema.TypeInt:
		vals := []int32{math.MinInt32, -1, 0, 1, 255, 256, math.MaxInt32}
		return schema.EncodeInt(vals[r.IntN(len(vals))])
	case schema.TypeBigInt, schema.TypeTimestamp:
		vals := []int64{math.MinInt64, -256, -1, 0, 1, 1 << 40, math.MaxInt64}
		return schema.EncodeBigInt(vals[r.IntN(len(vals))])
	case schema.TypeDouble:
		vals := []float64{math.Inf(-1), -1.5, math.Copysign(0, -1), 0, 1e-300, 2.5, math.Inf(1), math.NaN()}
		return schema.EncodeDouble(vals[r.IntN(len(vals))])
	case schema.TypeBoolean:
		return schema.EncodeBoolean(r.IntN(2) == 1)
	case schema.TypeFloat:
		vals := []float32{float32(math.Inf(-1)), -1.5, float32(math.Copysign(0, -1)), 0, 1e-30, 2.5, float32(math.Inf(1)), float32(math.NaN())}
		return schema.EncodeFloat(vals[r.IntN(len(vals))])
	case schema.TypeSmallInt:
		vals := []int16{math.MinInt16, -256, -1, 0, 1, 255, math.MaxInt16}
		return schema.EncodeSmallInt(vals[r.IntN(len(vals))])
	case schema.TypeTinyInt:
		vals := []int8{math.MinInt8, -1, 0, 1, math.MaxInt8}
		return schema.EncodeTinyInt(vals[r.IntN(len(vals))])
	case schema.TypeDate:
		vals := []schema.Date{schema.MinDate, -1, 0, 1, schema.MaxDate}
		return schema.EncodeDate(vals[r.IntN(len(vals))])
	case schema.TypeTime:
		vals := []int64{0, 1, 1e9, 86399999999999}
		return schema.EncodeBigInt(vals[r.IntN(len(vals))])
	case schema.TypeUUID, schema.TypeTimeUUID:
		// Few distinct bytes, so that equal timestamps and equal prefixes
		// are common; versions 1 and 4 (and others, for uuid).
		u := make([]byte, 16)
		for i := range u {
			u[i] = []byte{0x00, 0x01, 0x7F, 0x80, 0xFF}[r.IntN(5)]
		}
		version := byte(1)
		if t == schema.TypeUUID {
			version = []byte{0, 1, 1, 4, 15}[r.IntN(5)]
		}
		u[6] = u[6]&0x0F | version<<4
		return u
	case schema.TypeInet:
		vals := [][]byte{{0, 0, 0, 0}, {10, 0, 0, 1}, {255, 255, 255, 255}, make([]byte, 16), append(make([]byte, 15), 1), append([]byte{10, 0, 0, 1}, make([]byte, 12)...)}
		return bytes.Clone(vals[r.IntN(len(vals))])
	case schema.TypeVarint:
		vals := []int64{math.MinInt64, -129, -128, -1, 0, 1, 127, 128, 255, 256, math.MaxInt64}
		return schema.EncodeVarint(big.NewInt(vals[r.IntN(len(vals))]))
	case schema.TypeDecimal:
		unscaled := []int64{-1500, -15, -1, 0, 1, 10, 15, 150, 1000, 123456789}
		scales := []int32{math.MinInt32, -3, 0, 1, 2, 3, math.MaxInt32}
		return schema.EncodeDecimal(schema.Decimal{Unscaled: big.NewInt(unscaled[r.IntN(len(unscaled))]), Scale: scales[r.IntN(len(scales))]})
	default:
		alphabet := []byte{0x00, 0x01, 0xFF, 'a', 'b'}
		b := make([]byte, r.IntN(4))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if t == schema.TypeText || t == schema.TypeASCII {
			// Keep it valid UTF-8: map 0xFF to another ASCII byte.
			for i := range b {
				if b[i] == 0xFF {
					b[i] = 'z'
				}
			}
		}
		return b
	}
}

// logicalKey is a decoded storage key, compared field by field.
type logicalKey struct {
	table      uint64
	token      int64
	pk         []byte
	partDel    bool
	clustering [][]byte
	entry      byte
	column     string
}

// keyColumn is a clustering column of a key: its type and order.
type keyColumn struct {
	typ  schema.Type
	desc bool
}

func (k logicalKey) encode(types []keyColumn) []byte {
	b := appendPartitionPrefix(nil, k.table, k.token, k.pk)
	if k.partDel {
		return append(b, kindPartitionDeletion)
	}
	b = append(b, kindRow)
	for i, c := range k.clustering {
		b = appendClustering(b, types[i].typ, types[i].desc, c)
	}
	b = append(b, k.entry)
	if k.entry == rowCell {
		b = append(b, k.column...)
	}
	return b
}

func compareLogical(a, b logicalKey, types []keyColumn) int {
	if c := cmp.Compare(a.table, b.table); c != 0 {
		return c
	}
	if c := cmp.Compare(a.token, b.token); c != 0 {
		return c
	}
	if c := bytes.Compare(a.pk, b.pk); c != 0 {
		return c
	}
	if a.partDel != b.partDel {
		if a.partDel {
			return -1
		}
		return 1
	}
	if a.partDel {
		return 0
	}
	for i := range a.clustering {
		if c := types[i].typ.Compare(a.clustering[i], b.clustering[i]); c != 0 {
			if types[i].desc {
				return -c
			}
			return c
		}
	}
	if c := cmp.Compare(a.entry, b.entry); c != 0 {
		return c
	}
	return cmp.Compare(a.column, b.column)
}

func randomKey(r *rand.Rand, types []keyColumn) logicalKey {
	tokens := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	k := logicalKey{
		table: uint64(r.IntN(3)),
		token: tokens[r.IntN(len(tokens))],
		pk:    randomValue(r, schema.TypeBlob),
	}
	if r.IntN(8) == 0 {
		k.partDel = true
		return k
	}
	for _, t := range types {
		k.clustering = append(k.clustering, randomValue(r, t.typ))
	}
	k.entry = []byte{rowDeletion, rowMarker, rowCell}[r.IntN(3)]
	if k.entry == rowCell {
		k.column = []string{"a", "ab", "b"}[r.IntN(3)]
	}
	return k
}

// randomTypes returns up to three clustering columns of random types, each
// ASC or DESC.
func randomTypes(r *rand.Rand) []keyColumn {
	types := make([]keyColumn, r.IntN(4))
	for i := range types {
		types[i] = keyColumn{typ: clusteringTypes[r.IntN(len(clusteringTypes))], desc: r.IntN(2) == 1}
	}
	return types
}

func TestKeyOrderMatchesLogicalOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		types := randomTypes(r)
		for range 200 {
			a, b := randomKey(r, types), randomKey(r, types)
			want := compareLogical(a, b, types)
			if got := bytes.Compare(a.encode(types), b.encode(types)); got != want {
				t.Fatalf("keys %+v and %+v (clustering types %v) compare %d as bytes, want %d", a, b, types, got, want)
			}
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 200 {
		types := randomTypes(r)
		for range 100 {
			k := randomKey(r, types)
			enc := k.encode(types)
			table, token, pk, rest, err := decodePartitionPrefix(enc)
			if err != nil {
				t.Fatalf("decodePartitionPrefix(%x): %v", enc, err)
			}
			if table != k.table || token != k.token || !bytes.Equal(pk, k.pk) {
				t.Fatalf("decodePartitionPrefix(%x) = table %d token %d pk %x, want %d %d %x", enc, table, token, pk, k.table, k.token, k.pk)
			}
			if k.partDel {
				if !bytes.Equal(rest, []byte{kindPartitionDeletion}) {
					t.Fatalf("the rest of partition deletion key %x is %x, want the kind byte alone", enc, rest)
				}
				continue
			}
			rest = rest[1:]
			for i, typ := range types {
				var c []byte
				c, rest, err = decodeClustering(rest, typ.typ, typ.desc)
				if err != nil {
					t.Fatalf("decodeClustering(%v) of key %x: %v", typ, enc, err)
				}
				if !bytes.Equal(c, k.clustering[i]) && !isNaN(typ.typ, c, k.clustering[i]) {
					t.Fatalf("clustering component %d (%v) of key %x decoded as %x, want %x", i, typ, enc, c, k.clustering[i])
				}
			}
			if rest[0] != k.entry || string(rest[1:]) != k.column {
				t.Fatalf("the row entry of key %x is %x, want %x %q", enc, rest, k.entry, k.column)
			}
		}
	}
}

// isNaN reports whether a and b are both NaN doubles or floats (whose
// payloads the key does not keep), or equal decimals (whose scale the key
// does not keep: it decodes the normal form).
func isNaN(t schema.Type, a, b []byte) bool {
	switch t {
	case schema.TypeDouble:
		return math.IsNaN(math.Float64frombits(binary.BigEndian.Uint64(a))) &&
			math.IsNaN(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case schema.TypeFloat:
		return math.IsNaN(float64(math.Float32frombits(binary.BigEndian.Uint32(a)))) &&
			math.IsNaN(float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
	case schema.TypeDecimal:
		return t.Compare(a, b) == 0
	}
	return false
}

func FuzzEscapedRoundTrip(f *testing.F) {
	f.Add([]byte{}, []byte("a"))
	f.Add([]byte{0, 1, 0xFF}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ea, eb := appendEscaped(nil, a), appendEscaped(nil, b)
		got, rest, err := decodeEscaped(append(ea, 0x42))
		if err != nil || !bytes.Equal(got, a) || !bytes.Equal(rest, []byte{0x42}) {
			t.Fatalf("decodeEscaped(appendEscaped(%x)) = %x, rest %x, %v; want %x, rest 42", a, got, rest, err, a)
		}
		// Order-preserving, also when followed by more key bytes.
		if got, want := bytes.Compare(append(ea, 0x00), append(eb, 0xFF)), bytes.Compare(a, b); want != 0 && got != want {
			t.Fatalf("escaped %x and %x compare %d, want %d", a, b, got, want)
		}
	})
}

func TestDecodeRejectsMalformedKeys(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		typ  schema.Type
	}{
		{"an unterminated string", []byte("abc"), schema.TypeText},
		{"a bad escape", []byte{'a', 0x00, 0x05}, schema.TypeBlob},
		{"a truncated int", []byte{1, 2, 3}, schema.TypeInt},
		{"a truncated bigint", []byte{1, 2, 3}, schema.TypeBigInt},
		{"a truncated double", []byte{}, schema.TypeDouble},
		{"a missing boolean", []byte{}, schema.TypeBoolean},
		{"a truncated uuid", make([]byte, 16), schema.TypeUUID},
		{"a uuid whose version byte disagrees", append([]byte{4}, make([]byte, 16)...), schema.TypeUUID},
		{"a timeuuid of version 0", make([]byte, 16), schema.TypeTimeUUID},
		{"a time past midnight", []byte{0, 0, 0x4E, 0x94, 0x91, 0x4F, 0x00, 0x00}, schema.TypeTime},
		{"an ascii byte above 0x7f", []byte{0x80, 0x00, 0x01}, schema.TypeASCII},
		{"a 5-byte inet", []byte{1, 2, 3, 4, 5, 0x00, 0x01}, schema.TypeInet},
		{"a varint with a bad sign byte", []byte{0x02, 0, 0, 0, 1, 5}, schema.TypeVarint},
		{"a varint longer than the key", []byte{0x01, 0, 0, 0, 9, 5}, schema.TypeVarint},
		{"a varint of length 0", []byte{0x01, 0, 0, 0, 0}, schema.TypeVarint},
		{"a negative varint marked positive", []byte{0x01, 0, 0, 0, 1, 0xFF}, schema.TypeVarint},
		{"a non-minimal varint", []byte{0x01, 0, 0, 0, 2, 0, 1}, schema.TypeVarint},
		{"a decimal with a bad sign byte", []byte{0x04}, schema.TypeDecimal},
		{"a truncated decimal exponent", []byte{0x03, 0x80, 0}, schema.TypeDecimal},
		{"an unterminated decimal", []byte{0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 12}, schema.TypeDecimal},
		{"a decimal with no digits", []byte{0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 0}, schema.TypeDecimal},
		{"a decimal with a leading zero", []byte{0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 0}, schema.TypeDecimal},
		{"a decimal with a trailing zero", []byte{0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 12, 1, 0}, schema.TypeDecimal},
		{"a decimal digit byte above 100", []byte{0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 101, 0}, schema.TypeDecimal},
		{"a decimal of a huge exponent", []byte{0x03, 0xFF, 0xFF, 0, 0, 0, 0, 0, 1, 11, 0}, schema.TypeDecimal},
	}
	for _, tt := range tests {
		if _, _, err := decodeClustering(tt.in, tt.typ, false); err == nil {
			t.Errorf("decodeClustering(%x, %v) of %s succeeded, want an error", tt.in, tt.typ, tt.name)
		}
		desc := bytes.Clone(tt.in)
		complement(desc)
		if _, _, err := decodeClustering(desc, tt.typ, true); err == nil {
			t.Errorf("decodeClustering(%x, %v DESC) of %s, complemented, succeeded, want an error", desc, tt.typ, tt.name)
		}
	}
	if _, _, _, _, err := decodePartitionPrefix(make([]byte, 15)); err == nil {
		t.Errorf("decodePartitionPrefix of 15 bytes succeeded, want an error")
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xFF}, []byte{2}},
		{[]byte{0xFF, 0xFF}, nil},
	}
	for _, tt := range tests {
		if got := prefixEnd(tt.in); !bytes.Equal(got, tt.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", tt.in, got, tt.want)
		}
	}
}

// randomWideValue returns a value of type t from a wider domain than
// randomValue: longer strings over bytes that matter to the escaping
// (0x00, 0x01, 0xFE, 0xFF), so that values are often prefixes of one
// another, and random numbers besides the extremes.
func randomWideValue(r *rand.Rand, t schema.Type) []byte {
	if r.IntN(2) == 0 {
		return randomValue(r, t)
	}
	switch t {
	case schema.TypeInt:
		return schema.EncodeInt(r.Int32() - r.Int32())
	case schema.TypeBigInt, schema.TypeTimestamp:
		return schema.EncodeBigInt(r.Int64() - r.Int64())
	case schema.TypeDouble:
		return schema.EncodeDouble(math.Float64frombits(r.Uint64()))
	case schema.TypeBoolean:
		return schema.EncodeBoolean(r.IntN(2) == 1)
	case schema.TypeFloat:
		return schema.EncodeFloat(math.Float32frombits(r.Uint32()))
	case schema.TypeSmallInt:
		return schema.EncodeSmallInt(int16(r.Uint32()))
	case schema.TypeTinyInt:
		return schema.EncodeTinyInt(int8(r.Uint32()))
	case schema.TypeDate:
		return schema.EncodeDate(schema.Date(int64(r.Uint32()) - 1<<31))
	case schema.TypeTime:
		return schema.EncodeBigInt(r.Int64N(86400e9))
	case schema.TypeUUID, schema.TypeTimeUUID:
		u := make([]byte, 16)
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		if t == schema.TypeTimeUUID {
			u[6] = u[6]&0x0F | 0x10
		}
		return u
	case schema.TypeInet:
		u := make([]byte, []int{4, 16}[r.IntN(2)])
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		return u
	case schema.TypeVarint:
		return schema.EncodeVarint(randomBig(r))
	case schema.TypeDecimal:
		// Wide scales, and often the same number at another scale, so that
		// equal values of different encodings meet.
		d := schema.Decimal{Unscaled: randomBig(r), Scale: int32(r.IntN(41) - 20)}
		if r.IntN(8) == 0 {
			d.Scale = []int32{math.MinInt32, math.MinInt32 + 1, math.MaxInt32}[r.IntN(3)]
		}
		if r.IntN(3) == 0 && d.Scale < math.MaxInt32-5 {
			k := r.IntN(5)
			d.Unscaled.Mul(d.Unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
			d.Scale += int32(k)
		}
		return schema.EncodeDecimal(d)
	default:
		alphabet := []byte{0x00, 0x01, 0x02, 0x7F, 0xFE, 0xFF, 'a'}
		if t == schema.TypeText || t == schema.TypeASCII {
			alphabet = []byte{0x00, 0x01, 0x02, 0x7F, 'a', 'b'}
		}
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
}

// randomBig returns a random integer of up to 20 bytes, either sign.
func randomBig(r *rand.Rand) *big.Int {
	b := make([]byte, r.IntN(21))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	n := new(big.Int).SetBytes(b)
	if r.IntN(2) == 0 {
		n.Neg(n)
	}
	return n
}

// TestDescendingReversesOrder is the property that DESC columns rest on:
// for random values a and b of every type, the DESC encodings compare in the
// reverse of the type's order, also when more key bytes follow each (any
// bytes: the encodings are prefix-free), and they decode back.
func TestDescendingReversesOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, typ := range clusteringTypes {
		for range 5000 {
			a, b := randomWideValue(r, typ), randomWideValue(r, typ)
			want := -typ.Compare(a, b)
			ea, eb := appendClustering(nil, typ, true, a), appendClustering(nil, typ, true, b)
			if got := bytes.Compare(ea, eb); got != want {
				t.Fatalf("%s DESC: %x and %x encode as %x and %x, which compare %d; want %d", typ, a, b, ea, eb, got, want)
			}
			if want != 0 {
				// Whatever follows, the component decides.
				fa := append(bytes.Clone(ea), randomValue(r, schema.TypeBlob)...)
				fb := append(bytes.Clone(eb), randomValue(r, schema.TypeBlob)...)
				if got := bytes.Compare(fa, fb); got != want {
					t.Fatalf("%s DESC: %x and %x followed by more bytes (%x, %x) compare %d; want %d", typ, a, b, fa, fb, got, want)
				}
			}
			// The ASC encoding is the same order, unreversed.
			if got := bytes.Compare(appendClustering(nil, typ, false, a), appendClustering(nil, typ, false, b)); got != -want {
				t.Fatalf("%s ASC: %x and %x compare %d as keys; want %d", typ, a, b, got, -want)
			}
			v, rest, err := decodeClustering(append(ea, 0x42), typ, true)
			if err != nil || (!bytes.Equal(v, a) && !isNaN(typ, v, a)) || !bytes.Equal(rest, []byte{0x42}) {
				t.Fatalf("%s DESC: decodeClustering(%x) = %x, rest %x, %v; want %x, rest 42", typ, ea, v, rest, err, a)
			}
		}
	}
}

// FuzzDecodeClustering checks that decoding a clustering component, ASC or
// DESC, never panics on any bytes, and that what it accepts is canonical: the
// value encodes back to exactly the bytes it consumed (doubles aside, whose
// NaNs decode to one NaN).
func FuzzDecodeClustering(f *testing.F) {
	f.Add([]byte{0x9E, 0xFF, 0x00, 0xFF, 0xFE, 0x42}, uint8(slices.Index(clusteringTypes, schema.TypeText)), true)
	f.Add([]byte{0x61, 0x00, 0x01}, uint8(slices.Index(clusteringTypes, schema.TypeBlob)), false)
	f.Add([]byte{0x7F, 0xFF, 0xFF, 0xFE}, uint8(slices.Index(clusteringTypes, schema.TypeInt)), true)
	f.Add([]byte{0x03, 0x80, 0, 0, 0, 0, 0, 0, 1, 12, 0}, uint8(slices.Index(clusteringTypes, schema.TypeDecimal)), false)
	f.Add([]byte{0x01, 0, 0, 0, 2, 0, 0x80}, uint8(slices.Index(clusteringTypes, schema.TypeVarint)), false)
	f.Add(append([]byte{1}, make([]byte, 16)...), uint8(slices.Index(clusteringTypes, schema.TypeUUID)), false)
	f.Fuzz(func(t *testing.T, src []byte, typ uint8, desc bool) {
		tp := clusteringTypes[int(typ)%len(clusteringTypes)]
		v, rest, err := decodeClustering(src, tp, desc)
		if err != nil {
			return
		}
		consumed := src[:len(src)-len(rest)]
		if tp == schema.TypeDouble || tp == schema.TypeFloat {
			return
		}
		if enc := appendClustering(nil, tp, desc, v); !bytes.Equal(enc, consumed) {
			t.Fatalf("%s (desc %t): %x decoded as %x, which encodes as %x", tp, desc, consumed, v, enc)
		}
	})
}

// TestDecimalKeyNormalises pins the decimal key's decision: numerically
// equal decimals of different scales are one clustering key (as Cassandra's
// DecimalType compares them equal), and decode as the normal form.
func TestDecimalKeyNormalises(t *testing.T) {
	dec := func(s string) []byte {
		d, err := schema.ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return schema.EncodeDecimal(d)
	}
	tests := []struct {
		equal []string
		back  string
	}{
		{[]string{"1", "1.0", "1.00", "0.1e1", "100e-2"}, "1"},
		{[]string{"100", "1e2", "100.000", "10e1"}, "1E+2"},
		{[]string{"0", "0.000", "0e10", "-0.0"}, "0"},
		{[]string{"-1.50", "-1.5", "-15e-1"}, "-1.5"},
		{[]string{"1e2147483648", "10e2147483647", "100e2147483646"}, "1E+2147483648"},
		// The normal form would need a scale below the int32 minimum: it keeps a zero.
		{[]string{"10e2147483648", "1.0e2147483649"}, "1.0E+2147483649"},
	}
	for _, tt := range tests {
		for _, desc := range []bool{false, true} {
			first := appendClustering(nil, schema.TypeDecimal, desc, dec(tt.equal[0]))
			for _, s := range tt.equal[1:] {
				if got := appendClustering(nil, schema.TypeDecimal, desc, dec(s)); !bytes.Equal(got, first) {
					t.Errorf("decimal %s (desc %t) has key %x, %s has %x; want one key", s, desc, got, tt.equal[0], first)
				}
			}
			v, rest, err := decodeClustering(first, schema.TypeDecimal, desc)
			if err != nil || len(rest) != 0 {
				t.Fatalf("decodeClustering(%x) = %x, rest %x, %v", first, v, rest, err)
			}
			if got := schema.DecodeDecimal(v).String(); got != tt.back {
				t.Errorf("the key of %s (desc %t) decodes as %s, want %s", tt.equal[0], desc, got, tt.back)
			}
		}
	}
}
