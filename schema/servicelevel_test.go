package schema

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// mustApply applies one statement at version (ts, "n1") or fails the test.
func mustApply(t *testing.T, s *Schema, src string, ts int64) *Schema {
	t.Helper()
	next, err := apply(s, src, ts)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return next
}

// applyAll applies statements at versions 1, 2, ... after ts.
func applyAll(t *testing.T, s *Schema, ts int64, srcs ...string) *Schema {
	t.Helper()
	for i, src := range srcs {
		s = mustApply(t, s, src, ts+int64(i)+1)
	}
	return s
}

func chain(s *Schema, role string) string {
	var parts []string
	for _, e := range s.EffectiveLevels(role) {
		parts = append(parts, fmt.Sprintf("%s@%s/%d", e.Level.Name, e.Role, e.Distance))
	}
	return strings.Join(parts, " ")
}

func TestServiceLevelStatements(t *testing.T) {
	s := applyAll(t, New(), 0,
		"CREATE SERVICE LEVEL gold WITH max_reads_per_second = 100 AND max_writes_per_second = '50' AND workload_type = 'interactive'",
		"CREATE SERVICE LEVEL IF NOT EXISTS gold WITH max_reads_per_second = 1",
		"CREATE SERVICE_LEVEL org",
		"ALTER SERVICE LEVEL org WITH max_writes_per_second = 1000 AND mode = 'shadow'",
	)
	gold, ok := s.Level("gold")
	if !ok || gold.Limit != (RateLimit{MaxReadsPerSecond: 100, MaxWritesPerSecond: 50}) {
		t.Fatalf("gold = %+v, %v; want reads 100, writes 50 (IF NOT EXISTS keeps it)", gold, ok)
	}
	org, _ := s.Level("org")
	if org.Limit != (RateLimit{MaxWritesPerSecond: 1000, Mode: Shadow}) {
		t.Fatalf("org = %+v, want writes 1000 in shadow mode", org.Limit)
	}
	if s.HasBudgets() {
		t.Errorf("HasBudgets() = true with no level attached")
	}
	s = applyAll(t, s, 10,
		"ALTER SERVICE LEVEL gold WITH max_reads_per_second = null",
		"ATTACH SERVICE LEVEL gold TO alice",
		"ATTACH SERVICE LEVEL org TO ADDRESS '10.0.0.0/8'",
		"ATTACH SERVICE LEVEL gold TO ADDRESS '10.1.2.3'",
	)
	if gold, _ := s.Level("gold"); gold.Limit != (RateLimit{MaxWritesPerSecond: 50}) {
		t.Errorf("after max_reads_per_second = null gold is %+v, want writes 50 only", gold.Limit)
	}
	if !s.HasBudgets() || !s.HasAddressLevels() {
		t.Errorf("HasBudgets() = %v, HasAddressLevels() = %v after ATTACH, want true", s.HasBudgets(), s.HasAddressLevels())
	}
	var got []string
	for _, a := range s.AddressLevels(netip.MustParseAddr("::ffff:10.1.2.3")) {
		got = append(got, a.Level+"@"+a.Prefix.String())
	}
	if want := []string{"gold@10.1.2.3/32", "org@10.0.0.0/8"}; !slices.Equal(got, want) {
		t.Errorf("AddressLevels(10.1.2.3) = %v, want %v (most specific first)", got, want)
	}
	if got := s.AddressLevels(netip.MustParseAddr("192.168.0.1")); len(got) != 0 {
		t.Errorf("AddressLevels(192.168.0.1) = %v, want none", got)
	}
	// DROP detaches everywhere.
	s = mustApply(t, s, "DROP SERVICE LEVEL gold", 20)
	if _, ok := s.RoleAttachment("alice"); ok || len(s.Attachments()) != 1 {
		t.Errorf("after DROP SERVICE LEVEL gold: alice still attached %v, attachments %d, want only org's", ok, len(s.Attachments()))
	}
	if s2 := mustApply(t, s, "DROP SERVICE LEVEL IF EXISTS gold", 21); s2 != s {
		t.Errorf("DROP SERVICE LEVEL IF EXISTS of a dropped level changed the schema")
	}
	// The levels survive encoding, and a DROP and CREATE again.
	s = mustApply(t, s, "CREATE SERVICE LEVEL gold WITH max_reads_per_second = 5", 22)
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if d.Digest() != s.Digest() || len(d.Levels()) != 2 || len(d.Attachments()) != 1 {
		t.Errorf("decoded: digest %v (want %v), %d levels, %d attachments; want 2 and 1", d.Digest(), s.Digest(), len(d.Levels()), len(d.Attachments()))
	}
	if fs := s.LevelFormatFeatures(); len(fs) == 0 {
		t.Errorf("LevelFormatFeatures() is empty with levels")
	}
}

