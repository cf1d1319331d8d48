// Package faultfs is a pebble filesystem for tests that injects storage faults: it wraps a
// vfs.FS, fails writes and syncs with a chosen error (ENOSPC, EIO) once told to, and reports
// a chosen free space, so tests reach a store's failure and low-disk paths without a real
// broken or full disk.
package faultfs
