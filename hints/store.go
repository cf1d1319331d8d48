package hints

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// Defaults of the hint settings.
const (
	// DefaultWindow is the max hint window when none is set: Cassandra's 3 hours.
	DefaultWindow = 3 * time.Hour
	// DefaultMaxBytes is the bound of one replica's hints when none is set.
	DefaultMaxBytes = 128 << 20
	// DefaultThrottle is the replay's bytes per second when none is set: Cassandra's
	// hinted_handoff_throttle, 1024 KiB per second.
	DefaultThrottle = 1 << 20
)

// formatMajorVersion is the pebble on-disk format of the hint store, pinned as the replica's
// store pins its own (replica.FormatMajorVersion), so that a pebble upgrade never changes it
// silently.
const formatMajorVersion = pebble.FormatValueSeparation

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
	dropDisk     = "disk"          // the disk is too full to take it (Config.Space)
	dropQueue    = "queue"         // the coordinator's hint queue was full: the store fell behind (DroppedHints)
	hintKeyByte  = 'h'
	hintIDSuffix = 16 // stored-at nanos and a sequence number, after the target id
)

// dropReasons lists the reasons in the order the metrics report them.
func dropReasons() [10]string {
	return [...]string{dropWindow, dropFull, dropExpired, dropTable, dropRefused, dropRemoved, dropError, dropCorrupt, dropDisk, dropQueue}
}

// Membership is the cluster as hints see it. The node implements it over its membership; its
// methods must not block for long.
type Membership interface {
	// IsLive reports whether node id is up. It is called as hints are stored: it must be cheap.
	IsLive(id coordinator.NodeID) bool
	// IsMember reports whether node id is a member of the cluster, up or down.
	IsMember(id coordinator.NodeID) bool
	// Members returns every member of the cluster and whether it is up.
	Members() map[coordinator.NodeID]bool
	// Changed returns a channel closed at the next membership change.
	Changed() <-chan struct{}
}

// target is what the store keeps in memory about one replica's hints.
type target struct {
	count int
	bytes int64
}

// Store keeps hints on disk, per target replica, and counts them. It implements
// shell.HintSink and prometheus.Collector; it is safe for concurrent use.
type Store struct {
	db       *pebble.DB
	log      *slog.Logger
	now      func() time.Time
	window   time.Duration
	maxBytes int64
	throttle int64 // bytes per second, for the Replayer
	members  Membership
	space    func() error
	seq      atomic.Uint64

	mu        sync.Mutex
	closed    bool
	targets   map[coordinator.NodeID]*target
	downSince map[coordinator.NodeID]time.Time

	stored, replayed atomic.Uint64
	dropped          map[string]*atomic.Uint64
	storedDesc       *prometheus.Desc
	replayedDesc     *prometheus.Desc
	droppedDesc      *prometheus.Desc
	pendingDesc      *prometheus.Desc
	pendingBytesDesc *prometheus.Desc
}

