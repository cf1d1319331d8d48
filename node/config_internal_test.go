package node

import "testing"

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7946": true, "[::1]:0": true, "localhost:1": true,
		"0.0.0.0:7946": false, "10.0.0.1:7946": false, "node1.example:7946": false, "garbage": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
