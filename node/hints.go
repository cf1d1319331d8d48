package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Hinted handoff. A coordinator keeps, for each replica that missed a write it applied
// somewhere (the replica was down, failed, or did not answer in time), a hint: the write's
// mutation, stored in the node's hint store (its own pebble database, `hints/` in the data
// directory) until the replica is up again, then replayed to it, exempt from the rate limiter,
// throttled, and deleted once the replica acknowledged it. The shell's HintSink hook decides
// which replicas get a hint; this file keeps and replays them.
//
// Hints are bounded three ways, as Cassandra's are: no hints are stored for a replica down
// longer than the max hint window (Config.MaxHintWindow; it must be repaired instead), at most
// Config.MaxHintsSizePerHost bytes are kept per replica, and a hint older than its table's
// gc_grace_seconds is dropped rather than replayed (the replica may have purged the tombstones
// that shadow it, and a late write must not bring deleted data back). Hints are written
// without a sync: a crash may lose the last ones, which repair recovers.

// Defaults of the hint settings.
const (
	// DefaultMaxHintWindow is Config.MaxHintWindow when it is zero: Cassandra's 3 hours.
	DefaultMaxHintWindow = 3 * time.Hour
	// DefaultMaxHintsSizePerHost is Config.MaxHintsSizePerHost when it is zero.
	DefaultMaxHintsSizePerHost = 128 << 20
	// DefaultHintsThrottle is Config.HintsThrottle when it is zero: Cassandra's
	// hinted_handoff_throttle, 1024 KiB per second.
	DefaultHintsThrottle = 1 << 20
	// hintReplayInterval is how often the replayer looks for live replicas with hints, besides
	// every membership change.
	hintReplayInterval = 2 * time.Second
)

// Reasons a hint is dropped (the reason label of kvnode_hints_dropped_total).
const (
	dropWindow   = "window"        // the replica has been down longer than the max hint window
	dropFull     = "full"          // the replica's hints already take max_hints_size_per_host
	dropExpired  = "expired"       // older than its table's gc_grace_seconds when replayed
	dropTable    = "unknown_table" // its table was dropped
	dropRefused  = "refused"       // the replica called it malformed
	dropRemoved  = "removed"       // the replica left the cluster
	dropError    = "error"         // the store failed to write it
	dropCorrupt  = "corrupt"       // it does not decode
	hintKeyByte  = 'h'
	hintIDSuffix = 16 // stored-at nanos and a sequence number, after the target id
)

var dropReasons = []string{dropWindow, dropFull, dropExpired, dropTable, dropRefused, dropRemoved, dropError, dropCorrupt}

// hintTarget is what the store keeps in memory about one replica's hints.
type hintTarget struct {
	count int
	bytes int64
}

// hintStore keeps hints on disk, per target replica, and counts them.
type hintStore struct {
	db       *pebble.DB
	log      *slog.Logger
	now      func() time.Time
	window   time.Duration
	maxBytes int64
	isLive   func(coordinator.NodeID) bool
	seq      atomic.Uint64

	mu        sync.Mutex
	closed    bool
	targets   map[coordinator.NodeID]*hintTarget
	downSince map[coordinator.NodeID]time.Time

	stored, replayed atomic.Uint64
	dropped          map[string]*atomic.Uint64
	storedDesc       *prometheus.Desc
	replayedDesc     *prometheus.Desc
	droppedDesc      *prometheus.Desc
	pendingDesc      *prometheus.Desc
	pendingBytesDesc *prometheus.Desc
}

// hintStoreConfig configures openHintStore.
type hintStoreConfig struct {
	Dir      string
	Logger   *slog.Logger
	Now      func() time.Time
	Window   time.Duration
	MaxBytes int64
	IsLive   func(coordinator.NodeID) bool
}

