package replica

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/internal/faultfs"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// failures records what a store reports to its FailureHandler.
type failures struct{ ch chan *Failure }

func newFailures() *failures { return &failures{ch: make(chan *Failure, 4)} }

func (f *failures) StorageFailed(x *Failure) { f.ch <- x }

// next waits for the next failure reported.
func (f *failures) next(t *testing.T) *Failure {
	t.Helper()
	select {
	case x := <-f.ch:
		return x
	case <-time.After(30 * time.Second):
		t.Fatal("no storage failure reported within 30s")
		return nil
	}
}

// openFaulty opens a store on a fault-injecting in-memory filesystem that syncs every write.
func openFaulty(t *testing.T, h FailureHandler) (*Store, *faultfs.FS) {
	t.Helper()
	fs := faultfs.New(vfs.NewMem())
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20, OnFailure: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fs
}

// TestDiskErrorFailsTheStore injects a disk error into the write-ahead log's writes: pebble's
// commit fails and it calls Fatalf, which must not return (the write never returns) and must
// not panic; the store records the failure once, with its kind, tells the handler, answers
// every later call with ErrStorageFailed at once, and Close returns without closing pebble.
func TestDiskErrorFailsTheStore(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind FailureKind
	}{{syscall.EIO, FailureIO}, {syscall.ENOSPC, FailureDiskFull}} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			h := newFailures()
			s, fs := openFaulty(t, h)
			tbl := testTable(t)
			mustApply(t, s, tbl, mut("p", row(1, "a", "v=1@1")))

			fs.FailWrites(tc.err)
			returned := make(chan error, 1)
			go func() { returned <- s.Apply(tbl, mut("p", row(2, "a", "v=2@2"))) }()
			f := h.next(t)
			if f.Kind != tc.kind || !errors.Is(f, tc.err) || !errors.Is(f, ErrStorageFailed) {
				t.Errorf("failure = %v (kind %s), want kind %s wrapping %v and ErrStorageFailed", f, f.Kind, tc.kind, tc.err)
			}
			if got := s.Failed(); got != f {
				t.Errorf("Failed() = %v, want the failure reported", got)
			}
			if err := s.Apply(tbl, mut("p", row(3, "a", "v=3@3"))); !errors.Is(err, ErrStorageFailed) {
				t.Errorf("a write after the failure returned %v, want ErrStorageFailed", err)
			}
			if _, err := s.ReadPartition(tbl, readReq("p")); !errors.Is(err, ErrStorageFailed) {
				t.Errorf("a read after the failure returned %v, want ErrStorageFailed", err)
			}
			if err := s.StoreBatch(make([]byte, BatchIDSize), time.Now(), []byte("x")); !errors.Is(err, ErrStorageFailed) {
				t.Errorf("a batchlog entry after the failure returned %v, want ErrStorageFailed", err)
			}
			if s.Fail(&Failure{Kind: FailureFatal, Err: errors.New("again")}) {
				t.Error("a second failure was recorded; want the first kept")
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close after the failure = %v, want nil", err)
			}
			select {
			case err := <-returned:
				t.Errorf("the write whose commit failed returned (%v): pebble's Fatalf must not return", err)
			default:
			}
			if got := storeMetric(t, s, "kvnode_storage_failed", "kind", string(tc.kind)); got != 1 {
				t.Errorf("kvnode_storage_failed{kind=%q} = %v after the failure, want 1", tc.kind, got)
			}
			if fs.Failed() == 0 {
				t.Error("the injected error was never returned")
			}
		})
	}
}

// TestFatalfClassifiesAndNeverReturns calls the store's pebble logger as pebble does.
func TestFatalfClassifiesAndNeverReturns(t *testing.T) {
	for _, tc := range []struct {
		args []any
		kind FailureKind
	}{
		{[]any{fmt.Errorf("write: %w", syscall.EIO)}, FailureIO},
		{[]any{pebble.ErrCorruption}, FailureCorruption},
		{[]any{"L0->L1: 000012 already being compacted"}, FailureFatal},
	} {
		h := newFailures()
		s, _ := openFaulty(t, h)
		returned := make(chan struct{})
		go func() {
			pebbleLogger{fail: s.Fail}.Fatalf("pebble: fatal commit error: %v", tc.args...)
			close(returned)
		}()
		f := h.next(t)
		if f.Kind != tc.kind || !strings.Contains(f.Error(), "pebble: fatal commit error") {
			t.Errorf("Fatalf(%v) failed the store with %v (kind %s), want kind %s and pebble's message", tc.args, f, f.Kind, tc.kind)
		}
		select {
		case <-returned:
			t.Errorf("Fatalf(%v) returned", tc.args)
		default:
		}
	}
}

