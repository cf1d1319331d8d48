package faultfs

import (
	"errors"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestFaultsComeAndGo: injected errors fail creations, writes and syncs until cleared, and the
// injected disk usage is reported until cleared.
func TestFaultsComeAndGo(t *testing.T) {
	fs := New(vfs.NewMem())
	f, err := fs.Create("a", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	fs.FailWrites(syscall.EIO)
	if _, err := f.Write([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Errorf("Write = %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("Sync = %v, want EIO", err)
	}
	if _, err := fs.Create("b", vfs.WriteCategoryUnspecified); !errors.Is(err, syscall.EIO) {
		t.Errorf("Create = %v, want EIO", err)
	}
	if got := fs.Failed(); got != 3 {
		t.Errorf("Failed() = %d, want 3", got)
	}
	fs.FailWrites(nil)
	if _, err := f.Write([]byte("x")); err != nil {
		t.Errorf("Write after the fault cleared: %v", err)
	}
	want := vfs.DiskUsage{AvailBytes: 1, TotalBytes: 2, UsedBytes: 1}
	fs.SetDiskUsage(&want)
	if got, err := fs.GetDiskUsage("a"); err != nil || got != want {
		t.Errorf("GetDiskUsage = %+v, %v; want %+v", got, err, want)
	}
	fs.SetDiskUsage(nil)
	if _, err := fs.GetDiskUsage("a"); !errors.Is(err, vfs.ErrUnsupported) {
		t.Errorf("GetDiskUsage after clearing = %v, want the in-memory filesystem's ErrUnsupported", err)
	}
}
