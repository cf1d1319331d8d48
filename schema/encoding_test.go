package schema

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// richSchema has every kind of entry: live keyspaces and tables, a dropped
// keyspace, a dropped table, limits, every column type, quoted names.
func richSchema(t testing.TB) *Schema {
	s, err := Build(ksDDL + `
CREATE KEYSPACE "Other" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE KEYSPACE gone WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
DROP KEYSPACE gone;
CREATE TABLE ks.all_types (a text, b int, c bigint, d double, e boolean, f blob, g timestamp, "Quoted col" text,
    PRIMARY KEY ((a, b), c, d)) WITH per_partition_rate_limit = {'max_reads_per_second': 100, 'max_writes_per_second': 50};
CREATE TABLE ks.dropped (k int PRIMARY KEY);
DROP TABLE ks.dropped;
CREATE TABLE "Other".kv (k blob PRIMARY KEY, v blob) WITH per_partition_rate_limit = {'max_writes_per_second': 7};
`)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaEncodeDecodeRoundTrip(t *testing.T) {
	s := richSchema(t)
	b := s.Encode()
	d, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(Encode(s)) failed: %v", err)
	}
	if !bytes.Equal(d.Encode(), b) || d.Digest() != s.Digest() {
		t.Fatalf("Decode(Encode(s)) encodes differently")
	}
	for _, want := range s.Tables("") {
		got, ok := d.TableByID(want.ID)
		if !ok {
			t.Errorf("decoded schema lacks table %s (id %d)", want.QualifiedName(), want.ID)
			continue
		}
		if got.CreateStatement() != want.CreateStatement() || got.Version != want.Version || got.KeyspaceVersion != want.KeyspaceVersion {
			t.Errorf("decoded table %s differs:\n%s\nwant\n%s", want.QualifiedName(), got.CreateStatement(), want.CreateStatement())
		}
		if c, ok := got.Column(want.Columns[0].Name); !ok || c.Index != 0 {
			t.Errorf("decoded table %s has no column index", want.QualifiedName())
		}
	}
	if _, err := apply(d, "CREATE TABLE ks.dropped (k int PRIMARY KEY)", 1); err != nil {
		t.Errorf("re-creating a dropped table in the decoded schema failed: %v", err)
	}
	if got := New().Encode(); !bytes.Equal(got, []byte{formatVersion, 0, 0}) {
		t.Errorf("the empty schema encodes as %x, want 010000", got)
	}
	var zero Schema
	if zero.Digest() != New().Digest() || !bytes.Equal(zero.Encode(), New().Encode()) {
		t.Errorf("the zero Schema does not encode like the empty one")
	}
}

