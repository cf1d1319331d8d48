package coordinator

import (
	"testing"
	"time"
)

// TestAppendDurationWritesWhatStringWrites: the rate-limit message's retry hint reads as
// time.Duration's String would write it, for every whole millisecond up to two minutes.
func TestAppendDurationWritesWhatStringWrites(t *testing.T) {
	for ms := int64(1); ms <= 120_000; ms++ {
		d := time.Duration(ms) * time.Millisecond
		if got, want := string(appendDuration(nil, d)), d.String(); got != want {
			t.Fatalf("appendDuration(%d ms) = %q, want %q", ms, got, want)
		}
	}
}
