package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

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
// It is the one object behind three interfaces: cluster.SchemaStore (Digest, Snapshot, Merge),
// coordinator.SchemaManager (Schema, ApplyDDL) and replica.SchemaSource (TableByID).
type schemaHolder struct {
	path   string
	nodeID string
	now    func() time.Time

	mu     sync.Mutex // serialises writers
	cur    atomic.Pointer[schema.Schema]
	digest atomic.Pointer[string]

	// announce is called after a local DDL is published: it pushes the change to peers and waits
	// for agreement, returning the nodes that had not agreed when the wait ended.
	announce func(ctx context.Context) ([]string, error)
}

// openSchema loads the persisted schema from dir, or starts empty when there is none.
func openSchema(dir, nodeID string, now func() time.Time) (*schemaHolder, error) {
	h := &schemaHolder{path: filepath.Join(dir, schemaFile), nodeID: nodeID, now: now}
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
}

// Schema returns the current schema.
func (h *schemaHolder) Schema() *schema.Schema { return h.cur.Load() }

// TableByID resolves a table id against the current schema (replica.SchemaSource).
func (h *schemaHolder) TableByID(id schema.TableID) (*schema.Table, bool) {
	return h.cur.Load().TableByID(id)
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
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.cur.Load()
	merged := cur.Merge(other)
	if merged.Digest() == cur.Digest() {
		return false, nil
	}
	if err := h.persist(merged); err != nil {
		return false, err
	}
	h.publish(merged)
	return true, nil
}

// ApplyDDL applies a schema statement locally, persists it, announces it to the cluster and waits
// for agreement (coordinator.SchemaManager).
func (h *schemaHolder) ApplyDDL(ctx context.Context, stmt cql.Statement, keyspace string) (bool, []string, error) {
	changed, err := h.applyLocal(stmt, keyspace)
	if err != nil || !changed {
		return changed, nil, err
	}
	if h.announce == nil {
		return true, nil, nil
	}
	disagreeing, err := h.announce(ctx)
	if err != nil {
		return true, nil, fmt.Errorf("schema change applied locally, but announcing it failed: %w", err)
	}
	if len(disagreeing) > 0 {
		return true, []string{fmt.Sprintf("schema agreement not reached: nodes %v have not applied the change yet; it will reach them when they are reachable", disagreeing)}, nil
	}
	return true, nil, nil
}

func (h *schemaHolder) applyLocal(stmt cql.Statement, keyspace string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.cur.Load()
	change := schema.Change{
		Version: schema.Version{Timestamp: h.now().UnixMicro(), Node: h.nodeID},
		TableID: newTableID(),
	}
	next, err := cur.Apply(stmt, keyspace, change)
	if err != nil {
		return false, err
	}
	if next == cur {
		return false, nil
	}
	if err := h.persist(next); err != nil {
		return false, err
	}
	h.publish(next)
	return true, nil
}

// newTableID returns a random, non-zero table id. Ids only need to be unique within a cluster's
// life: 64 random bits make a collision among even millions of tables vanishingly unlikely.
func newTableID() schema.TableID {
	for {
		if id := schema.TableID(rand.Uint64()); id != 0 {
			return id
		}
	}
}

// persist writes s to the schema file atomically: a temporary file, fsync, rename, fsync of the
// directory.
func (h *schemaHolder) persist(s *schema.Schema) error {
	if err := atomicfile.Write(h.path, s.Encode()); err != nil {
		return fmt.Errorf("node: persist schema: %w", err)
	}
	return nil
}
