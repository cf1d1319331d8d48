package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// harness is an in-memory cluster of catalog nodes: each node is a Holder opened on a directory
// of its own, started with the Peers and Gossip the harness implements. Its consensus messages
// pass through what a test injects: nodes down, partitions, and faults that lose a request or
// its reply, duplicate a message, or hold it back.
type harness struct {
	t     *testing.T
	ids   []string
	dirs  map[string]string
	clock atomic.Int64 // the nodes' clock, in microseconds

	mu        sync.Mutex
	nodes     map[string]*Holder
	down      map[string]bool     // down nodes: Voters and Members report them so, messages fail
	cut       map[[2]string]bool  // links a partition cut: messages fail, pushes do not pass
	faults    []fault             // applied in order to every message that can pass
	published map[string]string   // the digest each node gossips
	noPush    bool                // Publish updates the node's gossiped digest but pushes nothing
	publishes map[string]int      // Publish calls per node
	dropped   map[string][]string // per node, the tables its drop hooks forgot
	formats   map[string]int      // the data format version each node gossips; none when absent
}

// message is one consensus message from a proposer to an acceptor.
type message struct {
	from, to string
	phase    string        // "prepare" or "accept"
	req      proto.Message // *replicapb.SchemaPrepareRequest or *replicapb.SchemaAcceptRequest
}

// action is what a fault does to a message.
type action int

const (
	deliver   action = iota
	lose             // the request is lost: the acceptor never sees it
	loseReply        // the acceptor handles the request; its answer is lost
	duplicate        // the acceptor handles the request twice; the proposer gets the first answer
)

// fault decides what happens to a message. It may block to delay it, until ctx ends (the
// proposer gave up on the call) or a test lets it go.
type fault func(ctx context.Context, m message) action

// startTime is the harness clock's start: far above the versions schema.Build gives (1, 2, ...).
const startTime = 1_000_000_000

func newHarness(t *testing.T, ids ...string) *harness {
	t.Helper()
	h := &harness{
		t: t, ids: ids, dirs: map[string]string{}, nodes: map[string]*Holder{},
		down: map[string]bool{}, cut: map[[2]string]bool{}, published: map[string]string{},
		publishes: map[string]int{}, dropped: map[string][]string{},
	}
	h.clock.Store(startTime)
	for _, id := range ids {
		h.dirs[id] = t.TempDir()
		h.open(id)
	}
	return h
}

func (h *harness) now() time.Time { return time.UnixMicro(h.clock.Load()) }

// advance moves the nodes' clock by d.
func (h *harness) advance(d time.Duration) { h.clock.Add(d.Microseconds()) }

// open opens (or reopens, as a restart does) node id's holder from its directory and starts it.
func (h *harness) open(id string) *Holder {
	h.t.Helper()
	hd, err := Open(Config{Dir: h.dirs[id], Now: h.now, Options: Options{TombstoneGrace: time.Minute}})
	if err != nil {
		h.t.Fatalf("open node %s: %v", id, err)
	}
	hd.OnDrop(nil, func(t *schema.Table) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.dropped[id] = append(h.dropped[id], t.QualifiedName())
	})
	hd.Start(Cluster{Self: id, Peers: link{h, id}, Gossip: link{h, id}})
	h.mu.Lock()
	h.nodes[id] = hd
	h.published[id] = hd.Digest()
	h.mu.Unlock()
	return hd
}

// node returns node id's holder.
func (h *harness) node(id string) *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nodes[id]
}

func (h *harness) setDown(id string, down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down[id] = down
}

// partition cuts every link between a node of side and a node not in it.
func (h *harness) partition(side ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.ids {
		for _, b := range h.ids {
			if slices.Contains(side, a) != slices.Contains(side, b) {
				h.cut[[2]string{a, b}] = true
			}
		}
	}
}

// heal restores every link.
func (h *harness) heal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.cut)
}

// inject adds a fault applied to every message from then on.
func (h *harness) inject(f fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, f)
}

// clearFaults removes every injected fault.
func (h *harness) clearFaults() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = nil
}

// reachable reports whether from can reach to now. h.mu must be held.
func (h *harness) reachableLocked(from, to string) bool {
	return !h.down[to] && !h.cut[[2]string{from, to}]
}

var errInjected = status.Error(codes.Unavailable, "injected: message lost")

// send carries m to its acceptor through the faults, calling handle to deliver it.
func (h *harness) send(ctx context.Context, m message, handle func(*Acceptor) (proto.Message, error)) (proto.Message, error) {
	h.mu.Lock()
	ok := h.reachableLocked(m.from, m.to)
	faults := slices.Clone(h.faults)
	a := h.nodes[m.to].Acceptor()
	h.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.Unavailable, "injected: %s cannot reach %s", m.from, m.to)
	}
	act := deliver
	for _, f := range faults {
		if act = f(ctx, m); act != deliver {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err() // as gRPC answers a call whose context ended
	}
	switch act {
	case lose:
		return nil, errInjected
	case loseReply:
		_, _ = handle(a)
		return nil, errInjected
	case duplicate:
		r, err := handle(a)
		_, _ = handle(a)
		return r, err
	}
	return handle(a)
}

