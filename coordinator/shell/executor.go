package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/internal/gopool"
	"github.com/kvnode/kvnode/schema"
)

// Default timeouts: how long the coordinator waits for the consistency level's replicas.
const (
	DefaultWriteTimeout = 2 * time.Second
	DefaultReadTimeout  = 5 * time.Second
)

// Config configures an Executor: its Options and what the node wires in. LocalID, Ring, Transport
// and Schema are required; the zero value of every other field means its default.
type Config struct {
	Options
	// LocalID is this node's id as the Ring names it.
	LocalID coordinator.NodeID
	// Ring places tokens on replicas and says who is live.
	Ring Ring
	// ScanPacer, if set, weighs each read of a scan by the rows it returned and their bytes (scan.go).
	ScanPacer ScanPacer
	// Transport sends replica requests, serving those addressed to LocalID in process.
	Transport Transport
	// Forward, when set, carries a write's copies for the replicas of a remote data center as
	// one message to one of them, which sends them on (forward.go). Nil sends every copy
	// directly.
	Forward Forwarder
	// Local is this node's limiter, consulted before anything is sent when the node is a replica
	// of a limited operation's partition (docs/architecture.md, the limiter). Nil lets the replicas enforce even then.
	Local LocalLimiter
	// Schema owns the schema and applies schema statements.
	Schema SchemaManager
	// Cluster answers DESCRIBE CLUSTER. Nil makes DESCRIBE CLUSTER an error.
	Cluster ClusterDescriber
	// System serves the computed system tables drivers read. Nil means none: a SELECT of them
	// is an unknown keyspace.
	System SystemTables
	// Now is the clock for write timestamps, the local limiter and deadlines. Nil means time.Now.
	// Deadlines are waited for with timers, so a fake clock that stands still does not stop
	// requests from timing out.
	Now func() time.Time
	// Draw returns the limiter's random draw r in [0, 1) for one operation. Nil means
	// rand.Float64 (math/rand/v2: randomly seeded, safe for concurrent use). Tests fix it.
	Draw func() float64
	// Logger receives failures worth an operator's attention. Nil discards them.
	Logger *slog.Logger
	// Observer is told about every request, for metrics. Nil means none.
	Observer Observer
	// Deltas carries account propagation (docs/architecture.md, the limiter): the replicas that did not see a limited
	// operation (this coordinator rejected it locally, or a read contacted fewer than all
	// replicas) are sent batched, coalesced account-only deltas so that every replica's counter
	// measures the partition's whole load. Nil disables propagation; with coordinators spread
	// over the replicas the admitted rate then climbs toward RF × limit.
	Deltas DeltaSender
	// Batchlog stores LOGGED batches that span partitions on other nodes before they are
	// applied, so that they are applied whole even if this coordinator fails part way. Nil
	// means none: such batches are then refused, never run with a weaker guarantee.
	Batchlog Batchlog
	// Hints keeps hints for the replicas that miss a write (hinted handoff; see HintSink). Nil
	// means none: a replica that was down gets the write only from read repair or repair.
	Hints HintSink
	// BeforeBatchApply, when set, is called after a logged batch was stored in the batchlog and
	// before any of its partitions is written; an error fails the batch there, as if this
	// coordinator had died. For tests only.
	BeforeBatchApply func() error
	// Auth, when set, turns authentication and authorization on (auth.go): statements run as
	// the role their context carries (auth.WithRole) and only with its grants. Nil: off.
	Auth *AuthConfig
	// Budgets lists the service levels' and keyspace's budgets each request is held by
	// (scopes.go), judged after node admission and before any partition's limit. Nil means the
	// executor's own Executor.Budgets, from the schema's service levels, their attachments and
	// the keyspaces' rate_limit; tests set fixed ones.
	Budgets BudgetsFunc
	// Scopes carries the budgets' counts to the peer coordinators every ScopeInterval, so that
	// each budget is held across the cluster (scopeprop.go). Nil: each coordinator counts only
	// its own requests, and the cluster admits up to N times a budget's limit.
	Scopes ScopeSender
	// ScopeInterval is how often the counts go to the peers; zero means DefaultScopeInterval.
	// Negative sends none but those a test flushes.
	ScopeInterval time.Duration
	// ScopeSeed returns a request's random seed for its budgets' draws. Nil means rand.Uint64
	// (math/rand/v2). Tests fix it.
	ScopeSeed func() uint64
}

