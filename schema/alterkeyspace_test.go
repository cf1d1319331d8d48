package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

func TestAlterKeyspace(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY)")
	k0, _ := s.Keyspace("ks")
	s1, err := apply(s, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", 100)
	if err != nil {
		t.Fatal(err)
	}
	k1, ok := s1.Keyspace("ks")
	if !ok || k1.ReplicationFactor != 1 {
		t.Fatalf("after ALTER KEYSPACE, Keyspace(ks) = %+v, %v; want RF 1", k1, ok)
	}
	if k1.Version != k0.Version || k1.Altered != (Version{100, "n1"}) || k1.LastChange() != k1.Altered {
		t.Errorf("ALTER KEYSPACE: Version %v, Altered %v; want the creation's %v kept and Altered 100@n1", k1.Version, k1.Altered, k0.Version)
	}
	if k0.ReplicationFactor != 3 || k0.Altered != (Version{}) {
		t.Errorf("ALTER KEYSPACE changed the schema it was applied to: %+v", k0)
	}
	tb, ok := s1.Table("ks", "t")
	if !ok || tb.KeyspaceVersion != k1.Version {
		t.Fatalf("ALTER KEYSPACE lost table ks.t or its incarnation: %+v, %v", tb, ok)
	}
	if v, ok := s1.EntryVersion("ks", ""); !ok || v != k1.Altered {
		t.Errorf("EntryVersion(ks) = %v, %v; want the ALTER's %v", v, ok, k1.Altered)
	}
	d, err := s1.Describe(&cql.DescribeStmt{Kind: cql.DescribeKeyspace, Keyspace: cql.Ident{Name: "ks"}}, "")
	if err != nil || !strings.Contains(d, "'replication_factor': 1}") {
		t.Errorf("DESCRIBE KEYSPACE after ALTER = %q, %v; want replication_factor 1", d, err)
	}
	// Only durable_writes: the replication stays, and the ALTER is still recorded.
	s2, err := apply(s1, "ALTER KEYSPACE ks WITH durable_writes = true", 50) // a clock behind
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := s2.Keyspace("ks"); k2.ReplicationFactor != 1 || k2.Altered.Compare(k1.Altered) <= 0 {
		t.Errorf("ALTER KEYSPACE WITH durable_writes = true: RF %d, Altered %v; want RF 1 and a version after %v", k2.ReplicationFactor, k2.Altered, k1.Altered)
	}
	// A drop supersedes the ALTER even from a clock behind it, and a new incarnation has none.
	s3, err := apply(s2, "DROP KEYSPACE ks", 60)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s3.EntryVersion("ks", ""); v.Compare(Version{101, "n1"}) <= 0 {
		t.Errorf("DROP KEYSPACE after an ALTER at 101 has version %v, want a later one", v)
	}
	s4, err := apply(s3, ksDDL, 70)
	if err != nil {
		t.Fatal(err)
	}
	if k4, _ := s4.Keyspace("ks"); k4.Altered != (Version{}) || k4.ReplicationFactor != 3 {
		t.Errorf("a keyspace created again carries its predecessor's ALTER: %+v", k4)
	}
	// IF EXISTS on a missing keyspace changes nothing.
	if got, err := apply(s3, "ALTER KEYSPACE IF EXISTS ks WITH durable_writes = true", 80); err != nil || got != s3 {
		t.Errorf("ALTER KEYSPACE IF EXISTS on a dropped keyspace = %p, %v; want the same schema", got, err)
	}
}