// sync pushes every live node's schema to every node it reaches until they stop changing, as the
// schema push and pull do, and publishes each node's digest.
func (h *harness) sync() {
	h.t.Helper()
	for changed := true; changed; {
		changed = false
		for _, from := range h.ids {
			for _, to := range h.ids {
				h.mu.Lock()
				ok := from != to && !h.down[from] && h.reachableLocked(from, to)
				src, dst := h.nodes[from], h.nodes[to]
				h.mu.Unlock()
				if !ok {
					continue
				}
				c, err := dst.Merge(src.Snapshot())
				if err != nil {
					h.t.Fatalf("merge %s's schema into %s: %v", from, to, err)
				}
				changed = changed || c
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range h.ids {
		if !h.down[id] {
			h.published[id] = h.nodes[id].Digest()
		}
	}
}

// ddl runs stmt through node from's ApplyDDL.
func (h *harness) ddl(from, stmt string) (bool, []string, error) {
	h.t.Helper()
	st, err := cql.ParseStatement(stmt)
	if err != nil {
		h.t.Fatalf("parse %q: %v", stmt, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.node(from).ApplyDDL(ctx, st, "")
}

// mustDDL runs stmt through node from and fails the test unless it changed the schema.
func (h *harness) mustDDL(from, stmt string) {
	h.t.Helper()
	if changed, _, err := h.ddl(from, stmt); err != nil || !changed {
		h.t.Fatalf("%s through %s: changed %v, err %v; want a change", stmt, from, changed, err)
	}
}

// link is the harness as node self sees it: its Peers and its Gossip.
type link struct {
	h    *harness
	self string
}

func (l link) Voters() ([]Voter, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	vs := make([]Voter, len(l.h.ids))
	for i, id := range l.h.ids {
		vs[i] = Voter{ID: id, Live: !l.h.down[id]}
	}
	return vs, nil
}

func (l link) Prepare(ctx context.Context, id string, req *replicapb.SchemaPrepareRequest) (*replicapb.SchemaPrepareResponse, error) {
	r, err := l.h.send(ctx, message{from: l.self, to: id, phase: "prepare", req: req}, func(a *Acceptor) (proto.Message, error) {
		return a.Prepare(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	return r.(*replicapb.SchemaPrepareResponse), nil
}

func (l link) Accept(ctx context.Context, id string, req *replicapb.SchemaAcceptRequest) (*replicapb.SchemaAcceptResponse, error) {
	r, err := l.h.send(ctx, message{from: l.self, to: id, phase: "accept", req: req}, func(a *Acceptor) (proto.Message, error) {
		return a.Accept(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	return r.(*replicapb.SchemaAcceptResponse), nil
}

// Publish gossips the node's digest and pushes its schema to the nodes it reaches, which merge
// it and gossip their new digest.
func (l link) Publish() error {
	h := l.h
	h.mu.Lock()
	self := h.nodes[l.self]
	h.published[l.self] = self.Digest()
	h.publishes[l.self]++
	var to []*Holder
	var toIDs []string
	if !h.noPush {
		for _, id := range h.ids {
			if id != l.self && h.reachableLocked(l.self, id) {
				to, toIDs = append(to, h.nodes[id]), append(toIDs, id)
			}
		}
	}
	h.mu.Unlock()
	snap := self.Snapshot()
	for i, n := range to {
		if _, err := n.Merge(snap); err != nil {
			return fmt.Errorf("push to %s: %w", toIDs[i], err)
		}
		h.mu.Lock()
		h.published[toIDs[i]] = n.Digest()
		h.mu.Unlock()
	}
	return nil
}

// AwaitAgreement returns at once the live nodes that do not gossip this node's digest.
func (l link) AwaitAgreement(context.Context) ([]string, error) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	want := h.nodes[l.self].Digest()
	var ids []string
	for _, id := range h.ids {
		if id != l.self && !h.down[id] && h.published[id] != want {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (l link) PublishedDigest() string {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.published[l.self]
}

func (l link) Members() []Member {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	ms := make([]Member, len(h.ids))
	for i, id := range h.ids {
		ms[i] = Member{ID: id, Local: id == l.self, Live: !h.down[id], SchemaDigest: h.published[id], DataFormat: h.formats[id]}
	}
	return ms
}

// removeFile removes file name of dir.
func removeFile(dir, name string) error { return os.Remove(filepath.Join(dir, name)) }
