package node

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Anti-entropy repair, the coordinating side (`kvnode repair`, the Repair admin service). For
// each table asked for and each token range this node replicates (a vnode range of the ring,
// (previous token, token], with the replicas of its token), the node:
//
//  1. asks every replica for the hashes of the range's leaves (repairLeaves equal token
//     sub-ranges; replica.Store.RangeHashes);
//  2. for the leaves whose hashes differ, asks every replica for the hash of each partition;
//  3. for each partition whose hashes differ, fetches each version from a replica holding it
//     and writes it to the replicas whose version differs (Replica.Mutate, limiter NONE), where
//     last-write-wins merges it, tombstones included.
//
// Only differing partitions travel. Ranges are repaired one after another and their partitions
// one at a time, which bounds what repair takes from client traffic. A range with a replica
// down or failing fails (the others go on); once every range of a table was repaired, the node
// records the repair's start time for the table, which lets its tombstones older than
// gc_grace_seconds and than that time be purged (purge.go).

// repairLeaves is how many leaves each range is split into.
const repairLeaves = 64

// repairFetchBatch is how many partitions one FetchPartitions asks for.
const repairFetchBatch = 32

// antiEntropyAPI is what repair asks each replica: the local service in process, or a peer's
// over gRPC.
type antiEntropyAPI interface {
	RangeHashes(ctx context.Context, req *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error)
	PartitionHashes(ctx context.Context, req *replicapb.PartitionHashesRequest) (*replicapb.PartitionHashesResponse, error)
	FetchPartitions(ctx context.Context, req *replicapb.FetchPartitionsRequest) (*replicapb.FetchPartitionsResponse, error)
}

// remoteAntiEntropy adapts a gRPC client to antiEntropyAPI.
type remoteAntiEntropy struct{ c replicapb.AntiEntropyClient }

func (r remoteAntiEntropy) RangeHashes(ctx context.Context, req *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error) {
	return r.c.RangeHashes(ctx, req)
}

func (r remoteAntiEntropy) PartitionHashes(ctx context.Context, req *replicapb.PartitionHashesRequest) (*replicapb.PartitionHashesResponse, error) {
	return r.c.PartitionHashes(ctx, req)
}

func (r remoteAntiEntropy) FetchPartitions(ctx context.Context, req *replicapb.FetchPartitionsRequest) (*replicapb.FetchPartitionsResponse, error) {
	return r.c.FetchPartitions(ctx, req)
}

// antiEntropy returns the anti-entropy API of node id over the transport's connection to it.
func (t *transport) antiEntropy(id coordinator.NodeID) (antiEntropyAPI, error) {
	if _, err := t.peer(id); err != nil { // dials when needed
		return nil, err
	}
	t.mu.Lock()
	pc := t.conns[id]
	t.mu.Unlock()
	if pc == nil {
		return nil, fmt.Errorf("node %s: no connection", id)
	}
	return remoteAntiEntropy{replicapb.NewAntiEntropyClient(pc.conn)}, nil
}

// repairService serves the Repair admin service and keeps the repair metrics.
type repairService struct {
	kvnodepb.UnimplementedRepairServer
	n   *Node
	log *slog.Logger
	now func() time.Time
	// running is held for the whole of a repair: one at a time per node.
	running sync.Mutex

	rangesOK, rangesFailed, leavesMismatched, streamed, streamedBytes atomic.Uint64
	pending, active                                                   atomic.Int64

	rangesDesc, leavesDesc, streamedDesc, bytesDesc, pendingDesc, activeDesc *prometheus.Desc
}