// TestStoragePanicGoesToThePolicy: a panic carrying a storage failure inside a store call is
// handed to the failure policy and answered as the call's error; any other panic goes on.
func TestStoragePanicGoesToThePolicy(t *testing.T) {
	h := newFailures()
	s, _ := openFaulty(t, h)
	err := s.guarded(func() error { panic(fmt.Errorf("block checksum: %w", pebble.ErrCorruption)) })
	if !errors.Is(err, ErrStorageFailed) || !errors.Is(err, pebble.ErrCorruption) {
		t.Errorf("a corruption panic returned %v, want a failure wrapping pebble.ErrCorruption", err)
	}
	if f := h.next(t); f.Kind != FailureCorruption {
		t.Errorf("the policy was told %v, want a corruption", f)
	}
	func() {
		defer func() {
			if r := recover(); r != "a bug" {
				t.Errorf("a panic that is no storage failure was recovered as %v, want it to go on", r)
			}
		}()
		s.guarded(func() error { panic("a bug") })
	}()
	if _, ok := StorageFailure("a bug"); ok {
		t.Error(`StorageFailure("a bug") = true, want false`)
	}
}

// TestCallRacingCloseIsAnError: a write that reaches pebble after the store closed (a request
// handler still running while its node stops) is the call's error, not a panic that ends the
// process, and no storage failure.
func TestCallRacingCloseIsAnError(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := s.db
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err = s.guarded(func() error { return db.Set([]byte("k"), []byte("v"), nil) })
	if !errors.Is(err, errStoreClosed) {
		t.Errorf("a write after Close returned %v, want %v", err, errStoreClosed)
	}
	if s.failure.Load() != nil {
		t.Errorf("a write after Close failed the store: %v", s.failure.Load())
	}
}

// TestCorruptTableFailsTheStore corrupts a flushed sstable: the read that finds it fails, the
// corruption is counted, and the store fails with kind corruption.
func TestCorruptTableFailsTheStore(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, CacheSize: 1 << 20, MemTableSize: 1 << 20}
	s, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	tbl := testTable(t)
	for i := range 200 {
		mustApply(t, s, tbl, mut("p", row(int32(i), "a", fmt.Sprintf("v=%d@1", i), "w=some-text-to-fill-the-block@1")))
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ls, err := mem.List("db")
	if err != nil {
		t.Fatal(err)
	}
	corrupted := ""
	for _, name := range ls {
		if strings.HasSuffix(name, ".sst") {
			buf, err := mem.UnsafeGetFileDataBuffer("db/" + name)
			if err != nil {
				t.Fatal(err)
			}
			for i := 100; i < 164; i++ { // the first data block
				buf[i] ^= 0x5a
			}
			corrupted = name
		}
	}
	if corrupted == "" {
		t.Fatalf("no sstable after the flush in %v", ls)
	}
	h := newFailures()
	opts.OnFailure = h
	s, err = Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ReadPartition(tbl, readReq("p")); err == nil {
		t.Fatal("reading a partition of the corrupt sstable succeeded")
	}
	f := h.next(t)
	if f.Kind != FailureCorruption || !strings.Contains(f.Error(), corrupted) {
		t.Errorf("failure = %v (kind %s), want a corruption naming %s", f, f.Kind, corrupted)
	}
	if got := storeMetric(t, s, "kvnode_storage_corruptions_total"); got < 1 {
		t.Errorf("kvnode_storage_corruptions_total = %v, want ≥ 1", got)
	}
}

