package partitioner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
)

type vector struct {
	key   string
	token int64
}

// gocqlVectors are from the Apache Cassandra Go driver's tests of its Cassandra-variant MurmurHash3,
// repository apache/cassandra-gocql-driver, path internal/murmur/murmur_test.go
// (TestMurmur3H1ForCassandra). Keys are 7 to 38 bytes long, so the tail length (len%16) takes every
// value 0..15, and the second group has tail bytes ≥ 0x80 (0xc8..0xd7), which Cassandra sign-extends.
var gocqlVectors = func() []vector {
	prefix := "prefix\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\xc8"
	first := []int64{
		-5156414768376541762, 3700033067394128583, -3973852022020331202, 3038655072509758878,
		-5681686890369564299, 8960422816272944721, -1104872167714568090, -9199676315897541990,
		4847624695450664884, -2737291859101550625, -1154133289533387924, 5781349077088505981,
		-681021187788781932, -3787130296809111096, -3115393326357146996, -2684252762052835206,
		-278181328349571586,
	}
	var vs []vector
	for i, tok := range first { // "prefix\x00", "prefix\x00\x01", ... "prefix\x00...\x0f\xc8"
		vs = append(vs, vector{prefix[:7+i], tok})
	}
	prefix2 := "prefix\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\xc8\xc9"
	suffix := "\xca\xcb\xcc\xcd\xce\xcf\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7"
	second := []int64{
		-5319761130493488577, -4593148434938707926, -575713103357290760, 4290743753678124926,
		9164754117279683406, -107668053986278786, 64887291506465003, 6241282934480161521,
		5150183507841894143, 5645797256444299552, -908235285856554578, -1785405279637408062,
		5343233714768265848, 4936964276934412722, 2294903531026336836,
	}
	for i, tok := range second { // prefix2, prefix2+"\xca", ... prefix2+"\xca...\xd7"
		vs = append(vs, vector{prefix2 + suffix[:i], tok})
	}
	vs = append(vs, vector{
		"\x00\x10C'R\x9f\xb6E\xdd\x00\xb8\x83\xec9\xaeD\x8b\xb8\x00\x00\x04\x00\x06jk\x00",
		-9223371632693506265,
	})
	return vs
}()

// rubyVectors are from the DataStax Ruby driver, repository datastax/ruby-driver, path
// spec/cassandra/murmur3_spec.rb.
var rubyVectors = []vector{
	{"123", -7468325962851647638},
	{strings.Repeat("\x00\xff\x10\xfa\x99", 10), 5837342703291459765},
	{strings.Repeat("\xfe", 8), -8927430733708461935},
	{strings.Repeat("\x10", 8), 1446172840243228796},
	{"9223372036854775807", 7162290910810015547},
	{"\x01\x02\x03\x04\x05\x06\a\b\t\n\v\f\r\x0E\x0F\x10", -5563837382979743776},
	{"\x02\x03\x04\x05\x06\a\b\t\n\v\f\r\x0E\x0F\x10\x11", -1513403162740402161},
	{"\x03\x04\x05\x06\a\b\t\n\v\f\r\x0E\x0F\x10\x11\x12", -495360443712684655},
	{"\x04\x05\x06\a\b\t\n\v\f\r\x0E\x0F\x10\x11\x12\x13", 1734091135765407943},
	{"\x05\x06\a\b\t\n\v\f\r\x0E\x0F\x10\x11\x12\x13\x14", -3199412112042527988},
	{"\x06\a\b\t\n\v\f\r\x0E\x0F\x10\x11\x12\x13\x14\x15", -6316563938475080831},
	{"\a\b\t\n\v\f\r\x0E\x0F\x10\x11\x12\x13\x14\x15\x16", 8228893370679682632},
	{strings.Repeat("\x00", 16), 5457549051747178710},
	{strings.Repeat("\xFF", 16), -2824192546314762522},
	{strings.Repeat("\xFE", 16), -833317529301936754},
	{"\x00\x01\x02\x03" + strings.Repeat("\xFF", 12), 6463632673159404390},
	{strings.Repeat("\xFE", 17), -1672437813826982685},
	{"\xFE\xFE\xFE\xFE", 4566408979886474012},
	{"\x00\x00\x00\x00", -3485513579396041028},
	{"\x00\x01\x7F\x7F", 6573459401642635627},
	{"\x00\xFF\xFF\xFF", 123573637386978882},
	{"\xFF\x01\x02\x03", -2839127690952877842},
	{"\xE2\xE7", -8582699461035929883},
	{"\xE2\xE7\xE2\xE7\xE2\xE7\x01", 2222373981930033306},
}

