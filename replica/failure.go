package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

// Storage failures (docs/operations.md, "Storage failures"). A store whose storage failed (a
// write or sync pebble could not complete, a corrupt file, one of pebble's fatal errors) must not
// serve: pebble may hold its locks in the goroutine that failed, its memtable may lack a write
// the log lacks too, and a read may return what a corrupt block says. The store records the
// first failure, logs it once at ERROR, answers every later call with it, and calls
// Options.OnFailure, which runs the node's disk failure policy (Options.DiskFailurePolicy). It
// never calls pebble's Close afterwards.

// ErrStorageFailed is wrapped by the errors of a store whose storage failed (a *Failure).
var ErrStorageFailed = errors.New("replica: storage failed")

// The disk failure policies (Options.DiskFailurePolicy, Cassandra's disk_failure_policy).
const (
	// PolicyStop stops serving clients and peers and keeps the process (its metrics and logs)
	// up until it is stopped: peers see the node down, never removed.
	PolicyStop = "stop"
	// PolicyDie ends the process at once.
	PolicyDie = "die"
)

// FailureKind classifies a storage failure, for the metric and the log.
type FailureKind string

// The failure kinds.
const (
	// FailureDiskFull: a write found no space left (ENOSPC).
	FailureDiskFull FailureKind = "disk_full"
	// FailureIO: the disk failed a read, write or sync (EIO, a filesystem remounted read-only).
	FailureIO FailureKind = "io_error"
	// FailureCorruption: a checksum did not match: a corrupt sstable, blob file or log.
	FailureCorruption FailureKind = "corruption"
	// FailureFatal: another of pebble's fatal errors (an invariant it found broken).
	FailureFatal FailureKind = "fatal"
)

// FailureKinds lists every kind, in the order the metric reports them.
var FailureKinds = []FailureKind{FailureDiskFull, FailureIO, FailureCorruption, FailureFatal}

// FailureHandler runs the node's disk failure policy (Options.OnFailure). StorageFailed runs on
// the goroutine that met the failure, which may be one of pebble's holding its locks, so it must
// not call the store and must not block; it may end the process.
type FailureHandler interface {
	StorageFailed(*Failure)
}

// Failure is a store's storage failure: its kind and what pebble reported.
type Failure struct {
	Kind FailureKind
	Err  error
}

// Error reads "replica: storage failed (io_error): ...".
func (f *Failure) Error() string { return fmt.Sprintf("%v (%s): %v", ErrStorageFailed, f.Kind, f.Err) }

// Unwrap returns ErrStorageFailed and the error pebble reported.
func (f *Failure) Unwrap() []error { return []error{ErrStorageFailed, f.Err} }

// NewFailure classifies err as a storage failure (a *Failure among its wrapped errors is returned
// as it is).
func NewFailure(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	kind := FailureFatal
	switch {
	case errors.Is(err, syscall.ENOSPC):
		kind = FailureDiskFull
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EROFS):
		kind = FailureIO
	case pebble.IsCorruptionError(err):
		kind = FailureCorruption
	}
	return &Failure{Kind: kind, Err: err}
}

// brokenStorage reports whether err, from one of pebble's background jobs, means the database is
// broken: the disk failed (EIO, read-only) or a file is corrupt. A full disk is not: pebble retries
// the flush or compaction once space is freed.
func brokenStorage(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS) || pebble.IsCorruptionError(err)
}

// StorageFailure reports whether v, a value a recovered panic carried, is a storage failure: an
// error that is a *Failure, wraps ErrStorageFailed or pebble's corruption, or an I/O error. A
// recovery hands it to Store.Fail (the disk failure policy) instead of answering it as a
// request's failure.
func StorageFailure(v any) (*Failure, bool) {
	err, ok := v.(error)
	if !ok {
		return nil, false
	}
	if errors.Is(err, ErrStorageFailed) || brokenStorage(err) || errors.Is(err, syscall.ENOSPC) {
		return NewFailure(err), true
	}
	return nil, false
}

// Fail records f as the store's failure, unless it failed already, and runs the failure policy
// (Options.OnFailure); the node calls it with the storage failures it recovers from a panic.
// It reports whether f was the first failure. It never blocks on pebble.
func (s *Store) Fail(f *Failure) bool {
	if !s.failure.CompareAndSwap(nil, f) {
		return false
	}
	close(s.failed)
	if s.log != nil {
		s.log.Error("storage failed: this node must not serve with broken storage; restart it once the disk is fixed (docs/operations.md, \"Storage failures\")",
			"component", "pebble", "kind", string(f.Kind), "err", f.Err, "disk_failure_policy", s.policy)
	}
	if s.onFailure != nil {
		s.onFailure.StorageFailed(f) // with PolicyDie the node's ends the process
	}
	return true
}

// Failed returns the store's storage failure, or nil while its storage works.
func (s *Store) Failed() *Failure { return s.failure.Load() }

// usable returns the store's failure, as an error, or nil.
func (s *Store) usable() error {
	if f := s.failure.Load(); f != nil {
		return f
	}
	return nil
}

// fatalError is what pebble's Fatalf reported: its message, wrapping the errors among its
// arguments, so that the failure is classified by them.
type fatalError struct {
	msg    string
	causes []error
}

func (e *fatalError) Error() string   { return e.msg }
func (e *fatalError) Unwrap() []error { return e.causes }

// pebbleLogger adapts a *slog.Logger (nil: discard) to pebble's Logger, and routes its Fatalf to
// the store's failure.
type pebbleLogger struct {
	l    *slog.Logger
	fail func(*Failure) bool // nil: Fatalf only blocks
}

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l != nil {
		p.l.Info(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	if p.l != nil {
		p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Fatalf is called by pebble on an error it cannot recover from (a failed write or sync of the
// log or the manifest, a corruption, a broken invariant) and must not return: pebble's state is
// undefined past it, and the goroutine calling it may hold pebble's locks. It records the
// store's failure, which runs the disk failure policy, then blocks its goroutine for good. It
// never panics: a panic would be recovered by a request's handler, and the node would serve on.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	e := &fatalError{msg: "pebble: " + fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.causes = append(e.causes, err)
		}
	}
	if p.fail != nil {
		p.fail(NewFailure(e))
	} else if p.l != nil {
		p.l.Error(e.msg, "component", "pebble", "fatal", true)
	}
	select {} // the process ends by its policy, or by its operator
}

// guarded runs fn, a call into the store. A panic in it that is a storage failure (see
// StorageFailure) is handed to Fail, the disk failure policy, and returned as the call's error,
// so that no recovery above takes it for a failed request and the node serves on; pebble's
// panic of a call that raced the store's Close is the call's error (errStoreClosed); any other
// panic goes on.
func (s *Store) guarded(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && errors.Is(e, pebble.ErrClosed) {
				err = errStoreClosed
				return
			}
			f, ok := StorageFailure(r)
			if !ok {
				panic(r)
			}
			s.Fail(f)
			err = f
		}
	}()
	return fn()
}