// TestLowDiskSpace fills the filesystem (as its reported free space): under the reserve, data
// writes are refused with an error naming the directory and the free space while drops and
// batchlog entries go on; under half of it batchlog entries are refused too; and once space
// returns the periodic check lets writes in again by itself.
func TestLowDiskSpace(t *testing.T) {
	const total = 1 << 30
	fs := faultfs.New(vfs.NewMem())
	usage := func(free uint64) {
		fs.SetDiskUsage(&vfs.DiskUsage{AvailBytes: free, TotalBytes: total, UsedBytes: total - free})
	}
	usage(total / 2)
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20,
		MinFreeSpace: 100 << 20, MinFreeSpacePercent: 50, DiskCheckInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl := testTable(t)
	mustApply(t, s, tbl, mut("p", row(1, "a", "v=1@1")))

	usage(60 << 20) // under the 100 MiB reserve (the smaller of 100 MiB and 50 % of 1 GiB)
	poll.Must(t, 30*time.Second, "writes refused for low disk space", func() error {
		if s.SpaceError() == nil {
			return errors.New("writes still accepted")
		}
		return nil
	})
	err = s.Apply(tbl, mut("p", row(2, "a", "v=2@2")))
	if !errors.Is(err, ErrLowDiskSpace) || !strings.Contains(err.Error(), "db has 60.0 MiB free of 1.0 GiB, under the 100.0 MiB") {
		t.Errorf("a write under the reserve returned %v, want ErrLowDiskSpace naming the directory, the free space and the reserve", err)
	}
	if err := s.StoreBatch(make([]byte, BatchIDSize), time.Now(), []byte("x")); err != nil {
		t.Errorf("a batchlog entry above half the reserve: %v, want it stored", err)
	}
	if err := s.DropTable(tbl.ID); err != nil {
		t.Errorf("DROP under the reserve: %v, want it accepted", err)
	}
	if got := storeMetric(t, s, "kvnode_storage_low_disk"); got != 1 {
		t.Errorf("kvnode_storage_low_disk = %v, want 1", got)
	}

	usage(30 << 20) // under half the reserve
	poll.Must(t, 30*time.Second, "batchlog entries refused", func() error {
		if s.ReserveError() == nil {
			return errors.New("batchlog entries still accepted")
		}
		return nil
	})
	if err := s.StoreBatch(make([]byte, BatchIDSize), time.Now(), []byte("x")); !errors.Is(err, ErrLowDiskSpace) {
		t.Errorf("a batchlog entry under half the reserve: %v, want ErrLowDiskSpace", err)
	}

	usage(105 << 20) // above the reserve, but not by a tenth: still refused
	s.space.check()
	if s.SpaceError() == nil {
		t.Error("writes accepted at 105 MiB free, within a tenth of the 100 MiB reserve; want them refused until 110 MiB")
	}
	usage(400 << 20)
	poll.Must(t, 30*time.Second, "writes accepted again once space returned", func() error {
		return s.Apply(tbl, mut("p", row(3, "a", "v=3@3")))
	})
	if got := storeMetric(t, s, "kvnode_storage_low_disk_refusals_total"); got < 2 {
		t.Errorf("kvnode_storage_low_disk_refusals_total = %v, want ≥ 2", got)
	}
}

// TestDiskFullRaisesTheLowDiskLevel: a write that meets ENOSPC (vfs.OnDiskFull) refuses data
// writes and batchlog entries at once, before the next check; and writes stay refused until free
// space covers twice the reserve and a memtable, not just the space pebble freed by deleting the
// failed job's output. OnSpaceChange is told when writes start and stop being refused, and only
// then.
func TestDiskFullRaisesTheLowDiskLevel(t *testing.T) {
	const total, reserve, memtable = 1 << 30, 100 << 20, 1 << 20
	fs := faultfs.New(vfs.NewMem())
	usage := func(free uint64) {
		fs.SetDiskUsage(&vfs.DiskUsage{AvailBytes: free, TotalBytes: total, UsedBytes: total - free})
	}
	usage(total / 2)
	var changes spaceChanges
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: memtable, MinFreeSpace: reserve, MinFreeSpacePercent: 100,
		DiskCheckInterval: time.Hour, OnSpaceChange: &changes})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The test runs the checks itself: the one full() wakes the loop for must not run between
	// (it would read the half-free disk and accept writes again before the test looks).
	s.space.stop()
	tell := func(step string, want int32) {
		t.Helper()
		if got := changes.Load(); got != want {
			t.Errorf("%s: OnSpaceChange called %d times in all, want %d", step, got, want)
		}
	}
	tell("opened with space", 0)
	s.space.full()
	tell("a write met ENOSPC", 1)
	if err := s.ReserveError(); !errors.Is(err, ErrLowDiskSpace) {
		t.Errorf("after ENOSPC, ReserveError() = %v, want ErrLowDiskSpace", err)
	}
	usage(reserve * 3 / 2) // what deleting a failed flush's output gives back
	s.space.check()
	if s.SpaceError() == nil || s.ReserveError() != nil {
		t.Errorf("after ENOSPC, at 1.5 × the reserve free: data writes refused %v, batchlog refused %v; want refused, accepted",
			s.SpaceError() != nil, s.ReserveError() != nil)
	}
	tell("still refused, at a lower level", 1)
	usage(2*reserve + memtable)
	s.space.check()
	if err := s.SpaceError(); err != nil {
		t.Errorf("at twice the reserve and a memtable free: %v, want writes accepted", err)
	}
	tell("writes accepted again", 2)
	usage(reserve * 3 / 2) // without a full disk since, above the reserve is enough
	s.space.check()
	if err := s.SpaceError(); err != nil {
		t.Errorf("at 1.5 × the reserve free, no full disk since: %v, want writes accepted", err)
	}
}

