package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Leaves is how many leaves each range is split into.
const Leaves = 64

// fetchBatch is how many partitions one FetchPartitions asks for.
const fetchBatch = 32

// AntiEntropy is what repair asks each replica: the local replica's service in process
// (replica.AntiEntropy), or a peer's over the internode transport.
type AntiEntropy interface {
	RangeHashes(ctx context.Context, req *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error)
	PartitionHashes(ctx context.Context, req *replicapb.PartitionHashesRequest) (*replicapb.PartitionHashesResponse, error)
	FetchPartitions(ctx context.Context, req *replicapb.FetchPartitionsRequest) (*replicapb.FetchPartitionsResponse, error)
}

// Host is what repair needs of its node. Its methods are safe for concurrent use.
type Host interface {
	// Self returns the node's id.
	Self() coordinator.NodeID
	// Ring returns the current token ring.
	Ring() Ring
	// Schema returns the node's current schema: the tables the periodic purge goes over.
	Schema() *schema.Schema
	// AntiEntropy returns the anti-entropy service of replica id: the local one for Self. It
	// fails with ErrDown when the replica is down.
	AntiEntropy(id coordinator.NodeID) (AntiEntropy, error)
	// Mutate writes a mutation to replica to (the local replica for Self).
	Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error)
	// Throttle waits until n more bytes may be streamed: repair shares the node's stream
	// throughput with its topology streams.
	Throttle(ctx context.Context, n int) error
	// SetRepairedAt records in the local store that every range of table id was repaired by a
	// repair that started at at.
	SetRepairedAt(id schema.TableID, at time.Time) error
	// RepairedAt returns what SetRepairedAt recorded last for table id; false when nothing.
	RepairedAt(id schema.TableID) (time.Time, bool, error)
	// Purge runs one purge pass over the local store's table t at now.
	Purge(ctx context.Context, t *schema.Table, now time.Time) (replica.PurgeStats, error)
}

// ErrDown is the error Host.AntiEntropy returns for a replica that is down.
var ErrDown = errors.New("repair: replica is down")

// ErrRunning is the error of a repair asked for while another runs on the node.
var ErrRunning = errors.New("repair: a repair is already running on this node; wait for it to finish")

// ReplicaError is the failure of one replica of a range: down, unreachable, or answering an
// error.
type ReplicaError struct {
	Replica coordinator.NodeID
	Err     error
}

func (e *ReplicaError) Error() string {
	if errors.Is(e.Err, ErrDown) {
		return fmt.Sprintf("replica %s is down", e.Replica)
	}
	return fmt.Sprintf("replica %s: %v", e.Replica, e.Err)
}

func (e *ReplicaError) Unwrap() error { return e.Err }

// RangeError is the failure of one range: its repair stopped at Err (most often a
// *ReplicaError).
type RangeError struct {
	Range
	Err error
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("range (%d, %d] on %v: %v", e.Range.Range.Start, e.Range.Range.End, e.Replicas, e.Err)
}

func (e *RangeError) Unwrap() error { return e.Err }

// Target is a table to repair, with its keyspace's placement.
type Target struct {
	Table *schema.Table
	RF    schema.Replication
}

// TableResult is what the repair of one table did.
type TableResult struct {
	Keyspace, Table string
	// Started is when the table's repair started: once every range was repaired, tombstones
	// stored before it may be purged when older than gc_grace_seconds.
	Started time.Time
	// Ranges of this node compared, and those that failed.
	Ranges, RangesFailed int
	// LeavesMismatched counts the leaves (token sub-ranges) whose hashes differed.
	LeavesMismatched uint64
	// PartitionsStreamed counts the partition versions written to replicas that lacked them;
	// BytesStreamed their size.
	PartitionsStreamed, BytesStreamed uint64
	// Errors says what failed: a *RangeError per failed range, and the failure to record the
	// repair, if any.
	Errors []error
}

// Config configures New: the operator's Options and what the node wires in (repair's writes
// share the node's stream_throughput through Host.Throttle). Host and WriteTimeout are
// required; the zero value of every other field means its default.
type Config struct {
	Options
	// StateFile holds the automatic repair's round in progress, so that a restarted node
	// resumes it (auto.go). Empty keeps it in memory.
	StateFile string
	// Host is the node. Required.
	Host Host
	// Logger receives the purge's log, and the repair's with component=repair. Nil discards
	// them.
	Logger *slog.Logger
	// Now is the clock of repair times and purges: the clock of tombstones' local deletion
	// time. Nil means time.Now.
	Now func() time.Time
	// WriteTimeout bounds each streamed write. Required.
	WriteTimeout time.Duration
}

