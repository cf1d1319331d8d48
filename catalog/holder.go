package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/atomicfile"
	"github.com/kvnode/kvnode/schema"
)

// schemaFile is the node's persisted schema, in schema.Encode's format.
const schemaFile = "schema.bin"

// Options are the schema's settings an operator chooses: the limits on what DDL may grow, and
// how long dropped objects' tombstones stay. The zero value of each field means its default
// (EnsureDefaults). The YAML tags are the keys of kvnode's configuration file (node.Config nests
// Options; the Limits' keys sit beside TombstoneGrace's).
type Options struct {
	// Limits bounds what DDL may grow. Defaults schema.DefaultMaxColumnsPerTable,
	// schema.DefaultMaxTablesPerKeyspace and schema.DefaultMaxSchemaSize.
	Limits schema.Limits `yaml:",inline"`
	// TombstoneGrace is the least time a dropped keyspace's or table's tombstone stays in the
	// schema (CollectTombstones): it goes once it is that old and every member of the ring has
	// the drop. Keep it well above the nodes' clock skew. Default DefaultTombstoneGrace.
	TombstoneGrace time.Duration `yaml:"schema_tombstone_grace"`
}

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	o.Limits.EnsureDefaults()
	if o.TombstoneGrace == 0 {
		o.TombstoneGrace = DefaultTombstoneGrace
	}
	return o
}

// Validate reports whether o, after EnsureDefaults, holds usable settings. Each error names the
// field, its configuration key and the values allowed.
func (o *Options) Validate() error {
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	if o.TombstoneGrace <= 0 {
		return fmt.Errorf("catalog: Options.TombstoneGrace (schema_tombstone_grace) is %v, want a positive duration", o.TombstoneGrace)
	}
	return nil
}

// Config configures Open: the schema's Options and what the node wires in. Dir is required; the
// zero value of every other field means its default.
type Config struct {
	Options
	// Dir is the directory holding the schema (schema.bin) and the acceptor state of schema
	// consensus (schema-paxos.bin). It must exist.
	Dir string
	// System is the code-defined replicated system keyspace (system_auth): its tables resolve
	// by id beside the cluster's schema (TableByID), so replicas store and serve them. Nil
	// means none.
	System *schema.Schema
	// Now is the clock that stamps the versions of this node's changes and its ballots.
	// Default time.Now.
	Now func() time.Time
}

// EnsureDefaults replaces zero fields with their defaults, the Options' among them, and returns
// c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.System == nil {
		c.System = schema.New()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a holder Open can open.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("catalog: Config.Dir is empty")
	}
	return c.Options.Validate()
}

// Holder owns the node's schema. Readers (the replica hot path, the coordinator) load an
// immutable *schema.Schema through an atomic pointer, without locks; writers (local DDL and merges
// from peers) are serialised by mu and persist before publishing, so a schema a peer or client has
// seen survives a crash.
//
// DDL goes through schema consensus (paxos.go): the change is agreed on per keyspace by a
// majority of the cluster's members before any node's schema holds it; the holder then merges
// the agreed state of the keyspace, like any state a peer pushes.
//
// It is the one object behind the node's views of its schema: the cluster's schema store
// (Digest, Snapshot, Merge), the coordinator's schema manager (Schema, ApplyDDL), the replica's
// schema source (TableByID) and the native front end's (Schema, SchemaChanged).
type Holder struct {
	path  string
	now   func() time.Time
	grace time.Duration

	mu       sync.Mutex // serialises writers
	cur      atomic.Pointer[schema.Schema]
	digest   atomic.Pointer[string]
	changed  atomic.Pointer[chan struct{}] // closed at the next publish (SchemaChanged)
	lastTS   int64                         // the last version timestamp this node gave a change; guarded by mu
	onDrop   dropHooks
	acceptor *Acceptor
	limits   schema.Limits
	system   *schema.Schema

	// onTruncate deletes a truncated table's data (OnTruncate); guarded by mu.
	onTruncate func(*schema.Table) error

	// Set by Start, guarded by mu: nil before.
	nodeID   string
	proposer *proposer
	gossip   Gossip
	log      *slog.Logger
}