func TestAlterKeyspaceErrors(t *testing.T) {
	s := mustBuild(t, ksDDL)
	tests := []struct {
		src, want string
		is        error
	}{
		{"ALTER KEYSPACE nope WITH durable_writes = true", "unknown keyspace nope", ErrUnknownKeyspace},
		{"ALTER KEYSPACE system WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", "system keyspace system is not user-modifiable: kvnode computes the system keyspaces on each node", nil},
		{"ALTER KEYSPACE IF EXISTS system_auth WITH durable_writes = true", "system keyspace system_auth is not user-modifiable: kvnode computes the system keyspaces on each node", nil},
		{"ALTER KEYSPACE ks WITH replication = {'class': 'LocalStrategy'}", "keyspace ks: replication: class 'LocalStrategy' is not supported (supported: 'SimpleStrategy', 'NetworkTopologyStrategy')", nil},
		{"ALTER KEYSPACE ks WITH replication = {'replication_factor': 2}", "keyspace ks: replication: 'class' is missing; write 'class': 'SimpleStrategy' or 'NetworkTopologyStrategy'", nil},
		{"ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy'}", "keyspace ks: replication: 'replication_factor' is missing", nil},
		{"ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 0}", "keyspace ks: replication: 'replication_factor' = 0 is zero; the replication factor is a positive integer", nil},
		{"ALTER KEYSPACE ks WITH replication = 3", "keyspace ks: replication = 3 is not a map; write replication = {'class': 'SimpleStrategy', 'replication_factor': N}", nil},
		{"ALTER KEYSPACE ks WITH durable_writes = false", "keyspace ks: durable_writes = false is not supported: writes are always durable", nil},
		{"ALTER KEYSPACE ks WITH foo = 1", "keyspace ks: unknown keyspace option foo (supported: replication, durable_writes, rate_limit)", nil},
		{"ALTER KEYSPACE ks WITH durable_writes = true AND durable_writes = true", `keyspace ks: option durable_writes is given twice`, nil},
		{"ALTER KEYSPACE ks WITH rate_limit = {'max_reads_per_second': 0}", "keyspace ks: rate_limit: 'max_reads_per_second' = 0 is zero; a limit is a positive integer (leave the key out for no limit)", nil},
		{"ALTER KEYSPACE ks WITH rate_limit = {'max_writes': 10}", "keyspace ks: rate_limit: unknown key 'max_writes' (with value 10); valid keys are 'max_reads_per_second', 'max_writes_per_second' and 'mode'", nil},
		{"ALTER KEYSPACE ks WITH rate_limit = 10", "keyspace ks: rate_limit = 10 is not a map; write rate_limit = {'max_reads_per_second': N, 'max_writes_per_second': M}, leaving out a key for no limit", nil},
		{"ALTER KEYSPACE ks WITH rate_limit = {'mode': 'soft'}", "keyspace ks: rate_limit: 'mode' = 'soft' is not a mode; write 'enforce' (reject over the limit, the default) or 'shadow' (count and report, never reject)", nil},
	}
	for _, tt := range tests {
		_, err := apply(s, tt.src, 10)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.src, err, tt.want)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: error %v is not %v", tt.src, err, tt.is)
		}
	}
}

