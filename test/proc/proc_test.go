package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMemberStates(t *testing.T) {
	metrics := `# HELP kvnode_cluster_live_members Ring members up.
# TYPE kvnode_cluster_live_members gauge
kvnode_cluster_live_members 1
# HELP kvnode_cluster_member_up One series per ring member.
# TYPE kvnode_cluster_member_up gauge
kvnode_cluster_member_up{member="0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1"} 1
kvnode_cluster_member_up{member="9f1d7d0a-0b8e-4a53-8a57-3e0b7b5a2c11"} 0
`
	got, err := ParseMemberStates(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1": "UP", "9f1d7d0a-0b8e-4a53-8a57-3e0b7b5a2c11": "DOWN"}
	if !EqualStates(got, want) {
		t.Errorf("ParseMemberStates = %v, want %v", got, want)
	}
	if EqualStates(got, map[string]string{"0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1": "UP"}) {
		t.Errorf("EqualStates of maps of different sizes is true")
	}
}

func TestParseMemberStatesRejectsWhatIsNotAMemberTable(t *testing.T) {
	for _, tc := range []struct{ name, metrics, wantErr string }{
		{"no family", "kvnode_cluster_live_members 3\n", "no kvnode_cluster_member_up"},
		{"not the exposition format", "kvnode_cluster_member_up{member=\"a\" 1\n", "do not parse"},
		{"no member label", "kvnode_cluster_member_up{peer=\"a\"} 1\n", "no member label"},
		{"a value neither 0 nor 1", "kvnode_cluster_member_up{member=\"a\"} 0.5\n", "want 0 or 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMemberStates(strings.NewReader("# TYPE kvnode_cluster_member_up gauge\n" + tc.metrics))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseMemberStates = %v, %v; want an error containing %q", got, err, tc.wantErr)
			}
		})
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Tail(path, 2); got != "b\nc" {
		t.Errorf("Tail(2) = %q, want %q", got, "b\nc")
	}
	if got := Tail(filepath.Join(t.TempDir(), "missing"), 2); got == "" {
		t.Errorf("Tail of a missing file is empty, want a message saying it cannot be read")
	}
}

func TestStartNeedsBinaryAndDir(t *testing.T) {
	if _, err := Start(Options{Dir: t.TempDir()}); err == nil {
		t.Errorf("Start without a binary succeeded, want an error")
	}
}
