package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// SchemaSource is the node's current schema as the service reads it, once per
// request. A *schema.Schema is one (a fixed schema); a node passes a holder
// whose schema it swaps as changes arrive.
type SchemaSource interface {
	TableByID(id schema.TableID) (*schema.Table, bool)
}

// Config configures a Service: its dependencies and bounds, which the node derives from its own
// settings. Store and Schema are required; the zero value of every other field means its default.
type Config struct {
	// Store holds the data. Required.
	Store *Store
	// Schema resolves table ids. Required.
	Schema SchemaSource
	// Limits holds the per-partition counters. Nil means a new table with
	// partitionlimit's default capacity.
	Limits *partitionlimit.Table
	// Now is the clock the limiter reads for gRPC requests. Nil means
	// time.Now. A request stamped by its coordinator is accounted at the
	// stamp instead, bounded to within MaxStampSkew of Now.
	Now func() time.Time
	// MaxStampSkew bounds how far a coordinator's stamp may be from Now
	// (partitionlimit.Stamp); a stamp beyond it is clamped and counted in
	// kvnode_limiter_clamped_stamps_total. Zero means
	// partitionlimit.DefaultMaxStampSkew.
	MaxStampSkew time.Duration
	// Logger receives internal (storage) errors. Nil discards them.
	Logger *slog.Logger
	// MaxBatchlogEntry bounds a batchlog entry (StoreBatch), in bytes of its protobuf
	// encoding; the node sets its max_mutation_size. Zero means DefaultMaxBatchlogEntry.
	MaxBatchlogEntry int
	// NodeID is the node's id, which names the node's shard of the counter cells it leads
	// updates of (counter.go). Without it the service refuses to lead counter updates.
	NodeID string
}

// Service is the replica side of kvnode: it applies mutations and serves
// reads of the partitions this node replicates, after consulting the
// per-partition rate limiter as each request's Limiter says. Its methods are
// the node's internode handlers of those requests (package internode), which
// serves them to peers and, in process, to the node's own coordinator.
//
// Limiter modes, per request:
//
//   - NONE: exempt, neither counted nor rejected. Also every operation on a
//     table without a limit for the op; such traffic never touches the
//     counters.
//   - ACCOUNT_ONLY: counted, never rejected.
//   - ACCOUNT_AND_ENFORCE: counted, then admitted or rejected by
//     partitionlimit.Admit with the request's draw. A rejection returns
//     STATUS_RATE_LIMITED at once, without touching storage; the only
//     allocation is the response.
//
// A coordinator that is itself a replica calls Check to account and decide
// locally, then applies its own copy with Mutate or Read in mode NONE, so the
// operation is counted once.
type Service struct {
	store   *Store
	schema  SchemaSource
	limits  *partitionlimit.Table
	now     func() time.Time
	maxSkew time.Duration
	logger  *slog.Logger
	ops     opStates
	metrics *serviceMetrics

	maxBatchlog int // Config.MaxBatchlogEntry
	batchlog    *batchlogMetrics

	// paxos serialises the Paxos acceptor's read-modify-writes per partition (paxos.go).
	paxos                        [paxosStripes]sync.Mutex
	paxosPrepares, paxosRejected atomic.Uint64

	// nodeID is Config.NodeID; counters serialises counter updates per partition (counter.go).
	nodeID   string
	counters [counterStripes]sync.Mutex
	shards   shardCache
}

// NewService returns a service for cfg.
func NewService(cfg Config) (*Service, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	s := &Service{store: cfg.Store, schema: cfg.Schema, limits: cfg.Limits, now: cfg.Now, maxSkew: cfg.MaxStampSkew, logger: cfg.Logger, nodeID: cfg.NodeID}
	if s.limits == nil {
		var err error
		if s.limits, err = partitionlimit.New(partitionlimit.Options{}); err != nil {
			return nil, fmt.Errorf("replica: %w", err)
		}
	}
	s.metrics = newServiceMetrics(s)
	s.maxBatchlog = cfg.MaxBatchlogEntry
	s.batchlog = newBatchlogMetrics(s.store)
	return s, nil
}

