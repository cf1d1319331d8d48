package schema

import (
	"strings"
	"testing"
)

func TestGCGraceSeconds(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.d (k int PRIMARY KEY, v int);\n"+
		"CREATE TABLE ks.z (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 0;\n"+
		"CREATE TABLE ks.s (k int PRIMARY KEY, v int) WITH gc_grace_seconds = '3600' AND per_partition_rate_limit = {'max_reads_per_second': 5};\n"+
		"CREATE TABLE ks.e (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 864000;\n")
	for name, want := range map[string]uint32{"d": DefaultGCGraceSeconds, "z": 0, "s": 3600, "e": DefaultGCGraceSeconds} {
		if got := table(t, s, name).GCGraceSeconds(); got != want {
			t.Errorf("table ks.%s: GCGraceSeconds() = %d, want %d", name, got, want)
		}
	}
	// An explicit default encodes as the default: the schema's digest does not depend on how it was reached.
	if a, b := appendTable(nil, table(t, s, "d")), appendTable(nil, table(t, s, "e")); string(a[len(a)-4:]) != string(b[len(b)-4:]) {
		t.Errorf("explicit default encodes as %x, the default as %x", b, a)
	}
	// Encode and decode keep the option.
	back, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d", "z", "s"} {
		if got, want := table(t, back, name).GCGraceSeconds(), table(t, s, name).GCGraceSeconds(); got != want {
			t.Errorf("decoded ks.%s: GCGraceSeconds() = %d, want %d", name, got, want)
		}
	}
	// ALTER without the option keeps it; with it, replaces it.
	s2, err := apply(s, "ALTER TABLE ks.z WITH per_partition_rate_limit = {}", 200)
	if err != nil {
		t.Fatal(err)
	}
	if got := table(t, s2, "z").GCGraceSeconds(); got != 0 {
		t.Errorf("ALTER without gc_grace_seconds changed it to %d, want 0 kept", got)
	}
	s3, err := apply(s2, "ALTER TABLE ks.z WITH gc_grace_seconds = 7", 300)
	if err != nil {
		t.Fatal(err)
	}
	if got := table(t, s3, "z").GCGraceSeconds(); got != 7 {
		t.Errorf("ALTER gc_grace_seconds = 7 left %d", got)
	}
	// DESCRIBE prints it, and what it prints recreates it.
	out, err := describe(t, s3, "DESCRIBE TABLE ks.z", "")
	if err != nil || !strings.Contains(out, "WITH gc_grace_seconds = 7\n") {
		t.Fatalf("DESCRIBE TABLE ks.z = %v\n%s\nwant WITH gc_grace_seconds = 7", err, out)
	}
	again := mustBuild(t, ksDDL+out)
	if got := table(t, again, "z").GCGraceSeconds(); got != 7 {
		t.Errorf("DESCRIBE's statement recreated gc_grace_seconds = %d, want 7", got)
	}
}

func TestGCGraceSecondsErrors(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v int);\n")
	for _, tt := range []struct{ value, want string }{
		{"-5", "gc_grace_seconds = -5 is negative"},
		{"1.5", "gc_grace_seconds = 1.5 is not an integer"},
		{"'10abc'", "gc_grace_seconds = '10abc' has the characters \"abc\" after the number 10; write only digits"},
		{"2147483648", "gc_grace_seconds = 2147483648 is too large; the maximum is 2147483647"},
		{"{'a': 1}", "gc_grace_seconds = {'a': 1} is not a number"},
		{"true", "gc_grace_seconds = true is not a number"},
		{"'-0'", "gc_grace_seconds = '-0' is zero"},
	} {
		_, err := apply(s, "ALTER TABLE ks.t WITH gc_grace_seconds = "+tt.value, 100)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "table ks.t: ") {
			t.Errorf("gc_grace_seconds = %s: error %v, want one containing %q", tt.value, err, tt.want)
		}
	}
	if _, err := apply(s, "ALTER TABLE ks.t WITH gc_grace_seconds = 1 AND gc_grace_seconds = 2", 100); err == nil || !strings.Contains(err.Error(), "option gc_grace_seconds is given twice") {
		t.Errorf("gc_grace_seconds given twice: error %v", err)
	}
}

func TestGCGraceDecodeRefusesNonCanonical(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH gc_grace_seconds = 5;\n")
	b := s.Encode()
	// The last byte is the gc_grace_seconds varint (5): make it the default's encoding's first
	// byte count wrong by replacing it with an unknown flag instead.
	i := strings.LastIndex(string(b), "\x05")
	bad := append([]byte{}, b...)
	bad[i] = 0x7f // 127: fine
	if _, err := Decode(bad); err != nil {
		t.Fatalf("gc_grace_seconds 127: %v", err)
	}
	noFlag := append([]byte{}, b...)
	for j := range noFlag {
		if noFlag[j] == gcGraceBit {
			noFlag[j] = 0x10 // an unknown flag
			break
		}
	}
	if _, err := Decode(noFlag); err == nil {
		t.Errorf("a table with an unknown flag decoded")
	}
}