func newRepairService(n *Node, now func() time.Time) *repairService {
	return &repairService{
		n: n, log: n.log.With("component", "repair"), now: now,
		rangesDesc: prometheus.NewDesc("kvnode_repair_ranges_total",
			"Token ranges of tables this node repaired (kvnode repair), by result: ok, or failed (a replica down or failing).", []string{"result"}, nil),
		leavesDesc: prometheus.NewDesc("kvnode_repair_leaves_mismatched_total",
			"Leaves (token sub-ranges) whose hashes differed between replicas in this node's repairs.", nil, nil),
		streamedDesc: prometheus.NewDesc("kvnode_repair_partitions_streamed_total",
			"Partition versions this node's repairs wrote to replicas that lacked them.", nil, nil),
		bytesDesc: prometheus.NewDesc("kvnode_repair_bytes_streamed_total",
			"Bytes of the partition versions this node's repairs wrote to replicas that lacked them.", nil, nil),
		pendingDesc: prometheus.NewDesc("kvnode_repair_ranges_pending",
			"Token ranges the repair running on this node has still to compare (0 when none runs).", nil, nil),
		activeDesc: prometheus.NewDesc("kvnode_repair_running",
			"1 while a repair runs on this node.", nil, nil),
	}
}

func (r *repairService) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{r.rangesDesc, r.leavesDesc, r.streamedDesc, r.bytesDesc, r.pendingDesc, r.activeDesc} {
		ch <- d
	}
}

func (r *repairService) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(r.rangesDesc, prometheus.CounterValue, float64(r.rangesOK.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(r.rangesDesc, prometheus.CounterValue, float64(r.rangesFailed.Load()), "failed")
	ch <- prometheus.MustNewConstMetric(r.leavesDesc, prometheus.CounterValue, float64(r.leavesMismatched.Load()))
	ch <- prometheus.MustNewConstMetric(r.streamedDesc, prometheus.CounterValue, float64(r.streamed.Load()))
	ch <- prometheus.MustNewConstMetric(r.bytesDesc, prometheus.CounterValue, float64(r.streamedBytes.Load()))
	ch <- prometheus.MustNewConstMetric(r.pendingDesc, prometheus.GaugeValue, float64(r.pending.Load()))
	ch <- prometheus.MustNewConstMetric(r.activeDesc, prometheus.GaugeValue, float64(r.active.Load()))
}

// repairTables returns the tables a repair request names, or an INVALID_ARGUMENT status.
func repairTables(s *schema.Schema, req *kvnodepb.RepairRequest) ([]*schema.Table, error) {
	ks, tb := req.GetKeyspace(), req.GetTable()
	switch {
	case ks == "" && tb != "":
		return nil, status.Errorf(codes.InvalidArgument, "repair: table %s needs its keyspace (KEYSPACE.TABLE)", cql.QuoteIdent(tb))
	case ks == "":
		var out []*schema.Table
		for _, k := range s.Keyspaces() {
			out = append(out, s.Tables(k.Name)...)
		}
		return out, nil
	}
	if _, ok := s.Keyspace(ks); !ok {
		return nil, status.Errorf(codes.InvalidArgument, "repair: unknown keyspace %s", cql.QuoteIdent(ks))
	}
	if tb == "" {
		return s.Tables(ks), nil
	}
	t, ok := s.Table(ks, tb)
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "repair: unknown table %s.%s", cql.QuoteIdent(ks), cql.QuoteIdent(tb))
	}
	return []*schema.Table{t}, nil
}

// Repair implements kvnodepb.RepairServer.
func (r *repairService) Repair(ctx context.Context, req *kvnodepb.RepairRequest) (*kvnodepb.RepairResponse, error) {
	s := r.n.schema.Schema()
	var (
		tables []*schema.Table
		err    error
	)
	// With authentication on, system_auth's roles and grants are repaired as well: with every
	// table, or when named.
	sys := r.n.schema.System()
	if _, named := sys.Keyspace(req.GetKeyspace()); named && r.n.cfg.authEnabled() {
		s = sys
		tables, err = repairTables(sys, req)
	} else if tables, err = repairTables(s, req); err == nil && req.GetKeyspace() == "" && r.n.cfg.authEnabled() {
		tables = append(tables, sys.Tables("")...)
	}
	if err != nil {
		return nil, err
	}
	if !r.running.TryLock() {
		return nil, status.Error(codes.FailedPrecondition, "repair: a repair is already running on this node; wait for it to finish")
	}
	defer r.running.Unlock()
	r.active.Store(1)
	defer r.active.Store(0)
	defer r.pending.Store(0)

	resp := &kvnodepb.RepairResponse{}
	for _, t := range tables {
		ks, ok := s.Keyspace(t.Keyspace)
		if !ok {
			if ks, ok = sys.Keyspace(t.Keyspace); !ok {
				continue
			}
		}
		tr := r.repairTable(ctx, t, ks.ReplicationFactor)
		resp.Tables = append(resp.Tables, tr)
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
	}
	return resp, nil
}

