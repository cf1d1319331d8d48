package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/atomicfile"
	"github.com/kvnode/kvnode/schema"
)

// schemaFile is the node's persisted schema, in schema.Encode's format.
const schemaFile = "schema.bin"

// schemaHolder owns the node's schema. Readers (the replica hot path, the coordinator) load an
// immutable *schema.Schema through an atomic pointer, without locks; writers (local DDL and merges
// from peers) are serialised by mu and persist before publishing, so a schema a peer or client has
// seen survives a crash.
//
// DDL goes through schema consensus (paxos.go): the change is agreed on per keyspace by a
// majority of the cluster's members before any node's schema holds it; the holder then merges
// the agreed state of the keyspace, like any state a peer pushes.
//
// It is the one object behind three interfaces: cluster.SchemaStore (Digest, Snapshot, Merge),
// shell.SchemaManager (Schema, ApplyDDL) and replica.SchemaSource (TableByID).
type schemaHolder struct {
	path   string
	nodeID string
	now    func() time.Time

	mu       sync.Mutex // serialises writers
	cur      atomic.Pointer[schema.Schema]
	digest   atomic.Pointer[string]
	changed  atomic.Pointer[chan struct{}] // closed at the next publish (SchemaChanged)
	lastTS   int64                         // the last version timestamp this node gave a change; guarded by mu
	onDrop   dropHooks
	acceptor *schemaAcceptor
	proposer *schemaProposer
	limits   schema.Limits // what DDL may grow (Config.SchemaLimits)
	// system is the code-defined replicated system keyspace (system_auth): its tables resolve
	// by id beside the cluster's schema, so replicas store and serve them.
	system *schema.Schema

	// announce is called after a local DDL is published: it pushes the change to peers and waits
	// for agreement, returning the nodes that had not agreed when the wait ended.
	announce func(ctx context.Context) ([]string, error)
	// notify publishes a local change of the schema to peers without waiting.
	notify func() error
}

// dropHooks free what the node keeps for a table that a schema change drops. Both run under the
// holder's lock, for every table live before the change and not after it, whichever way the
// node learns of the drop (its own DDL, a peer's push, a pull after a restart).
type dropHooks struct {
	// data deletes the table's data. It runs before the schema that drops the table is
	// persisted, so a persisted drop never leaves data behind, and again after the new schema is
	// published, for writes that resolved the table before. An error keeps the old schema.
	data func(schema.TableID) error
	// forget frees per-table state (metric series, limiter labels) once the table is gone.
	forget []func(*schema.Table)
}

