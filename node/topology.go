package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Topology changes: bootstrap (a new node streams the ranges it will own, then becomes normal),
// decommission (a node streams its ranges to their next owners, then leaves) and removenode (the
// surviving replicas of a dead node's ranges stream them to their next owners, then the dead node
// is removed from the ring). Ownership changes only once streaming has finished: until then the
// ranges are pending, and writes to them also go to their future replicas (shell.PendingRing).

// DefaultStreamThroughput is Config.StreamThroughput when it is zero: the bytes per second one
// node sends to each stream, so that streaming never starves client requests.
const DefaultStreamThroughput = 64 << 20

const (
	// streamChunkBytes and streamChunkEntries bound one streamed chunk.
	streamChunkBytes   = 256 << 10
	streamChunkEntries = 4096
	// maxStreamRanges and maxStreamTables bound a Pull or Fetch request.
	maxStreamRanges = 1 << 16
	maxStreamTables = 1 << 16
	// viewWait bounds how long a topology change waits for every live node to see a state.
	viewWait = time.Minute
	// viewPoll is how often it asks them.
	viewPoll = 50 * time.Millisecond
	// decommissionHintTimeout bounds how long a decommission waits for the node's hints to be
	// delivered before it gives up and the node stays normal.
	decommissionHintTimeout = 5 * time.Minute
	// viewTimeout bounds one View call.
	viewTimeout = 2 * time.Second
)

// errRefused marks a topology change refused because it would lose data or is not possible now;
// the Admin service answers FAILED_PRECONDITION.
var errRefused = errors.New("refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRefused, fmt.Sprintf(format, args...))
}

// topology carries out a node's topology changes and answers the pull, fetch and view requests
// of the peers' topology changes.
type topology struct {
	n       *Node
	limiter *rate.Limiter // bytes per second sent by Pull, across every stream

	busy atomic.Bool // a decommission or removenode is running

	// bg is the context of a bootstrap left to the background (no seed reachable at start);
	// stop cancels it and waits for it.
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	entriesSent, entriesReceived atomic.Uint64
	bytesSent, bytesReceived     atomic.Uint64
	cleanupRanges                atomic.Uint64

	// streamMu orders streams into this node with cleanups (cleanup.go): a cleanup never
	// deletes what a stream brings for a topology change that has not finished.
	streamMu    sync.Mutex
	receiving   int           // streams into this node running
	receivedFor *cluster.Ring // the ring when the last stream into this node started
	// cleanedFor is the ring of the last cleanup that ran to its end.
	cleanedFor atomic.Pointer[cluster.Ring]
}

func newTopology(n *Node) *topology {
	tp := n.cfg.StreamThroughput
	t := &topology{n: n, limiter: rate.NewLimiter(rate.Limit(tp), max(tp, streamChunkBytes))}
	t.bg, t.cancel = context.WithCancel(context.Background())
	return t
}

// stop cancels a background bootstrap and waits for it.
func (t *topology) stop() {
	if t == nil {
		return
	}
	t.cancel()
	t.wg.Wait()
}

// AppendWriteReplicas implements shell.PendingRing: the replicas and the pending replicas of
// token under placement rf, both from the ring of this moment.
func (r ringView) AppendWriteReplicas(replicas, pending []coordinator.NodeID, token int64, rf schema.Replication) ([]coordinator.NodeID, []coordinator.NodeID) {
	ring := r.c.Ring()
	var buf [maxRF]cluster.NodeID
	for _, id := range ring.AppendReplicasFor(buf[:0], token, rf) {
		replicas = append(replicas, coordinator.NodeID(id))
	}
	for _, id := range ring.AppendPending(buf[:0], token, rf) {
		pending = append(pending, coordinator.NodeID(id))
	}
	return replicas, pending
}