// DefaultTombstoneWarnThreshold is the default Options.TombstoneWarnThreshold: Cassandra's.
const DefaultTombstoneWarnThreshold = 1000

// DefaultReadPageBytes is the default Options.ReadPageBytes: well below any sane gRPC message
// size limit (4 MiB by default).
const DefaultReadPageBytes = 1 << 20

// Observer receives events for metrics. Its methods are called synchronously on the request's
// goroutine, concurrently for concurrent requests: they must be safe for concurrent use and
// must not block. Arguments are short constant strings where the names below say so, so that
// they can serve directly as metric labels.
type Observer interface {
	// OnRequest is called once per executed statement. keyspace and table name the table of a
	// read or write once the statement resolved it ("" for other statements and for reads and
	// writes that failed before: syntax errors, unknown tables). op is "read", "write",
	// "schema" or "other" (USE, DESCRIBE); cl is "ONE", "QUORUM" or "ALL" ("" for schema and
	// other); result is one of "ok", "rate_limited", "unavailable", "timeout", "failed",
	// "invalid" (an unauthorized statement among them), "canceled" or "error". d is the time Execute took.
	OnRequest(keyspace, table, op, cl, result string, d time.Duration)
	// OnRateLimited is called when an operation is rejected by a partition's rate limit;
	// rejectedBy is "coordinator" or "replicas".
	OnRateLimited(keyspace, table, op, rejectedBy string)
	// OnReadRepair is called after a read found stale replicas and repaired them: replicas is
	// how many were repaired, result "ok", "timeout" or "failed".
	OnReadRepair(keyspace, table string, replicas int, result string)
	// OnReplicasDisagree is called at most once per limited operation the replicas decided
	// (the coordinator was not a replica of the partition) when some of its enforcing replicas
	// admitted it and others rejected it: their counters for the partition differ (clock skew,
	// a replica that missed operations or restarted). op is "read" or "write". It may be
	// called after Execute returned, when a write's last replicas answer late.
	OnReplicasDisagree(keyspace, table, op string)
	// OnSpeculativeReads is called once per read that asked replicas speculatively (the
	// table's speculative_retry: the read waited longer than its delay, or 'ALWAYS'), with
	// how many it asked.
	OnSpeculativeReads(keyspace, table string, reads int)
	// OnWouldReject is called once per operation on a table whose limit is in shadow mode that
	// enforce mode would have rejected: this coordinator's local check or one of the enforcing
	// replicas decided against it, and it was admitted with a warning instead. op is "read" or
	// "write". It counts operations, not replicas' decisions: on the replicas path every
	// enforcing replica may decide against the same operation.
	OnWouldReject(keyspace, table, op string)
}

// Executor executes client statements on this node: it parses them, applies schema statements
// through the SchemaManager, and coordinates reads and writes across the replicas of their
// partition. It is safe for concurrent use.
type Executor struct {
	localID   coordinator.NodeID
	ring      Ring
	transport Transport
	forwarder Forwarder // nil: no forwarding
	local     LocalLimiter
	schema    SchemaManager
	cluster   ClusterDescriber
	system    SystemTables
	now       func() time.Time
	// wallClock says now is time.Now (Config.Now was nil): its readings then also time
	// requests for the observer.
	wallClock bool
	draw      func() float64
	logger    *slog.Logger
	observer  Observer
	prop      *propagator                 // nil when propagation is off
	lwt       lwtState                    // lightweight transactions' ballot clock and counts (lwt.go)
	learn     *learner                    // nil when propagation is off
	auth      *authorizer                 // nil when authentication is off
	budgets   atomic.Pointer[budgetCache] // Budgets' answers for the current schema (servicelevel_budgets.go)
	budgetsOf BudgetsFunc                 // the budgets a request is judged by (scopes.go): Budgets, or Config.Budgets
	scopes    *scopes

	scanPacer        ScanPacer  // nil: scans are not paced
	hints            HintSink   // nil: no hinted handoff
	hintq            *hintQueue // the hints decided on transports' goroutines (hintqueue.go); nil without hints
	batchlog         Batchlog   // nil: no batchlog
	beforeBatchApply func() error

	writeTimeout, readTimeout time.Duration
	scanPageTime              time.Duration // 0: half the read's timeout (scanPageEnd)
	pageBytes                 int           // ReadPageBytes
	tombstoneWarn             int           // TombstoneWarnThreshold; negative: off
	keysInSelect, inProduct   int           // PartitionKeysInSelect, InSelectCartesianProduct; -1: off
	maxMutation               int           // bytes; see Options.MaxMutationSize
	maxStatement              int           // bytes; see Options.MaxStatementSize
	maxCollection             [2]int        // bytes and items; see Options.MaxCollectionSize
	maxAhead                  time.Duration // bound on USING TIMESTAMP ahead of now

	// scores rank the replicas reads prefer (score.go); latency holds the replicas' read
	// latencies per table, for speculative_retry's percentiles (latency.go); mono is the
	// monotonic clock both run on.
	scores  replicaScores
	latency tableLatencies
	mono    func() time.Duration

	// lastTimestamp is the last write timestamp this coordinator assigned, in µs.
	lastTimestamp atomic.Int64

	// calls runs the replica calls on reused goroutines (internal/gopool).
	calls *gopool.Pool

	// inflight tracks the replica requests still running, so that Close can stop them.
	mu       sync.Mutex
	closed   bool
	inflight map[*flight]struct{}
	wg       sync.WaitGroup
}