// dropHooks are what OnDrop installed.
type dropHooks struct {
	data   func(schema.TableID) error
	forget []func(*schema.Table)
}

// Open loads the schema and the acceptor state persisted in cfg.Dir, or starts empty when
// there are none. The holder serves reads and merges at once; it changes the schema by
// consensus and collects tombstones once Start gave it the cluster.
func Open(cfg Config) (*Holder, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	h := &Holder{
		path: filepath.Join(cfg.Dir, schemaFile), now: cfg.Now, grace: cfg.TombstoneGrace,
		limits: cfg.Limits, system: cfg.System,
	}
	s := schema.New()
	data, err := os.ReadFile(h.path)
	switch {
	case err == nil:
		if s, err = schema.Decode(data); err != nil {
			return nil, fmt.Errorf("catalog: schema file %s: %w", h.path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("catalog: %w", err)
	}
	h.publish(s)
	if h.acceptor, err = openAcceptor(cfg.Dir, func(ks string) *schema.Schema { return h.Schema().Restrict(ks) }); err != nil {
		return nil, err
	}
	return h, nil
}

// Start lets the holder propose schema changes (ApplyDDL) and collect tombstones
// (CollectTombstones), once the node is a member of its cluster. Until then ApplyDDL fails
// saying the node is starting.
func (h *Holder) Start(c Cluster) {
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodeID, h.gossip, h.log = c.Self, c.Gossip, log
	h.proposer = &proposer{self: c.Self, local: h.acceptor, peers: c.Peers, now: h.now}
}

// Acceptor returns the node's acceptor of schema consensus, which the node serves to its peers.
func (h *Holder) Acceptor() *Acceptor { return h.acceptor }

func (h *Holder) publish(s *schema.Schema) {
	d := s.Digest().String()
	h.cur.Store(s)
	h.digest.Store(&d)
	next := make(chan struct{})
	if old := h.changed.Swap(&next); old != nil {
		close(*old)
	}
}

// SchemaChanged returns a channel closed when the next schema is published, whichever way it
// arrived (local DDL, a peer's push, a pull); Schema then returns it or a later one.
func (h *Holder) SchemaChanged() <-chan struct{} { return *h.changed.Load() }

// Schema returns the current schema.
func (h *Holder) Schema() *schema.Schema { return h.cur.Load() }

// System returns the code-defined system keyspace's schema (Options.System).
func (h *Holder) System() *schema.Schema { return h.system }

// TableByID resolves a table id against the current schema, then the system keyspace.
func (h *Holder) TableByID(id schema.TableID) (*schema.Table, bool) {
	if t, ok := h.cur.Load().TableByID(id); ok {
		return t, true
	}
	return h.system.TableByID(id)
}

// Digest returns the current schema's digest.
func (h *Holder) Digest() string { return *h.digest.Load() }

// Snapshot returns the current schema's encoding.
func (h *Holder) Snapshot() []byte { return h.cur.Load().Encode() }

// Merge merges a peer's schema by last-writer-wins per object and persists the result when it
// changed.
func (h *Holder) Merge(snapshot []byte) (bool, error) {
	other, err := schema.Decode(snapshot)
	if err != nil {
		return false, fmt.Errorf("catalog: schema from peer: %w", err)
	}
	return h.merge(other)
}

// merge merges other into the current schema, installing the result when it differs.
func (h *Holder) merge(other *schema.Schema) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.cur.Load()
	merged := cur.Merge(other)
	if merged.Digest() == cur.Digest() {
		return false, nil
	}
	if err := h.installLocked(merged); err != nil {
		return false, err
	}
	return true, nil
}

// installLocked makes next the node's schema: it deletes the data of the tables next drops,
// persists next, publishes it, then frees the dropped tables' state. h.mu must be held.
func (h *Holder) installLocked(next *schema.Schema) error {
	prev := h.cur.Load()
	dropped := droppedTables(prev, next)
	if h.onDrop.data != nil {
		for _, t := range dropped {
			if err := h.onDrop.data(t.ID); err != nil {
				return fmt.Errorf("catalog: drop the data of table %s: %w", t.QualifiedName(), err)
			}
		}
	}
	if err := h.persist(next); err != nil {
		return err
	}
	h.publish(next)
	// The new schema hides the truncated data from readers already (schema.Table.Shadowed);
	// deleting it now frees its space.
	var truncErr error
	if h.onTruncate != nil {
		for _, t := range truncatedTables(prev, next) {
			if err := h.onTruncate(t); err != nil && truncErr == nil {
				truncErr = fmt.Errorf("catalog: delete the data of truncated table %s: %w", t.QualifiedName(), err)
			}
		}
	}
	for _, t := range dropped {
		for _, f := range h.onDrop.forget {
			f(t)
		}
		if h.onDrop.data != nil {
			// Writes that resolved the table before the publish may have landed since.
			_ = h.onDrop.data(t.ID)
		}
	}
	return truncErr
}

// truncatedTables returns the tables of next truncated since cur: the same table (by id)
// with a later truncation.
func truncatedTables(cur, next *schema.Schema) []*schema.Table {
	var out []*schema.Table
	for _, t := range next.Tables("") {
		at, ok := t.TruncatedAt()
		if !ok {
			continue
		}
		old, had := cur.TableByID(t.ID)
		if !had {
			// A table this node learns of already truncated: its data, if any, is hidden; a
			// purge reclaims it.
			continue
		}
		if oldAt, was := old.TruncatedAt(); !was || oldAt < at {
			out = append(out, t)
		}
	}
	return out
}

// OnTruncate installs what deletes a truncated table's data, whichever way the node learns of
// the TRUNCATE; it runs under the holder's lock once the schema that records the truncation is
// published (so readers already ignore that data), with the truncated table. An error is
// reported to whoever installed the schema; the data stays hidden.
func (h *Holder) OnTruncate(f func(*schema.Table) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onTruncate = f
}

// droppedTables returns the tables live in cur and not in next (by id: a table dropped and
// created again under its name is a new table).
func droppedTables(cur, next *schema.Schema) []*schema.Table {
	var gone []*schema.Table
	for _, t := range cur.Tables("") {
		if _, ok := next.TableByID(t.ID); !ok {
			gone = append(gone, t)
		}
	}
	return gone
}

// OnDrop installs what runs when a schema change drops a table, whichever way the node learns
// of it (its own DDL, a peer's push, a pull after a restart); both run under the holder's lock.
// data deletes the table's data: it runs before the schema that drops the table is persisted,
// so a persisted drop never leaves data behind (an error keeps the old schema), and again after
// the new schema is published, for writes that resolved the table before. forget frees
// per-table state (metric series, limiter labels) once the table is gone. A nil data keeps the
// one installed before; forget functions add to those installed before.
func (h *Holder) OnDrop(data func(schema.TableID) error, forget ...func(*schema.Table)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if data != nil {
		h.onDrop.data = data
	}
	h.onDrop.forget = append(h.onDrop.forget, forget...)
}

// Dropped returns the ids among stored that name no table of the schema nor of the system
// keyspace: data that writes landing after their table's drop left behind. It returns none
// when the schema has never held a keyspace: a node that lost its schema file must not lose
// its data too.
func (h *Holder) Dropped(stored []schema.TableID) []schema.TableID {
	if h.Schema().Empty() {
		return nil
	}
	var gone []schema.TableID
	for _, id := range stored {
		if _, ok := h.TableByID(id); !ok {
			gone = append(gone, id)
		}
	}
	return gone
}

// ApplyDDL agrees on a schema statement with a majority of the cluster's members, merges the
// agreed state into the local schema, announces it and waits for agreement. A statement that
// does not fit the agreed schema fails with a *coordinator.InvalidError; one that a majority did
// not answer with an error wrapping ErrUnavailable.
func (h *Holder) ApplyDDL(ctx context.Context, stmt cql.Statement, keyspace string) (bool, []string, error) {
	ks, table, err := schema.StatementTarget(stmt, keyspace)
	if err != nil {
		return false, nil, &coordinator.InvalidError{Err: err}
	}
	if err := checkKeyspaceName(ks); err != nil {
		// No such keyspace can exist: the schema says why the statement fails ("may contain
		// only letters ...", "unknown keyspace ...") without asking the cluster.
		if _, aerr := h.Schema().Apply(stmt, keyspace, schema.Change{Version: h.nextVersion()}); aerr != nil {
			err = aerr
		}
		return false, nil, &coordinator.InvalidError{Err: err}
	}
	h.mu.Lock()
	proposer, gossip := h.proposer, h.gossip
	h.mu.Unlock()
	if proposer == nil {
		return false, nil, errors.New("catalog: schema changes are not available yet: the node is starting")
	}
	if _, ok := stmt.(*cql.TruncateStmt); ok && gossip != nil {
		if err := everyMemberLive(gossip.Members()); err != nil {
			return false, nil, err
		}
	}
	var older, olderLevels, olderTypes, olderUDT []string // members of a format before schema.FormatExpiring, schema.FormatLevels, schema.FormatTypes, schema.FormatUDT
	var olderCollections []string                         // members of a format before schema.FormatCollections
	if gossip != nil {
		olderCollections = belowFormat(gossip.Members(), schema.FormatCollections)
		olderUDT = belowFormat(gossip.Members(), schema.FormatUDT)
		older = belowFormat(gossip.Members(), schema.FormatExpiring)
		olderLevels = belowFormat(gossip.Members(), schema.FormatLevels)
		olderTypes = belowFormat(gossip.Members(), schema.FormatTypes)
	}
	var mine []schema.Version // versions this proposal gave the object in earlier rounds
	chosen, changed, err := proposer.propose(ctx, proposal{
		keyspace: ks,
		apply: func(base *schema.Schema) (*schema.Schema, error) {
			// The agreed state of the keyspace may still hold tombstones the schema has purged
			// (gc.go): leave them out of the next state, or it would carry them forever.
			purged := base.WithoutTombstonesBefore(h.Schema().GCHorizon())
			next, err := purged.Apply(stmt, keyspace, schema.Change{Version: h.nextVersion()})
			if err != nil {
				return nil, err
			}
			if next == purged {
				next = base // a no-op changes nothing
			}
			if err := h.limits.Check(ks, base, next, h.Schema()); err != nil {
				return nil, err
			}
			if err := checkFormats(next, ks, table, older); err != nil {
				return nil, err
			}
			if err := checkLevelFormats(next, ks, table, olderLevels); err != nil {
				return nil, err
			}
			if err := checkTypeFormats(next, ks, table, olderTypes); err != nil {
				return nil, err
			}
			if err := checkCollectionFormats(next, ks, table, olderCollections); err != nil {
				return nil, err
			}
			if err := checkUDTFormats(next, ks, table, olderUDT); err != nil {
				return nil, err
			}
			if v, ok := next.EntryVersion(ks, table); ok && next != base {
				mine = append(mine, v)
			}
			return next, nil
		},
		mine: func(base *schema.Schema) bool {
			v, ok := base.EntryVersion(ks, table)
			return ok && slices.Contains(mine, v)
		},
	})
	if chosen != nil {
		// The agreed state, with or without this statement's change: merge it either way, so a
		// failed statement still leaves the node with the state it failed against.
		merged, merr := h.merge(chosen)
		if merr != nil {
			return false, nil, merr
		}
		if merged && (err != nil || !changed) && gossip != nil {
			// No announcement follows a failed or no-op statement: publish the new digest now,
			// or the peers would count this node as disagreeing until its next change.
			if nerr := gossip.Publish(); nerr != nil {
				return false, nil, nerr
			}
		}
	}
	if err != nil {
		if chosen != nil {
			return false, nil, &coordinator.InvalidError{Err: err}
		}
		return false, nil, err
	}
	if !changed {
		return false, nil, nil
	}
	if gossip == nil {
		return true, nil, nil
	}
	disagreeing, err := h.announce(ctx, gossip)
	if err != nil {
		return true, nil, fmt.Errorf("schema change agreed on by a majority, but announcing it failed: %w", err)
	}
	if len(disagreeing) > 0 {
		return true, []string{fmt.Sprintf("schema agreement not reached: nodes %v have not applied the change yet; it will reach them when they are reachable", disagreeing)}, nil
	}
	return true, nil, nil
}

// announce pushes a local schema change to live peers and waits for agreement, returning the
// nodes that had not agreed when the bounded wait ended.
func (h *Holder) announce(ctx context.Context, g Gossip) ([]string, error) {
	if err := g.Publish(); err != nil {
		return nil, err
	}
	return g.AwaitAgreement(ctx)
}

// nextVersion returns the version of a change this node makes: its clock in microseconds and
// its id, the timestamp raised above the last one it used so that its changes never tie. The
// one place DDL reads a clock (schema.Apply derives table ids from the version).
func (h *Holder) nextVersion() schema.Version {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Above the GC horizon too: an entry older than it would not survive merging into a schema
	// that has it (schema.Schema.Merge), should this node's clock lag that far.
	h.lastTS = max(h.now().UnixMicro(), h.lastTS+1, h.cur.Load().GCHorizon()+1)
	return schema.Version{Timestamp: h.lastTS, Node: h.nodeID}
}

// persist writes s to the schema file atomically: a temporary file, fsync, rename, fsync of the
// directory.
func (h *Holder) persist(s *schema.Schema) error {
	if err := atomicfile.Write(h.path, s.Encode()); err != nil {
		return fmt.Errorf("catalog: persist schema: %w", err)
	}
	return nil
}

// everyMemberLive is TRUNCATE's precondition, as in Cassandra: every member must be up to
// delete the table's data, or a down one would keep it. Its error is the coordinator's
// unavailable error at consistency level ALL, naming the members down.
func everyMemberLive(ms []Member) error {
	var down []string
	for _, m := range ms {
		if !m.Live {
			down = append(down, m.ID)
		}
	}
	if len(down) == 0 {
		return nil
	}
	return &truncateUnavailable{
		UnavailableError: coordinator.UnavailableError{Consistency: coordinator.All, Live: len(ms) - len(down), Required: len(ms)},
		down:             down,
	}
}

// belowFormat returns the ids of the members in ms whose data format version is below v (a
// member reporting none is format 1).
func belowFormat(ms []Member, v int) []string {
	var ids []string
	for _, m := range ms {
		if max(m.DataFormat, 1) < v {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// checkFormats refuses a change that leaves keyspace ks (table "") or table ks.table with features that nodes of a data
// format before schema.FormatExpiring cannot decode while older, the ids of such members, is not
// empty: they would refuse the whole schema (its flags are unknown to them) and fall out of
// schema agreement, and would store writes with the table's default_time_to_live as never
// expiring.
func checkFormats(next *schema.Schema, ks, table string, older []string) error {
	if len(older) == 0 {
		return nil
	}
	if table == "" {
		k, ok := next.Keyspace(ks)
		if !ok {
			return nil
		}
		if fs := k.FormatFeatures(); len(fs) > 0 {
			return fmt.Errorf("keyspace %s would have %s, which only nodes of data format %d or later read, and nodes %s still run a release of an older format; finish the rolling upgrade first (docs/operations.md, Upgrading)",
				ks, strings.Join(fs, ", "), schema.FormatExpiring, strings.Join(older, ", "))
		}
		return nil
	}
	t, ok := next.Table(ks, table)
	if !ok {
		return nil
	}
	fs := t.FormatFeatures()
	if len(fs) == 0 {
		return nil
	}
	return fmt.Errorf("table %s.%s would have %s, which only nodes of data format %d or later read, and nodes %s still run a release of an older format; finish the rolling upgrade first (docs/operations.md, Upgrading)",
		ks, table, strings.Join(fs, ", "), schema.FormatExpiring, strings.Join(older, ", "))
}

// checkLevelFormats refuses a change that leaves the service levels (ks schema.LevelsKey) or
// keyspace ks (table "") with what nodes of a data format before schema.FormatLevels cannot
// decode while older, the ids of such members, is not empty: they would refuse the whole schema
// and fall out of schema agreement.
func checkLevelFormats(next *schema.Schema, ks, table string, older []string) error {
	if len(older) == 0 || table != "" {
		return nil
	}
	var fs []string
	what := "the schema"
	if ks == schema.LevelsKey {
		fs = next.LevelFormatFeatures()
	} else if k, ok := next.Keyspace(ks); ok {
		fs, what = k.LevelsFormatFeatures(), "keyspace "+ks
	}
	if len(fs) == 0 {
		return nil
	}
	return fmt.Errorf("%s would have %s, which only nodes of data format %d or later read, and nodes %s still run a release of an older format; finish the rolling upgrade first (docs/operations.md, Upgrading)",
		what, strings.Join(fs, ", "), schema.FormatLevels, strings.Join(older, ", "))
}

// checkTypeFormats refuses a change that leaves table ks.table with columns of a type that nodes
// of a data format before schema.FormatTypes cannot decode while older, the ids of such members,
// is not empty: they would refuse the whole schema (the type's number is unknown to them) and
// fall out of schema agreement.
func checkTypeFormats(next *schema.Schema, ks, table string, older []string) error {
	if len(older) == 0 || table == "" {
		return nil
	}
	t, ok := next.Table(ks, table)
	if !ok {
		return nil
	}
	fs := t.TypesFormatFeatures()
	if len(fs) == 0 {
		return nil
	}
	return fmt.Errorf("table %s.%s would have %s, which only nodes of data format %d or later read, and nodes %s still run a release of an older format; finish the rolling upgrade first (docs/operations.md, Upgrading)",
		ks, table, strings.Join(fs, ", "), schema.FormatTypes, strings.Join(older, ", "))
}

// checkCollectionFormats refuses a change that leaves table ks.table with non-frozen collection
// columns while older, the ids of members of a data format before schema.FormatCollections, is
// not empty: they would refuse the whole schema and fall out of schema agreement.
func checkCollectionFormats(next *schema.Schema, ks, table string, older []string) error {
	if len(older) == 0 || table == "" {
		return nil
	}
	t, ok := next.Table(ks, table)
	if !ok {
		return nil
	}
	fs := t.CollectionsFormatFeatures()
	if len(fs) == 0 {
		return nil
	}
	return fmt.Errorf("table %s.%s would have %s, which only nodes of data format %d or later read, and nodes %s still run a release of an older format; finish the rolling upgrade first (docs/operations.md, Upgrading)",
		ks, table, strings.Join(fs, ", "), schema.FormatCollections, strings.Join(older, ", "))
}

// checkUDTFormats refuses a change that leaves keyspace ks with user-defined types, or table
// ks.table with columns of one, while older, the ids of members of a data format before
// schema.FormatUDT, is not empty: they would refuse the whole schema and fall out of schema
// agreement.
func checkUDTFormats(next *schema.Schema, ks, table string, older []string) error {
	if len(older) == 0 {
		return nil
	}
	what, fs := "", []string(nil)
	if table == "" {
		if k, ok := next.Keyspace(ks); ok {
			what, fs = "keyspace "+ks, k.UDTFormatFeatures()
		}
	} else if t, ok := next.Table(ks, table); ok {
		what, fs = "table "+ks+"."+table, t.UDTFormatFeatures()
	}
	if len(fs) == 0 {
		return nil
	}
	return fmt.Errorf("%s would have %s, which only nodes of data format %d or later read, and nodes %s still run a release of an older format; finish the rolling upgrade first (docs/operations.md, Upgrading)",
		what, strings.Join(fs, ", "), schema.FormatUDT, strings.Join(older, ", "))
}

// truncateUnavailable is a TRUNCATE refused because members are down.
type truncateUnavailable struct {
	coordinator.UnavailableError
	down []string
}

func (e *truncateUnavailable) Error() string {
	return fmt.Sprintf("TRUNCATE needs every node up: %v (down: %s)", &e.UnavailableError, strings.Join(e.down, ", "))
}

func (e *truncateUnavailable) Unwrap() error { return &e.UnavailableError }
