package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/atomicfile"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Reasons a snapshot was taken (Manifest.Reason), and the prefixes of automatic snapshots' tags.
const (
	ReasonManual    = "manual"
	ReasonDropped   = "dropped"
	ReasonTruncated = "truncated"
)

// Scopes of a snapshot (Manifest.Scope).
const (
	ScopeNode     = "node"
	ScopeKeyspace = "keyspace"
	ScopeTable    = "table"
)

// Files and directories of a snapshot.
const (
	manifestFile = "manifest.json"
	dataDir      = "data"
	tmpPrefix    = ".tmp-"
	// maxTagLen bounds a tag: it is a directory name.
	maxTagLen = 200
	// manifestFormat is Manifest.Format of the snapshots this package writes.
	manifestFormat = 1
)

// Errors of the Manager, each wrapped with what it is about.
var (
	// ErrBadTag reports a tag that is not a valid snapshot name.
	ErrBadTag = errors.New("invalid snapshot tag")
	// ErrExists reports a tag a snapshot has already.
	ErrExists = errors.New("a snapshot with this tag exists already")
	// ErrNotFound reports a tag, keyspace or table that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoTarget reports a restore into a table that does not exist, or does not match the
	// snapshot's.
	ErrNoTarget = errors.New("no table to restore into")
)

// Options are the operator's settings of snapshots.
type Options struct {
	// NoAutoSnapshot turns off the snapshot taken of a table before DROP TABLE, DROP KEYSPACE
	// and TRUNCATE remove its data (Cassandra's auto_snapshot, on by default). It is the inverse
	// of the configuration file's auto_snapshot key and flag (cmd/kvnode), as Storage.NoSync is of
	// sync.
	NoAutoSnapshot bool `yaml:"-"`
}

// Config configures a Manager.
type Config struct {
	Options
	// Dir is where the snapshots live: the node's data directory's snapshots/. Required.
	Dir string
	// Store is the node's store, which snapshots checkpoint. Required.
	Store *replica.Store
	// StoreDir is the store's directory, whose files a snapshot's true size leaves out. Required.
	StoreDir string
	// Node is the id of the node, recorded in manifests.
	Node string
	// Now is the clock of manifests and default tags. Default time.Now.
	Now func() time.Time
	// Logger receives what automatic snapshots do. Default: discard.
	Logger *slog.Logger
}

// EnsureDefaults replaces zero fields with their defaults and returns c.
func (c *Config) EnsureDefaults() *Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a Manager New can build.
func (c *Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("snapshot: Config.Dir is empty")
	case c.Store == nil:
		return errors.New("snapshot: Config.Store is nil")
	case c.StoreDir == "":
		return errors.New("snapshot: Config.StoreDir is empty")
	}
	return nil
}

// Manifest describes a snapshot: manifest.json.
type Manifest struct {
	// Format is the manifest's format version (1).
	Format int    `json:"format"`
	Tag    string `json:"tag"`
	// Created is when the snapshot was taken.
	Created time.Time `json:"created"`
	// Node is the id of the node whose data the snapshot holds.
	Node string `json:"node"`
	// Scope is ScopeNode, ScopeKeyspace or ScopeTable; Keyspace and Table name it.
	Scope    string `json:"scope"`
	Keyspace string `json:"keyspace,omitempty"`
	Table    string `json:"table,omitempty"`
	// Reason is ReasonManual, ReasonDropped or ReasonTruncated.
	Reason string `json:"reason"`
	// Keyspaces and Tables are the schema of the tables held, as DESCRIBE prints it.
	Keyspaces []KeyspaceEntry `json:"keyspaces"`
	Tables    []TableEntry    `json:"tables"`
}

// KeyspaceEntry is a keyspace of a snapshot and its CREATE KEYSPACE statement.
type KeyspaceEntry struct {
	Name string `json:"name"`
	CQL  string `json:"cql"`
}

// TableEntry is a table of a snapshot: its id when taken (its keys' prefix in the checkpoint)
// and its CREATE TABLE statement.
type TableEntry struct {
	Keyspace string `json:"keyspace"`
	Name     string `json:"name"`
	ID       uint64 `json:"id"`
	CQL      string `json:"cql"`
}

// Info is a listed snapshot: its manifest and the space it takes.
type Info struct {
	Manifest
	// Bytes is the size of its files, each file once however many links it has.
	Bytes int64
	// TrueBytes is the size of its files that the live store does not share (Cassandra's "true
	// size"): what clearing it would free, unless another snapshot shares them too.
	TrueBytes int64
}

