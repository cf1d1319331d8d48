package hints

import (
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"
)

// TestStoreDropsHintsWhileTheDiskIsFull: while Config.Space refuses, hints are dropped and
// counted with reason disk; once it accepts again they are stored.
func TestStoreDropsHintsWhileTheDiskIsFull(t *testing.T) {
	full := errors.New("the disk of /d has 1 MiB free")
	var refuse error = full
	s, err := Open(Config{Dir: t.TempDir(), Members: newFakeMembers("b"), Space: func() error { return refuse }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sch := testSchema(t)
	s.StoreHint("b", mutation(t, sch, "t", 1))
	if got := s.dropped[dropDisk].Load(); got != 1 {
		t.Errorf("hints dropped for the disk = %v, want 1", got)
	}
	refuse = nil
	s.StoreHint("b", mutation(t, sch, "t", 2))
	if got := s.stored.Load(); got != 1 {
		t.Errorf("hints stored once the disk had space = %d, want 1", got)
	}
}

// TestFatalfTellsThePolicyAndNeverReturns: pebble's Fatalf on the hint store reports the error,
// with its cause, to Config.OnFatal and blocks for good instead of panicking.
func TestFatalfTellsThePolicyAndNeverReturns(t *testing.T) {
	got := make(chan error, 1)
	l := pebbleLogger{l: slog.New(slog.DiscardHandler), fatal: func(err error) { got <- err }}
	returned := make(chan struct{})
	go func() {
		l.Fatalf("pebble: fatal commit error: %v", fmt.Errorf("sync: %w", syscall.EIO))
		close(returned)
	}()
	select {
	case err := <-got:
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("OnFatal got %v, want it to wrap EIO", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OnFatal not called within 30s")
	}
	select {
	case <-returned:
		t.Error("Fatalf returned")
	default:
	}
}