// EnsureDefaults replaces zero fields with their defaults (but for Limits, which NewService
// makes when nil) and returns c.
func (c *Config) EnsureDefaults() *Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxStampSkew == 0 {
		c.MaxStampSkew = partitionlimit.DefaultMaxStampSkew
	}
	if c.MaxBatchlogEntry == 0 {
		c.MaxBatchlogEntry = DefaultMaxBatchlogEntry
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a service NewService can build.
func (c *Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("replica: Config.Store is nil")
	case c.Schema == nil:
		return errors.New("replica: Config.Schema is nil")
	case c.MaxStampSkew <= 0:
		return fmt.Errorf("replica: Config.MaxStampSkew is %v, want a positive duration", c.MaxStampSkew)
	case c.MaxBatchlogEntry < 1:
		return fmt.Errorf("replica: Config.MaxBatchlogEntry is %d, want a positive number of bytes", c.MaxBatchlogEntry)
	}
	return nil
}

// Limits returns the service's counter table (for stats and metrics).
func (s *Service) Limits() *partitionlimit.Table { return s.limits }

// Collector returns the service's Prometheus metrics, for the node to register: the limiter's
// operations and rejections per table, op and rejecter, its table's occupancy (computed at
// scrape time), and replica requests and their latency by op. docs/operations.md describes
// each metric.
func (s *Service) Collector() prometheus.Collector { return s.metrics }

// Mutate applies req's mutation, durably, unless the limiter rejects it.
// Outcomes are in the response's status;
// the error is non-nil only when ctx ended before the mutation was applied.
func (s *Service) Mutate(ctx context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	m := req.GetMutation()
	if m == nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return mutateError(replicapb.Error_BAD_REQUEST, "replica: bad request: the mutate request carries no mutation"), nil
	}
	t, ok := s.schema.TableByID(schema.TableID(m.TableId))
	if !ok {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return mutateError(replicapb.Error_UNKNOWN_TABLE, unknownTable(m.TableId).Error()), nil
	}
	d, err := s.admit(t, m.Token, schema.OpWrite, req.Limiter, m.PartitionKey)
	if err != nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return mutateError(replicapb.Error_BAD_REQUEST, err.Error()), nil
	}
	if !d.Admitted {
		return mutateRateLimited(d), nil // counted by decide, as the pair's replica rejections
	}
	if err := ctx.Err(); err != nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return nil, status.FromContextError(err).Err()
	}
	start := time.Now()
	err = s.store.guarded(func() error { return s.store.Apply(t, m) })
	s.metrics.latency[reqWrite].Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		code := s.classify(err, "mutate", t)
		return mutateError(code, err.Error()), nil
	}
	s.metrics.requests[reqWrite][statusOK].Add(1)
	return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK, WouldReject: d.WouldReject}, nil
}

// Read serves req, a read of one partition, unless the limiter rejects it.
// Outcomes are in the response's status; the error is non-nil only when ctx ended before the read.
func (s *Service) Read(ctx context.Context, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	t, ok := s.schema.TableByID(schema.TableID(req.GetTableId()))
	if !ok {
		s.metrics.requests[reqRead][statusError].Add(1)
		return readError(replicapb.Error_UNKNOWN_TABLE, unknownTable(req.GetTableId()).Error()), nil
	}
	d, err := s.admit(t, req.Token, schema.OpRead, req.Limiter, req.PartitionKey)
	if err != nil {
		s.metrics.requests[reqRead][statusError].Add(1)
		return readError(replicapb.Error_BAD_REQUEST, err.Error()), nil
	}
	if !d.Admitted {
		return readRateLimited(d), nil // counted by decide, as the pair's replica rejections
	}
	if err := ctx.Err(); err != nil {
		s.metrics.requests[reqRead][statusError].Add(1)
		return nil, status.FromContextError(err).Err()
	}
	start := time.Now()
	var resp *replicapb.ReadResponse
	err = s.store.guarded(func() (err error) {
		resp, err = s.store.ReadPartition(t, req)
		return err
	})
	s.metrics.latency[reqRead].Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.requests[reqRead][statusError].Add(1)
		return readError(s.classify(err, "read", t), err.Error()), nil
	}
	s.metrics.requests[reqRead][statusOK].Add(1)
	resp.WouldReject = d.WouldReject
	return resp, nil
}