// openHintStore opens (creating it if needed) the hint store in cfg.Dir and counts the hints
// it holds.
func openHintStore(cfg hintStoreConfig) (*hintStore, error) {
	db, err := pebble.Open(cfg.Dir, &pebble.Options{
		CacheSize:          8 << 20,
		MemTableSize:       4 << 20,
		FormatMajorVersion: replica.FormatMajorVersion,
		Logger:             hintPebbleLogger{cfg.Logger},
	})
	if err != nil {
		return nil, fmt.Errorf("node: open hint store in %s: %w", cfg.Dir, err)
	}
	h := &hintStore{
		db: db, log: cfg.Logger, now: cfg.Now, window: cfg.Window, maxBytes: cfg.MaxBytes, isLive: cfg.IsLive,
		targets:   map[coordinator.NodeID]*hintTarget{},
		downSince: map[coordinator.NodeID]time.Time{},
		dropped:   map[string]*atomic.Uint64{},
		storedDesc: prometheus.NewDesc("kvnode_hints_stored_total",
			"Hints this node stored as a coordinator: writes a replica missed (down, failed or timed out), kept to replay to it.", nil, nil),
		replayedDesc: prometheus.NewDesc("kvnode_hints_replayed_total",
			"Hints this node replayed to their replica once it was up again, and deleted.", nil, nil),
		droppedDesc: prometheus.NewDesc("kvnode_hints_dropped_total",
			"Hints this node did not store or did not replay, by reason: window (the replica was down longer than max_hint_window), full (max_hints_size_per_host), expired (older than the table's gc_grace_seconds), unknown_table, refused, removed, error, corrupt. Their replicas need a repair.", []string{"reason"}, nil),
		pendingDesc: prometheus.NewDesc("kvnode_hints_pending",
			"Hints this node holds, waiting for their replica.", nil, nil),
		pendingBytesDesc: prometheus.NewDesc("kvnode_hints_pending_bytes",
			"Bytes of the hints this node holds.", nil, nil),
	}
	for _, r := range dropReasons {
		h.dropped[r] = new(atomic.Uint64)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if err := h.load(); err != nil {
		db.Close()
		return nil, err
	}
	return h, nil
}

// hintPebbleLogger sends the hint store's pebble errors to the node's log and drops its
// informational chatter.
type hintPebbleLogger struct{ l *slog.Logger }

func (p hintPebbleLogger) Infof(string, ...any) {}

func (p hintPebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble-hints")
}

// Fatalf is called by pebble on unrecoverable corruption and must not return.
func (p hintPebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble-hints", "fatal", true)
	panic("node: hint store: pebble: " + msg)
}

// hintPrefix returns the key prefix of target's hints: 'h', the id's length, the id.
func hintPrefix(target coordinator.NodeID) []byte {
	b := make([]byte, 0, 2+len(target)+hintIDSuffix)
	b = append(b, hintKeyByte, byte(len(target)))
	return append(b, target...)
}

// parseHintKey returns the target and stored-at time of a hint key.
func parseHintKey(k []byte) (coordinator.NodeID, time.Time, bool) {
	if len(k) < 2 || k[0] != hintKeyByte || len(k) != 2+int(k[1])+hintIDSuffix {
		return "", time.Time{}, false
	}
	n := int(k[1])
	return coordinator.NodeID(k[2 : 2+n]), time.Unix(0, int64(binary.BigEndian.Uint64(k[2+n:]))), true
}

// load counts the hints on disk per target.
func (h *hintStore) load() error {
	it, err := h.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("node: hint store: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		target, _, ok := parseHintKey(it.Key())
		if !ok {
			continue // counted nowhere; replay deletes it as corrupt when it meets it
		}
		t := h.target(target)
		t.count++
		t.bytes += int64(len(it.Key()) + len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("node: hint store: %w", err)
	}
	return nil
}

// target returns target's counts, creating them. Called with mu held (or before the store is
// shared).
func (h *hintStore) target(id coordinator.NodeID) *hintTarget {
	t := h.targets[id]
	if t == nil {
		t = &hintTarget{}
		h.targets[id] = t
	}
	return t
}

func (h *hintStore) drop(reason string, n int) { h.dropped[reason].Add(uint64(n)) }

// StoreHint keeps m for target (shell.HintSink), unless target has been down longer than the
// window or already has its share of hints.
func (h *hintStore) StoreHint(target coordinator.NodeID, m *replicapb.Mutation) {
	if len(target) > 255 {
		h.drop(dropError, 1)
		return
	}
	val, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		h.drop(dropError, 1)
		return
	}
	now := h.now()
	key := hintPrefix(target)
	key = binary.BigEndian.AppendUint64(key, uint64(now.UnixNano()))
	key = binary.BigEndian.AppendUint64(key, h.seq.Add(1))
	size := int64(len(key) + len(val))

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if !h.isLive(target) {
		since, ok := h.downSince[target]
		if !ok {
			since = now
			h.downSince[target] = now
		}
		if now.Sub(since) > h.window {
			h.drop(dropWindow, 1)
			return
		}
	}
	t := h.target(target)
	if t.bytes+size > h.maxBytes {
		h.drop(dropFull, 1)
		return
	}
	// Under mu, so that the counts match the disk; NoSync writes only reach the memtable.
	if err := h.db.Set(key, val, pebble.NoSync); err != nil {
		h.drop(dropError, 1)
		h.log.Error("storing a hint failed", "target", string(target), "err", err)
		return
	}
	t.count++
	t.bytes += size
	h.stored.Add(1)
}

// observe updates when each member went down from the cluster's current view: a live member
// has no down time, a member seen down for the first time went down now.
func (h *hintStore) observe(members map[coordinator.NodeID]bool) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, live := range members {
		if live {
			delete(h.downSince, id)
		} else if _, ok := h.downSince[id]; !ok {
			h.downSince[id] = now
		}
	}
}