// usageHook is a filesystem that runs hook (once) just after the free space was read, before
// the reader has it.
type usageHook struct {
	*faultfs.FS
	hook atomic.Pointer[func()]
}

func (u *usageHook) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	du, err := u.FS.GetDiskUsage(path)
	if h := u.hook.Swap(nil); h != nil {
		(*h)()
	}
	return du, err
}

// TestDiskFullDuringACheckStands: a write that meets ENOSPC while a check reads the free space
// is not undone by that check's older reading (it stands down, and the check full() asks for
// decides): writes stay refused, and still need twice the reserve and a memtable to resume.
func TestDiskFullDuringACheckStands(t *testing.T) {
	const total, reserve, memtable = 1 << 30, 100 << 20, 1 << 20
	fs := &usageHook{FS: faultfs.New(vfs.NewMem())}
	usage := func(free uint64) {
		fs.SetDiskUsage(&vfs.DiskUsage{AvailBytes: free, TotalBytes: total, UsedBytes: total - free})
	}
	usage(total / 2)
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: memtable, MinFreeSpace: reserve, MinFreeSpacePercent: 100,
		DiskCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.space.stop() // the test runs the checks
	full := func() {
		s.space.full()
		usage(reserve * 3 / 2) // what deleting the failed job's output gives back
	}
	fs.hook.Store(&full)
	s.space.check() // read half the disk free; a write met ENOSPC meanwhile
	if err := s.ReserveError(); !errors.Is(err, ErrLowDiskSpace) {
		t.Errorf("after ENOSPC during a check that read half the disk free: ReserveError() = %v, want ErrLowDiskSpace", err)
	}
	s.space.check() // the check full() asked for
	if s.SpaceError() == nil || s.ReserveError() != nil {
		t.Errorf("after ENOSPC, at 1.5 × the reserve free: data writes refused %v, batchlog refused %v; want refused, accepted (a full disk needs twice the reserve)",
			s.SpaceError() != nil, s.ReserveError() != nil)
	}
	usage(2*reserve + memtable)
	s.space.check()
	if err := s.SpaceError(); err != nil {
		t.Errorf("at twice the reserve and a memtable free: %v, want writes accepted", err)
	}
}

// TestSyncedWritesSurviveACrash applies writes on pebble's crash-simulating filesystem, each
// acknowledged when Apply returns, then crashes it (keeping a random share of what was written
// but not synced) and reopens: every acknowledged write is there. Without syncing (NoSync) the
// same crash loses writes, so the check can fail.
func TestSyncedWritesSurviveACrash(t *testing.T) {
	const n = 500
	tbl := testTable(t)
	run := func(noSync bool, unsynced int) (missing int) {
		fs := vfs.NewCrashableMem()
		s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 64 << 10, NoSync: noSync})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			mustApply(t, s, tbl, crashMutation(i)) // acknowledged
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsynced, RNG: rand.New(rand.NewPCG(uint64(unsynced), 1))})
		s.Close()
		s, err = Open("db", Options{FS: crashed, CacheSize: 1 << 20, MemTableSize: 64 << 10})
		if err != nil {
			t.Fatalf("reopening after the crash: %v", err)
		}
		defer s.Close()
		found := map[int32]bool{}
		for p := range crashPartitions {
			resp, err := s.ReadPartition(tbl, readReq(fmt.Sprintf("p%d", p)))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.Rows {
				found[int32FromBytes(r.Clustering[0])] = true
			}
		}
		for i := range n {
			if !found[int32(i)] {
				missing++
			}
		}
		return missing
	}
	for _, unsynced := range []int{0, 50, 100} {
		if m := run(false, unsynced); m != 0 {
			t.Errorf("synced writes, a crash keeping %d%% of the unsynced data: %d of %d acknowledged writes missing", unsynced, m, n)
		}
	}
	if m := run(true, 0); m == 0 {
		t.Error("unsynced writes (NoSync), a crash keeping none of the unsynced data: no write missing; the check cannot tell a lost write")
	}
}

