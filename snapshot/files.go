package snapshot

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// fileID identifies a file on its filesystem: hard links to it share it.
type fileID struct{ dev, ino uint64 }

// idOf returns the identity of the file fi describes; ok is false where the platform does not
// say (each file then counts as unshared).
func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}

// walkFiles calls fn with the identity and size of every regular file under dir. A file whose
// identity is unknown gets one of its own (its path's).
func walkFiles(dir string, fn func(id fileID, size int64)) error {
	n := uint64(0)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		id, ok := idOf(fi)
		if !ok {
			n++
			id = fileID{dev: ^uint64(0), ino: n}
		}
		fn(id, fi.Size())
		return nil
	})
}

// inodes returns the identities of the files directly in dir (the live store's).
func inodes(dir string) (map[fileID]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ids := make(map[fileID]bool, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed by a compaction meanwhile
		}
		if id, ok := idOf(fi); ok {
			ids[id] = true
		}
	}
	return ids, nil
}