// pending returns the targets that hold hints.
func (h *hintStore) pendingTargets() []coordinator.NodeID {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []coordinator.NodeID
	for id, t := range h.targets {
		if t.count > 0 {
			out = append(out, id)
		}
	}
	return out
}

// hint is one stored hint as replay reads it.
type hint struct {
	key      []byte
	storedAt time.Time
	val      []byte
}

// next returns up to n of target's hints after key after (from the first when nil), in the
// order they were stored.
func (h *hintStore) next(target coordinator.NodeID, after []byte, n int) ([]hint, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, errHintStoreClosed
	}
	prefix := hintPrefix(target)
	upper := append(bytes.Clone(prefix), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF)
	lower := prefix
	if after != nil {
		lower = append(bytes.Clone(after), 0)
	}
	it, err := h.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	var out []hint
	for it.First(); it.Valid() && len(out) < n; it.Next() {
		_, at, _ := parseHintKey(it.Key())
		out = append(out, hint{key: bytes.Clone(it.Key()), storedAt: at, val: bytes.Clone(it.Value())})
	}
	return out, it.Close()
}

var errHintStoreClosed = errors.New("node: hint store is closed")

// remove deletes a hint of target.
func (h *hintStore) remove(target coordinator.NodeID, hn hint) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHintStoreClosed
	}
	if err := h.db.Delete(hn.key, pebble.NoSync); err != nil {
		return err
	}
	t := h.target(target)
	t.count--
	t.bytes -= int64(len(hn.key) + len(hn.val))
	if t.count <= 0 {
		delete(h.targets, target)
	}
	return nil
}

// close closes the database; later hints are not stored.
func (h *hintStore) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if err := h.db.Close(); err != nil {
		return fmt.Errorf("node: close hint store: %w", err)
	}
	return nil
}

func (h *hintStore) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.storedDesc
	ch <- h.replayedDesc
	ch <- h.droppedDesc
	ch <- h.pendingDesc
	ch <- h.pendingBytesDesc
}

func (h *hintStore) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(h.storedDesc, prometheus.CounterValue, float64(h.stored.Load()))
	ch <- prometheus.MustNewConstMetric(h.replayedDesc, prometheus.CounterValue, float64(h.replayed.Load()))
	for _, r := range dropReasons {
		ch <- prometheus.MustNewConstMetric(h.droppedDesc, prometheus.CounterValue, float64(h.dropped[r].Load()), r)
	}
	h.mu.Lock()
	var n int
	var b int64
	for _, t := range h.targets {
		n += t.count
		b += t.bytes
	}
	h.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(h.pendingDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(h.pendingBytesDesc, prometheus.GaugeValue, float64(b))
}