// crashedStore writes n synced mutations to a new store on a crash-simulating filesystem and
// returns the filesystem as a crash left it, with the path of the store's newest log.
func crashedStore(t *testing.T, n int) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	opts := Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 4 << 20}
	// A new store: Open itself makes its first log one with sync offsets.
	s, err := Open("data", opts)
	if err != nil {
		t.Fatal(err)
	}
	tbl := testTable(t)
	for i := range n {
		mustApply(t, s, tbl, crashMutation(i))
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	ls, err := crashed.List("data")
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, name := range ls {
		if strings.HasSuffix(name, ".log") && name > newest {
			newest = name
		}
	}
	return crashed, crashed.PathJoin("data", newest)
}

// TestCorruptLogRefusesToStart damages the middle of the newest write-ahead log, its tail
// intact: the store refuses to open with an error naming the log, the offset and the way out;
// with StartDespiteCorruptLog it moves the log into the quarantine directory, opens, and stays
// unrepaired across restarts until SetRepaired.
func TestCorruptLogRefusesToStart(t *testing.T) {
	fs, log := crashedStore(t, 3000)
	buf, err := fs.UnsafeGetFileDataBuffer(log)
	if err != nil {
		t.Fatal(err)
	}
	at := len(buf) / 3
	for i := range 16 {
		buf[at+i] ^= 0xff
	}
	opts := Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 4 << 20}
	_, err = Open("data", opts)
	var cerr *CorruptLogError
	if !errors.As(err, &cerr) {
		t.Fatalf("opening with a log damaged in the middle: %v, want a *CorruptLogError", err)
	}
	if cerr.Log != log || cerr.Offset <= 0 || cerr.Offset > int64(at) || cerr.Quarantine != "quarantine" {
		t.Errorf("the error names log %q offset %d quarantine %q, want %q, an offset up to %d, and quarantine", cerr.Log, cerr.Offset, cerr.Quarantine, log, at)
	}
	for _, want := range []string{log, fmt.Sprintf("offset %d", cerr.Offset), "--start-despite-corrupt-log", "start_despite_corrupt_log", "kvnode repair"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q: %v", want, err)
		}
	}

	opts.StartDespiteCorruptLog = true
	s, err := Open("data", opts)
	if err != nil {
		t.Fatalf("opening with start_despite_corrupt_log: %v", err)
	}
	if !s.Unrepaired() {
		t.Error("a store opened despite a corrupt log is not unrepaired")
	}
	if _, err := fs.Stat(log); err == nil {
		t.Errorf("the corrupt log %s is still in the store", log)
	}
	moved, err := fs.List("quarantine")
	if err != nil || len(moved) != 1 || !strings.HasSuffix(moved[0], "-"+fs.PathBase(log)) {
		t.Errorf("the quarantine directory holds %v (%v), want the log", moved, err)
	}
	mustApply(t, s, testTable(t), mut("p", row(1, "a", "v=1@1"))) // it takes writes
	s.Close()

	opts.StartDespiteCorruptLog = false
	if s, err = Open("data", opts); err != nil {
		t.Fatalf("reopening after the log was moved aside: %v", err)
	}
	if !s.Unrepaired() {
		t.Error("the store is no longer unrepaired after a restart, with no repair")
	}
	if err := s.SetRepaired(); err != nil {
		t.Fatal(err)
	}
	if s.Unrepaired() {
		t.Error("the store is still unrepaired after SetRepaired")
	}
	s.Close()
	if s, err = Open("data", opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Unrepaired() {
		t.Error("the store is unrepaired again after SetRepaired and a restart")
	}
}