// repairRange is one token range to repair and its replicas.
type repairRange struct {
	r        replica.TokenRange
	replicas []coordinator.NodeID
}

// localRanges returns the token ranges of ring that self replicates at replication factor rf,
// each with its replicas, in token order. The range that wraps around the ring is split in two,
// (last token, MaxInt64] and (MinInt64, first token].
func localRanges(ring *cluster.Ring, self cluster.NodeID, rf int) []repairRange {
	var tokens []int64
	for _, id := range ring.Nodes() {
		tokens = append(tokens, ring.Tokens(id)...)
	}
	slices.Sort(tokens)
	tokens = slices.Compact(tokens)
	if len(tokens) == 0 {
		return nil
	}
	var out []repairRange
	add := func(r replica.TokenRange, owner int64) {
		if r.Start >= r.End {
			return
		}
		ids := ring.Replicas(owner, rf)
		if !slices.Contains(ids, self) {
			return
		}
		reps := make([]coordinator.NodeID, len(ids))
		for i, id := range ids {
			reps[i] = coordinator.NodeID(id)
		}
		out = append(out, repairRange{r: r, replicas: reps})
	}
	add(replica.TokenRange{Start: math.MinInt64, End: tokens[0]}, tokens[0])
	for i := 1; i < len(tokens); i++ {
		add(replica.TokenRange{Start: tokens[i-1], End: tokens[i]}, tokens[i])
	}
	add(replica.TokenRange{Start: tokens[len(tokens)-1], End: math.MaxInt64}, tokens[0])
	return out
}

// repairTable repairs every range of t this node replicates and, when all succeeded, records
// the repair for t and purges what it lets go.
func (r *repairService) repairTable(ctx context.Context, t *schema.Table, rf int) *kvnodepb.TableRepair {
	start := r.now()
	tr := &kvnodepb.TableRepair{Keyspace: t.Keyspace, Table: t.Name, StartedUnixNanos: start.UnixNano()}
	ranges := localRanges(r.n.cluster.Ring(), r.n.cluster.LocalID(), rf)
	r.pending.Store(int64(len(ranges)))
	for _, rr := range ranges {
		tr.Ranges++
		err := r.repairRange(ctx, t, rr, tr)
		r.pending.Add(-1)
		if err != nil {
			tr.RangesFailed++
			r.rangesFailed.Add(1)
			tr.Errors = append(tr.Errors, fmt.Sprintf("range (%d, %d] on %v: %v", rr.r.Start, rr.r.End, rr.replicas, err))
			if ctx.Err() != nil {
				return tr
			}
			continue
		}
		r.rangesOK.Add(1)
	}
	r.log.Info("table repaired", "table", t.QualifiedName(), "ranges", tr.Ranges, "failed", tr.RangesFailed,
		"leaves_mismatched", tr.LeavesMismatched, "partitions_streamed", tr.PartitionsStreamed, "took", r.now().Sub(start))
	if tr.RangesFailed == 0 {
		if err := r.n.repaired(ctx, t, start); err != nil {
			tr.Errors = append(tr.Errors, fmt.Sprintf("recording the repair: %v", err))
		}
	}
	return tr
}

// api returns node id's anti-entropy API.
func (r *repairService) api(id coordinator.NodeID) (antiEntropyAPI, error) {
	if id == coordinator.NodeID(r.n.cluster.LocalID()) {
		return r.n.replica.AntiEntropy(), nil
	}
	if !r.n.cluster.IsLive(cluster.NodeID(id)) {
		return nil, fmt.Errorf("replica %s is down", id)
	}
	return r.n.trans.antiEntropy(id)
}