// NewExecutor returns an executor for cfg.
func NewExecutor(cfg Config) (*Executor, error) {
	wallClock := cfg.Now == nil
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	e := &Executor{
		calls:         gopool.New(gopool.IdleTimeout),
		localID:       cfg.LocalID,
		ring:          cfg.Ring,
		transport:     cfg.Transport,
		forwarder:     cfg.Forward,
		local:         cfg.Local,
		schema:        cfg.Schema,
		cluster:       cfg.Cluster,
		system:        cfg.System,
		now:           cfg.Now,
		wallClock:     wallClock,
		draw:          cfg.Draw,
		logger:        cfg.Logger,
		observer:      cfg.Observer,
		writeTimeout:  cfg.WriteTimeout,
		readTimeout:   cfg.ReadTimeout,
		scanPageTime:  cfg.ScanPageTime,
		pageBytes:     cfg.ReadPageBytes,
		tombstoneWarn: cfg.TombstoneWarnThreshold,
		keysInSelect:  cfg.PartitionKeysInSelect,
		inProduct:     cfg.InSelectCartesianProduct,
		maxMutation:   cfg.MaxMutationSize,
		maxAhead:      cfg.MaxTimestampAhead,
		maxStatement:  cfg.MaxStatementSize,
		maxCollection: [2]int{cfg.MaxCollectionSize, cfg.MaxCollectionItems},
		inflight:      make(map[*flight]struct{}),
	}
	start := time.Now()
	e.mono = func() time.Duration { return time.Since(start) }
	e.batchlog, e.beforeBatchApply = cfg.Batchlog, cfg.BeforeBatchApply
	e.hints = cfg.Hints
	e.scanPacer = cfg.ScanPacer
	var err error
	if e.scopes, err = newScopes(e.now, cfg.ScopeSeed); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	e.budgetsOf = cfg.Budgets
	if e.budgetsOf == nil {
		e.budgetsOf = e.Budgets
	}
	if cfg.Scopes != nil {
		interval := cfg.ScopeInterval
		if interval == 0 {
			interval = DefaultScopeInterval
		}
		e.scopes.prop = newScopeProp(e.scopes, cfg.Scopes, cfg.LocalID, e.isLive, interval, e.logger)
	}
	if cfg.Auth != nil {
		if e.auth, err = newAuthorizer(cfg.Auth); err != nil {
			return nil, err
		}
	}
	if cfg.Deltas != nil {
		if cfg.Learning {
			var err error
			if e.learn, err = newLearner(e.now); err != nil {
				return nil, fmt.Errorf("coordinator: %w", err)
			}
		}
		e.prop = newPropagator(cfg.Deltas, e.isLive, cfg.PropagationInterval, e.now, e.logger)
	}
	if e.hints != nil {
		e.hintq = newHintQueue(e.hints) // last: no error after it leaves its goroutine running
	}
	return e, nil
}