func TestServiceLevelErrors(t *testing.T) {
	s := applyAll(t, New(), 0, "CREATE SERVICE LEVEL gold", "CREATE SERVICE LEVEL silver")
	tests := []struct{ src, want string }{
		{"CREATE SERVICE LEVEL gold", "service level gold already exists"},
		{"CREATE SERVICE LEVEL x WITH max_reads_per_second = 0", "service level x: max_reads_per_second = 0 is zero; a limit is a positive integer (null or leaving it out means no limit)"},
		{"CREATE SERVICE LEVEL x WITH max_writes_per_second = -3", "service level x: max_writes_per_second = -3 is negative; a limit is a positive integer (null or leaving it out means no limit)"},
		{"CREATE SERVICE LEVEL x WITH max_writes_per_second = 2147483648", "service level x: max_writes_per_second = 2147483648 is too large; the maximum is 2147483647"},
		{"CREATE SERVICE LEVEL x WITH max_reads_per_second = 1.5", "service level x: max_reads_per_second = 1.5 is not an integer"},
		{"CREATE SERVICE LEVEL x WITH max_reads_per_second = '10abc'", `service level x: max_reads_per_second = '10abc' has the characters "abc" after the number 10; write only digits`},
		{"CREATE SERVICE LEVEL x WITH mode = 'soft'", "service level x: mode = 'soft' is not a mode; write 'enforce' (reject over the limit, the default) or 'shadow' (count and report, never reject)"},
		{"CREATE SERVICE LEVEL x WITH timeout = 500ms", "service level x: option timeout = 500ms is not supported yet: kvnode has no per-role request timeout (give USING TIMEOUT per statement)"},
		{"CREATE SERVICE LEVEL x WITH workload_type = 'batch'", "service level x: workload_type = 'batch' is not supported yet: node admission does not shed batch workloads first; every level is 'interactive'"},
		{"CREATE SERVICE LEVEL x WITH workload_type = 'olap'", "service level x: workload_type = 'olap' is not a workload type; write 'interactive'"},
		{"CREATE SERVICE LEVEL x WITH shares = 100", "service level x: option shares is not supported: it is ScyllaDB Enterprise's CPU scheduling, and kvnode's levels set rates (max_reads_per_second, max_writes_per_second)"},
		{"CREATE SERVICE LEVEL x WITH max_rps = 1", "service level x: unknown service level option max_rps (valid: max_reads_per_second, max_writes_per_second, mode, workload_type)"},
		{"CREATE SERVICE LEVEL x WITH mode = 'shadow' AND mode = 'shadow'", "service level x: option mode is given twice"},
		{"CREATE SERVICE LEVEL 'a-b'", `service level name "a-b" may contain only letters, digits and underscores`},
		{"ALTER SERVICE LEVEL nope WITH mode = 'shadow'", "unknown service level nope"},
		{"DROP SERVICE LEVEL nope", "unknown service level nope"},
		{"ATTACH SERVICE LEVEL nope TO alice", "unknown service level nope"},
		{"ATTACH SERVICE LEVEL gold TO ADDRESS '10.0.0.300'", "address '10.0.0.300' is not an IPv4 or IPv6 address nor a CIDR block such as '10.0.0.0/24'"},
		{"ATTACH SERVICE LEVEL gold TO ADDRESS '10.0.0.7/24'", "address '10.0.0.7/24' has bits set after its /24 prefix; write '10.0.0.0/24'"},
		{"ATTACH SERVICE LEVEL gold TO ADDRESS '10.0.0.0/33'", `address '10.0.0.0/33' is not a CIDR block such as '10.0.0.0/24' (netip.ParsePrefix("10.0.0.0/33"): prefix length out of range)`},
		{"DETACH SERVICE LEVEL FROM alice", "no service level is attached to alice"},
		{"DETACH SERVICE LEVEL FROM ADDRESS '10.0.0.1'", "no service level is attached to ADDRESS '10.0.0.1/32'"},
		{"REVOKE a FROM b", "b is not a member of a"},
		{"GRANT a TO a", "a is a member of a"},
	}
	for _, tt := range tests {
		_, err := apply(s, tt.src, 10)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.src, err, tt.want)
		}
	}
	if _, err := apply(s, "ALTER SERVICE LEVEL nope WITH mode = 'shadow'", 10); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("ALTER of an unknown level: %v is not ErrUnknownLevel", err)
	}
}