// intervals returns the inclusive token intervals of r.
func intervals(r cluster.TokenRange) [][2]int64 {
	switch {
	case r.Start < r.End:
		return [][2]int64{{r.Start + 1, r.End}}
	case r.Start > r.End:
		out := [][2]int64{{math.MinInt64, r.End}}
		if r.Start != math.MaxInt64 {
			out = append(out, [2]int64{r.Start + 1, math.MaxInt64})
		}
		return out
	}
	return [][2]int64{{math.MinInt64, math.MaxInt64}}
}

func rangesFromWire(rs []*replicapb.TokenRange) ([]cluster.TokenRange, error) {
	if len(rs) == 0 {
		return nil, errors.New("no token ranges")
	}
	if len(rs) > maxStreamRanges {
		return nil, fmt.Errorf("%d token ranges, the limit is %d", len(rs), maxStreamRanges)
	}
	out := make([]cluster.TokenRange, len(rs))
	for i, r := range rs {
		if r == nil {
			return nil, fmt.Errorf("token range %d is missing", i)
		}
		out[i] = cluster.TokenRange{Start: r.Start, End: r.End}
	}
	return out, nil
}

func rangesToWire(rs []cluster.TokenRange) []*replicapb.TokenRange {
	out := make([]*replicapb.TokenRange, len(rs))
	for i, r := range rs {
		out[i] = &replicapb.TokenRange{Start: r.Start, End: r.End}
	}
	return out
}

