package node

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/catalog"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/snapshot"
)

// The node's adapter of the catalog (the agreed schema): it opens the holder, gives it the
// cluster (catalogCluster) and the node's drop hooks, and runs its tombstone collection.

// openCatalog opens the node's schema and the acceptor state of schema consensus from the
// data directory.
func (n *Node) openCatalog() (err error) {
	n.schema, err = catalog.Open(catalog.Config{
		Options: n.cfg.Catalog,
		Dir:     n.cfg.DataDir,
		System:  shell.AuthSchema(),
		Now:     time.Now,
	})
	return err
}

// initDDL prepares the node's side of schema changes once storage and the replica service are
// open, before the node joins the cluster (so that a drop it learns of on joining finds its
// hooks): dropped tables lose their data (after a snapshot: snapshot.go), and data left behind by tables that are no longer in
// the schema is deleted.
func (n *Node) initDDL() error {
	n.schema.OnDrop(n.dropTable)
	n.schema.OnTruncate(n.truncateTable)
	return n.sweepDroppedTables()
}

// truncateTable frees the data a TRUNCATE removed from this node (readers already ignore it),
// after the automatic snapshot of the table (auto_snapshot, as Cassandra takes before TRUNCATE).
func (n *Node) truncateTable(t *schema.Table) error {
	n.autoSnapshot(n.schema.Schema(), t, snapshot.ReasonTruncated)
	deleted, err := n.store.TruncateTable(t)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	at, _ := t.TruncatedAt()
	n.log.Info("truncated table", "table", t.QualifiedName(), "truncated_at", at, "entries_deleted", deleted)
	return nil
}

// startDDL lets the node propose schema changes once membership and the coordinator are up.
func (n *Node) startDDL(m *coordinatorMetrics) {
	m.tablesMu.Lock()
	m.isTable = func(ks, table string) bool {
		_, ok := n.schema.Schema().Table(ks, table)
		return ok
	}
	m.tablesMu.Unlock()
	n.schema.OnDrop(nil, func(t *schema.Table) { m.forgetTable(t.Keyspace, t.Name) })
	c := catalogCluster{c: n.cluster, s: n.sender}
	n.schema.Start(catalog.Cluster{Self: string(n.cluster.LocalID()), Peers: c, Gossip: c, Logger: n.log})
}

// startSchemaGC starts the loop that collects the schema's tombstones: at every membership or
// digest change, and when the oldest tombstone passes the grace period.
func (n *Node) startSchemaGC() {
	n.schemaGC = loop.Start(loop.Options{Wake: []func() <-chan struct{}{n.cluster.Changed, n.schema.SchemaChanged}},
		func(context.Context) time.Duration { return n.schema.CollectTombstones(time.Now()) })
}

// sweepDroppedTables deletes the data of table ids the store holds and the schema does not:
// writes that landed after their table's drop was applied. It does nothing when the schema
// has never held a keyspace (a node that lost its schema file must not lose its data too).
func (n *Node) sweepDroppedTables() error {
	if n.schema.Schema().Empty() {
		return nil
	}
	ids, err := n.store.TableIDs()
	if err != nil {
		return fmt.Errorf("node: list stored tables: %w", err)
	}
	for _, id := range n.schema.Dropped(ids) {
		n.log.Info("deleting the data of a dropped table", "table_id", uint64(id))
		if err := n.store.DropTable(id); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	return nil
}

// Store returns the node's storage.
func (n *Node) Store() *replica.Store { return n.store }

// catalogCluster gives the catalog the cluster's members, the node's Sender to reach them
// (catalog.Peers), and the schema's gossip (catalog.Gossip).
type catalogCluster struct {
	c *cluster.Cluster
	s *internode.Sender
}

func (p catalogCluster) Voters() ([]catalog.Voter, error) {
	ms, err := p.c.SchemaVoters()
	if err != nil {
		return nil, err
	}
	vs := make([]catalog.Voter, len(ms))
	for i, m := range ms {
		// A member down only for a full disk still votes: DROP and TRUNCATE free its space.
		vs[i] = catalog.Voter{ID: string(m.ID), Live: m.Alive}
	}
	return vs, nil
}

func (p catalogCluster) Prepare(ctx context.Context, id string, req *replicapb.SchemaPrepareRequest) (*replicapb.SchemaPrepareResponse, error) {
	return internode.Call[*replicapb.SchemaPrepareResponse](ctx, p.s, internode.NodeID(id), req)
}

func (p catalogCluster) Accept(ctx context.Context, id string, req *replicapb.SchemaAcceptRequest) (*replicapb.SchemaAcceptResponse, error) {
	return internode.Call[*replicapb.SchemaAcceptResponse](ctx, p.s, internode.NodeID(id), req)
}

func (p catalogCluster) Publish() error { return p.c.NotifySchemaChanged() }

func (p catalogCluster) AwaitAgreement(ctx context.Context) ([]string, error) {
	ids, err := p.c.AwaitSchemaAgreement(ctx, 0)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out, err
}

func (p catalogCluster) PublishedDigest() string { return p.c.SchemaDigest() }

func (p catalogCluster) Members() []catalog.Member {
	ms := p.c.Members()
	out := make([]catalog.Member, len(ms))
	for i, m := range ms {
		// Alive, not Live: TRUNCATE, which needs every member, must reach a node down only for
		// a full disk, whose space it frees (diskfull.go).
		dc := cmp.Or(m.DataCenter, cluster.DefaultDataCenter) // a release that did not say
		out[i] = catalog.Member{ID: string(m.ID), Local: m.Local, Live: m.Alive, SchemaDigest: m.SchemaDigest, DataFormat: m.DataFormat, DataCenter: dc}
	}
	return out
}