// hintReplayer replays the hint store to replicas that are up. The node owns it; stop ends it.
type hintReplayer struct {
	store    *hintStore
	log      *slog.Logger
	now      func() time.Time
	send     func(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error)
	tables   func(schema.TableID) (*schema.Table, bool)
	isMember func(coordinator.NodeID) bool
	isLive   func(coordinator.NodeID) bool
	timeout  time.Duration // of one replayed write
	throttle *rate.Limiter // bytes per second
	// paused, if set, skips the periodic rounds while it returns true (a testing knob).
	paused func() bool

	// mu serialises replays: the periodic rounds and a decommission's hand-off.
	mu sync.Mutex

	cancel context.CancelFunc
	done   chan struct{}
}

// hintBatch is how many hints replay reads at a time.
const hintBatch = 64

// run replays on every tick and on every membership change (changed returns the channel that
// fires at the next one) until ctx ends. members returns the cluster's current liveness view.
func (r *hintReplayer) run(ctx context.Context, changed func() <-chan struct{}, members func() map[coordinator.NodeID]bool) {
	defer close(r.done)
	t := time.NewTicker(hintReplayInterval)
	defer t.Stop()
	for {
		ch := changed()
		r.store.observe(members())
		r.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-ch:
		}
	}
}

// round replays the hints of every live target that has some.
func (r *hintReplayer) round(ctx context.Context) {
	if r.paused != nil && r.paused() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, target := range r.store.pendingTargets() {
		if ctx.Err() != nil {
			return
		}
		if !r.isMember(target) {
			r.discard(target, dropRemoved)
			continue
		}
		if !r.isLive(target) {
			continue
		}
		n, err := r.replayTarget(ctx, target)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("hint replay stopped; retrying later", "target", string(target), "replayed", n, "err", err)
		case n > 0:
			r.log.Info("hints replayed", "target", string(target), "replayed", n)
		}
	}
}

// drain replays every hint the store holds until none is left (a decommissioning node hands
// its hints off so: nobody would replay them once it has left). Hints of a target that left the
// cluster are dropped, as a round drops them. It fails when a target is down, when one fails a
// hint, or when ctx ends first; the hints not replayed stay.
func (r *hintReplayer) drain(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		targets := r.store.pendingTargets()
		if len(targets) == 0 {
			return nil
		}
		for _, target := range targets {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !r.isMember(target) {
				r.discard(target, dropRemoved)
				continue
			}
			if !r.isLive(target) {
				return fmt.Errorf("node %s, which this node holds hints for, is down", target)
			}
			if n, err := r.replayTarget(ctx, target); err != nil {
				return fmt.Errorf("replaying hints to %s (%d replayed): %w", target, n, err)
			}
		}
	}
}

// discard drops every hint of target.
func (r *hintReplayer) discard(target coordinator.NodeID, reason string) {
	for {
		hs, err := r.store.next(target, nil, hintBatch)
		if err != nil || len(hs) == 0 {
			return
		}
		for _, hn := range hs {
			if r.store.remove(target, hn) == nil {
				r.store.drop(reason, 1)
			}
		}
	}
}

// replayTarget sends target its hints in the order they were stored, deleting each once
// acknowledged, and stops at the first that fails (to retry later). It returns how many it
// replayed.
func (r *hintReplayer) replayTarget(ctx context.Context, target coordinator.NodeID) (int, error) {
	replayed := 0
	var after []byte
	for {
		hs, err := r.store.next(target, after, hintBatch)
		if err != nil || len(hs) == 0 {
			return replayed, err
		}
		for _, hn := range hs {
			after = hn.key
			ok, err := r.replayOne(ctx, target, hn)
			if err != nil {
				return replayed, err
			}
			if ok {
				replayed++
			}
		}
	}
}