// repairRange repairs one range of t among its replicas, adding what it did to tr.
func (r *repairService) repairRange(ctx context.Context, t *schema.Table, rr repairRange, tr *kvnodepb.TableRepair) error {
	if len(rr.replicas) < 2 {
		return nil // nothing to compare with
	}
	apis := make([]antiEntropyAPI, len(rr.replicas))
	leaves := make([][][]byte, len(rr.replicas))
	for i, id := range rr.replicas {
		api, err := r.api(id)
		if err != nil {
			return err
		}
		apis[i] = api
		resp, err := api.RangeHashes(ctx, &replicapb.RangeHashesRequest{TableId: uint64(t.ID),
			Range: &replicapb.RepairRange{Start: rr.r.Start, End: rr.r.End}, Leaves: repairLeaves})
		if err := replyError(id, err, resp.GetStatus(), resp.GetError()); err != nil {
			return err
		}
		if len(resp.Leaves) != repairLeaves {
			return fmt.Errorf("replica %s answered %d leaf hashes, want %d", id, len(resp.Leaves), repairLeaves)
		}
		leaves[i] = resp.Leaves
	}
	subranges := replica.LeafRanges(rr.r, repairLeaves)
	for l := range repairLeaves {
		same := true
		for i := 1; i < len(leaves); i++ {
			if string(leaves[i][l]) != string(leaves[0][l]) {
				same = false
				break
			}
		}
		if same {
			continue
		}
		tr.LeavesMismatched++
		r.leavesMismatched.Add(1)
		if err := r.repairLeaf(ctx, t, subranges[l], rr.replicas, apis, tr); err != nil {
			return err
		}
	}
	return nil
}

// replyError returns the error of a replica's answer: the call's, or its status's.
func replyError(id coordinator.NodeID, err error, st replicapb.Status, rerr *replicapb.Error) error {
	switch {
	case err != nil:
		return fmt.Errorf("replica %s: %w", id, err)
	case st != replicapb.Status_STATUS_OK:
		return fmt.Errorf("replica %s: %v: %s", id, rerr.GetCode(), rerr.GetMessage())
	}
	return nil
}

// partitionVersions is what the replicas hold of one partition: its key and each replica's
// hash ("" for none).
type partitionVersions struct {
	ref    *replicapb.PartitionRef
	hashes []string
}

// repairLeaf compares the partitions of one leaf and streams the versions that differ.
func (r *repairService) repairLeaf(ctx context.Context, t *schema.Table, lr replica.TokenRange, ids []coordinator.NodeID, apis []antiEntropyAPI, tr *kvnodepb.TableRepair) error {
	byKey := map[string]*partitionVersions{}
	var order []string
	for i, api := range apis {
		resp, err := api.PartitionHashes(ctx, &replicapb.PartitionHashesRequest{TableId: uint64(t.ID), Range: &replicapb.RepairRange{Start: lr.Start, End: lr.End}})
		if err := replyError(ids[i], err, resp.GetStatus(), resp.GetError()); err != nil {
			return err
		}
		for _, p := range resp.Partitions {
			key := fmt.Sprintf("%d/%q", p.Token, p.PartitionKey)
			pv := byKey[key]
			if pv == nil {
				pv = &partitionVersions{ref: &replicapb.PartitionRef{Token: p.Token, PartitionKey: p.PartitionKey}, hashes: make([]string, len(apis))}
				byKey[key] = pv
				order = append(order, key)
			}
			pv.hashes[i] = string(p.Hash)
		}
	}
	// For each replica, the partitions to fetch from it: the versions no earlier replica holds.
	fetch := make([][]*partitionVersions, len(apis))
	for _, key := range order {
		pv := byKey[key]
		if allEqual(pv.hashes) {
			continue
		}
		for i, h := range pv.hashes {
			if h != "" && !slices.Contains(pv.hashes[:i], h) {
				fetch[i] = append(fetch[i], pv)
			}
		}
	}
	for i, pvs := range fetch {
		for len(pvs) > 0 {
			batch := pvs[:min(len(pvs), repairFetchBatch)]
			pvs = pvs[len(batch):]
			req := &replicapb.FetchPartitionsRequest{TableId: uint64(t.ID)}
			for _, pv := range batch {
				req.Partitions = append(req.Partitions, pv.ref)
			}
			resp, err := apis[i].FetchPartitions(ctx, req)
			if err := replyError(ids[i], err, resp.GetStatus(), resp.GetError()); err != nil {
				return err
			}
			for _, m := range resp.Mutations {
				pv := byKey[fmt.Sprintf("%d/%q", m.Token, m.PartitionKey)]
				if pv == nil {
					continue // not asked for: ignore
				}
				// The replicas whose version differs from replica i's get it.
				for j, h := range pv.hashes {
					if h == pv.hashes[i] {
						continue
					}
					if err := r.stream(ctx, ids[j], m); err != nil {
						return err
					}
					tr.PartitionsStreamed++
					n := uint64(proto.Size(m))
					tr.BytesStreamed += n
					r.streamed.Add(1)
					r.streamedBytes.Add(n)
				}
			}
		}
	}
	return nil
}

