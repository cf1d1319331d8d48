package native

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// SchemaSource is the node's schema, watched for SCHEMA_CHANGE events. It sees every change,
// whichever node made it.
type SchemaSource interface {
	// Schema returns the current schema.
	Schema() *schema.Schema
	// SchemaChanged returns a channel closed at the next change of the schema.
	SchemaChanged() <-chan struct{}
}

// TopologySource is the cluster's membership as clients see it, watched for TOPOLOGY_CHANGE and
// STATUS_CHANGE events.
type TopologySource interface {
	// Peers returns the cluster's members other than this node.
	Peers() []Peer
	// Changed returns a channel closed at the next change of membership or liveness.
	Changed() <-chan struct{}
}

// Peer is a member of the cluster as the events name it.
type Peer struct {
	ID string
	// Addr is the member's native protocol address (what its system.peers row gives as
	// rpc_address and native port).
	Addr netip.AddrPort
	Live bool
}

// eventMask is a set of event types.
type eventMask uint8

const (
	maskTopology eventMask = 1 << iota
	maskStatus
	maskSchema
)

// hub sends events to the connections that registered for them.
type hub struct {
	log  *slog.Logger
	mu   sync.Mutex
	subs map[*conn]eventMask
}

func newHub(log *slog.Logger) *hub { return &hub{log: log, subs: map[*conn]eventMask{}} }

func (h *hub) subscribe(c *conn, m eventMask) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[c] |= m
}

func (h *hub) unsubscribe(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, c)
}

// publish queues ev on every connection registered for m.
func (h *hub) publish(m eventMask, ev *cqlwire.Event) {
	h.mu.Lock()
	var to []*conn
	for c, mask := range h.subs {
		if mask&m != 0 {
			to = append(to, c)
		}
	}
	h.mu.Unlock()
	for _, c := range to {
		c.pushEvent(ev)
	}
}

// watch publishes the events of the sources' changes until ctx ends. Nil sources are not
// watched.
//
// Before a schema change is published, changed is called with it (the prepared statements of a
// table that changed are dropped first, so that a driver re-preparing on the event gets the new
// metadata). changed may be nil.
func (h *hub) watch(ctx context.Context, ss SchemaSource, ts TopologySource, from watchFrom, changed func(cqlwire.SchemaChange)) {
	schemaCh, topoCh, sch, peers := from.schemaCh, from.topoCh, from.sch, from.peers
	for {
		select {
		case <-ctx.Done():
			return
		case <-schemaCh:
			schemaCh = ss.SchemaChanged()
			next := ss.Schema()
			for _, sc := range schemaEvents(sch, next) {
				if changed != nil {
					changed(sc)
				}
				h.publish(maskSchema, &cqlwire.Event{Type: eventSchema, Schema: sc})
			}
			sch = next
		case <-topoCh:
			topoCh = ts.Changed()
			next := ts.Peers()
			for _, ev := range topologyEvents(peers, next) {
				m := maskStatus
				if ev.Type == eventTopology {
					m = maskTopology
				}
				h.publish(m, ev)
			}
			peers = next
		}
	}
}

// watchFrom is where watch starts: the sources' change channels and current values. The server
// takes it when it is created, before any client can register, so that a change made right after
// New is an event rather than part of the starting point (a watch goroutine scheduled late had
// folded the first CREATE KEYSPACE into its baseline).
type watchFrom struct {
	schemaCh, topoCh <-chan struct{}
	sch              *schema.Schema
	peers            []Peer
}

func startWatch(ss SchemaSource, ts TopologySource) watchFrom {
	var w watchFrom
	if ss != nil {
		w.schemaCh, w.sch = ss.SchemaChanged(), ss.Schema()
	}
	if ts != nil {
		w.topoCh, w.peers = ts.Changed(), ts.Peers()
	}
	return w
}

// schemaEvents returns the changes from old to next as the protocol describes them, keyspaces
// then tables, each in name order: a keyspace or table that is new (or dropped and created
// again) is CREATED, one that is gone DROPPED (a dropped keyspace's tables go with it, without
// events of their own), a keyspace altered (ALTER KEYSPACE) or a table whose version changed
// UPDATED.
func schemaEvents(old, next *schema.Schema) []cqlwire.SchemaChange {
	var out []cqlwire.SchemaChange
	if old == nil || next == nil {
		return nil
	}
	for _, k := range next.Keyspaces() {
		if ok, found := old.Keyspace(k.Name); !found || ok.Version != k.Version {
			out = append(out, cqlwire.SchemaChange{Change: "CREATED", Target: "KEYSPACE", Keyspace: k.Name})
		}
	}
	for _, k := range next.Keyspaces() {
		if ok, found := old.Keyspace(k.Name); found && ok.Version == k.Version && ok.Altered != k.Altered {
			out = append(out, cqlwire.SchemaChange{Change: "UPDATED", Target: "KEYSPACE", Keyspace: k.Name})
		}
	}
	for _, k := range old.Keyspaces() {
		if _, found := next.Keyspace(k.Name); !found {
			out = append(out, cqlwire.SchemaChange{Change: "DROPPED", Target: "KEYSPACE", Keyspace: k.Name})
		}
	}
	for _, k := range next.Keyspaces() {
		ok, found := old.Keyspace(k.Name)
		if !found || ok.Version != k.Version {
			// A new keyspace's tables: CREATED each.
			for _, t := range next.Tables(k.Name) {
				out = append(out, cqlwire.SchemaChange{Change: "CREATED", Target: "TABLE", Keyspace: k.Name, Name: t.Name})
			}
			continue
		}
		for _, t := range next.Tables(k.Name) {
			switch ot, found := old.Table(k.Name, t.Name); {
			case !found || ot.ID != t.ID:
				out = append(out, cqlwire.SchemaChange{Change: "CREATED", Target: "TABLE", Keyspace: k.Name, Name: t.Name})
			case ot.Version != t.Version:
				out = append(out, cqlwire.SchemaChange{Change: "UPDATED", Target: "TABLE", Keyspace: k.Name, Name: t.Name})
			}
		}
		for _, t := range old.Tables(k.Name) {
			if _, found := next.Table(k.Name, t.Name); !found {
				out = append(out, cqlwire.SchemaChange{Change: "DROPPED", Target: "TABLE", Keyspace: k.Name, Name: t.Name})
			}
		}
	}
	return out
}

// topologyEvents returns the changes from old to next in the order of next, then the removed
// in the order of old: NEW_NODE for a member that joined, REMOVED_NODE for one that left,
// STATUS_CHANGE UP or DOWN for one whose liveness changed (or that joined live).
func topologyEvents(old, next []Peer) []*cqlwire.Event {
	var out []*cqlwire.Event
	before := make(map[string]Peer, len(old))
	for _, p := range old {
		before[p.ID] = p
	}
	seen := make(map[string]bool, len(next))
	for _, p := range next {
		seen[p.ID] = true
		o, found := before[p.ID]
		if !found {
			out = append(out, &cqlwire.Event{Type: eventTopology, Change: "NEW_NODE", Addr: p.Addr})
		}
		if (!found && p.Live) || (found && o.Live != p.Live) {
			change := "DOWN"
			if p.Live {
				change = "UP"
			}
			out = append(out, &cqlwire.Event{Type: eventStatus, Change: change, Addr: p.Addr})
		}
	}
	for _, p := range old {
		if !seen[p.ID] {
			out = append(out, &cqlwire.Event{Type: eventTopology, Change: "REMOVED_NODE", Addr: p.Addr})
		}
	}
	return out
}