// int32Key is CQL's serialization of an int value: 4 bytes, big-endian.
func int32Key(v int32) string {
	return string(binary.BigEndian.AppendUint32(nil, uint32(v)))
}

// dtestVectors are the tokens of CQL int partition keys 1..20 from Apache Cassandra's distributed
// tests, repository apache/cassandra-dtest, path replication_test.py (murmur3_hashes), plus the int
// key of pchalamet/cassandra-sharp, path CassandraSharpUnitTests/Partitioner/MurmurHash3PartitionerTest.cs
// (CheckSingleKey).
var dtestVectors = []vector{
	{int32Key(5), -7509452495886106294},
	{int32Key(10), -6715243485458697746},
	{int32Key(16), -5477287129830487822},
	{int32Key(13), -5034495173465742853},
	{int32Key(11), -4156302194539278891},
	{int32Key(1), -4069959284402364209},
	{int32Key(19), -3974532302236993209},
	{int32Key(8), -3799847372828181882},
	{int32Key(2), -3248873570005575792},
	{int32Key(4), -2729420104000364805},
	{int32Key(18), -2695747960476065067},
	{int32Key(15), -1191135763843456182},
	{int32Key(20), 1388667306199997068},
	{int32Key(7), 1634052884888577606},
	{int32Key(6), 2705480034054113608},
	{int32Key(9), 3728482343045213994},
	{int32Key(14), 4279681877540623768},
	{int32Key(17), 5467144456125416399},
	{int32Key(12), 8582886034424406875},
	{int32Key(3), 9010454139840013625},
	{int32Key(0x12345678), -8827056344306985898},
}

func TestTokenMatchesPublishedVectors(t *testing.T) {
	sets := []struct {
		source  string
		vectors []vector
	}{
		{"apache/cassandra-gocql-driver internal/murmur/murmur_test.go", gocqlVectors},
		{"datastax/ruby-driver spec/cassandra/murmur3_spec.rb", rubyVectors},
		{"apache/cassandra-dtest replication_test.py", dtestVectors},
	}
	for _, set := range sets {
		for _, v := range set.vectors {
			if got := Token([]byte(v.key)); got != v.token {
				t.Errorf("Token(%x) = %d, want %d (from %s)", v.key, got, v.token, set.source)
			}
		}
	}
}

func TestVectorsCoverEveryTailLengthAndSignedTailBytes(t *testing.T) {
	// The vectors above must exercise each branch of the tail switch, with and without bytes ≥ 0x80 in
	// the tail; otherwise a bug in one branch or in the sign extension could pass unnoticed.
	var plain, signed [16]bool
	for _, vs := range [][]vector{gocqlVectors, rubyVectors, dtestVectors} {
		for _, v := range vs {
			tail := v.key[len(v.key)&^15:]
			hasHigh := false
			for i := 0; i < len(tail); i++ {
				hasHigh = hasHigh || tail[i] >= 0x80
			}
			if hasHigh {
				signed[len(tail)] = true
			} else {
				plain[len(tail)] = true
			}
		}
	}
	for n := 0; n < 16; n++ {
		if !plain[n] && !signed[n] {
			t.Errorf("no vector has a tail of %d bytes", n)
		}
		if n > 0 && !signed[n] {
			t.Errorf("no vector has a tail of %d bytes containing a byte >= 0x80", n)
		}
	}
}