func allEqual(hs []string) bool {
	for _, h := range hs[1:] {
		if h != hs[0] {
			return false
		}
	}
	return true
}

// stream writes m to replica to, exempt from the rate limiter and throttled with the node's
// streams (topology.throttle): repair and streaming together send at most stream_throughput.
func (r *repairService) stream(ctx context.Context, to coordinator.NodeID, m *replicapb.Mutation) error {
	if err := r.n.topo.throttle(ctx, proto.Size(m)); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, r.n.cfg.WriteTimeout)
	defer cancel()
	resp, err := r.n.trans.Mutate(cctx, to, &replicapb.MutateRequest{Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_NONE}, Mutation: m})
	return replyError(to, err, resp.GetStatus(), resp.GetError())
}

// purgeInterval is how often a node purges the tombstones its tables may let go (besides right
// after each repair of a table): gc_grace_seconds counts in seconds, but a tombstone an hour
// late costs only its space.
const purgeInterval = time.Hour

// repaired records that a repair that started at start repaired every range of t this node
// replicates, and purges t at once.
func (n *Node) repaired(ctx context.Context, t *schema.Table, start time.Time) error {
	if err := n.store.SetRepairedAt(t.ID, start); err != nil {
		return err
	}
	return n.purge(ctx, t)
}

// purge runs one purge pass over t.
func (n *Node) purge(ctx context.Context, t *schema.Table) error {
	st, err := n.store.Purge(ctx, t, time.Now()) // the clock of tombstones' local deletion time
	if err != nil {
		return fmt.Errorf("purge %s: %w", t.QualifiedName(), err)
	}
	if st.Tombstones > 0 || st.Shadowed > 0 {
		n.log.Info("tombstones purged", "table", t.QualifiedName(), "tombstones", st.Tombstones, "shadowed", st.Shadowed, "partitions", st.Partitions)
	}
	return nil
}

// purger is the goroutine that purges every table each purgeInterval. The node owns it.
type purger struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startPurge starts the node's periodic purge.
func (n *Node) startPurge() {
	ctx, cancel := context.WithCancel(context.Background())
	p := &purger{cancel: cancel, done: make(chan struct{})}
	n.purger = p
	go func() {
		defer close(p.done)
		t := time.NewTicker(purgeInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s := n.schema.Schema()
			for _, k := range s.Keyspaces() {
				for _, tb := range s.Tables(k.Name) {
					if err := n.purge(ctx, tb); err != nil && ctx.Err() == nil {
						n.log.Error("tombstone purge failed", "err", err)
					}
				}
			}
		}
	}()
}

// stop ends the purger (a pass in progress stops at its next partition) and waits for it.
func (p *purger) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}