// Options are the hint settings an operator chooses: how long and how much a node keeps hints
// for a replica, and how fast it replays them. The zero value of each field means its default
// (EnsureDefaults). The YAML tags are the keys of kvnode's configuration file (node.Config nests
// Options).
type Options struct {
	// Window is the max hint window: how long a replica may be down and still get hints.
	// Default DefaultWindow.
	Window time.Duration `yaml:"max_hint_window"`
	// MaxBytes bounds the hints kept for one replica, in bytes; hints beyond it are dropped.
	// Default DefaultMaxBytes.
	MaxBytes int64 `yaml:"max_hints_size_per_host"`
	// Throttle is how many bytes of hints per second a Replayer of the store sends, so that
	// replay after an outage does not starve client traffic. Default DefaultThrottle.
	Throttle int64 `yaml:"hinted_handoff_throttle"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Throttle == 0 {
		o.Throttle = DefaultThrottle
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable settings. Each error names the
// field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	switch {
	case o.Window <= 0:
		return fmt.Errorf("hints: Options.Window (max_hint_window) is %v, want a positive duration", o.Window)
	case o.MaxBytes < 1:
		return fmt.Errorf("hints: Options.MaxBytes (max_hints_size_per_host) is %d, want a positive number of bytes", o.MaxBytes)
	case o.Throttle < 1:
		return fmt.Errorf("hints: Options.Throttle (hinted_handoff_throttle) is %d, want a positive number of bytes per second", o.Throttle)
	}
	return nil
}

// Config configures Open: the store's Options and what the node wires in. Dir and Members are
// required; the zero value of every other field means its default.
type Config struct {
	Options
	// Dir is the store's directory, created when missing.
	Dir string
	// Members says which replicas are up: a replica down longer than Window gets no hints.
	Members Membership
	// Logger receives the store's errors. Nil discards them.
	Logger *slog.Logger
	// Now is the clock of the hints' stored-at times. Default time.Now.
	Now func() time.Time
	// Space, if set, says why the disk cannot take hints now (the node's free space under half
	// its reserve); a hint is dropped then, counted with reason disk. Nil takes every hint.
	Space func() error
	// OnFatal, if set, is called when the store's pebble meets an error it cannot recover from
	// (its Logger's Fatalf: a failed write or sync, a corruption), after it is logged: the node's
	// disk failure policy. It must not block; it may end the process. Either way the goroutine
	// that met the error then blocks for good, as pebble requires.
	OnFatal func(error)
}

// EnsureDefaults replaces zero fields with their defaults, the Options' among them, and returns
// c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a store Open can open.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("hints: Config.Dir is empty")
	case c.Members == nil:
		return errors.New("hints: Config.Members is nil")
	}
	return c.Options.Validate()
}

// Open opens (creating it if needed) the hint store in cfg.Dir and counts the hints it holds.
func Open(cfg Config) (*Store, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	db, err := pebble.Open(cfg.Dir, &pebble.Options{
		CacheSize:          8 << 20,
		MemTableSize:       4 << 20,
		FormatMajorVersion: formatMajorVersion,
		Logger:             pebbleLogger{l: cfg.Logger, fatal: cfg.OnFatal},
	})
	if err != nil {
		return nil, fmt.Errorf("hints: open store in %s: %w", cfg.Dir, err)
	}
	h := &Store{
		db: db, log: cfg.Logger, now: cfg.Now, window: cfg.Window, maxBytes: cfg.MaxBytes, throttle: cfg.Throttle, members: cfg.Members, space: cfg.Space,
		targets:   map[coordinator.NodeID]*target{},
		downSince: map[coordinator.NodeID]time.Time{},
		dropped:   map[string]*atomic.Uint64{},
		storedDesc: prometheus.NewDesc("kvnode_hints_stored_total",
			"Hints this node stored as a coordinator: writes a replica missed (down, failed or timed out), kept to replay to it.", nil, nil),
		replayedDesc: prometheus.NewDesc("kvnode_hints_replayed_total",
			"Hints this node replayed to their replica once it was up again, and deleted.", nil, nil),
		droppedDesc: prometheus.NewDesc("kvnode_hints_dropped_total",
			"Hints this node did not store or did not replay, by reason: window (the replica was down longer than max_hint_window), full (max_hints_size_per_host), expired (older than the table's gc_grace_seconds), unknown_table, refused, removed, error, corrupt, disk (free space under half the reserve), queue (the coordinator's hint queue was full: this store fell behind). Their replicas need a repair.", []string{"reason"}, nil),
		pendingDesc: prometheus.NewDesc("kvnode_hints_pending",
			"Hints this node holds, waiting for their replica.", nil, nil),
		pendingBytesDesc: prometheus.NewDesc("kvnode_hints_pending_bytes",
			"Bytes of the hints this node holds.", nil, nil),
	}
	for _, r := range dropReasons() {
		h.dropped[r] = new(atomic.Uint64)
	}
	if err := h.load(); err != nil {
		db.Close()
		return nil, err
	}
	return h, nil
}

// pebbleLogger sends the hint store's pebble errors to the node's log and drops its
// informational chatter.
type pebbleLogger struct {
	l     *slog.Logger
	fatal func(error) // Config.OnFatal
}

func (p pebbleLogger) Infof(string, ...any) {}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble-hints")
}

// Fatalf is called by pebble on an error it cannot recover from and must not return: pebble's
// state is undefined past it, and the calling goroutine may hold its locks. It logs, tells
// Config.OnFatal, and blocks its goroutine for good. It never panics: a coordinator storing a hint
// would recover the panic as one write's failure, and the node would serve on.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble-hints", "fatal", true)
	if p.fatal != nil {
		err := &fatalError{msg: "hint store: pebble: " + msg}
		for _, a := range args {
			if cause, ok := a.(error); ok {
				err.causes = append(err.causes, cause) // the failure is classified by them
			}
		}
		p.fatal(err)
	}
	select {}
}

// fatalError is what pebble's Fatalf reported: its message, wrapping the errors among its
// arguments.
type fatalError struct {
	msg    string
	causes []error
}

func (e *fatalError) Error() string   { return e.msg }
func (e *fatalError) Unwrap() []error { return e.causes }

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
func (h *Store) load() error {
	it, err := h.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("hints: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		id, _, ok := parseHintKey(it.Key())
		if !ok {
			continue // counted nowhere; replay deletes it as corrupt when it meets it
		}
		t := h.target(id)
		t.count++
		t.bytes += int64(len(it.Key()) + len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("hints: %w", err)
	}
	return nil
}

// target returns id's counts, creating them. Called with mu held (or before the store is
// shared).
func (h *Store) target(id coordinator.NodeID) *target {
	t := h.targets[id]
	if t == nil {
		t = &target{}
		h.targets[id] = t
	}
	return t
}

func (h *Store) drop(reason string, n int) { h.dropped[reason].Add(uint64(n)) }

// StoreHint keeps m for target (shell.HintSink), unless target has been down longer than the
// window or already has its share of hints.
func (h *Store) StoreHint(target coordinator.NodeID, m *replicapb.Mutation) {
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
	if !h.members.IsLive(target) {
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
	if h.space != nil && h.space() != nil {
		h.drop(dropDisk, 1)
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

// DroppedHints counts n hints the coordinator dropped before they reached the store, because its
// hint queue was full while the store fell behind (shell.HintDropCounter): reason "queue".
func (h *Store) DroppedHints(n int) { h.drop(dropQueue, n) }

// observe updates when each member went down from the cluster's current view: a live member
// has no down time, a member seen down for the first time went down now.
func (h *Store) observe(members map[coordinator.NodeID]bool) {
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

// pendingTargets returns the targets that hold hints.
func (h *Store) pendingTargets() []coordinator.NodeID {
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

// Pending returns how many hints the store holds, and their bytes.
func (h *Store) Pending() (hints int, bytes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.targets {
		hints += t.count
		bytes += t.bytes
	}
	return hints, bytes
}

// hint is one stored hint as replay reads it.
type hint struct {
	key      []byte
	storedAt time.Time
	val      []byte
}

// errClosed is the error of reading a closed store.
var errClosed = errors.New("hints: the store is closed")

// next returns up to n of target's hints after key after (from the first when nil), in the
// order they were stored.
func (h *Store) next(target coordinator.NodeID, after []byte, n int) ([]hint, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, errClosed
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

// remove deletes a hint of target.
func (h *Store) remove(target coordinator.NodeID, hn hint) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
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

// Close closes the database; later hints are not stored. Its Replayer must be stopped first.
func (h *Store) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if err := h.db.Close(); err != nil {
		return fmt.Errorf("hints: close store: %w", err)
	}
	return nil
}

// Describe implements prometheus.Collector.
func (h *Store) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.storedDesc
	ch <- h.replayedDesc
	ch <- h.droppedDesc
	ch <- h.pendingDesc
	ch <- h.pendingBytesDesc
}

// Collect implements prometheus.Collector.
func (h *Store) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(h.storedDesc, prometheus.CounterValue, float64(h.stored.Load()))
	ch <- prometheus.MustNewConstMetric(h.replayedDesc, prometheus.CounterValue, float64(h.replayed.Load()))
	for _, r := range dropReasons() {
		ch <- prometheus.MustNewConstMetric(h.droppedDesc, prometheus.CounterValue, float64(h.dropped[r].Load()), r)
	}
	n, b := h.Pending()
	ch <- prometheus.MustNewConstMetric(h.pendingDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(h.pendingBytesDesc, prometheus.GaugeValue, float64(b))
}