// compositeVectors are tokens of composite partition keys (several components).
var compositeVectors = []struct {
	source     string
	components [][]byte
	token      int64
}{
	{
		// apache/cassandra-gocql-driver internal/murmur/murmur_test.go: the last key is a composite of a
		// 16-byte uuid and a 4-byte value.
		source: "apache/cassandra-gocql-driver internal/murmur/murmur_test.go",
		components: [][]byte{
			[]byte("C'R\x9f\xb6E\xdd\x00\xb8\x83\xec9\xaeD\x8b\xb8"),
			[]byte("\x00\x06jk"),
		},
		token: -9223371632693506265,
	},
	{
		source:     "pchalamet/cassandra-sharp CassandraSharpUnitTests/Partitioner/MurmurHash3PartitionerTest.cs (CheckCompositeKey1)",
		components: [][]byte{[]byte(int32Key(1)), []byte(int32Key(1)), []byte(int32Key(200301))},
		token:      470466698873626083,
	},
	{
		source:     "pchalamet/cassandra-sharp CassandraSharpUnitTests/Partitioner/MurmurHash3PartitionerTest.cs (CheckCompositeKey2)",
		components: [][]byte{[]byte(int32Key(18653)), []byte(int32Key(1)), []byte(int32Key(200711))},
		token:      -1934257741304192960,
	},
}

func TestCompositeKeyTokenMatchesPublishedVectors(t *testing.T) {
	for _, v := range compositeVectors {
		key := AppendKey(nil, v.components)
		if got := Token(key); got != v.token {
			t.Errorf("Token(AppendKey(%x)) = %d, want %d (from %s)", v.components, got, v.token, v.source)
		}
		if len(key) != KeySize(v.components) {
			t.Errorf("KeySize(%x) = %d, but AppendKey produced %d bytes", v.components, KeySize(v.components), len(key))
		}
	}
}

func TestAppendKeyEncoding(t *testing.T) {
	tests := []struct {
		name       string
		components [][]byte
		want       []byte
	}{
		{"a single component is its raw bytes", [][]byte{[]byte("abc")}, []byte("abc")},
		{"a single empty component is empty", [][]byte{{}}, []byte{}},
		{"two components are length-prefixed and terminated",
			[][]byte{[]byte("ab"), []byte("c")},
			[]byte{0, 2, 'a', 'b', 0, 0, 1, 'c', 0}},
		{"an empty component in a composite keeps its header",
			[][]byte{{}, []byte("x")},
			[]byte{0, 0, 0, 0, 1, 'x', 0}},
		{"a 256-byte component has a big-endian length",
			[][]byte{bytes.Repeat([]byte{7}, 256), {}},
			append(append([]byte{1, 0}, bytes.Repeat([]byte{7}, 256)...), 0, 0, 0, 0)},
	}
	for _, tt := range tests {
		got := AppendKey([]byte("pre"), tt.components)
		want := append([]byte("pre"), tt.want...)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: AppendKey(\"pre\", %x) = %x, want %x", tt.name, tt.components, got, want)
		}
		if KeySize(tt.components) != len(tt.want) {
			t.Errorf("%s: KeySize = %d, want %d", tt.name, KeySize(tt.components), len(tt.want))
		}
	}
}

func TestCheckComponents(t *testing.T) {
	big := make([]byte, MaxComponentSize+1)
	tests := []struct {
		name       string
		components [][]byte
		wantErr    bool
	}{
		{"a single oversized component is fine (it is not length-prefixed)", [][]byte{big}, false},
		{"a composite with a component at the limit is fine", [][]byte{big[:MaxComponentSize], nil}, false},
		{"a composite with an oversized component is rejected", [][]byte{nil, big}, true},
	}
	for _, tt := range tests {
		err := CheckComponents(tt.components)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: CheckComponents error = %v, want error %v", tt.name, err, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrComponentTooLarge) {
			t.Errorf("%s: CheckComponents error %v does not wrap ErrComponentTooLarge", tt.name, err)
		}
	}
}