// Service runs repairs, one at a time, and the periodic purge; it keeps the repair metrics
// (it is a prometheus.Collector).
type Service struct {
	host     Host
	log      *slog.Logger // the repair's
	purgeLog *slog.Logger
	now      func() time.Time
	timeout  time.Duration
	// running is held for the whole of a manual repair, and for each range of the automatic
	// one (autoHolding then): one at a time per node.
	running     sync.Mutex
	autoHolding atomic.Bool
	purger      *loop.Loop

	// The automatic repair (auto.go). retryAt is its round's own.
	opts       Options
	stateFile  string
	auto       *loop.Loop
	retryAt    map[schema.TableID]time.Time
	autoMem    *autoState // the saved round without a StateFile
	autoMu     sync.Mutex // guards autoCur and autoTotal
	autoCur    *autoState
	autoTotal  int
	autoOK     atomic.Uint64
	autoFailed atomic.Uint64

	rangesOK, rangesFailed, leavesMismatched, streamed, streamedBytes atomic.Uint64
	pending, active                                                   atomic.Int64

	rangesDesc, leavesDesc, streamedDesc, bytesDesc, pendingDesc, activeDesc *prometheus.Desc
	autoRangesDesc, autoPendingDesc, lastRepairedDesc                        *prometheus.Desc
}

// EnsureDefaults replaces zero fields with their defaults and returns c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a service New can build.
func (c *Config) Validate() error {
	switch {
	case c.Host == nil:
		return errors.New("repair: Config.Host is nil")
	case c.WriteTimeout <= 0:
		return fmt.Errorf("repair: Config.WriteTimeout is %v, want a positive duration", c.WriteTimeout)
	}
	return c.Options.Validate()
}

// New returns a repair service over cfg.Host, its periodic purge not yet started.
func New(cfg Config) (*Service, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	return &Service{
		host: cfg.Host, log: cfg.Logger.With("component", "repair"), purgeLog: cfg.Logger, now: cfg.Now, timeout: cfg.WriteTimeout,
		opts: cfg.Options, stateFile: cfg.StateFile, retryAt: map[schema.TableID]time.Time{},
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
		autoRangesDesc: prometheus.NewDesc("kvnode_auto_repair_ranges_total",
			"Token ranges of tables this node's automatic repair repaired, by result: ok, or failed (a replica down or failing).", []string{"result"}, nil),
		autoPendingDesc: prometheus.NewDesc("kvnode_auto_repair_ranges_pending",
			"Token ranges the automatic repair's round in progress has still to repair (0 between rounds).", nil, nil),
		lastRepairedDesc: prometheus.NewDesc("kvnode_repair_last_completed_timestamp_seconds",
			"When the last complete repair of a table on this node started (by kvnode repair or the automatic repair), in seconds since the Unix epoch; its tombstones and expired data older than that and than gc_grace_seconds may be purged. Absent for a table never repaired.",
			[]string{"keyspace", "table"}, nil),
	}, nil
}