// Close stops the executor. Writes keep going to the replicas that have not acknowledged them
// after the client has its answer (until they do, or the write times out); Close cancels those
// and every other replica request still in flight, and waits for their goroutines. Execute
// returns coordinator.ErrClosed afterwards. The hints still in the hint queue go to the HintSink
// before Close returns. Close is idempotent.
func (e *Executor) Close() error {
	e.mu.Lock()
	e.closed = true
	for f := range e.inflight {
		f.cancel()
	}
	e.mu.Unlock()
	e.wg.Wait()
	if e.hintq != nil {
		e.hintq.close() // after the calls, whose answers add hints: it stores what they queued
	}
	e.calls.Close()
	if e.prop != nil {
		e.prop.close()
	}
	if e.scopes.prop != nil {
		e.scopes.prop.close()
	}
	return nil
}

// Execute runs one statement at the request's consistency level with the request's keyspace for
// unqualified table names: the domain API that every front end adapts. A prepared statement
// (req.Prepared) is not parsed again but resolved against the current schema each time, so
// that it sees tables dropped, created and altered since; req.Values bind its markers. A
// SELECT with req.PageSize returns at most that many rows and a PagingState for the rest; a
// write without USING TIMESTAMP takes req.Timestamp when req.HasTimestamp. Errors are typed:
// *InvalidError (syntax or validation, an unknown consistency level), *RateLimitError,
// *UnavailableError, *TimeoutError, *FailureError, the context's error, coordinator.ErrClosed, or an
// internal error; each carries every field a client needs and builds its own message.
func (e *Executor) Execute(ctx context.Context, req coordinator.Statement) (coordinator.Result, error) {
	var start time.Time
	if e.observer != nil {
		start = time.Now()
	}
	kind, cl, t, res, err := e.execute(ctx, req)
	if e.observer != nil {
		var clName, ks, name string
		if kind == kindRead || kind == kindWrite {
			clName = cl.String()
		}
		if t != nil {
			ks, name = t.Keyspace, t.Name
		}
		e.observer.OnRequest(ks, name, kind.String(), clName, resultOf(err), time.Since(start))
	}
	if err != nil {
		return coordinator.Result{}, err
	}
	return res, nil
}

// stmtKind classifies statements for the Observer.
type stmtKind uint8

const (
	kindOther stmtKind = iota
	kindRead
	kindWrite
	kindSchema
)

func (k stmtKind) String() string {
	switch k {
	case kindRead:
		return "read"
	case kindWrite:
		return "write"
	case kindSchema:
		return "schema"
	}
	return "other"
}