func TestEmptyKeyIsMinToken(t *testing.T) {
	// Cassandra's Murmur3Partitioner.getToken returns MINIMUM for an empty key.
	if got := Token(nil); got != MinToken {
		t.Errorf("Token(empty) = %d, want MinToken %d", got, MinToken)
	}
}

func TestHashOfMinInt64IsNormalizedToMaxInt64(t *testing.T) {
	// Build a 16-byte key whose h1 is exactly math.MinInt64 by inverting the hash (as Cassandra's
	// MurmurHash.inv_hash3_x64_128 does), then check that Token maps it to math.MaxInt64 as
	// Murmur3Partitioner.normalize does.
	key := keyForHash1(uint64(1) << 63)
	if got := hash1(key); got != 1<<63 {
		t.Fatalf("test inverse is wrong: hash1(%x) = %#x, want 1<<63", key, got)
	}
	if got := Token(key); got != math.MaxInt64 {
		t.Errorf("Token(%x) = %d, want math.MaxInt64 (h1 is math.MinInt64)", key, got)
	}
}

func TestTokenDoesNotAllocate(t *testing.T) {
	key := []byte("prefix\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\xc8\xc9\xca")
	components := [][]byte{[]byte("abc"), []byte("defgh")}
	buf := make([]byte, 0, 64)
	var sink int64
	allocs := testing.AllocsPerRun(100, func() {
		sink += Token(key)
		sink += Token(AppendKey(buf[:0], components))
	})
	if allocs != 0 {
		t.Errorf("Token and AppendKey into a large enough buffer allocate %.1f times per run, want 0", allocs)
	}
	_ = sink
}

func BenchmarkToken(b *testing.B) {
	for _, n := range []int{4, 16, 23, 64, 1024} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				sink += Token(key)
			}
			_ = sink
		})
	}
}

func BenchmarkCompositeKeyToken(b *testing.B) {
	components := [][]byte{[]byte(int32Key(18653)), []byte(int32Key(1)), []byte("some text")}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		buf = AppendKey(buf[:0], components)
		sink += Token(buf)
	}
	_ = sink
}

// keyForHash1 returns a 16-byte key whose hash1 is h1 (with h2 chosen as 0), by running the 16-byte
// hash backwards.
func keyForHash1(h1 uint64) []byte {
	// Finalization: h1 = f1 + f2; h2 = h1 + f2 (with f = fmix of the pre-final values). Pick final h2 = 0.
	var hTwo uint64
	f2 := hTwo - h1
	f1 := h1 - f2
	a1, a2 := unfmix(f1), unfmix(f2)
	// Undo h1 += h2; h2 += h1 and the length xor.
	a2 -= a1
	a1 -= a2
	a1 ^= 16
	a2 ^= 16
	// Undo the single block round, starting from h1 = h2 = 0.
	k1 := bits.RotateLeft64((a1-0x52dce729)*inverse(5), -27)
	k2 := bits.RotateLeft64((a2-0x38495ab5)*inverse(5)-a1, -31)
	k1 = bits.RotateLeft64(k1*inverse(c2), -31) * inverse(c1)
	k2 = bits.RotateLeft64(k2*inverse(c1), -33) * inverse(c2)
	key := binary.LittleEndian.AppendUint64(nil, k1)
	return binary.LittleEndian.AppendUint64(key, k2)
}

func unfmix(k uint64) uint64 {
	k ^= k >> 33
	k *= inverse(0xc4ceb9fe1a85ec53)
	k ^= k >> 33
	k *= inverse(0xff51afd7ed558ccd)
	k ^= k >> 33
	return k
}

// inverse returns the multiplicative inverse of odd a modulo 2^64 (Newton's iteration).
func inverse(a uint64) uint64 {
	x := a
	for range 6 {
		x *= 2 - a*x
	}
	return x
}