// Describe implements prometheus.Collector.
func (s *Service) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.rangesDesc, s.leavesDesc, s.streamedDesc, s.bytesDesc, s.pendingDesc, s.activeDesc,
		s.autoRangesDesc, s.autoPendingDesc, s.lastRepairedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *Service) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(s.rangesDesc, prometheus.CounterValue, float64(s.rangesOK.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(s.rangesDesc, prometheus.CounterValue, float64(s.rangesFailed.Load()), "failed")
	ch <- prometheus.MustNewConstMetric(s.leavesDesc, prometheus.CounterValue, float64(s.leavesMismatched.Load()))
	ch <- prometheus.MustNewConstMetric(s.streamedDesc, prometheus.CounterValue, float64(s.streamed.Load()))
	ch <- prometheus.MustNewConstMetric(s.bytesDesc, prometheus.CounterValue, float64(s.streamedBytes.Load()))
	ch <- prometheus.MustNewConstMetric(s.pendingDesc, prometheus.GaugeValue, float64(s.pending.Load()))
	ch <- prometheus.MustNewConstMetric(s.activeDesc, prometheus.GaugeValue, float64(s.active.Load()))
	ch <- prometheus.MustNewConstMetric(s.autoRangesDesc, prometheus.CounterValue, float64(s.autoOK.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(s.autoRangesDesc, prometheus.CounterValue, float64(s.autoFailed.Load()), "failed")
	s.autoMu.Lock()
	pending := 0
	if s.autoCur != nil {
		pending = s.autoTotal - s.autoCur.Done
	}
	s.autoMu.Unlock()
	ch <- prometheus.MustNewConstMetric(s.autoPendingDesc, prometheus.GaugeValue, float64(pending))
	sc := s.host.Schema()
	for _, k := range sc.Keyspaces() {
		for _, t := range sc.Tables(k.Name) {
			if at, ok, err := s.host.RepairedAt(t.ID); err == nil && ok {
				ch <- prometheus.MustNewConstMetric(s.lastRepairedDesc, prometheus.GaugeValue, float64(at.UnixNano())/1e9, t.Keyspace, t.Name)
			}
		}
	}
}

// Repair repairs every range this node replicates of each target, one table after another,
// and returns what it did per table. A failed range fails neither the table nor the repair: it
// is in its table's result. Repair fails with ErrRunning when another repair asked for runs
// (the automatic repair instead waits for it, after its range in progress), and with ctx's
// error, after the tables done so far, when ctx ends.
func (s *Service) Repair(ctx context.Context, targets []Target) ([]TableResult, error) {
	if !s.lockManual() {
		return nil, ErrRunning
	}
	defer s.running.Unlock()
	s.active.Store(1)
	defer s.active.Store(0)
	defer s.pending.Store(0)

	var out []TableResult
	for _, tg := range targets {
		out = append(out, s.repairTable(ctx, tg.Table, tg.RF))
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// repairTable repairs every range of t this node replicates and, when all succeeded, records
// the repair for t and purges what it lets go.
func (s *Service) repairTable(ctx context.Context, t *schema.Table, rf schema.Replication) TableResult {
	start := s.now()
	tr := TableResult{Keyspace: t.Keyspace, Table: t.Name, Started: start}
	ranges := LocalRanges(s.host.Ring(), s.host.Self(), rf)
	s.pending.Store(int64(len(ranges)))
	for _, rr := range ranges {
		tr.Ranges++
		err := s.repairRange(ctx, t, rr, &tr)
		s.pending.Add(-1)
		if err != nil {
			tr.RangesFailed++
			s.rangesFailed.Add(1)
			tr.Errors = append(tr.Errors, &RangeError{Range: rr, Err: err})
			if ctx.Err() != nil {
				return tr
			}
			continue
		}
		s.rangesOK.Add(1)
	}
	s.log.Info("table repaired", "table", t.QualifiedName(), "ranges", tr.Ranges, "failed", tr.RangesFailed,
		"leaves_mismatched", tr.LeavesMismatched, "partitions_streamed", tr.PartitionsStreamed, "took", s.now().Sub(start))
	if tr.RangesFailed == 0 {
		if err := s.repaired(ctx, t, start); err != nil {
			tr.Errors = append(tr.Errors, fmt.Errorf("recording the repair: %w", err))
		}
	}
	return tr
}

// api returns replica id's anti-entropy service.
func (s *Service) api(id coordinator.NodeID) (AntiEntropy, error) {
	api, err := s.host.AntiEntropy(id)
	if err != nil {
		return nil, &ReplicaError{Replica: id, Err: err}
	}
	return api, nil
}

// repairRange repairs one range of t among its replicas, adding what it did to tr.
func (s *Service) repairRange(ctx context.Context, t *schema.Table, rr Range, tr *TableResult) error {
	if len(rr.Replicas) < 2 {
		return nil // nothing to compare with
	}
	apis := make([]AntiEntropy, len(rr.Replicas))
	leaves := make([][][]byte, len(rr.Replicas))
	for i, id := range rr.Replicas {
		api, err := s.api(id)
		if err != nil {
			return err
		}
		apis[i] = api
		resp, err := api.RangeHashes(ctx, &replicapb.RangeHashesRequest{TableId: uint64(t.ID),
			Range: &replicapb.RepairRange{Start: rr.Range.Start, End: rr.Range.End}, Leaves: Leaves})
		if err := replyError(id, err, resp.GetStatus(), resp.GetError()); err != nil {
			return err
		}
		if len(resp.Leaves) != Leaves {
			return &ReplicaError{Replica: id, Err: fmt.Errorf("answered %d leaf hashes, want %d", len(resp.Leaves), Leaves)}
		}
		leaves[i] = resp.Leaves
	}
	subranges := replica.LeafRanges(rr.Range, Leaves)
	for l := range Leaves {
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
		s.leavesMismatched.Add(1)
		if err := s.repairLeaf(ctx, t, subranges[l], rr.Replicas, apis, tr); err != nil {
			return err
		}
	}
	return nil
}

// replyError returns the error of a replica's answer: the call's, or its status's.
func replyError(id coordinator.NodeID, err error, st replicapb.Status, rerr *replicapb.Error) error {
	switch {
	case err != nil:
		return &ReplicaError{Replica: id, Err: err}
	case st != replicapb.Status_STATUS_OK:
		return &ReplicaError{Replica: id, Err: fmt.Errorf("%v: %s", rerr.GetCode(), rerr.GetMessage())}
	}
	return nil
}

// versions is what the replicas hold of one partition: its key and each replica's hash (""
// for none).
type versions struct {
	ref    *replicapb.PartitionRef
	hashes []string
}

// repairLeaf compares the partitions of one leaf and streams the versions that differ.
func (s *Service) repairLeaf(ctx context.Context, t *schema.Table, lr replica.TokenRange, ids []coordinator.NodeID, apis []AntiEntropy, tr *TableResult) error {
	byKey := map[string]*versions{}
	var order []string
	for i, api := range apis {
		resp, err := api.PartitionHashes(ctx, &replicapb.PartitionHashesRequest{TableId: uint64(t.ID), Range: &replicapb.RepairRange{Start: lr.Start, End: lr.End}})
		if err := replyError(ids[i], err, resp.GetStatus(), resp.GetError()); err != nil {
			return err
		}
		for _, p := range resp.Partitions {
			if err := checkListed(lr, p.Token, p.PartitionKey); err != nil {
				return &ReplicaError{Replica: ids[i], Err: err}
			}
			key := fmt.Sprintf("%d/%q", p.Token, p.PartitionKey)
			pv := byKey[key]
			if pv == nil {
				pv = &versions{ref: &replicapb.PartitionRef{Token: p.Token, PartitionKey: p.PartitionKey}, hashes: make([]string, len(apis))}
				byKey[key] = pv
				order = append(order, key)
			}
			pv.hashes[i] = string(p.Hash)
		}
	}
	// For each replica, the partitions to fetch from it: the versions no earlier replica holds.
	fetch := make([][]*versions, len(apis))
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
			batch := pvs[:min(len(pvs), fetchBatch)]
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
					if err := s.stream(ctx, ids[j], m); err != nil {
						return err
					}
					tr.PartitionsStreamed++
					n := uint64(proto.Size(m))
					tr.BytesStreamed += n
					s.streamed.Add(1)
					s.streamedBytes.Add(n)
				}
			}
		}
	}
	return nil
}

// checkListed checks a partition a replica listed for leaf lr: its token lies in the leaf and
// is its key's. Repair streams what it fetches of a listed partition to the other replicas as
// that token's, so a replica with a corrupt entry (or a buggy peer) fails its leaf rather than
// spread the entry.
func checkListed(lr replica.TokenRange, token int64, pk [][]byte) error {
	if !lr.Contains(token) {
		return fmt.Errorf("listed a partition at token %d, outside the leaf (%d, %d]", token, lr.Start, lr.End)
	}
	if pt := partitioner.Token(partitioner.AppendKey(nil, pk)); pt != token {
		return fmt.Errorf("listed a partition at token %d whose key's token is %d", token, pt)
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
// streams: repair and streaming together send at most the node's stream throughput.
func (s *Service) stream(ctx context.Context, to coordinator.NodeID, m *replicapb.Mutation) error {
	if err := s.host.Throttle(ctx, proto.Size(m)); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := s.host.Mutate(cctx, to, &replicapb.MutateRequest{Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_NONE}, Mutation: m})
	return replyError(to, err, resp.GetStatus(), resp.GetError())
}