// TestEncodingIsPinned guards the format: a change here means nodes of
// different builds no longer agree on digests and must bump formatVersion.
func TestEncodingIsPinned(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int, c text, v blob, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_reads_per_second': 300}")
	const want = "01" + // format version
		"01" + "026b73" + "02" + "00" + "00" + "03" + // 1 keyspace: "ks", version (1, ""), live, RF 3
		"01" + "026b73" + "0174" + "0000000000000002" + "0200" + "0400" + "00" + // 1 table: ks.t, id 2, keyspace version (1, ""), version (2, ""), live
		"01" + "01" + "03" + "016b02" + "016301" + "017606" + // 1+1 key columns of 3: k int, c text, v blob
		"ac02" + "00" // 300 reads/s, no write limit
	if got := hex.EncodeToString(s.Encode()); got != want {
		t.Errorf("encoding changed:\n got %s\nwant %s", got, want)
	}
	if got := s.Digest().String(); len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("Digest().String() = %q, want 32 hex digits", got)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := richSchema(t).Encode()
	for n := 0; n < len(good); n++ {
		if _, err := Decode(good[:n]); err == nil {
			t.Errorf("Decode of the first %d of %d bytes succeeded, want an error", n, len(good))
		}
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "schema: decode: truncated"},
		{"future format", []byte{2, 0, 0}, "schema: decode: unknown format version 2 (this node reads 1)"},
		{"zero GC horizon", append(bytes.Clone(New().Encode()), 0), "schema: decode: not in canonical form"},
		{"trailing byte", append(bytes.Clone(New().Encode()), 5, 0), "schema: decode: bad or truncated varint"},
		{"huge count", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}, "schema: decode: count 4294967295 exceeds the 0 bytes left"},
		{"non-minimal varint", []byte{1, 0x80, 0x00, 0}, "schema: decode: not in canonical form"},
		{"table without keyspace", hexBytes(t, "0100"+"01"+"026b73"+"0174"+"0000000000000002"+"0200"+"0400"+"01"), `schema: decode: table "ks"."t" does not belong to a live keyspace`},
		{"bad keyspace name", hexBytes(t, "0101"+"012d"+"0000"+"00"+"03"+"00"), `schema: decode: keyspace name "-" may contain only letters, digits and underscores`},
		{"bad flags", hexBytes(t, "0101"+"026b73"+"0000"+"07"+"03"+"00"), "schema: decode: unknown flags 0x7"},
		{"dropped with rf", hexBytes(t, "0101"+"026b73"+"0000"+"01"+"03"+"00"), `schema: decode: dropped keyspace "ks" has a replication factor`},
	}
	for _, tt := range tests {
		_, err := Decode(tt.b)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Decode(%s) error = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeSchema checks that Decode never panics on any input, and that
// whatever it accepts is canonical: it encodes back to the same bytes and
// merges with itself to itself. testdata/fuzz/FuzzDecodeSchema holds the
// seed corpus.
func FuzzDecodeSchema(f *testing.F) {
	f.Add(New().Encode())
	f.Add(richSchema(f).Encode())
	if s, err := Build(orderDDL); err == nil {
		f.Add(s.Encode()) // DESC clustering columns
	}
	if s, err := Build(ksDDL + "ALTER KEYSPACE ks WITH rate_limit = {'max_reads_per_second': 5, 'mode': 'shadow'};" +
		"CREATE SERVICE LEVEL a WITH max_writes_per_second = 9 AND mode = 'shadow'; CREATE SERVICE LEVEL b;" +
		"ATTACH SERVICE LEVEL a TO r; ATTACH SERVICE LEVEL b TO ADDRESS 'fe80::/10'; GRANT r TO s; DROP SERVICE LEVEL b"); err == nil {
		f.Add(s.Encode()) // levels, attachments, grants, tombstones, a keyspace rate_limit
	} else {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(s.Encode(), b) {
			t.Fatalf("Decode accepted %x, which encodes back as %x", b, s.Encode())
		}
		if m := s.Merge(s); !bytes.Equal(m.Encode(), b) {
			t.Fatalf("s.Merge(s) differs from s for %x", b)
		}
		for _, tb := range s.Tables("") {
			if got, ok := s.TableByID(tb.ID); !ok || (got != tb && got.ID != tb.ID) {
				t.Fatalf("TableByID(%d) of a decoded table failed", tb.ID)
			}
			_ = tb.CreateStatement()
		}
	})
}

// TestShadowModeRoundTrips: a limit in shadow mode survives the encoding (as the table flag
// flagShadow), DESCRIBE prints it as the 'mode' key, and running DESCRIBE's output recreates
// it; a table back in enforce mode encodes exactly as one that never left it.
func TestShadowModeRoundTrips(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY) WITH per_partition_rate_limit = {'max_writes_per_second': 50, 'mode': 'shadow'}")
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatalf("Decode(Encode(s)) failed: %v", err)
	}
	got, _ := d.Table("ks", "t")
	if want := (RateLimit{MaxWritesPerSecond: 50, Mode: Shadow}); got.RateLimit != want {
		t.Errorf("decoded limit %+v, want %+v", got.RateLimit, want)
	}
	const stmt = `CREATE TABLE ks.t (
    k int,
    PRIMARY KEY (k)
) WITH per_partition_rate_limit = {'max_writes_per_second': 50, 'mode': 'shadow'}
    AND gc_grace_seconds = 864000
    AND speculative_retry = '99p';`
	if got.CreateStatement() != stmt {
		t.Errorf("DESCRIBE prints\n%s\nwant\n%s", got.CreateStatement(), stmt)
	}
	again := mustBuild(t, ksDDL+stmt)
	if tb, _ := again.Table("ks", "t"); tb.RateLimit != got.RateLimit {
		t.Errorf("running DESCRIBE's output sets %+v, want %+v", tb.RateLimit, got.RateLimit)
	}
	enforced, err := apply(s, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_writes_per_second': 50, 'mode': 'enforce'}", 5)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := apply(s, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_writes_per_second': 50}", 5)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enforced.Encode(), plain.Encode()) {
		t.Error("a table set to 'mode': 'enforce' encodes differently from one without the key")
	}
	// Flags a node does not know are refused, never read as enforce.
	b := s.Encode()
	nb := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY) WITH per_partition_rate_limit = {'max_writes_per_second': 50}").Encode()
	i := 0
	for i < len(b) && i < len(nb) && b[i] == nb[i] {
		i++
	}
	if i == len(b) || b[i] != flagShadow || nb[i] != 0 {
		t.Fatalf("the shadow table's encoding differs from the enforcing one's at byte %d, not in the table flags", i)
	}
	for _, f := range []byte{4, 1 | flagShadow} {
		bad := bytes.Clone(b)
		bad[i] = f
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode accepted table flags %#x", f)
		}
	}
}
