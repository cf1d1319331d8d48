package schema

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSpeculativeRetryOption(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  SpeculativeRetry
		canon string
	}{
		{"'99p'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 99}, "99p"},
		{"'99PERCENTILE'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 99}, "99p"},
		{"'99percentile'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 99}, "99p"},
		{"'95P'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 95}, "95p"},
		{"'99.9p'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 99.9}, "99.9p"},
		{"'0.5PERCENTILE'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 0.5}, "0.5p"},
		{"'.5p'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 0.5}, "0.5p"},
		{"'50.p'", SpeculativeRetry{Kind: SpeculatePercentile, Percentile: 50}, "50p"},
		{"'50ms'", SpeculativeRetry{Kind: SpeculateFixed, Delay: 50 * time.Millisecond}, "50ms"},
		{"'50MS'", SpeculativeRetry{Kind: SpeculateFixed, Delay: 50 * time.Millisecond}, "50ms"},
		{"'0ms'", SpeculativeRetry{Kind: SpeculateFixed}, "0ms"},
		{"'2147483647ms'", SpeculativeRetry{Kind: SpeculateFixed, Delay: MaxSpeculativeDelay}, "2147483647ms"},
		{"'ALWAYS'", SpeculativeRetry{Kind: SpeculateAlways}, "ALWAYS"},
		{"'always'", SpeculativeRetry{Kind: SpeculateAlways}, "ALWAYS"},
		{"'None'", SpeculativeRetry{Kind: SpeculateNone}, "NONE"},
		{"'NEVER'", SpeculativeRetry{Kind: SpeculateNone}, "NONE"},
		{"'MIN(99p,50ms)'", SpeculativeRetry{Kind: SpeculateMin, Percentile: 99, Delay: 50 * time.Millisecond}, "MIN(99p,50ms)"},
		{"'max(20MS, 95.5PERCENTILE)'", SpeculativeRetry{Kind: SpeculateMax, Percentile: 95.5, Delay: 20 * time.Millisecond}, "MAX(95.5p,20ms)"},
	} {
		s, err := apply(mustBuild(t, ksDDL), "CREATE TABLE ks.t (k int PRIMARY KEY) WITH speculative_retry = "+tt.value, 100)
		if err != nil {
			t.Errorf("speculative_retry = %s: %v", tt.value, err)
			continue
		}
		tbl := table(t, s, "t")
		if got := tbl.SpeculativeRetry(); got != tt.want || got.String() != tt.canon {
			t.Errorf("speculative_retry = %s: %+v (%q), want %+v (%q)", tt.value, got, got, tt.want, tt.canon)
		}
		// DESCRIBE prints the canonical form, which recreates the same option.
		out, err := describe(t, s, "DESCRIBE TABLE ks.t", "")
		if err != nil || !strings.Contains(out, "AND speculative_retry = '"+tt.canon+"';") {
			t.Errorf("speculative_retry = %s: DESCRIBE = %v\n%s\nwant speculative_retry = '%s'", tt.value, err, out, tt.canon)
			continue
		}
		if got := table(t, mustBuild(t, ksDDL+out), "t").SpeculativeRetry(); got != tt.want {
			t.Errorf("speculative_retry = %s: DESCRIBE's statement recreated %+v", tt.value, got)
		}
		// Encode and decode keep it.
		back, err := Decode(s.Encode())
		if err != nil {
			t.Fatalf("speculative_retry = %s: decoding the schema: %v", tt.value, err)
		}
		if got := table(t, back, "t").SpeculativeRetry(); got != tt.want {
			t.Errorf("speculative_retry = %s: decoded as %+v", tt.value, got)
		}
	}
}

func TestSpeculativeRetryDefaultAndAlter(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.d (k int PRIMARY KEY, v int);\n")
	explicit := mustBuild(t, ksDDL+"CREATE TABLE ks.d (k int PRIMARY KEY, v int) WITH speculative_retry = '99.0PERCENTILE';\n")
	for _, s := range []*Schema{s, explicit} {
		if got := table(t, s, "d").SpeculativeRetry(); got != DefaultSpeculativeRetry() || got.String() != "99p" {
			t.Errorf("SpeculativeRetry() = %v, want the default 99p", got)
		}
	}
	// An explicit default encodes as the default, and as before the option existed: the
	// schema's digest does not depend on how the default was reached.
	if !bytes.Equal(s.Encode(), explicit.Encode()) {
		t.Errorf("explicit default encodes as %x, the default as %x", explicit.Encode(), s.Encode())
	}
	s2, err := apply(s, "ALTER TABLE ks.d WITH speculative_retry = '20ms'", 200)
	if err != nil {
		t.Fatal(err)
	}
	if got := table(t, s2, "d").SpeculativeRetry(); got.String() != "20ms" {
		t.Errorf("ALTER speculative_retry = '20ms' left %v", got)
	}
	if s.Digest() == s2.Digest() {
		t.Error("ALTER of speculative_retry left the schema digest unchanged")
	}
	// ALTER without the option keeps it; with another option too.
	s3, err := apply(s2, "ALTER TABLE ks.d WITH gc_grace_seconds = 5", 300)
	if err != nil {
		t.Fatal(err)
	}
	if got := table(t, s3, "d").SpeculativeRetry(); got.String() != "20ms" {
		t.Errorf("ALTER without speculative_retry changed it to %v, want 20ms kept", got)
	}
	// ALTER back to the default encodes as the default again.
	s4, err := apply(s3, "ALTER TABLE ks.d WITH speculative_retry = '99p' AND gc_grace_seconds = 864000", 400)
	if err != nil {
		t.Fatal(err)
	}
	if d := table(t, s4, "d"); d.specRetrySet || appendTable(nil, d)[len(appendTable(nil, d))-1] != 0 {
		t.Errorf("a table altered back to the default encodes as %x, want no speculative_retry (the write limit 0 last)", appendTable(nil, d))
	}
	// Merging keeps the newer table whole, its option with it.
	m := s.Merge(s3)
	if got := table(t, m, "d").SpeculativeRetry(); got.String() != "20ms" {
		t.Errorf("merging the altered table in gave speculative_retry %v, want 20ms", got)
	}
}

func TestSpeculativeRetryErrors(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v int);\n")
	for _, tt := range []struct{ value, want string }{
		{"99", "speculative_retry = 99 is not a string; want a percentile such as '99p'"},
		{"ALWAYS", "expected"}, // a bare word is not a term: a parse error
		{"{'a': 1}", "speculative_retry = {'a': 1} is not a string"},
		{"?", "bind markers cannot be used"},
		{"''", "speculative_retry = '': the value is empty"},
		{"'0p'", "speculative_retry = '0p': the percentile must be above 0 and below 100"},
		{"'100p'", "speculative_retry = '100p': the percentile must be above 0 and below 100"},
		{"'100.0PERCENTILE'", "the percentile must be above 0 and below 100"},
		{"'-5p'", "speculative_retry = '-5p': not a number followed by P, PERCENTILE or MS"},
		{"'p'", "not a number followed by P, PERCENTILE or MS"},
		{"'.p'", "not a number followed by P, PERCENTILE or MS"},
		{"'1.2.3p'", "not a number followed by P, PERCENTILE or MS"},
		{"'12.5ms'", "speculative_retry = '12.5ms': the delay must be a whole number of milliseconds"},
		{"'2147483648ms'", "the delay must be at most 2147483647 milliseconds"},
		{"'99999999999999999999ms'", "the delay must be at most 2147483647 milliseconds"},
		{"'50s'", "speculative_retry = '50s': unknown unit \"s\""},
		{"'50'", "unknown unit \"\""},
		{"'99pp'", "unknown unit \"pp\""},
		{"' 99p'", "not a number followed by P, PERCENTILE or MS"},
		{"'99p '", "unknown unit \"p \""},
		{"'MIN(99p,95p)'", "speculative_retry = 'MIN(99p,95p)': MIN(...) and MAX(...) combine a percentile and a fixed delay, such as 'MIN(99p,50ms)'"},
		{"'MAX(99p)'", "MIN(...) and MAX(...) combine a percentile and a fixed delay"},
		{"'MIN(ALWAYS,50ms)'", "MIN(...) and MAX(...) combine a percentile and a fixed delay"},
		{"'MIN(99p,5s)'", "MIN(...) and MAX(...) combine a percentile and a fixed delay, such as 'MIN(99p,50ms)': unknown unit \"s\""},
		{"'MIN(99p,50ms'", "MIN(...) and MAX(...) combine a percentile and a fixed delay"},
		{"'sometimes'", "not a number followed by P, PERCENTILE or MS"},
	} {
		_, err := apply(s, "ALTER TABLE ks.t WITH speculative_retry = "+tt.value, 100)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("speculative_retry = %s: error %v, want one containing %q", tt.value, err, tt.want)
		}
		if _, err := apply(s, "CREATE TABLE ks.n (k int PRIMARY KEY) WITH speculative_retry = "+tt.value, 100); err == nil {
			t.Errorf("CREATE TABLE with speculative_retry = %s succeeded", tt.value)
		}
	}
	if _, err := apply(s, "ALTER TABLE ks.t WITH speculative_retry = '1ms' AND speculative_retry = '2ms'", 100); err == nil || !strings.Contains(err.Error(), "option speculative_retry is given twice") {
		t.Errorf("speculative_retry given twice: error %v", err)
	}
}

func TestSpeculativeRetryDecodeRefusesNonCanonical(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH speculative_retry = '40ms';\n")
	b := s.Encode()
	if b[len(b)-2] != byte(SpeculateFixed) || b[len(b)-1] != 40 {
		t.Fatalf("the encoding does not end in the fixed delay: %x", b)
	}
	for _, tt := range []struct {
		name string
		tail []byte
	}{
		{"an unknown kind", []byte{9}},
		{"a truncated percentile", []byte{byte(SpeculatePercentile), 0x40}},
		{"the default written out", []byte{byte(SpeculatePercentile), 0x40, 0x58, 0xc0, 0, 0, 0, 0, 0}},
		{"a percentile of 100", []byte{byte(SpeculatePercentile), 0x40, 0x59, 0, 0, 0, 0, 0, 0}},
		{"a delay too long", []byte{byte(SpeculateFixed), 0x80, 0x80, 0x80, 0x80, 0x08}},
	} {
		bad := append(bytes.Clone(b[:len(b)-2]), tt.tail...)
		if _, err := Decode(bad); err == nil {
			t.Errorf("%s (%x) decoded", tt.name, tt.tail)
		}
	}
	good := append(bytes.Clone(b[:len(b)-2]), byte(SpeculateNone))
	back, err := Decode(good)
	if err != nil || table(t, back, "t").SpeculativeRetry().Kind != SpeculateNone {
		t.Errorf("NONE written in place of 40ms: %v", err)
	}
}