// Manager takes, lists, clears and restores a node's snapshots. It is safe for concurrent use;
// it is a prometheus.Collector of the snapshots' count and size.
type Manager struct {
	cfg Config
	// mu serialises taking and clearing.
	mu sync.Mutex

	taken    [3]atomic.Uint64 // by reason: manual, dropped, truncated
	failed   atomic.Uint64    // automatic snapshots that failed
	lastTook atomic.Int64     // nanoseconds of the last snapshot taken

	countDesc, bytesDesc, trueDesc, takenDesc, failedDesc, durDesc *prometheus.Desc
}

// New returns the Manager of the snapshots in cfg.Dir, creating the directory and removing what
// an interrupted snapshot left behind.
func New(cfg Config) (*Manager, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if err := os.RemoveAll(filepath.Join(cfg.Dir, e.Name())); err != nil {
				return nil, fmt.Errorf("snapshot: remove an interrupted snapshot: %w", err)
			}
		}
	}
	return &Manager{
		cfg: cfg,
		countDesc: prometheus.NewDesc("kvnode_snapshots",
			"Snapshots this node holds (kvnode snapshot --list).", nil, nil),
		bytesDesc: prometheus.NewDesc("kvnode_snapshot_bytes",
			"Size of this node's snapshots' files, each file once however many snapshots link it.", nil, nil),
		trueDesc: prometheus.NewDesc("kvnode_snapshot_true_bytes",
			"Size of this node's snapshots' files that the live store does not share: the disk space clearing every snapshot frees.", nil, nil),
		takenDesc: prometheus.NewDesc("kvnode_snapshots_taken_total",
			"Snapshots this node took, by reason: manual (kvnode snapshot), dropped (before DROP TABLE or DROP KEYSPACE), truncated (before TRUNCATE).", []string{"reason"}, nil),
		failedDesc: prometheus.NewDesc("kvnode_snapshot_auto_failures_total",
			"Automatic snapshots (auto_snapshot) that failed: the table's data was dropped or truncated without one; the log says why.", nil, nil),
		durDesc: prometheus.NewDesc("kvnode_snapshot_last_duration_seconds",
			"How long this node's last snapshot took (flush and checkpoint).", nil, nil),
	}, nil
}