// throttle waits until n more bytes may be sent within Config.StreamThroughput, shared by every
// stream this node sends (bootstrap, decommission and removenode streams, and repair's writes),
// so that together they leave clients their share of the disk and network.
func (t *topology) throttle(ctx context.Context, n int) error {
	for n > 0 {
		k := min(n, t.limiter.Burst())
		if err := t.limiter.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Pull answers a pull request: it sends the local entries of the requested tables (those the
// local schema knows) whose tokens are in the requested ranges, throttled.
func (t *topology) Pull(ctx context.Context, req *replicapb.PullRequest, send func(*replicapb.PullChunk) error) error {
	ranges, err := rangesFromWire(req.GetRanges())
	if err != nil {
		return invalidArg("stream pull: %v", err)
	}
	if len(req.GetTableIds()) > maxStreamTables {
		return invalidArg("stream pull: %d tables, the limit is %d", len(req.GetTableIds()), maxStreamTables)
	}
	chunk := &replicapb.PullChunk{}
	size := 0
	flush := func() error {
		if len(chunk.Entries) == 0 && len(chunk.PaxosEntries) == 0 && chunk.Sstable == nil {
			return nil
		}
		if err := t.throttle(ctx, size); err != nil {
			return err
		}
		if err := send(chunk); err != nil {
			return err
		}
		t.entriesSent.Add(uint64(len(chunk.Entries)))
		t.bytesSent.Add(uint64(size))
		chunk, size = &replicapb.PullChunk{}, 0
		return nil
	}
	for _, id := range req.GetTableIds() {
		if _, ok := t.n.schema.TableByID(schema.TableID(id)); !ok || id == 0 {
			continue // dropped here, or not yet known: nothing of it to send
		}
		for _, r := range ranges {
			for _, iv := range intervals(r) {
				if err := t.n.store.ScanPaxosTokens(schema.TableID(id), iv[0], iv[1], func(k, v []byte) error { // before the rows: see replica/paxos_stream.go
					chunk.PaxosEntries = append(chunk.PaxosEntries, &replicapb.Entry{Key: slices.Clone(k), Value: slices.Clone(v)})
					if size += len(k) + len(v); size >= streamChunkBytes {
						return flush()
					}
					return nil
				}); err != nil {
					return err
				}
				if f := req.GetSstableFormat(); f != 0 && replica.CanStreamSSTables(f) { // see replica/sststream.go
					n, _, err := t.n.store.StreamSSTables(schema.TableID(id), iv[0], iv[1], f, replica.SSTStreamOptions{PartBytes: streamChunkBytes}, func(p *replicapb.SSTablePart) error {
						chunk.Sstable, size = p, size+len(p.Data)
						return flush()
					})
					t.entriesSent.Add(uint64(n))
					if err != nil {
						return err
					}
					continue
				}
				err := t.n.store.ScanTokens(schema.TableID(id), iv[0], iv[1], func(k, v []byte) error {
					chunk.Entries = append(chunk.Entries, &replicapb.Entry{Key: slices.Clone(k), Value: slices.Clone(v)})
					size += len(k) + len(v)
					if size >= streamChunkBytes || len(chunk.Entries) >= streamChunkEntries {
						return flush()
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// Fetch answers a fetch request: it pulls the ranges from the source and applies them.
func (t *topology) Fetch(ctx context.Context, req *replicapb.FetchRequest) (*replicapb.FetchResponse, error) {
	ranges, err := rangesFromWire(req.GetRanges())
	if err != nil {
		return nil, invalidArg("stream fetch: %v", err)
	}
	src := cluster.NodeID(req.GetSource())
	if _, ok := t.n.cluster.Member(src); !ok || src == t.n.cluster.LocalID() {
		return nil, invalidArg("stream fetch: source %q is not another member of the cluster", req.GetSource())
	}
	entries, bytes, err := t.fetch(ctx, src, ranges, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &replicapb.FetchResponse{Entries: entries, Bytes: bytes}, nil
}

// fetch pulls ranges of every streamed table (streamedTables) from node src and applies them
// locally.
func (t *topology) fetch(ctx context.Context, src cluster.NodeID, ranges []cluster.TokenRange, reason string) (entries, bytes uint64, err error) {
	var ids []uint64
	for _, tb := range t.n.streamedTables() {
		ids = append(ids, uint64(tb.ID))
	}
	if len(ids) == 0 {
		return 0, 0, nil
	}
	t.streamMu.Lock()
	t.receiving++
	t.receivedFor = t.n.cluster.Ring()
	t.streamMu.Unlock()
	defer func() {
		t.streamMu.Lock()
		t.receiving--
		t.streamMu.Unlock()
	}()
	accept := func(id schema.TableID, tok int64) error {
		if !slices.Contains(ids, uint64(id)) {
			return fmt.Errorf("table id %d was not asked for", id)
		}
		for _, r := range ranges {
			if r.Contains(tok) {
				return nil
			}
		}
		return fmt.Errorf("token %d is in none of the ranges asked for", tok)
	}
	var batch []replica.StreamEntry
	ssts := t.n.store.NewSSTIngest(func(id schema.TableID, from, to int64) error {
		for _, r := range ranges {
			if iv := intervals(r); slices.ContainsFunc(iv, func(iv [2]int64) bool { return iv[0] <= from && to <= iv[1] }) {
				return accept(id, from)
			}
		}
		return fmt.Errorf("tokens [%d, %d] are in none of the ranges asked for", from, to)
	}, t.n.schema)
	req := &replicapb.PullRequest{Ranges: rangesToWire(ranges), TableIds: ids, Requester: string(t.n.cluster.LocalID()), SstableFormat: replica.SSTableFormat()}
	err = internode.Stream(ctx, t.n.sender, internode.NodeID(src), req, func(chunk *replicapb.PullChunk) error {
		if err := t.n.replica.ApplyStreamedPaxos(chunk.GetPaxosEntries(), accept); err != nil {
			return fmt.Errorf("stream from %s: %w", src, err)
		}
		if p := chunk.GetSstable(); p != nil {
			if err := ssts.Add(ctx, p); err != nil {
				return fmt.Errorf("stream from %s: %w", src, err)
			}
			t.n.cfg.Testing.afterStreamChunk(reason)
			return nil
		}
		batch = batch[:0]
		for _, e := range chunk.GetEntries() {
			batch = append(batch, replica.StreamEntry{Key: e.GetKey(), Value: e.GetValue()})
			bytes += uint64(len(e.GetKey()) + len(e.GetValue()))
		}
		if err := t.n.store.ApplyStreamed(batch, accept, t.n.schema); err != nil {
			return fmt.Errorf("stream from %s: %w", src, err)
		}
		entries += uint64(len(batch))
		t.n.cfg.Testing.afterStreamChunk(reason)
		return nil
	})
	if cerr := ssts.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("stream from %s: %w", src, cerr)
	}
	n, kv := ssts.Received()
	if entries, bytes = entries+n, bytes+kv; err != nil {
		return entries, bytes, err
	}
	t.entriesReceived.Add(entries)
	t.bytesReceived.Add(bytes)
	t.n.log.Info("streamed ranges", "from", string(src), "reason", reason, "ranges", len(ranges), "entries", entries, "bytes", bytes)
	return entries, bytes, nil
}

// View answers a view request: how this node sees the cluster.
func (t *topology) View(context.Context, *replicapb.ViewRequest) (*replicapb.ViewResponse, error) {
	resp := &replicapb.ViewResponse{Id: string(t.n.cluster.LocalID()), LoadBytes: t.n.store.LoadBytes()}
	for _, m := range t.n.cluster.Members() {
		resp.Members = append(resp.Members, &replicapb.MemberView{Id: string(m.ID), State: m.State.String(), Live: m.Live})
	}
	return resp, nil
}

// view asks node id how it sees the cluster.
func (n *Node) view(ctx context.Context, id cluster.NodeID) (*replicapb.ViewResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	return internode.Call[*replicapb.ViewResponse](ctx, n.sender, internode.NodeID(id), &replicapb.ViewRequest{})
}

// awaitWritesInFlight waits out the writes coordinated before every node saw a new state, once
// awaitSeen has returned: such a write went to the old replicas only, and one that lands on a
// source after the stream has read past its key would never reach the new replica (a row
// written at ONE while a node bootstrapped went missing so). Every write ends, acknowledged or
// timed out, within the write timeout (a statement's USING TIMEOUT may ask for longer; repair
// covers those), so waiting that long before streaming makes the stream include them, as
// Cassandra's bootstrap waits out its ring delay.
func (n *Node) awaitWritesInFlight(ctx context.Context) error {
	return loop.Sleep(ctx, n.cfg.Coordinator.WriteTimeout)
}

// awaitSeen waits until every live node other than this one sees node id in a state ok accepts
// (and a node it does not list at all when gone is true), asking them with view requests.
func (n *Node) awaitSeen(ctx context.Context, id cluster.NodeID, what string, ok func(st string, listed bool) bool) error {
	ctx, cancel := context.WithTimeout(ctx, viewWait)
	defer cancel()
	tick := time.NewTicker(viewPoll)
	defer tick.Stop()
	var last error
	for {
		last = nil
		for _, m := range n.cluster.Members() {
			if m.Local || !m.Live || m.ID == id {
				continue
			}
			v, err := n.view(ctx, m.ID)
			if err != nil {
				last = err
				break
			}
			st, listed := "", false
			for _, mv := range v.GetMembers() {
				if mv.GetId() == string(id) {
					st, listed = mv.GetState(), true
				}
			}
			if !ok(st, listed) {
				last = fmt.Errorf("node %s sees %s as %q, waiting for %s", m.ID, id, st, what)
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for every live node to see %s %s: %w (last: %v)", id, what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func isState(s cluster.NodeState) func(string, bool) bool {
	return func(st string, listed bool) bool { return listed && st == s.String() }
}

// streamedTables returns the tables topology changes stream: the cluster schema's and, with
// authentication on, system_auth's, whose roles and grants live on replicas as any table's rows
// do (not streaming them lost every grant once all of their replicas had been replaced).
func (n *Node) streamedTables() []*schema.Table {
	tables := n.schema.Schema().Tables("")
	if n.cfg.authEnabled() {
		tables = append(slices.Clip(tables), n.schema.System().Tables("")...)
	}
	return tables
}

// streamedRFs returns the distinct placements of the keyspaces of streamedTables.
func (n *Node) streamedRFs() []schema.Replication {
	rfs := placements(n.schema.Schema(), nil)
	if n.cfg.authEnabled() {
		rfs = placements(n.schema.System(), rfs)
	}
	return rfs
}

// placements appends to rfs the distinct placements of the schema's keyspaces that hold tables
// (a keyspace without tables has no rows to stream) that rfs does not have yet.
func placements(s *schema.Schema, rfs []schema.Replication) []schema.Replication {
	for _, k := range s.Keyspaces() {
		p := k.Replication()
		if len(s.Tables(k.Name)) > 0 && !slices.ContainsFunc(rfs, p.Equal) {
			rfs = append(rfs, p)
		}
	}
	return rfs
}

// plan returns, per receiver and then per source, the ranges that must stream for the ring to
// change from cur to next under every placement of the schema. pick chooses the sources of a
// transfer among its old replicas; a transfer left with none is an error naming its range.
func plan(cur, next *cluster.Ring, rfs []schema.Replication, pick func(cluster.Transfer) []cluster.NodeID) (map[cluster.NodeID]map[cluster.NodeID][]cluster.TokenRange, error) {
	out := map[cluster.NodeID]map[cluster.NodeID][]cluster.TokenRange{}
	for _, rf := range rfs {
		for _, tr := range cluster.Transfers(cur, next, rf) {
			srcs := pick(tr)
			if len(srcs) == 0 {
				return nil, refused("no live replica holds range (%d, %d] (replicas %v under replication %v): streaming it would lose data", tr.Range.Start, tr.Range.End, tr.From, rf)
			}
			if out[tr.To] == nil {
				out[tr.To] = map[cluster.NodeID][]cluster.TokenRange{}
			}
			for _, s := range srcs {
				if !slices.Contains(out[tr.To][s], tr.Range) {
					out[tr.To][s] = append(out[tr.To][s], tr.Range)
				}
			}
		}
	}
	return out, nil
}

// liveSources returns a pick for plan: the transfer's old replicas that are live, except skip.
func (n *Node) liveSources(skip cluster.NodeID) func(cluster.Transfer) []cluster.NodeID {
	return func(tr cluster.Transfer) []cluster.NodeID {
		var out []cluster.NodeID
		for _, id := range tr.From {
			if id != skip && n.cluster.IsLive(id) {
				out = append(out, id)
			}
		}
		return out
	}
}

// execute carries out a plan: every receiver fetches its ranges from every one of its sources,
// receivers in parallel, each asked with a fetch request (the local node in process).
func (n *Node) execute(ctx context.Context, p map[cluster.NodeID]map[cluster.NodeID][]cluster.TokenRange, reason string) (uint64, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total uint64
		errs  []error
	)
	for to := range p {
		if to != n.cluster.LocalID() && !n.cluster.IsLive(to) {
			return 0, refused("node %s, which must receive ranges, is down", to)
		}
	}
	for to, bySrc := range p {
		for src, ranges := range bySrc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := &replicapb.FetchRequest{Source: string(src), Ranges: rangesToWire(ranges), Reason: reason}
				resp, err := internode.Call[*replicapb.FetchResponse](ctx, n.sender, internode.NodeID(to), req)
				mu.Lock()
				defer mu.Unlock()
				total += resp.GetEntries()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s streaming %d ranges from %s: %w", to, len(ranges), src, err))
				}
			}()
		}
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// bootstrap runs in Start while the node is joining: it waits to reach the cluster and agree on
// the schema, streams the ranges it will own from their current replicas once every live node
// sends it their writes, and becomes normal. A node that finds no normal node but itself founds
// the cluster, and one whose cluster holds no table has nothing to stream: both become normal at
// once. A node that has run before resumes from its persisted state (a normal one never
// bootstraps again; one that stopped while joining streams again, which is harmless).
func (n *Node) bootstrap(ctx context.Context) error {
	c := n.cluster
	if c.State() != cluster.StateJoining {
		return nil
	}
	joined := func() bool {
		for _, m := range c.Members() {
			if !m.Local && m.Live {
				return true
			}
		}
		return false
	}
	if c.HasJoinTargets() && !joined() {
		// No seed reachable yet: the node starts as joining (it owns nothing, so it cannot
		// serve stale reads) and bootstraps in the background once it reaches the cluster.
		n.log.Warn("no seed or known peer reachable; the node stays joining and bootstraps once it reaches the cluster", "seeds", n.cfg.Cluster.Seeds)
		n.topo.wg.Add(1)
		go func() {
			defer n.topo.wg.Done()
			if err := n.awaitCluster(n.topo.bg, joined); err != nil {
				return // stopped
			}
			if err := n.finishBootstrap(n.topo.bg); err != nil && n.topo.bg.Err() == nil {
				n.log.Error("bootstrap failed; restart the node to try again", "err", err)
			}
		}()
		return nil
	}
	return n.finishBootstrap(ctx)
}

// finishBootstrap is bootstrap once the node has reached the cluster.
func (n *Node) finishBootstrap(ctx context.Context) error {
	c := n.cluster
	self := c.LocalID()
	others := false
	for _, m := range c.Members() {
		others = others || (!m.Local && m.State == cluster.StateNormal)
	}
	if others {
		if pending, err := c.AwaitSchemaAgreement(ctx, 0); err != nil || len(pending) > 0 {
			return fmt.Errorf("node: bootstrap: no schema agreement with %v: %v", pending, err)
		}
	}
	rfs := n.streamedRFs()
	if others && len(n.streamedTables()) > 0 {
		n.log.Info("bootstrapping: streaming the ranges this node will own")
		if err := n.awaitSeen(ctx, self, "joining", isState(cluster.StateJoining)); err != nil {
			return fmt.Errorf("node: bootstrap: %w", err)
		}
		if err := n.awaitWritesInFlight(ctx); err != nil {
			return fmt.Errorf("node: bootstrap: %w", err)
		}
		r := c.Ring()
		p, err := plan(r, r.Future(), rfs, n.liveSources(""))
		if err != nil {
			return fmt.Errorf("node: bootstrap: %w", err)
		}
		mine := map[cluster.NodeID]map[cluster.NodeID][]cluster.TokenRange{self: p[self]}
		got, err := n.execute(ctx, mine, "bootstrap")
		if err != nil {
			return fmt.Errorf("node: bootstrap: %w", err)
		}
		n.log.Info("bootstrap streamed", "entries", got)
	}
	if err := c.SetState(cluster.StateNormal); err != nil {
		return fmt.Errorf("node: bootstrap: %w", err)
	}
	if others {
		if err := n.awaitSeen(ctx, self, "normal", isState(cluster.StateNormal)); err != nil {
			n.log.Warn("not every live node sees this node normal yet", "err", err)
		}
	}
	return nil
}

// awaitCluster waits until cond holds, re-checking at every membership change.
func (n *Node) awaitCluster(ctx context.Context, cond func() bool) error {
	for {
		ch := n.cluster.Changed()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// widestPlacement returns the placement of the schema's keyspaces with the most replicas
// (SimpleStrategy's factor 1 with none).
func widestPlacement(s *schema.Schema) schema.Replication {
	rf := schema.Simple(1)
	for _, k := range s.Keyspaces() {
		if k.ReplicationFactor > rf.Total() {
			rf = k.Replication()
		}
	}
	return rf
}

// decommission streams the local node's ranges to their next owners and leaves the ring.
func (n *Node) decommission(ctx context.Context) (uint64, error) {
	if !n.topo.busy.CompareAndSwap(false, true) {
		return 0, refused("another decommission or removenode is running on this node")
	}
	defer n.topo.busy.Store(false)
	c := n.cluster
	self := c.LocalID()
	if st := c.State(); st != cluster.StateNormal {
		return 0, refused("node %s is %s; only a normal node can be decommissioned", self, st)
	}
	r := c.Ring()
	if r.Transitioning() {
		return 0, refused("another node is joining or leaving; decommission once it has finished")
	}
	s := n.schema.Schema()
	for _, k := range s.Keyspaces() {
		if where, left, rf := r.ShortWithout(self, k.Replication()); left < rf {
			return 0, refused("decommissioning %s would leave %d nodes in %s, fewer than keyspace %s's replication factor %d there: some rows would have fewer replicas than the keyspace asks for", self, left, where, k.Name, rf)
		}
	}
	for _, m := range c.Members() {
		if !m.Live && m.State != cluster.StateLeft {
			return 0, refused("node %s is down; bring it back or removenode it first, so that every range keeps its replicas", m.ID)
		}
	}
	if err := c.SetState(cluster.StateLeaving); err != nil {
		return 0, err
	}
	abort := func(err error) (uint64, error) {
		if serr := c.SetState(cluster.StateNormal); serr != nil {
			err = errors.Join(err, serr)
		}
		return 0, err
	}
	if err := n.awaitSeen(ctx, self, "leaving", isState(cluster.StateLeaving)); err != nil {
		return abort(err)
	}
	if err := n.awaitWritesInFlight(ctx); err != nil {
		return abort(err)
	}
	p, err := plan(r, r.Without(self), n.streamedRFs(), func(tr cluster.Transfer) []cluster.NodeID {
		if slices.Contains(tr.From, self) {
			return []cluster.NodeID{self}
		}
		return n.liveSources(self)(tr)
	})
	if err != nil {
		return abort(err)
	}
	total, err := n.execute(ctx, p, "decommission")
	if err != nil {
		return abort(fmt.Errorf("decommission of %s: %w; it stays normal", self, err))
	}
	// Nobody replays this node's hints once it has left: hand them off first.
	hctx, cancel := context.WithTimeout(ctx, decommissionHintTimeout)
	err = n.hinter.Drain(hctx)
	cancel()
	if err != nil {
		return abort(refused("decommission of %s: its hints could not be delivered within %v: %v; it stays normal (bring their targets up, and run it again)", self, decommissionHintTimeout, err))
	}
	if err := c.SetState(cluster.StateLeft); err != nil {
		return 0, err
	}
	// Writes this node coordinated meanwhile may have left hints: deliver them too.
	hctx, cancel = context.WithTimeout(ctx, n.cfg.Coordinator.WriteTimeout)
	err = n.hinter.Drain(hctx)
	cancel()
	if err != nil {
		n.log.Warn("hints stored during the decommission were not all delivered; run a repair", "err", err)
	}
	if err := n.awaitSeen(ctx, self, "left", func(st string, listed bool) bool { return !listed || st == "left" }); err != nil {
		n.log.Warn("not every live node sees this node left yet", "err", err)
	}
	n.log.Info("decommissioned: this node owns no data any more; stop it", "entries_streamed", total)
	return total, nil
}

// removeNode re-replicates the ranges of the dead node id from the surviving replicas, then removes
// it from the ring on every node.
func (n *Node) removeNode(ctx context.Context, id cluster.NodeID) (uint64, error) {
	if !n.topo.busy.CompareAndSwap(false, true) {
		return 0, refused("another decommission or removenode is running on this node")
	}
	defer n.topo.busy.Store(false)
	c := n.cluster
	if id == c.LocalID() {
		return 0, refused("node %s is the node serving this request; decommission it instead", id)
	}
	m, ok := c.Member(id)
	if !ok {
		return 0, fmt.Errorf("%w: %s", cluster.ErrUnknownNode, id)
	}
	if m.Live {
		return 0, refused("node %s at %s is up; removenode is for dead nodes (stop it, or decommission it)", id, m.RPCAddr)
	}
	for _, o := range c.Members() {
		if o.Local || !o.Live || o.State == cluster.StateLeft {
			continue // a left node owns nothing and is on its way out
		}
		v, err := n.view(ctx, o.ID)
		if err != nil {
			return 0, refused("cannot ask node %s whether %s is down: %v", o.ID, id, err)
		}
		for _, mv := range v.GetMembers() {
			if mv.GetId() == string(id) && mv.GetLive() {
				return 0, refused("node %s still sees %s up; removenode is for dead nodes", o.ID, id)
			}
		}
	}
	if by, ok := c.RemovingBy(id); ok {
		return 0, refused("node %s is already being removed by %s", id, by)
	}
	if r := c.Ring(); r.Without(id).Transitioning() {
		return 0, refused("another node is joining, leaving or being removed; removenode %s once that has finished", id)
	}
	var total uint64
	if m.State != cluster.StateJoining && m.State != cluster.StateLeft {
		var err error
		if total, err = n.streamRemoved(ctx, id, m.State); err != nil {
			return 0, err
		}
	}
	n.cfg.Testing.beforeRemoval()
	if err := c.RemoveNode(id); err != nil {
		n.endRemoving(id)
		return total, err
	}
	n.log.Info("removed a dead node", "removed", string(id), "entries_streamed", total)
	return total, nil
}

// streamRemoved re-replicates the ranges of the dead node id, in state st, from their surviving
// replicas to their new owners. As Cassandra does, id is leaving in the ring on every node while
// they stream (a normal one is marked as being removed), so that its ranges' new owners are
// pending replicas and get the writes made meanwhile; the writes started before every node saw
// that are waited out first. On failure the ring returns to its previous state.
func (n *Node) streamRemoved(ctx context.Context, id cluster.NodeID, st cluster.NodeState) (uint64, error) {
	c := n.cluster
	fail := func(err error) (uint64, error) {
		return 0, fmt.Errorf("removenode %s: %w; it stays in the ring, run removenode again", id, err)
	}
	if st == cluster.StateNormal {
		if err := c.SetRemoving(id, true); err != nil {
			n.endRemoving(id)
			err = fmt.Errorf("telling every live node that %s is being removed: %w", id, err)
			return fail(err)
		}
		// The removal, once done, drops the marker with the node (RemoveNode, on every node);
		// an abandoned one drops it here, so that the ring is as it was.
		fail = func(err error) (uint64, error) {
			n.endRemoving(id)
			return 0, fmt.Errorf("removenode %s: %w; it stays in the ring, run removenode again", id, err)
		}
		if err := n.awaitSeen(ctx, id, "leaving (being removed)", isState(cluster.StateLeaving)); err != nil {
			return fail(err)
		}
	}
	if err := n.awaitWritesInFlight(ctx); err != nil {
		return fail(err)
	}
	r := c.Ring()
	if m, ok := c.Member(id); !ok || m.Live {
		return fail(refused("node %s came back up during the removal", id))
	}
	p, err := plan(r, r.Without(id), n.streamedRFs(), n.liveSources(id))
	if err != nil {
		return fail(err)
	}
	total, err := n.execute(ctx, p, "removenode")
	if err != nil {
		return fail(err)
	}
	return total, nil
}

// endRemoving ends the removal of id by this node that did not complete: id is normal in the
// ring again, on every live node.
func (n *Node) endRemoving(id cluster.NodeID) {
	if err := n.cluster.SetRemoving(id, false); err != nil {
		n.log.Warn("not every live node was told that the removal was abandoned; they learn it when they next ask", "removed", string(id), "err", err)
	}
}

// Decommission streams the node's ranges to their next owners and takes it out of the ring (as
// kvnode decommission does through the Admin service); the node owns no data afterwards and
// should be stopped. It returns how many storage entries streamed. An error wrapping a refusal
// means nothing changed.
func (n *Node) Decommission(ctx context.Context) (uint64, error) { return n.decommission(ctx) }

// RemoveNode re-replicates the ranges of the dead node hostID from their surviving replicas and
// removes it from the ring on every node (as kvnode removenode does through the Admin service).
func (n *Node) RemoveNode(ctx context.Context, hostID string) (uint64, error) {
	return n.removeNode(ctx, cluster.NodeID(hostID))
}
