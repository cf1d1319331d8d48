package cluster

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	m := nodeMeta{ID: "0f8e-node", RPCAddr: "10.0.0.7:7000", SchemaDigest: "abc123", NumTokens: 16,
		NativeAddr: "10.0.0.7:9042", DataCenter: "dc-east", Rack: "r2", State: StateLeaving}
	b, err := m.encode()
	if err != nil {
		t.Fatalf("encode(%+v): %v", m, err)
	}
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("decodeMeta(encode(%+v)) = %+v, %v", m, got, err)
	}
	for i := range b { // every truncation is an error, never a panic
		if _, err := decodeMeta(b[:i]); err == nil {
			t.Errorf("decodeMeta of the first %d of %d bytes succeeded, want an error", i, len(b))
		}
	}
	if _, err := decodeMeta(append(b, 0)); err == nil {
		t.Errorf("decodeMeta with a trailing byte succeeded, want an error")
	}
}

func TestMetaSizeLimit(t *testing.T) {
	tests := []struct {
		name    string
		digest  int
		wantErr bool
	}{
		{"well under the limit", 64, false},
		// version 1 + num_tokens 1 + id (1+4) + rpc (1+0) + digest length 2 + native, dc, rack
		// (1+0 each) + state 1 = 14 bytes besides the digest
		{"exactly at the limit", MaxMetaSize - 14, false},
		{"one byte over", MaxMetaSize - 13, true},
	}
	for _, tt := range tests {
		m := nodeMeta{ID: "node", SchemaDigest: strings.Repeat("d", tt.digest), NumTokens: 16}
		b, err := m.encode()
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: encode with a %d-byte digest: len %d, error %v; want error %v", tt.name, tt.digest, len(b), err, tt.wantErr)
		}
		if err == nil && len(b) > MaxMetaSize {
			t.Errorf("%s: encode returned %d bytes, over the %d limit", tt.name, len(b), MaxMetaSize)
		}
	}
}

// TestMetaReadsVersion1 checks that a node still reads the metadata of a node running the
// previous release (no native address, data center or rack), so clusters upgrade one node at a time.
func TestMetaReadsVersion1(t *testing.T) {
	v1 := []byte{1, 16}
	for _, s := range []string{"node-a", "10.0.0.7:7000", "abc123"} {
		v1 = append(v1, byte(len(s)))
		v1 = append(v1, s...)
	}
	got, err := decodeMeta(v1)
	want := nodeMeta{ID: "node-a", RPCAddr: "10.0.0.7:7000", SchemaDigest: "abc123", NumTokens: 16}
	if err != nil || got != want {
		t.Fatalf("decodeMeta(version 1 metadata) = %+v, %v; want %+v", got, err, want)
	}
	if _, err := decodeMeta(append([]byte{5}, v1[1:]...)); err == nil || !strings.Contains(err.Error(), "version 5") {
		t.Errorf("decodeMeta(version 5 metadata) error = %v, want one naming version 5", err)
	}
}

// TestMetaVersions checks that version 2 metadata (no state) reads as a normal node, that
// version 3 carries the state, and that a state byte out of range is refused, not trusted.
func TestMetaVersions(t *testing.T) {
	v2 := []byte{2, 16}
	for _, s := range []string{"node-a", "10.0.0.7:7000", "abc123", "10.0.0.7:9042", "dc1", "r1"} {
		v2 = append(v2, byte(len(s)))
		v2 = append(v2, s...)
	}
	want := nodeMeta{ID: "node-a", RPCAddr: "10.0.0.7:7000", SchemaDigest: "abc123", NumTokens: 16,
		NativeAddr: "10.0.0.7:9042", DataCenter: "dc1", Rack: "r1"}
	if got, err := decodeMeta(v2); err != nil || got != want || got.State != StateNormal {
		t.Fatalf("decodeMeta(version 2) = %+v, %v; want %+v (normal)", got, err, want)
	}
	if _, err := decodeMeta(append(slices.Clone(v2), byte(StateJoining))); err == nil {
		t.Errorf("decodeMeta(version 2 with a state byte) succeeded, want a trailing-bytes error")
	}
	v3 := append([]byte{3}, v2[1:]...)
	for st := StateNormal; st <= StateLeft; st++ {
		got, err := decodeMeta(append(slices.Clone(v3), byte(st)))
		if err != nil || got.State != st {
			t.Errorf("decodeMeta(version 3, state %v) = %+v, %v", st, got, err)
		}
	}
	if _, err := decodeMeta(append(slices.Clone(v3), 9)); err == nil || !strings.Contains(err.Error(), "state 9") {
		t.Errorf("decodeMeta(version 3, state 9) error = %v, want one naming state 9", err)
	}
	if _, err := (nodeMeta{ID: "n", State: 9}).encode(); err == nil {
		t.Errorf("encode with state 9 succeeded, want an error")
	}
}