// openSchema loads the persisted schema from dir, or starts empty when there is none.
func openSchema(dir, nodeID string, now func() time.Time) (*schemaHolder, error) {
	h := &schemaHolder{path: filepath.Join(dir, schemaFile), nodeID: nodeID, now: now, system: shell.AuthSchema()}
	s := schema.New()
	data, err := os.ReadFile(h.path)
	switch {
	case err == nil:
		if s, err = schema.Decode(data); err != nil {
			return nil, fmt.Errorf("node: schema file %s: %w", h.path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("node: %w", err)
	}
	h.publish(s)
	return h, nil
}

func (h *schemaHolder) publish(s *schema.Schema) {
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
func (h *schemaHolder) SchemaChanged() <-chan struct{} { return *h.changed.Load() }

// Schema returns the current schema.
func (h *schemaHolder) Schema() *schema.Schema { return h.cur.Load() }

// TableByID resolves a table id against the current schema (replica.SchemaSource).
func (h *schemaHolder) TableByID(id schema.TableID) (*schema.Table, bool) {
	if t, ok := h.cur.Load().TableByID(id); ok {
		return t, true
	}
	return h.system.TableByID(id)
}

// Digest returns the current schema's digest (cluster.SchemaStore).
func (h *schemaHolder) Digest() string { return *h.digest.Load() }

// Snapshot returns the current schema's encoding (cluster.SchemaStore).
func (h *schemaHolder) Snapshot() []byte { return h.cur.Load().Encode() }

// Merge merges a peer's schema by last-writer-wins per object and persists the result when it
// changed (cluster.SchemaStore).
func (h *schemaHolder) Merge(snapshot []byte) (bool, error) {
	other, err := schema.Decode(snapshot)
	if err != nil {
		return false, fmt.Errorf("node: schema from peer: %w", err)
	}
	return h.merge(other)
}

// merge merges other into the current schema, installing the result when it differs.
func (h *schemaHolder) merge(other *schema.Schema) (bool, error) {
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
func (h *schemaHolder) installLocked(next *schema.Schema) error {
	dropped := droppedTables(h.cur.Load(), next)
	if h.onDrop.data != nil {
		for _, t := range dropped {
			if err := h.onDrop.data(t.ID); err != nil {
				return fmt.Errorf("node: drop the data of table %s: %w", t.QualifiedName(), err)
			}
		}
	}
	if err := h.persist(next); err != nil {
		return err
	}
	h.publish(next)
	for _, t := range dropped {
		for _, f := range h.onDrop.forget {
			f(t)
		}
		if h.onDrop.data != nil {
			// Writes that resolved the table before the publish may have landed since.
			_ = h.onDrop.data(t.ID)
		}
	}
	return nil
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

// addDropHooks installs what runs when a table is dropped (see dropHooks).
func (h *schemaHolder) addDropHooks(data func(schema.TableID) error, forget ...func(*schema.Table)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if data != nil {
		h.onDrop.data = data
	}
	h.onDrop.forget = append(h.onDrop.forget, forget...)
}

// ApplyDDL agrees on a schema statement with a majority of the cluster's members, merges the
// agreed state into the local schema, announces it and waits for agreement
// (shell.SchemaManager). A statement that does not fit the agreed schema fails with a
// *coordinator.InvalidError; one that a majority did not answer with an error wrapping
// ErrSchemaUnavailable.
func (h *schemaHolder) ApplyDDL(ctx context.Context, stmt cql.Statement, keyspace string) (bool, []string, error) {
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
	proposer, notify := h.proposer, h.notify
	h.mu.Unlock()
	if proposer == nil {
		return false, nil, errors.New("node: schema changes are not available yet: the node is starting")
	}
	var mine []schema.Version // versions this proposal gave the object in earlier rounds
	chosen, changed, err := proposer.propose(ctx, proposal{
		keyspace: ks,
		apply: func(base *schema.Schema) (*schema.Schema, error) {
			// The agreed state of the keyspace may still hold tombstones the schema has purged
			// (schemagc.go): leave them out of the next state, or it would carry them forever.
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
		if merged && (err != nil || !changed) && notify != nil {
			// No announcement follows a failed or no-op statement: publish the new digest now,
			// or the peers would count this node as disagreeing until its next change.
			if nerr := notify(); nerr != nil {
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
	if h.announce == nil {
		return true, nil, nil
	}
	disagreeing, err := h.announce(ctx)
	if err != nil {
		return true, nil, fmt.Errorf("schema change agreed on by a majority, but announcing it failed: %w", err)
	}
	if len(disagreeing) > 0 {
		return true, []string{fmt.Sprintf("schema agreement not reached: nodes %v have not applied the change yet; it will reach them when they are reachable", disagreeing)}, nil
	}
	return true, nil, nil
}

// nextVersion returns the version of a change this node makes: its clock in microseconds and
// its id, the timestamp raised above the last one it used so that its changes never tie. The
// one place DDL reads a clock (schema.Apply derives table ids from the version).
func (h *schemaHolder) nextVersion() schema.Version {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Above the GC horizon too: an entry older than it would not survive merging into a schema
	// that has it (schema.Schema.Merge), should this node's clock lag that far.
	h.lastTS = max(h.now().UnixMicro(), h.lastTS+1, h.cur.Load().GCHorizon()+1)
	return schema.Version{Timestamp: h.lastTS, Node: h.nodeID}
}

// persist writes s to the schema file atomically: a temporary file, fsync, rename, fsync of the
// directory.
func (h *schemaHolder) persist(s *schema.Schema) error {
	if err := atomicfile.Write(h.path, s.Encode()); err != nil {
		return fmt.Errorf("node: persist schema: %w", err)
	}
	return nil
}