// TestKeyspaceRateLimit checks that rate_limit is set by CREATE and ALTER KEYSPACE, kept across
// ALTERs of other options, cleared by {}, shown by DESCRIBE, and survives encoding.
func TestKeyspaceRateLimit(t *testing.T) {
	s := mustBuild(t, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND rate_limit = {'max_reads_per_second': 100, 'max_writes_per_second': '50'}")
	want := RateLimit{MaxReadsPerSecond: 100, MaxWritesPerSecond: 50}
	if k, _ := s.Keyspace("ks"); k.RateLimit != want {
		t.Fatalf("after CREATE the rate limit is %+v, want %+v", k.RateLimit, want)
	}
	if !s.HasBudgets() {
		t.Errorf("HasBudgets() = false with a keyspace rate limit")
	}
	s = mustApply(t, s, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}", 20)
	if k, _ := s.Keyspace("ks"); k.RateLimit != want || k.ReplicationFactor != 3 {
		t.Fatalf("after an ALTER of replication the keyspace is rf %d, limit %+v, want rf 3, limit %+v", k.ReplicationFactor, k.RateLimit, want)
	}
	s = mustApply(t, s, "ALTER KEYSPACE ks WITH rate_limit = {'max_writes_per_second': 7, 'mode': 'shadow'}", 30)
	want = RateLimit{MaxWritesPerSecond: 7, Mode: Shadow}
	k, _ := s.Keyspace("ks")
	if k.RateLimit != want {
		t.Fatalf("after ALTER rate_limit the limit is %+v, want %+v", k.RateLimit, want)
	}
	if got, wantText := k.CreateStatement(), "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3} AND rate_limit = {'max_writes_per_second': 7, 'mode': 'shadow'};"; got != wantText {
		t.Errorf("CreateStatement() = %q, want %q", got, wantText)
	}
	if fs := k.LevelsFormatFeatures(); len(fs) != 1 {
		t.Errorf("LevelsFormatFeatures() = %v, want rate_limit", fs)
	}
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if dk, _ := d.Keyspace("ks"); dk.RateLimit != want || d.Digest() != s.Digest() {
		t.Errorf("decoded limit %+v (digest %v), want %+v (digest %v)", dk.RateLimit, d.Digest(), want, s.Digest())
	}
	s = mustApply(t, s, "ALTER KEYSPACE ks WITH rate_limit = {}", 40)
	if k, _ := s.Keyspace("ks"); !k.RateLimit.IsZero() || s.HasBudgets() {
		t.Errorf("after rate_limit = {} the limit is %+v, HasBudgets %v; want none", k.RateLimit, s.HasBudgets())
	}
}

// TestMergeKeyspaceAlters: the later ALTER of one incarnation wins on every node; an ALTER of
// an incarnation that was dropped and created again is forgotten, and never costs the new
// incarnation its tables.
func TestMergeKeyspaceAlters(t *testing.T) {
	a := &node{id: "a", s: New()}
	a.exec(t, ksDDL)
	a.exec(t, "CREATE TABLE ks.t (k int PRIMARY KEY)")
	b := &node{id: "b", clock: a.clock, s: a.s}
	c := &node{id: "c", clock: a.clock + 5, s: a.s}
	b.exec(t, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	c.exec(t, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	for _, m := range []*Schema{b.s.Merge(c.s), c.s.Merge(b.s), a.s.Merge(b.s).Merge(c.s)} {
		k, _ := m.Keyspace("ks")
		if k.ReplicationFactor != 2 {
			t.Errorf("concurrent ALTER KEYSPACE: RF %d won, want the later ALTER's 2", k.ReplicationFactor)
		}
		if _, ok := m.Table("ks", "t"); !ok {
			t.Errorf("merging two ALTER KEYSPACEs lost table ks.t")
		}
	}
	// d drops and creates ks again while e, far ahead, alters the old incarnation.
	d := &node{id: "d", clock: a.clock, s: a.s}
	e := &node{id: "e", clock: a.clock + 1000, s: a.s}
	d.exec(t, "DROP KEYSPACE ks")
	d.exec(t, ksDDL)
	d.exec(t, "CREATE TABLE ks.u (k int PRIMARY KEY)")
	e.exec(t, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	for _, m := range []*Schema{d.s.Merge(e.s), e.s.Merge(d.s)} {
		if !sameSchema(m, d.s) {
			t.Errorf("an ALTER of a dropped incarnation changed the new one: keyspaces %+v, tables %v", m.Keyspaces(), names(m.Tables("")))
		}
	}
}

func TestAlteredKeyspaceEncoding(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY)")
	if k, _ := s.Keyspace("ks"); len(k.FormatFeatures()) != 0 {
		t.Errorf("a keyspace never altered has format features %v", k.FormatFeatures())
	}
	s1, err := apply(s, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 5}", 100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(s1.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !sameSchema(got, s1) {
		t.Errorf("an altered keyspace does not round-trip")
	}
	if k, _ := got.Keyspace("ks"); k.ReplicationFactor != 5 || k.Altered != (Version{100, "n1"}) {
		t.Errorf("decoded keyspace %+v, want RF 5 altered at 100@n1", k)
	}
	if k, _ := got.Keyspace("ks"); strings.Join(k.FormatFeatures(), ",") != "a record of ALTER KEYSPACE" {
		t.Errorf("an altered keyspace's format features = %v", k.FormatFeatures())
	}
	// The flag an older node refuses, and an ALTER that is not after the creation.
	bad := hexBytes(t, "0101"+"026b73"+"0400"+"02"+"03"+"0200"+"00")
	if _, err := Decode(bad); err == nil || !strings.Contains(err.Error(), "not after its creation") {
		t.Errorf("Decode of a keyspace altered before its creation: %v", err)
	}
	if _, err := Decode(hexBytes(t, "0101"+"026b73"+"0000"+"03"+"00"+"00")); err == nil || !strings.Contains(err.Error(), "unknown flags 0x3") {
		t.Errorf("Decode of a dropped and altered keyspace: %v", err)
	}
}