// AccountDelta counts operations this replica did not see, as a coordinator
// reports them. Deltas for tables
// this node does not know (its schema lags) or without a limit for the op
// are skipped; a malformed delta fails the whole batch and counts nothing.
func (s *Service) AccountDelta(_ context.Context, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error) {
	if resp := s.refuseDeltaCounts(req); resp != nil {
		return resp, nil
	}
	ops := make([]schema.Op, len(req.GetDeltas()))
	for i, d := range req.GetDeltas() {
		op, err := opFromWire(d.GetOp())
		if err != nil {
			s.metrics.requests[reqAccountDelta][statusError].Add(1)
			return &replicapb.AccountDeltaResponse{
				Status: replicapb.Status_STATUS_ERROR,
				Error:  &replicapb.Error{Code: replicapb.Error_BAD_REQUEST, Message: fmt.Sprintf("%v (delta %d)", err, i)},
			}, nil
		}
		ops[i] = op
	}
	now, local := s.at(req.GetStampUnixNanos())
	for i, d := range req.GetDeltas() {
		err := s.applyAccountDelta(schema.TableID(d.TableId), d.Token, ops[i], d.Count, now, local)
		if err != nil && !errors.Is(err, ErrUnknownTable) {
			return nil, err // unreachable: the ops were checked above
		}
	}
	s.metrics.requests[reqAccountDelta][statusOK].Add(1)
	return &replicapb.AccountDeltaResponse{Status: replicapb.Status_STATUS_OK}, nil
}

// Check accounts one operation of kind op on the partition with token in
// table id at now, and decides with draw as ACCOUNT_AND_ENFORCE would,
// without touching storage. A coordinator that is a replica of the token
// calls it before contacting anyone. Operations on a table without a limit
// for op are admitted without being counted (Decision.Limit is 0). The error
// wraps ErrUnknownTable or ErrBadRequest (an op other than read or write, a
// draw outside [0, 1)).
func (s *Service) Check(id schema.TableID, token int64, op schema.Op, draw float64, now time.Time) (partitionlimit.Decision, error) {
	t, ok := s.schema.TableByID(id)
	if !ok {
		return partitionlimit.Decision{}, unknownTable(uint64(id))
	}
	if err := checkOp(op); err != nil {
		return partitionlimit.Decision{}, err
	}
	return s.decide(t, token, op, partitionlimit.ModeAccountAndEnforce, draw, now, now, byCoordinator, nil)
}

// ApplyAccountDelta counts n operations of kind op on the partition with
// token in table id at now, never rejecting anything: the account-only
// propagation a coordinator sends replicas that did not see operations. A
// table without a limit for op is not counted. The error wraps
// ErrUnknownTable or ErrBadRequest. now is this node's clock.
func (s *Service) ApplyAccountDelta(id schema.TableID, token int64, op schema.Op, n uint32, now time.Time) error {
	return s.applyAccountDelta(id, token, op, n, now, now)
}

// applyAccountDelta is ApplyAccountDelta at now, a coordinator's stamp bounded against local,
// this node's clock (see at).
func (s *Service) applyAccountDelta(id schema.TableID, token int64, op schema.Op, n uint32, now, local time.Time) error {
	t, ok := s.schema.TableByID(id)
	if !ok {
		return unknownTable(uint64(id))
	}
	if err := checkOp(op); err != nil {
		return err
	}
	limit := t.Limit(op)
	if limit == 0 || n == 0 {
		return nil
	}
	st, err := s.ops.get(t, op)
	if err != nil {
		return err
	}
	c := s.limits.AccountNAt(token, st.label, n, limit, now, local)
	st.admitted.Add(uint64(n))
	if isHot(c, limit) {
		st.hot.update(token, c, noRejection, nil, now)
	}
	return nil
}