// resultOf names the result of a statement for the Observer. Execute returns its typed errors
// unwrapped, so a type switch (which does not allocate, unlike errors.As) finds them.
func resultOf(err error) string {
	switch err.(type) {
	case nil:
		return "ok"
	case *coordinator.RateLimitError:
		return "rate_limited"
	case *coordinator.UnavailableError:
		return "unavailable"
	case *coordinator.TimeoutError:
		return "timeout"
	case *coordinator.FailureError:
		return "failed"
	case *coordinator.InvalidError, *auth.UnauthorizedError:
		return "invalid"
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

// execute runs req and returns what the Observer needs besides the answer: the kind of
// statement, its consistency level and, for reads and writes that resolved it, the table.
func (e *Executor) execute(ctx context.Context, req coordinator.Statement) (stmtKind, coordinator.Consistency, *schema.Table, coordinator.Result, error) {
	cl := req.Consistency
	switch {
	case cl == 0:
		cl = coordinator.One
	case cl.IsSerial(): // SERIAL reads and LWTs check their statements (lwt.go)
	case cl == coordinator.Any: // writes alone (anyRefused)
	case !cl.Valid():
		return kindOther, coordinator.One, nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("unknown consistency level %d (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)", uint8(cl))}
	}
	if req.Prepared == nil {
		if err := checkStatementSize(req.Text, "this statement", e.maxStatement); err != nil {
			return kindOther, cl, nil, coordinator.Result{}, err
		}
	}
	stmt, keyspace, err := statement(&req)
	if err != nil {
		return kindOther, cl, nil, coordinator.Result{}, err
	}
	if e.auth != nil {
		if err := e.authorize(ctx, stmt, keyspace); err != nil {
			return kindOther, cl, nil, coordinator.Result{}, err
		}
	}
	if err := anyRefused(stmt, cl); err != nil {
		return kindOther, cl, nil, coordinator.Result{}, err
	}
	switch st := stmt.(type) {
	case *cql.SelectStmt:
		if cl.IsSerial() {
			t, resp, err := e.executeSerialSelect(ctx, st, keyspace, cl, &req)
			return kindRead, cl, t, resp, err
		}
		t, resp, err := e.executeSelect(ctx, st, keyspace, cl, &req)
		return kindRead, cl, t, resp, err
	case *cql.InsertStmt, *cql.UpdateStmt, *cql.DeleteStmt:
		if cql.ConditionsOf(st) != nil {
			t, resp, err := e.executeConditional(ctx, st, keyspace, cl, &req)
			return kindWrite, cl, t, resp, err
		}
		if cl.IsSerial() {
			return kindWrite, cl, nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("%v is only for SELECT and conditional statements (IF ...)", cl)}
		}
		t, resp, err := e.executeWrite(ctx, st, keyspace, cl, &req, nil)
		return kindWrite, cl, t, resp, err
	case *cql.BatchStmt:
		if cl.IsSerial() {
			return kindWrite, cl, nil, coordinator.Result{}, &coordinator.InvalidError{Err: fmt.Errorf("%v is only for SELECT and conditional statements (IF ...)", cl)}
		}
		t, resp, err := e.executeBatchStmt(ctx, st, keyspace, cl, &req)
		return kindWrite, cl, t, resp, err
	}
	if err := bindCheck(stmt, req.Values); err != nil {
		return kindOther, cl, nil, coordinator.Result{}, err
	}
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt, *cql.AlterKeyspaceStmt, *cql.DropKeyspaceStmt, *cql.CreateTableStmt, *cql.AlterTableStmt, *cql.DropTableStmt, *cql.TruncateStmt,
		*cql.CreateTypeStmt, *cql.AlterTypeStmt, *cql.DropTypeStmt, *cql.CreateIndexStmt, *cql.DropIndexStmt:
		resp, err := e.executeDDL(ctx, st, keyspace)
		if err == nil {
			resp.Warnings = append(resp.Warnings, e.afterDDL(ctx, st, keyspace, resp)...)
		}
		return kindSchema, cl, nil, resp, err
	case *cql.CreateRoleStmt, *cql.AlterRoleStmt, *cql.DropRoleStmt, *cql.GrantStmt, *cql.GrantRoleStmt, *cql.ListRolesStmt, *cql.ListPermissionsStmt:
		resp, err := e.executeAuth(ctx, st, keyspace)
		return kindOther, cl, nil, resp, err
	case *cql.CreateServiceLevelStmt, *cql.AlterServiceLevelStmt, *cql.DropServiceLevelStmt,
		*cql.AttachServiceLevelStmt, *cql.DetachServiceLevelStmt, *cql.ListServiceLevelsStmt:
		resp, err := e.executeLevels(ctx, st)
		return kindOther, cl, nil, resp, err
	case *cql.UseStmt:
		resp, err := e.executeUse(st)
		return kindOther, cl, nil, resp, err
	case *cql.DescribeStmt:
		resp, err := e.executeDescribe(st, keyspace)
		return kindOther, cl, nil, resp, err
	default:
		return kindOther, cl, nil, coordinator.Result{}, &coordinator.InvalidError{Pos: st.Pos(), Err: fmt.Errorf("%s cannot be executed", schema.StatementName(st))}
	}
}

// nextTimestamp returns a write timestamp in microseconds since the Unix epoch, strictly greater
// than every timestamp this coordinator assigned before: max(now, last+1). Two writes through
// the same coordinator therefore apply in the order they were accepted, even within one
// microsecond or when the clock steps back.
func (e *Executor) nextTimestamp() int64 {
	now := e.now().UnixMicro()
	for {
		last := e.lastTimestamp.Load()
		ts := max(now, last+1)
		if e.lastTimestamp.CompareAndSwap(last, ts) {
			return ts
		}
	}
}

// deadline returns when an operation starting at now with the given timeout must finish: the
// timeout, or the context's deadline if that is sooner.
func deadline(ctx context.Context, now time.Time, timeout time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	return now.Add(timeout)
}