// TestRoleGraph checks GRANT and REVOKE of roles, their cycle checks, and the chain of levels
// a role's requests are held by.
func TestRoleGraph(t *testing.T) {
	s := applyAll(t, New(), 0,
		"CREATE SERVICE LEVEL client", "CREATE SERVICE LEVEL team", "CREATE SERVICE LEVEL org", "CREATE SERVICE LEVEL other",
		"GRANT team TO app", // app → team → org
		"GRANT zeta TO app", // app → zeta → org (org reached twice)
		"GRANT org TO team",
		"GRANT org TO zeta",
		"GRANT other TO zeta",
		"ATTACH SERVICE LEVEL client TO app",
		"ATTACH SERVICE LEVEL team TO team",
		"ATTACH SERVICE LEVEL org TO org",
		"ATTACH SERVICE LEVEL other TO other",
		"ATTACH SERVICE LEVEL team TO zeta", // team's level again, at zeta: listed once
	)
	if got, want := chain(s, "app"), "client@app/0 team@team/1 org@org/2 other@other/2"; got != want {
		t.Errorf("chain of app = %q, want %q", got, want)
	}
	if got, want := s.AllGrantedRoles("app"), []string{"team", "zeta", "org", "other"}; !slices.Equal(got, want) {
		t.Errorf("AllGrantedRoles(app) = %v, want %v", got, want)
	}
	for _, tt := range []struct{ src, want string }{
		{"GRANT app TO org", "app is a member of org"},
		{"GRANT team TO app", "app is a member of team"},
		{"GRANT org TO app", "app is a member of org"},
	} {
		if _, err := apply(s, tt.src, 100); err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.src, err, tt.want)
		}
	}
	s = mustApply(t, s, "REVOKE team FROM app", 100)
	if got, want := chain(s, "app"), "client@app/0 team@zeta/1 org@org/2 other@other/2"; got != want {
		t.Errorf("after REVOKE team FROM app the chain is %q, want %q", got, want)
	}
	// DROP ROLE forgets the role's attachment and grants.
	s = mustApply(t, s, "DROP ROLE zeta", 101)
	if got, want := chain(s, "app"), "client@app/0"; got != want {
		t.Errorf("after DROP ROLE zeta the chain of app is %q, want %q", got, want)
	}
	if s2 := mustApply(t, s, "DROP ROLE nobody", 102); s2 != s {
		t.Errorf("DROP ROLE of a role with no grant nor level changed the schema")
	}
}

// TestLevelsMergeAndAgreement checks that level state merges last writer wins like keyspaces,
// restricts to LevelsKey alone, and has its tombstones collected by Purge.
func TestLevelsMergeAndAgreement(t *testing.T) {
	base := applyAll(t, mustBuild(t, ksDDL), 0, "CREATE SERVICE LEVEL a", "ATTACH SERVICE LEVEL a TO r")
	x := mustApply(t, base, "ALTER SERVICE LEVEL a WITH max_reads_per_second = 10", 10)
	y := mustApply(t, base, "ALTER SERVICE LEVEL a WITH max_reads_per_second = 20", 11)
	for _, m := range []*Schema{x.Merge(y), y.Merge(x)} {
		if l, _ := m.Level("a"); l.Limit.MaxReadsPerSecond != 20 {
			t.Errorf("merge of concurrent ALTERs kept %d reads/s, want the later 20", l.Limit.MaxReadsPerSecond)
		}
	}
	if x.Merge(y).Digest() != y.Merge(x).Digest() {
		t.Errorf("Merge is not commutative")
	}
	r := x.Restrict(LevelsKey)
	if !r.HoldsOnly(LevelsKey) || len(r.Keyspaces()) != 0 || len(r.Levels()) != 1 {
		t.Errorf("Restrict(LevelsKey) holds %d keyspaces and %d levels; want 0 and 1", len(r.Keyspaces()), len(r.Levels()))
	}
	if x.Restrict("ks").HoldsOnly("ks") != true || x.Restrict("ks").Levels() != nil {
		t.Errorf("Restrict(ks) carries levels")
	}
	if x.HoldsOnly("ks") {
		t.Errorf("HoldsOnly(ks) = true for a schema with levels")
	}
	if v, ok := x.EntryVersion(LevelsKey, ""); !ok || v.Timestamp != 10 {
		t.Errorf("EntryVersion(LevelsKey) = %v, %v; want the last change at 10", v, ok)
	}
	// A drop wins over the older copy, and its tombstones go once purged.
	dropped := mustApply(t, x, "DROP SERVICE LEVEL a", 30)
	m := x.Merge(dropped)
	if _, ok := m.Level("a"); ok || len(m.Attachments()) != 0 {
		t.Fatalf("merge with a DROP kept the level")
	}
	if n := m.Tombstones(); n != 2 {
		t.Errorf("Tombstones() = %d after DROP of an attached level, want 2 (level and attachment)", n)
	}
	p := m.Purge(31)
	if p.Tombstones() != 0 {
		t.Errorf("Purge left %d tombstones", p.Tombstones())
	}
	if _, ok := p.Merge(x).Level("a"); ok {
		t.Errorf("a schema behind the GC horizon brought the dropped level back")
	}
	if _, err := Decode(p.Encode()); err != nil {
		t.Errorf("Decode of a purged schema with level state: %v", err)
	}
}

func TestDecodeLevelsRejects(t *testing.T) {
	s := applyAll(t, New(), 0, "CREATE SERVICE LEVEL a WITH max_reads_per_second = 3", "ATTACH SERVICE LEVEL a TO ADDRESS '10.0.0.0/8'", "GRANT x TO y")
	b := s.Encode()
	for i := len(New().Encode()) + 1; i < len(b); i++ { // shorter prefixes are schemas of their own
		if _, err := Decode(b[:i]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes succeeded", i, len(b))
		}
	}
	for i := range b {
		c := slices.Clone(b)
		c[i] ^= 0xff
		d, err := Decode(c)
		if err == nil && d.Digest() == s.Digest() {
			t.Fatalf("Decode with byte %d flipped gave the same schema", i)
		}
	}
}
