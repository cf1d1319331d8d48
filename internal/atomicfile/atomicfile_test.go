package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node_id")
	for _, content := range []string{"first\n", "second, longer content\n", ""} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatalf("Write(%q): %v", content, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("after Write(%q) the file holds %q (err %v)", content, got, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after three writes, want only the file itself", len(entries))
	}
}

func TestWriteIntoMissingDirectoryFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "file")
	if err := Write(path, []byte("x")); err == nil {
		t.Fatalf("Write(%s) into a directory that does not exist succeeded", path)
	}
}