// CheckTag reports whether tag can name a snapshot: 1 to 200 letters, digits, '.', '_' and '-',
// not starting with '.' (so neither "." nor ".." nor a hidden name), no path separator.
func CheckTag(tag string) error {
	switch {
	case tag == "":
		return fmt.Errorf("%w: the tag is empty", ErrBadTag)
	case len(tag) > maxTagLen:
		return fmt.Errorf("%w %.20q...: longer than %d bytes", ErrBadTag, tag, maxTagLen)
	case strings.ContainsAny(tag, `/\`):
		return fmt.Errorf("%w %q: it contains a path separator; a tag names one directory under snapshots/", ErrBadTag, tag)
	case tag[0] == '.':
		return fmt.Errorf("%w %q: it starts with '.' (\".\", \"..\" and hidden names are not tags)", ErrBadTag, tag)
	}
	for _, r := range tag {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w %q: %q is not allowed; use letters, digits, '.', '_' and '-'", ErrBadTag, tag, r)
		}
	}
	return nil
}

// Request is what Take snapshots.
type Request struct {
	// Tag names the snapshot; empty means the time in milliseconds since the Unix epoch, as
	// Cassandra names its snapshots.
	Tag string
	// Keyspace and Table restrict the snapshot to a keyspace or one of its tables; both empty
	// mean every table of the schema (the node).
	Keyspace, Table string
	// Reason is recorded in the manifest; empty means ReasonManual.
	Reason string
}

// Take snapshots the tables of s that req names, returning the snapshot's manifest. An unknown
// keyspace or table is ErrNotFound, a tag in use ErrExists, an invalid one ErrBadTag; a
// failure of the disk leaves no snapshot behind.
func (m *Manager) Take(s *schema.Schema, req Request) (*Manifest, error) {
	if req.Reason == "" {
		req.Reason = ReasonManual
	}
	now := m.cfg.Now()
	if req.Tag == "" {
		req.Tag = strconv.FormatInt(now.UnixMilli(), 10)
	}
	if err := CheckTag(req.Tag); err != nil {
		return nil, err
	}
	man := &Manifest{Format: manifestFormat, Tag: req.Tag, Created: now.UTC(), Node: m.cfg.Node, Reason: req.Reason,
		Keyspaces: []KeyspaceEntry{}, Tables: []TableEntry{}}
	var tables []*schema.Table
	switch {
	case req.Table != "":
		if req.Keyspace == "" {
			return nil, fmt.Errorf("snapshot: table %q needs its keyspace", req.Table)
		}
		t, ok := s.Table(req.Keyspace, req.Table)
		if !ok {
			if _, ok := s.Keyspace(req.Keyspace); !ok {
				return nil, fmt.Errorf("snapshot: keyspace %s: %w", cql.QuoteIdent(req.Keyspace), ErrNotFound)
			}
			return nil, fmt.Errorf("snapshot: table %s.%s: %w", cql.QuoteIdent(req.Keyspace), cql.QuoteIdent(req.Table), ErrNotFound)
		}
		tables = []*schema.Table{t}
		man.Scope, man.Keyspace, man.Table = ScopeTable, t.Keyspace, t.Name
	case req.Keyspace != "":
		if _, ok := s.Keyspace(req.Keyspace); !ok {
			return nil, fmt.Errorf("snapshot: keyspace %s: %w", cql.QuoteIdent(req.Keyspace), ErrNotFound)
		}
		tables = s.Tables(req.Keyspace)
		man.Scope, man.Keyspace = ScopeKeyspace, req.Keyspace
	default:
		tables = s.Tables("")
		man.Scope = ScopeNode
	}
	var ids []schema.TableID
	for _, t := range tables {
		if !slices.ContainsFunc(man.Keyspaces, func(k KeyspaceEntry) bool { return k.Name == t.Keyspace }) {
			if ks, ok := s.Keyspace(t.Keyspace); ok {
				man.Keyspaces = append(man.Keyspaces, KeyspaceEntry{Name: ks.Name, CQL: ks.CreateStatement()})
			}
		}
		man.Tables = append(man.Tables, TableEntry{Keyspace: t.Keyspace, Name: t.Name, ID: uint64(t.ID), CQL: t.CreateStatement()})
		ids = append(ids, t.ID)
	}
	if len(ids) == 0 {
		// Nothing to hold: checkpoint no table's sstables (a span no key lies in).
		ids = []schema.TableID{0}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return man, m.write(man, ids)
}

// write checkpoints the tables ids and writes man beside them, under a temporary name renamed
// to man.Tag once both are durable. m.mu must be held.
func (m *Manager) write(man *Manifest, ids []schema.TableID) error {
	final := filepath.Join(m.cfg.Dir, man.Tag)
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("snapshot %s: %w (kvnode snapshot --clear %s removes it)", man.Tag, ErrExists, man.Tag)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot %s: %w", man.Tag, err)
	}
	start := time.Now()
	tmp := filepath.Join(m.cfg.Dir, tmpPrefix+man.Tag)
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("snapshot %s: %w", man.Tag, err)
	}
	err := func() error {
		if err := os.Mkdir(tmp, 0o755); err != nil {
			return err
		}
		if err := m.cfg.Store.Checkpoint(filepath.Join(tmp, dataDir), ids); err != nil {
			return err
		}
		data, err := json.MarshalIndent(man, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(tmp, manifestFile), append(data, '\n')); err != nil {
			return err
		}
		if err := os.Rename(tmp, final); err != nil {
			return err
		}
		return syncDir(m.cfg.Dir)
	}()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("snapshot %s: %w", man.Tag, err)
	}
	m.lastTook.Store(int64(time.Since(start)))
	switch man.Reason {
	case ReasonDropped:
		m.taken[1].Add(1)
	case ReasonTruncated:
		m.taken[2].Add(1)
	default:
		m.taken[0].Add(1)
	}
	return nil
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Auto snapshots table t of s before reason (ReasonDropped or ReasonTruncated) removes its
// data, unless Options.NoAutoSnapshot; the tag is <reason>-<milliseconds>-<keyspace>.<table>,
// as Cassandra names them. It returns the tag, "" when auto snapshots are off.
func (m *Manager) Auto(s *schema.Schema, t *schema.Table, reason string) (string, error) {
	if m.cfg.NoAutoSnapshot {
		return "", nil
	}
	base := fmt.Sprintf("%s-%d-%s.%s", reason, m.cfg.Now().UnixMilli(), t.Keyspace, t.Name)
	tag := base
	for i := 2; ; i++ {
		man, err := m.Take(s, Request{Tag: tag, Keyspace: t.Keyspace, Table: t.Name, Reason: reason})
		if errors.Is(err, ErrExists) && i < 100 {
			tag = fmt.Sprintf("%s-%d", base, i)
			continue
		}
		if err != nil {
			m.failed.Add(1)
			return "", err
		}
		return man.Tag, nil
	}
}

// AutoFailed counts an automatic snapshot that failed outside Auto.
func (m *Manager) AutoFailed() { m.failed.Add(1) }

// Enabled reports whether automatic snapshots are on.
func (m *Manager) Enabled() bool { return !m.cfg.NoAutoSnapshot }

// Load returns the manifest of the snapshot tag, ErrNotFound when there is none.
func (m *Manager) Load(tag string) (*Manifest, error) {
	if err := CheckTag(tag); err != nil {
		return nil, err
	}
	return m.load(tag)
}

func (m *Manager) load(tag string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(m.cfg.Dir, tag, manifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot %s: %w", tag, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", tag, err)
	}
	var man Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, fmt.Errorf("snapshot %s: %s is damaged: %w", tag, manifestFile, err)
	}
	if man.Format != manifestFormat {
		return nil, fmt.Errorf("snapshot %s: manifest format %d, this kvnode reads format %d", tag, man.Format, manifestFormat)
	}
	// A snapshot copied in from elsewhere under another name (a restore into a new cluster) goes
	// by its directory's name.
	man.Tag = tag
	return &man, nil
}

// List returns the node's snapshots, oldest first, with their sizes.
func (m *Manager) List() ([]Info, error) {
	tags, err := m.tags()
	if err != nil {
		return nil, err
	}
	live, err := inodes(m.cfg.StoreDir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: list the store's files: %w", err)
	}
	var out []Info
	for _, tag := range tags {
		man, err := m.load(tag)
		if err != nil {
			return nil, err
		}
		info := Info{Manifest: *man}
		seen := map[fileID]bool{}
		if err := walkFiles(filepath.Join(m.cfg.Dir, tag), func(id fileID, size int64) {
			if seen[id] {
				return
			}
			seen[id] = true
			info.Bytes += size
			if !live[id] {
				info.TrueBytes += size
			}
		}); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", tag, err)
		}
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b Info) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Info returns the snapshot tag as List does, ErrNotFound when there is none.
func (m *Manager) Info(tag string) (Info, error) {
	list, err := m.List()
	if err != nil {
		return Info{}, err
	}
	for _, i := range list {
		if i.Tag == tag {
			return i, nil
		}
	}
	return Info{}, fmt.Errorf("snapshot %s: %w", tag, ErrNotFound)
}

// tags returns the names of the complete snapshots' directories.
func (m *Manager) tags() ([]string, error) {
	entries, err := os.ReadDir(m.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var tags []string
	for _, e := range entries {
		if e.IsDir() && CheckTag(e.Name()) == nil {
			tags = append(tags, e.Name())
		}
	}
	return tags, nil
}

// Clear removes the snapshot tag, or every snapshot when tag is empty, and returns the tags
// removed. An unknown tag is ErrNotFound.
func (m *Manager) Clear(tag string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var tags []string
	if tag == "" {
		var err error
		if tags, err = m.tags(); err != nil {
			return nil, err
		}
	} else {
		if err := CheckTag(tag); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(m.cfg.Dir, tag)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("snapshot %s: %w", tag, ErrNotFound)
			}
			return nil, fmt.Errorf("snapshot %s: %w", tag, err)
		}
		tags = []string{tag}
	}
	var done []string
	for _, t := range tags {
		// Renamed first, so that a crash halfway never leaves a listed, partial snapshot.
		tmp := filepath.Join(m.cfg.Dir, tmpPrefix+t)
		if err := os.Rename(filepath.Join(m.cfg.Dir, t), tmp); err != nil {
			return done, fmt.Errorf("snapshot %s: clear: %w", t, err)
		}
		if err := os.RemoveAll(tmp); err != nil {
			return done, fmt.Errorf("snapshot %s: clear: %w", t, err)
		}
		done = append(done, t)
	}
	return done, nil
}

// Describe implements prometheus.Collector.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.countDesc, m.bytesDesc, m.trueDesc, m.takenDesc, m.failedDesc, m.durDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. The sizes are read from the disk at each scrape (a
// stat per file of the snapshots).
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	for i, r := range []string{ReasonManual, ReasonDropped, ReasonTruncated} {
		ch <- prometheus.MustNewConstMetric(m.takenDesc, prometheus.CounterValue, float64(m.taken[i].Load()), r)
	}
	ch <- prometheus.MustNewConstMetric(m.failedDesc, prometheus.CounterValue, float64(m.failed.Load()))
	ch <- prometheus.MustNewConstMetric(m.durDesc, prometheus.GaugeValue, time.Duration(m.lastTook.Load()).Seconds())
	tags, err := m.tags()
	if err != nil {
		return
	}
	live, err := inodes(m.cfg.StoreDir)
	if err != nil {
		return
	}
	var all, notLive int64
	seen := map[fileID]bool{}
	for _, tag := range tags {
		_ = walkFiles(filepath.Join(m.cfg.Dir, tag), func(id fileID, size int64) {
			if seen[id] {
				return
			}
			seen[id] = true
			all += size
			if !live[id] {
				notLive += size
			}
		})
	}
	ch <- prometheus.MustNewConstMetric(m.countDesc, prometheus.GaugeValue, float64(len(tags)))
	ch <- prometheus.MustNewConstMetric(m.bytesDesc, prometheus.GaugeValue, float64(all))
	ch <- prometheus.MustNewConstMetric(m.trueDesc, prometheus.GaugeValue, float64(notLive))
}