// Count returns the decayed limiter counter of operations of kind op on the partition with token
// in table id at now, without counting anything: what the next Check would see before its own
// increment. Unknown tables and ops count 0.
func (s *Service) Count(id schema.TableID, token int64, op schema.Op, now time.Time) uint32 {
	if _, ok := s.schema.TableByID(id); !ok || checkOp(op) != nil {
		return 0
	}
	st, ok := s.ops.lookup(id, op)
	if !ok {
		return 0 // nothing was ever counted for the pair
	}
	return s.limits.Peek(token, st.label, now)
}

// admit applies the request's limiter instructions for an op on table t. pk is the
// operation's partition key, remembered if the partition turns out to be hot.
func (s *Service) admit(t *schema.Table, token int64, op schema.Op, lim *replicapb.Limiter, pk [][]byte) (partitionlimit.Decision, error) {
	mode, err := modeFromWire(lim.GetMode())
	if err != nil {
		return partitionlimit.Decision{}, err
	}
	if mode == partitionlimit.ModeNone {
		return partitionlimit.Decision{Admitted: true}, nil
	}
	now, local := s.at(lim.GetStampUnixNanos())
	return s.decide(t, token, op, mode, lim.GetDraw(), now, local, byReplica, pk)
}

// at returns the time to account an operation or delta batch stamped stamp (nanoseconds since
// the Unix epoch; 0 for none) at: the coordinator's stamp bounded to within maxSkew of this
// node's clock (partitionlimit.Stamp), so that every replica of an operation accounts it at
// the same time whatever its own clock says (docs/architecture.md, the limiter), and this node's clock, local, on
// which the limiter measures how old a young counter is (partitionlimit.Table.ApplyAt).
// Clamped stamps are counted.
func (s *Service) at(stamp int64) (at, local time.Time) {
	local = s.now()
	if stamp == 0 {
		return local, local
	}
	t, clamped := partitionlimit.Stamp(time.Unix(0, stamp), local, s.maxSkew)
	if clamped {
		s.metrics.clamped.Add(1)
	}
	return t, local
}

