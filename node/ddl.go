package node

import (
	"fmt"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// initDDL prepares the node's side of schema changes once storage and the replica service are
// open, before the node joins the cluster (so that a drop it learns of on joining finds its
// hooks): dropped tables lose their data and per-table state; the acceptor state of schema
// consensus is loaded; and data left behind by tables that are no longer in the schema is
// deleted.
func (n *Node) initDDL() error {
	n.schema.addDropHooks(n.replica.DropTable)
	a, err := openAcceptor(n.cfg.DataDir, func(ks string) *schema.Schema { return n.schema.Schema().Restrict(ks) })
	if err != nil {
		return err
	}
	n.schema.acceptor = a
	return n.sweepDroppedTables()
}

// startDDL lets the node propose schema changes once membership and the coordinator are up.
func (n *Node) startDDL(m *coordinatorMetrics) {
	m.tablesMu.Lock()
	m.isTable = func(ks, table string) bool {
		_, ok := n.schema.Schema().Table(ks, table)
		return ok
	}
	m.tablesMu.Unlock()
	n.schema.addDropHooks(nil, func(t *schema.Table) { m.forgetTable(t.Keyspace, t.Name) })
	p := &schemaProposer{
		self:  string(n.cluster.LocalID()),
		local: n.schema.acceptor,
		peers: clusterPaxosPeers{c: n.cluster, t: n.trans},
		now:   n.schema.now,
	}
	n.schema.mu.Lock()
	n.schema.notify = n.cluster.NotifySchemaChanged
	n.schema.proposer = p
	n.schema.mu.Unlock()
}

// sweepDroppedTables deletes the data of table ids the store holds and the schema does not:
// writes that landed after their table's drop was applied. It does nothing when the schema
// has never held a keyspace (a node that lost its schema file must not lose its data too).
func (n *Node) sweepDroppedTables() error {
	s := n.schema.Schema()
	if s.Empty() {
		return nil
	}
	ids, err := n.store.TableIDs()
	if err != nil {
		return fmt.Errorf("node: list stored tables: %w", err)
	}
	for _, id := range ids {
		if _, ok := n.schema.TableByID(id); ok { // the cluster's tables and system_auth's
			continue
		}
		n.log.Info("deleting the data of a dropped table", "table_id", uint64(id))
		if err := n.store.DropTable(id); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	return nil
}

// Store returns the node's storage.
func (n *Node) Store() *replica.Store { return n.store }

// clusterPaxosPeers gives schema consensus the cluster's members and clients for them.
type clusterPaxosPeers struct {
	c *cluster.Cluster
	t *transport
}

func (p clusterPaxosPeers) voters() ([]voter, error) {
	ms, err := p.c.SchemaVoters()
	if err != nil {
		return nil, err
	}
	vs := make([]voter, len(ms))
	for i, m := range ms {
		vs[i] = voter{id: string(m.ID), live: m.Live}
	}
	return vs, nil
}

func (p clusterPaxosPeers) client(id string) (replicapb.SchemaPaxosClient, error) {
	if _, err := p.t.peer(coordinator.NodeID(id)); err != nil { // dials, or redials after a move
		return nil, err
	}
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	pc, ok := p.t.conns[coordinator.NodeID(id)]
	if !ok {
		return nil, fmt.Errorf("node %s: no connection", id)
	}
	return replicapb.NewSchemaPaxosClient(pc.conn), nil
}
