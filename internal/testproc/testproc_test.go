package testproc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseMemberStates(t *testing.T) {
	desc := "Cluster: kvnode\nPartitioner: Murmur3Partitioner\nNodes: 2\n\n" +
		"id (* = this node)                      rpc address            gossip address         up    tokens  schema\n" +
		"0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1 *  127.0.0.1:4001         127.0.0.1:5001         UP       256  abc\n" +
		"9f1d7d0a-0b8e-4a53-8a57-3e0b7b5a2c11    127.0.0.1:4002         127.0.0.1:5002         DOWN     256  \n"
	got := ParseMemberStates(desc)
	want := map[string]string{"0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1": "UP", "9f1d7d0a-0b8e-4a53-8a57-3e0b7b5a2c11": "DOWN"}
	if !EqualStates(got, want) {
		t.Errorf("ParseMemberStates = %v, want %v", got, want)
	}
	if EqualStates(got, map[string]string{"0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1": "UP"}) {
		t.Errorf("EqualStates of maps of different sizes is true")
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