// decide accounts and decides one operation in a counting mode, by partitionlimit's
// Table.ApplyAt (the very decision test/sim drives) at now on a node whose clock reads local,
// and keeps the pair's statistics; by is who a rejection is attributed to, pk the partition key
// when the caller has it (else nil). Operations whose counter ends above twice the limit
// update the pair's hot set.
func (s *Service) decide(t *schema.Table, token int64, op schema.Op, mode partitionlimit.Mode, draw float64, now, local time.Time, by rejecter, pk [][]byte) (partitionlimit.Decision, error) {
	limit := t.Limit(op)
	var st *opState
	var label uint32
	if limit != 0 {
		// A pair without a limit is never counted: it gets no label and no statistics.
		var err error
		if st, err = s.ops.get(t, op); err != nil {
			return partitionlimit.Decision{}, err
		}
		label = st.label
	}
	d, err := s.limits.ApplyAt(mode, token, label, limit, draw, now, local)
	if err != nil {
		return partitionlimit.Decision{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if st == nil {
		return d, nil
	}
	if !d.Admitted && t.RateLimit.Mode == schema.Shadow {
		// Shadow mode: decided exactly as in enforce mode, and admitted; the would-be
		// rejection is reported instead: the coordinator warns the client and counts the
		// operation once (kvnode_limiter_would_reject_total), and the hot set below keeps it
		// for TopPartitions.
		d.Admitted, d.WouldReject, d.RetryAfter = true, true, 0
	}
	switch {
	case d.WouldReject:
		st.admitted.Add(1)
		by = wouldRejectBy + by
	case d.Admitted:
		st.admitted.Add(1)
		by = noRejection
	default:
		st.rejected[by].Add(1)
	}
	if isHot(d.Count, limit) && sampled(d.Count) {
		st.hot.update(token, d.Count, by, pk, now)
	}
	return d, nil
}

// modeFromWire converts the internode protocol's limiter mode to the domain's, at the edge.
func modeFromWire(m replicapb.Limiter_Mode) (partitionlimit.Mode, error) {
	switch m {
	case replicapb.Limiter_NONE:
		return partitionlimit.ModeNone, nil
	case replicapb.Limiter_ACCOUNT_ONLY:
		return partitionlimit.ModeAccountOnly, nil
	case replicapb.Limiter_ACCOUNT_AND_ENFORCE:
		return partitionlimit.ModeAccountAndEnforce, nil
	}
	return 0, fmt.Errorf("%w: unknown limiter mode %d", ErrBadRequest, m)
}

func checkOp(op schema.Op) error {
	if !op.Valid() {
		return fmt.Errorf("%w: op %v is neither read nor write", ErrBadRequest, op)
	}
	return nil
}

// opFromWire converts the internode protocol's op to the domain's, at the edge: the service
// speaks schema.Op inside.
func opFromWire(op replicapb.Op) (schema.Op, error) {
	if o, ok := internode.DomainOp(op); ok {
		return o, nil
	}
	return 0, fmt.Errorf("%w: op %v is neither read nor write", ErrBadRequest, op)
}

func unknownTable(id uint64) error {
	return fmt.Errorf("%w: table id %d is not in this node's schema", ErrUnknownTable, id)
}

// classify maps a storage error to an error code, logging internal ones.
func (s *Service) classify(err error, what string, t *schema.Table) replicapb.Error_Code {
	if errors.Is(err, ErrBadRequest) {
		return replicapb.Error_BAD_REQUEST
	}
	if errors.Is(err, ErrLowDiskSpace) || errors.Is(err, ErrStorageFailed) {
		// Logged once, when the disk filled or the storage failed; the message names it.
		return replicapb.Error_INTERNAL
	}
	if errors.Is(err, ErrTooManyTombstones) {
		if s.logger != nil {
			s.logger.Warn("replica "+what+" aborted", "table", t.QualifiedName(), "err", err)
		}
		return replicapb.Error_TOO_MANY_TOMBSTONES
	}
	if s.logger != nil {
		s.logger.Error("replica "+what+" failed", "table", t.QualifiedName(), "err", err)
	}
	return replicapb.Error_INTERNAL
}

// retryAfterMillis converts a retry hint to whole milliseconds, rounding up.
func retryAfterMillis(d time.Duration) uint32 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return uint32(min(max(ms, 0), math.MaxUint32))
}

// mutateRateLimited builds a rejection with one allocation.
func mutateRateLimited(d partitionlimit.Decision) *replicapb.MutateResponse {
	r := new(struct {
		resp replicapb.MutateResponse
		rl   replicapb.RateLimited
	})
	r.rl.Count, r.rl.Limit, r.rl.RetryAfterMillis = d.Count, d.Limit, retryAfterMillis(d.RetryAfter)
	r.rl.BornUnixMillis, r.rl.OnsetResidual = bornMillis(d), d.Residual
	r.resp.Status, r.resp.RateLimited = replicapb.Status_STATUS_RATE_LIMITED, &r.rl
	return &r.resp
}

// readRateLimited builds a rejection with one allocation.
func readRateLimited(d partitionlimit.Decision) *replicapb.ReadResponse {
	r := new(struct {
		resp replicapb.ReadResponse
		rl   replicapb.RateLimited
	})
	r.rl.Count, r.rl.Limit, r.rl.RetryAfterMillis = d.Count, d.Limit, retryAfterMillis(d.RetryAfter)
	r.rl.BornUnixMillis, r.rl.OnsetResidual = bornMillis(d), d.Residual
	r.resp.Status, r.resp.RateLimited = replicapb.Status_STATUS_RATE_LIMITED, &r.rl
	return &r.resp
}

// bornMillis returns the counter's birth a rejection carries (replicapb.RateLimited
// .born_unix_millis): 0 for a counter past its onset.
func bornMillis(d partitionlimit.Decision) int64 {
	if d.Born.IsZero() {
		return 0
	}
	return d.Born.UnixMilli()
}

func mutateError(code replicapb.Error_Code, msg string) *replicapb.MutateResponse {
	return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: code, Message: msg}}
}

func readError(code replicapb.Error_Code, msg string) *replicapb.ReadResponse {
	return &replicapb.ReadResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: code, Message: msg}}
}