// TestTornLogTailLooksLikeACrash documents the limit of what the log tells: a log cut short, or
// damaged within its last block, is what a crash in the middle of a write leaves, and pebble
// replays what precedes it without an error. Acknowledged writes in the lost tail are gone
// without a trace (docs/operations.md, "A corrupt write-ahead log").
func TestTornLogTailLooksLikeACrash(t *testing.T) {
	fs, log := crashedStore(t, 3000)
	f, err := fs.OpenReadWrite(log, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := fs.UnsafeGetFileDataBuffer(log)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		buf[int(st.Size())-100+i] ^= 0xff // within the last block
	}
	f.Close()
	s, err := Open("data", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatalf("a damaged tail: %v, want the open to succeed as after a crash", err)
	}
	defer s.Close()
	resp, err := s.ReadPartition(testTable(t), readReq(fmt.Sprintf("p%d", 2999%crashPartitions)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Rows {
		if int32FromBytes(r.Clustering[0]) == 2999 {
			t.Fatal("the last write survived damage to the log's tail; the test did not damage it")
		}
	}
}

// TestFailureOptions checks the new options' defaults and errors.
func TestFailureOptions(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	if o.DiskFailurePolicy != PolicyStop || o.MinFreeSpace != DefaultMinFreeSpace || o.MinFreeSpacePercent != DefaultMinFreeSpacePercent ||
		o.DiskCheckInterval != DefaultDiskCheckInterval {
		t.Errorf("EnsureDefaults: policy %q, min free %d, percent %v, interval %v; want stop and the defaults",
			o.DiskFailurePolicy, o.MinFreeSpace, o.MinFreeSpacePercent, o.DiskCheckInterval)
	}
	for _, tc := range []struct {
		bad  Options
		want string
	}{
		{Options{DiskFailurePolicy: "ignore"}, `Options.DiskFailurePolicy (disk_failure_policy) is "ignore", want "stop" or "die"`},
		{Options{MinFreeSpace: -1}, "Options.MinFreeSpace (min_free_space) is -1"},
		{Options{MinFreeSpacePercent: 101}, "Options.MinFreeSpacePercent (min_free_space_percent) is 101"},
		{Options{MinFreeSpacePercent: -2}, "Options.MinFreeSpacePercent (min_free_space_percent) is -2"},
	} {
		if err := tc.bad.EnsureDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestServiceAnswersStorageFailures: a replica whose storage failed, or is short of space,
// answers writes STATUS_ERROR with the store's message.
func TestServiceAnswersStorageFailures(t *testing.T) {
	s, _ := openFaulty(t, nil)
	svc, err := NewService(Config{Store: s, Schema: tables{testTableID: testTable(t)}})
	if err != nil {
		t.Fatal(err)
	}
	s.space.full()
	resp, err := svc.Mutate(t.Context(), &replicapb.MutateRequest{Mutation: mut("p", row(1, "a", "v=1@1"))})
	if err != nil || resp.Status != replicapb.Status_STATUS_ERROR || resp.GetError().GetCode() != replicapb.Error_INTERNAL ||
		!strings.Contains(resp.GetError().GetMessage(), "low disk space") {
		t.Errorf("a write on a full disk: %v, %v; want STATUS_ERROR INTERNAL naming the low disk space", resp, err)
	}
	s.Fail(&Failure{Kind: FailureIO, Err: syscall.EIO})
	read, err := svc.Read(t.Context(), readReq("p"))
	if err != nil || read.Status != replicapb.Status_STATUS_ERROR || !strings.Contains(read.GetError().GetMessage(), "storage failed (io_error)") {
		t.Errorf("a read after the failure: %v, %v; want STATUS_ERROR naming the failure", read, err)
	}
}

// storeMetric returns the value of s's metric name with the given label pairs.
func storeMetric(t *testing.T, s *Store, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collector())
	return gatheredValue(t, reg, name, labels...)
}

// spaceChanges counts the calls of a SpaceWatcher.
type spaceChanges struct{ atomic.Int32 }

func (c *spaceChanges) SpaceChanged() { c.Add(1) }
