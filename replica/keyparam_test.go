package replica

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/schema"
)

// randomParamValue returns a random well-formed value of t, drawn from few distinct scalars so that
// equal prefixes and equal values are common.
func randomParamValue(t *testing.T, rng *rand.Rand, typ schema.Type) []byte {
	t.Helper()
	switch typ {
	case schema.TypeInt:
		return schema.EncodeInt(int32(rng.IntN(7) - 3))
	case schema.TypeBigInt:
		return schema.EncodeBigInt(int64(rng.IntN(5)-2) << 40)
	case schema.TypeText:
		return schema.EncodeText([]string{"", "a", "a\x00", "a\x00b", "b", "ab"}[rng.IntN(6)])
	case schema.TypeBlob:
		return schema.EncodeBlob([][]byte{{}, {0}, {0, 0}, {0xFF}, {1}}[rng.IntN(5)])
	}
	kind, elems := typ.Params()
	elem := func(b []byte, e []byte) []byte {
		if e == nil {
			return binary.BigEndian.AppendUint32(b, ^uint32(0))
		}
		return append(binary.BigEndian.AppendUint32(b, uint32(len(e))), e...)
	}
	switch kind {
	case schema.ParamTuple, schema.ParamUDT:
		var v []byte
		end := 0 // a user type's value leaves out its trailing nulls
		for _, et := range elems {
			var c []byte
			if rng.IntN(4) > 0 {
				c = randomParamValue(t, rng, et)
			}
			v = elem(v, c)
			if c != nil {
				end = len(v)
			}
		}
		if kind == schema.ParamUDT {
			return v[:end:end]
		}
		return v
	case schema.ParamList, schema.ParamSet, schema.ParamMap:
		n := rng.IntN(4)
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = randomParamValue(t, rng, elems[0])
		}
		if kind != schema.ParamList {
			slices.SortFunc(keys, elems[0].Compare)
			keys = slices.CompactFunc(keys, func(a, b []byte) bool { return elems[0].Compare(a, b) == 0 })
		}
		v := binary.BigEndian.AppendUint32(nil, uint32(len(keys)))
		for _, k := range keys {
			v = elem(v, k)
			if kind == schema.ParamMap {
				v = elem(v, randomParamValue(t, rng, elems[1]))
			}
		}
		return v
	}
	t.Fatalf("no random values of type %s", typ)
	return nil
}

// TestParamKeyOrder: for frozen collections and tuples, nested included, the clustering key
// encoding sorts as schema's Compare (Cassandra's order: element-wise, then by count; a null
// tuple component first), reversed for DESC, and decodes back to the value.
func TestParamKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{
		"frozen<list<int>>", "frozen<set<text>>", "frozen<map<int, frozen<list<text>>>>",
		"tuple<int, text>", "frozen<list<frozen<tuple<bigint, blob>>>>", "tuple<frozen<set<int>>, int>",
		"frozen<map<frozen<tuple<text, int>>, blob>>",
		"frozen<udt<ks.point, x int, label text>>", "frozen<list<frozen<udt<ks.p, a bigint, b frozen<udt<ks.q, c int>>>>>>",
		"frozen<tuple<frozen<udt<ks.r, a int, b int>>, int>>",
	} {
		typ, err := schema.LookupType(name)
		if strings.Contains(name, "udt<") { // kvnode's canonical name of a user type, not CQL
			typ, err = schema.Type(name), nil
		}
		if err != nil || !typ.IsParametric() {
			t.Fatalf("type %s: %v", name, err)
		}
		for range 400 {
			a, b := randomParamValue(t, rng, typ), randomParamValue(t, rng, typ)
			if err := typ.Check(a); err != nil {
				t.Fatalf("%s: random value % x: %v", typ, a, err)
			}
			want := typ.Compare(a, b)
			for _, desc := range []bool{false, true} {
				ka := appendClustering([]byte{0xAA}, typ, desc, a)
				kb := appendClustering([]byte{0xAA}, typ, desc, b)
				got := bytes.Compare(ka, kb)
				if desc {
					got = -got
				}
				if got != want {
					t.Fatalf("%s desc=%v: keys of % x and % x compare %d, values %d", typ, desc, a, b, got, want)
				}
				// Decoding, with something after the component, gives the value and the rest.
				v, rest, err := decodeClustering(append(ka[1:], 0x42), typ, desc)
				if err != nil || !bytes.Equal(v, a) || !bytes.Equal(rest, []byte{0x42}) {
					t.Fatalf("%s desc=%v: decode of % x = % x, % x, %v; want % x and 42", typ, desc, ka[1:], v, rest, err, a)
				}
			}
		}
	}
}

// TestParamKeyMalformed: a parametric key component that is cut short or has a bad marker is
// refused as a malformed key, never a panic.
func TestParamKeyMalformed(t *testing.T) {
	typ, _ := schema.LookupType("frozen<list<frozen<tuple<int, text>>>>")
	v := binary.BigEndian.AppendUint32(nil, 1)
	tuple := binary.BigEndian.AppendUint32(nil, 4)
	tuple = append(tuple, schema.EncodeInt(5)...)
	tuple = binary.BigEndian.AppendUint32(tuple, ^uint32(0))
	v = append(binary.BigEndian.AppendUint32(v, uint32(len(tuple))), tuple...)
	key := appendClustering(nil, typ, false, v)
	for i := range len(key) {
		for _, desc := range []bool{false, true} {
			k := slices.Clone(key[:i])
			if desc {
				complement(k)
			}
			if _, _, err := decodeClustering(k, typ, desc); err == nil {
				t.Errorf("decode of % x (cut at %d, desc=%v) succeeded", k, i, desc)
			}
		}
	}
	bad := slices.Clone(key)
	bad[0] = 0x07
	if _, _, err := decodeClustering(bad, typ, false); err == nil {
		t.Errorf("decode of % x (bad marker) succeeded", bad)
	}
}

// FuzzDecodeParamKey: decoding a parametric clustering component, ASC or DESC, never panics on
// any bytes, and what it accepts is canonical: it encodes back to exactly the bytes consumed.
func FuzzDecodeParamKey(f *testing.F) {
	f.Add([]byte{0x01, 0x02, 0x80, 0, 0, 1, 0x01, 0x00}, uint8(0), false)
	f.Add([]byte{0x01, 0x61, 0x00, 0x01, 0x00}, uint8(1), true)
	types := []string{"tuple<int, text>", "frozen<list<frozen<set<text>>>>", "frozen<map<int, blob>>", "frozen<udt<ks.u, a int, b text>>"}
	f.Fuzz(func(t *testing.T, src []byte, typ uint8, desc bool) {
		name := types[int(typ)%len(types)]
		tp, err := schema.LookupType(name)
		if strings.Contains(name, "udt<") {
			tp, err = schema.Type(name), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		v, rest, err := decodeClustering(src, tp, desc)
		if err != nil {
			return
		}
		consumed := src[:len(src)-len(rest)]
		if back := appendClustering(nil, tp, desc, v); !bytes.Equal(back, consumed) {
			t.Fatalf("%s desc=%v: % x decodes to % x, which encodes to % x", tp, desc, consumed, v, back)
		}
	})
}