// TestMetaUnrepairedFlag checks that a node without flags still writes version 3 (which older
// releases read), that an unrepaired one writes version 4 with the flag, and that unknown flags
// and a missing flags byte are refused.
func TestMetaUnrepairedFlag(t *testing.T) {
	m := nodeMeta{ID: "node-a", RPCAddr: "10.0.0.7:7000", NumTokens: 16, State: StateNormal}
	b, err := m.encode()
	if err != nil || b[0] != metaVersion3 {
		t.Fatalf("encode without flags = version %d, %v; want version 3", b[0], err)
	}
	m.Unrepaired = true
	if b, err = m.encode(); err != nil || b[0] != metaVersion || b[len(b)-1] != metaUnrepaired {
		t.Fatalf("encode unrepaired = % x, %v; want version 4 ending in the flag", b, err)
	}
	if got, err := decodeMeta(b); err != nil || got != m {
		t.Errorf("decodeMeta(encode(unrepaired)) = %+v, %v; want %+v", got, err, m)
	}
	for i := range b {
		if _, err := decodeMeta(b[:i]); err == nil {
			t.Errorf("decodeMeta of the first %d of %d bytes succeeded, want an error", i, len(b))
		}
	}
	bad := slices.Clone(b)
	bad[len(bad)-1] |= 0x80
	if _, err := decodeMeta(bad); err == nil || !strings.Contains(err.Error(), "flags 0x80") {
		t.Errorf("decodeMeta with flag 0x80 = %v, want an error naming it", err)
	}
}

func TestMessageRoundTripAndGarbage(t *testing.T) {
	b := encodeMsg(kindSchemaSync, "node-1", []byte("snapshot"))
	kind, from, payload, err := decodeMsg(b)
	if err != nil || kind != kindSchemaSync || from != "node-1" || string(payload) != "snapshot" {
		t.Fatalf("decodeMsg(encodeMsg(sync, node-1, snapshot)) = %d, %q, %q, %v", kind, from, payload, err)
	}
	for _, bad := range [][]byte{nil, {1}, {2, 1, 0}, {1, 1, 50, 'a'}, {1, 1, 0}, {1, 1, 2, ' ', ' '}} {
		if _, _, _, err := decodeMsg(bad); err == nil {
			t.Errorf("decodeMsg(%x) succeeded, want an error", bad)
		}
	}
}

func TestMemberlistLogLevelsMapToSlog(t *testing.T) {
	var buf bytes.Buffer
	l := newMemberlistLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	tests := []struct{ line, level, msg string }{
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:1", "level=DEBUG", `msg="Stream connection from=127.0.0.1:1"`},
		{"[WARN] memberlist: Was able to connect", "level=WARN", `msg="Was able to connect"`},
		{"[ERR] memberlist: Conflicting address", "level=ERROR", `msg="Conflicting address"`},
		{"[INFO] memberlist: Marking n as failed", "level=INFO", `msg="Marking n as failed"`},
		{"no level at all", "level=INFO", `msg="no level at all"`},
		// Part of every clean shutdown (memberlist's goroutines race its own socket close): not
		// an error for an operator.
		{"[ERR] memberlist: Failed to send gossip to 127.0.0.1:7948: write udp 127.0.0.1:7946->127.0.0.1:7948: use of closed network connection",
			"level=DEBUG", `msg="Failed to send gossip to 127.0.0.1:7948: write udp 127.0.0.1:7946->127.0.0.1:7948: use of closed network connection"`},
	}
	for _, tt := range tests {
		buf.Reset()
		l.Print(tt.line)
		out := buf.String()
		if !strings.Contains(out, tt.level) || !strings.Contains(out, tt.msg) || !strings.Contains(out, "component=memberlist") {
			t.Errorf("memberlist log %q became %q; want %s, %s and component=memberlist", tt.line, out, tt.level, tt.msg)
		}
	}
}

func TestParseProfile(t *testing.T) {
	for _, p := range []Profile{ProfileLAN, ProfileWAN, ProfileLocal, ProfileTest} {
		got, err := ParseProfile(p.String())
		if err != nil || got != p {
			t.Errorf("ParseProfile(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := ParseProfile("metro"); err == nil {
		t.Errorf("ParseProfile(metro) succeeded, want an error")
	}
}
