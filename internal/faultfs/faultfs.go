package faultfs

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FS is a vfs.FS that fails writes with an injected error and reports injected disk usage. The
// zero value is not usable: use New. It is safe for concurrent use.
type FS struct {
	vfs.FS

	mu    sync.Mutex
	err   error          // returned by writes and syncs while set
	usage *vfs.DiskUsage // reported by GetDiskUsage while set
	hits  int            // writes and syncs failed
}

// New wraps inner.
func New(inner vfs.FS) *FS { return &FS{FS: inner} }

// FailWrites makes every later write, sync, preallocation and file creation fail with err, as a
// full (syscall.ENOSPC) or broken (syscall.EIO) disk does; nil lets them through again.
func (fs *FS) FailWrites(err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.err = err
}

// SetDiskUsage makes GetDiskUsage report u; nil reports the inner filesystem's usage again.
func (fs *FS) SetDiskUsage(u *vfs.DiskUsage) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if u != nil {
		c := *u
		u = &c
	}
	fs.usage = u
}

// Failed returns how many operations failed with the injected error.
func (fs *FS) Failed() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hits
}

// fault returns the injected error, counting it.
func (fs *FS) fault() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.err != nil {
		fs.hits++
	}
	return fs.err
}

// GetDiskUsage implements vfs.FS.
func (fs *FS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	fs.mu.Lock()
	u := fs.usage
	fs.mu.Unlock()
	if u != nil {
		return *u, nil
	}
	return fs.FS.GetDiskUsage(path)
}

// Create implements vfs.FS.
func (fs *FS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.fault(); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name, category)
	return fs.wrap(f, err)
}

// OpenReadWrite implements vfs.FS.
func (fs *FS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(f, err)
}

// ReuseForWrite implements vfs.FS.
func (fs *FS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.fault(); err != nil {
		return nil, err
	}
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(f, err)
}

// OpenDir implements vfs.FS: syncing a directory fails too.
func (fs *FS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(f, err)
}

// Unwrap implements vfs.FS.
func (fs *FS) Unwrap() vfs.FS { return fs.FS }

func (fs *FS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: fs}, nil
}

// file fails its writes and syncs with its FS's injected error.
type file struct {
	vfs.File
	fs *FS
}

func (f *file) Write(p []byte) (int, error) {
	if err := f.fs.fault(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *file) Preallocate(offset, length int64) error {
	if err := f.fs.fault(); err != nil {
		return err
	}
	return f.File.Preallocate(offset, length)
}

func (f *file) Sync() error {
	if err := f.fs.fault(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *file) SyncData() error {
	if err := f.fs.fault(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *file) SyncTo(length int64) (bool, error) {
	if err := f.fs.fault(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}