// replayOne replays one hint: it reports whether the replica applied it, and fails when the
// hint must be kept for later (the replica failed or did not answer).
func (r *hintReplayer) replayOne(ctx context.Context, target coordinator.NodeID, hn hint) (bool, error) {
	var m replicapb.Mutation
	if err := proto.Unmarshal(hn.val, &m); err != nil {
		return false, r.removeDropped(target, hn, dropCorrupt)
	}
	t, ok := r.tables(schema.TableID(m.TableId))
	if !ok {
		return false, r.removeDropped(target, hn, dropTable)
	}
	if r.now().Sub(hn.storedAt) > time.Duration(t.GCGraceSeconds())*time.Second {
		return false, r.removeDropped(target, hn, dropExpired)
	}
	if r.throttle != nil {
		n := min(len(hn.val), r.throttle.Burst())
		if err := r.throttle.WaitN(ctx, n); err != nil {
			return false, err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	// Hint replay is internal traffic: never counted by the limiter, never rejected.
	resp, err := r.send(cctx, target, &replicapb.MutateRequest{Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_NONE}, Mutation: &m})
	if err != nil {
		return false, err
	}
	switch {
	case resp.GetStatus() == replicapb.Status_STATUS_OK:
		r.store.replayed.Add(1)
		return true, r.store.remove(target, hn)
	case resp.GetError().GetCode() == replicapb.Error_BAD_REQUEST:
		r.log.Warn("replica refused a hint; dropped", "target", string(target), "err", resp.GetError().GetMessage())
		return false, r.removeDropped(target, hn, dropRefused)
	}
	return false, fmt.Errorf("replica %s: %v: %s", target, resp.GetStatus(), resp.GetError().GetMessage())
}

func (r *hintReplayer) removeDropped(target coordinator.NodeID, hn hint, reason string) error {
	if err := r.store.remove(target, hn); err != nil {
		return err
	}
	r.store.drop(reason, 1)
	return nil
}

// stop ends the replayer (a replay in progress is canceled; its hint stays) and waits for it.
func (r *hintReplayer) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// openHints opens the node's hint store (hints/ in the data directory).
func (n *Node) openHints(now func() time.Time) error {
	h, err := openHintStore(hintStoreConfig{
		Dir:      filepath.Join(n.cfg.DataDir, "hints"),
		Logger:   n.cfg.Logger.With("component", "hints"),
		Now:      now,
		Window:   n.cfg.MaxHintWindow,
		MaxBytes: n.cfg.MaxHintsSizePerHost,
		IsLive:   func(id coordinator.NodeID) bool { return n.cluster.IsLive(cluster.NodeID(id)) },
	})
	if err != nil {
		return err
	}
	n.hints = h
	return nil
}

// startHintReplay starts the goroutine that replays hints to replicas that are up.
func (n *Node) startHintReplay(now func() time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	limit := int(min(n.cfg.HintsThrottle, int64(MessageLimit(n.cfg.MaxMutationSize))))
	r := &hintReplayer{
		store:    n.hints,
		log:      n.log.With("component", "hints"),
		now:      now,
		send:     n.trans.Mutate,
		tables:   n.schema.TableByID,
		isMember: func(id coordinator.NodeID) bool { _, ok := n.cluster.Member(cluster.NodeID(id)); return ok },
		isLive:   func(id coordinator.NodeID) bool { return n.cluster.IsLive(cluster.NodeID(id)) },
		timeout:  n.cfg.WriteTimeout,
		throttle: rate.NewLimiter(rate.Limit(n.cfg.HintsThrottle), limit),
		paused:   n.cfg.Testing.pauseHintReplay(),
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	n.hinter = r
	members := func() map[coordinator.NodeID]bool {
		out := map[coordinator.NodeID]bool{}
		for _, m := range n.cluster.Members() {
			out[coordinator.NodeID(m.ID)] = m.Live
		}
		return out
	}
	go r.run(ctx, n.cluster.Changed, members)
}
