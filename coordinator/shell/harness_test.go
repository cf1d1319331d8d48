package shell_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// The harness: three real replica.Services over in-memory pebble, a fake ring with fixed
// placement and settable liveness, a transport that calls the services directly and can inject
// faults, and a schema manager that applies DDL to an in-memory schema. No network.

// clock is a settable clock shared by the coordinators and the replicas. It stands still
// unless a test moves it, so limiter counters do not decay in the middle of a test.
type clock struct{ ns atomic.Int64 }

// scopeSeed is the executors' ScopeSeed: a fixed sequence (splitmix64 of a counter), so that the
// budgets' draws, and the tests that count what they admit, are the same in every run.
func (c *cluster) scopeSeed() uint64 {
	z := c.seeds.Add(0x9e3779b97f4a7c15)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Unix(1_700_000_000, 250_000_000).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// schemaManager applies DDL to an in-memory schema. It is also the replicas' SchemaSource, so
// they see every change at once.
type schemaManager struct {
	node  string
	clock *clock
	mu    sync.Mutex // serialises changes
	cur   atomic.Pointer[schema.Schema]
	fail  error // returned by ApplyDDL when set
	// system is system_auth's schema, whose tables replicas resolve beside the cluster's.
	system *schema.Schema
}

func newSchemaManager(node string, c *clock) *schemaManager {
	m := &schemaManager{node: node, clock: c, system: shell.AuthSchema()}
	m.cur.Store(schema.New())
	return m
}

func (m *schemaManager) Schema() *schema.Schema { return m.cur.Load() }

func (m *schemaManager) TableByID(id schema.TableID) (*schema.Table, bool) {
	if t, ok := m.cur.Load().TableByID(id); ok {
		return t, true
	}
	return m.system.TableByID(id) // system_auth's, as the node's schema holder does
}

func (m *schemaManager) ApplyDDL(_ context.Context, stmt cql.Statement, keyspace string) (bool, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return false, nil, m.fail
	}
	s := m.cur.Load()
	v := schema.Version{Timestamp: m.clock.Now().UnixMicro(), Node: m.node}
	ns, err := s.Apply(stmt, keyspace, schema.Change{Version: v})
	if err != nil {
		return false, nil, &coordinator.InvalidError{Err: err}
	}
	m.cur.Store(ns)
	return ns != s, nil, nil
}

// ring places every token on the nodes of order, in that order, and reports liveness (and
// which nodes are unrepaired) from settable sets.
type ring struct {
	order      []coordinator.NodeID
	mu         sync.Mutex
	down       map[coordinator.NodeID]bool
	unrepaired map[coordinator.NodeID]bool
	formats    map[coordinator.NodeID]int    // data format versions; nil: every node on the newest
	dcs        map[coordinator.NodeID]string // data centers; nil: every node in ""
}

func (r *ring) AppendReplicas(dst []coordinator.NodeID, _ int64, rf schema.Replication) []coordinator.NodeID {
	return append(dst, r.order[:min(rf.Total(), len(r.order))]...)
}

func (r *ring) DataCenter(id coordinator.NodeID) string { return r.dcs[id] }

func (r *ring) IsLive(id coordinator.NodeID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.down[id]
}

func (r *ring) IsUnrepaired(id coordinator.NodeID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unrepaired[id]
}

func (r *ring) BelowFormat(v int) []coordinator.NodeID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.formats == nil {
		return nil
	}
	var below []coordinator.NodeID
	for _, id := range r.order {
		if max(r.formats[id], 1) < v {
			below = append(below, id)
		}
	}
	return below
}

func (r *ring) setFormats(fs map[coordinator.NodeID]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.formats = fs
}

func (r *ring) setUnrepaired(ids ...coordinator.NodeID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unrepaired = make(map[coordinator.NodeID]bool)
	for _, id := range ids {
		r.unrepaired[id] = true
	}
}

func (r *ring) setDown(ids ...coordinator.NodeID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = make(map[coordinator.NodeID]bool)
	for _, id := range ids {
		r.down[id] = true
	}
}

// fault is what the transport does to calls to one node.
type fault uint8

const (
	deliver    fault = iota
	failWrites       // Mutate returns an error without applying
	failAll          // Mutate and Read return an error
	hang             // Mutate and Read block until their context ends
	hangWrites       // Mutate blocks until its context ends
	panics           // Mutate and Read panic, as a bug would
)

// transport calls the replica services in process, counting calls and injecting faults.
type transport struct {
	services map[coordinator.NodeID]*replica.Service
	mu       sync.Mutex
	faults   map[coordinator.NodeID]fault
	calls    map[coordinator.NodeID]int
	mutated  []*replicapb.MutateRequest // every MutateRequest delivered, in order
	reads    int                        // ReadRequests answered
	hanging  chan coordinator.NodeID    // if set, told about every call that starts hanging
	// beforeCommit, if set, is called with every Paxos commit before it is delivered (lwt_test.go).
	beforeCommit func(ctx context.Context, to coordinator.NodeID, req *replicapb.PaxosCommitRequest)
	// beforePropose, if set, is called with every Paxos proposal's destination before it is
	// delivered; an error it returns is the call's (lwt_test.go).
	beforePropose func(to coordinator.NodeID) error
}

func (t *transport) setFault(f fault, ids ...coordinator.NodeID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.faults[id] = f
	}
}

func (t *transport) clearFaults() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.faults)
}

// totalCalls returns how many replica calls were made, to any node.
func (t *transport) totalCalls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.calls {
		n += c
	}
	return n
}

func (t *transport) begin(ctx context.Context, to coordinator.NodeID, write bool) (*replica.Service, error) {
	t.mu.Lock()
	t.calls[to]++
	f := t.faults[to]
	svc := t.services[to]
	hanging := t.hanging
	t.mu.Unlock()
	switch {
	case svc == nil:
		return nil, fmt.Errorf("no node %s", to)
	case f == hang, f == hangWrites && write:
		if hanging != nil {
			hanging <- to
		}
		<-ctx.Done()
		return nil, ctx.Err()
	case f == failAll, f == failWrites && write:
		return nil, errors.New("connection refused")
	case f == panics:
		panic(fmt.Sprintf("a bug in the call to %s", to))
	}
	return svc, nil
}

func (t *transport) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	svc, err := t.begin(ctx, to, true)
	if err != nil {
		return nil, err
	}
	req = overTheWire(req)
	t.mu.Lock()
	t.mutated = append(t.mutated, req)
	t.mu.Unlock()
	resp, err := svc.Mutate(ctx, req)
	return overTheWire(resp), err
}

// batchlog is the transport and the ring as a shell.Batchlog.
type batchlog struct {
	*transport
	*ring
}

// AppendNodes lists the cluster's nodes: the ring's.
func (b batchlog) AppendNodes(dst []coordinator.NodeID) []coordinator.NodeID {
	return append(dst, b.ring.order...)
}

func (t *transport) StoreBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.StoreBatchRequest) (*replicapb.BatchlogResponse, error) {
	svc, err := t.begin(ctx, to, true)
	if err != nil {
		return nil, err
	}
	resp, err := svc.StoreBatch(ctx, overTheWire(req))
	return overTheWire(resp), err
}

func (t *transport) RemoveBatch(ctx context.Context, to coordinator.NodeID, req *replicapb.RemoveBatchRequest) (*replicapb.BatchlogResponse, error) {
	svc, err := t.begin(ctx, to, true)
	if err != nil {
		return nil, err
	}
	resp, err := svc.RemoveBatch(ctx, overTheWire(req))
	return overTheWire(resp), err
}

func (t *transport) Read(ctx context.Context, to coordinator.NodeID, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	svc, err := t.begin(ctx, to, false)
	if err != nil {
		return nil, err
	}
	resp, err := svc.Read(ctx, overTheWire(req))
	if n := proto.Size(resp); n > maxMessage {
		return nil, fmt.Errorf("grpc: received message larger than max (%d vs. %d)", n, maxMessage)
	}
	t.mu.Lock()
	t.reads++
	t.mu.Unlock()
	return overTheWire(resp), err
}

// overTheWire returns m as the other end of a gRPC call sees it: marshalled and unmarshalled,
// so that nil and empty repeated fields, absent optional fields and shared slices look as they
// do between real nodes.
func overTheWire[M proto.Message](m M) M {
	if reflect.ValueOf(m).IsNil() {
		return m
	}
	b, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", m, err))
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("unmarshal %T: %v", m, err))
	}
	return out
}

// observerFor returns the executors' Observer: the cluster's recorder, or none.
func (c *cluster) observerFor(o options) shell.Observer {
	if o.noObserver {
		return nil
	}
	return c.observer
}

// recorder is an Observer that remembers what it was told.
type recorder struct {
	mu            sync.Mutex
	requests      []string // "op cl result"
	requestTables []string // "ks.t" of each request, "" when it named none
	rateLimited   []string // "ks.t op rejectedBy"
	repairs       []string // "ks.t n result"
	disagreements []string // "ks.t op"
	wouldReject   []string // "ks.t op"
	speculative   []string // "ks.t n"
}

func (r *recorder) OnRequest(ks, table, op, cl, result string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, strings.Join(slices.DeleteFunc([]string{op, cl, result}, func(s string) bool { return s == "" }), " "))
	name := ""
	if table != "" {
		name = ks + "." + table
	}
	r.requestTables = append(r.requestTables, name)
}

func (r *recorder) OnReplicasDisagree(ks, table, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disagreements = append(r.disagreements, fmt.Sprintf("%s.%s %s", ks, table, op))
}

func (r *recorder) OnSpeculativeReads(ks, table string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.speculative = append(r.speculative, fmt.Sprintf("%s.%s %d", ks, table, n))
}

func (r *recorder) OnWouldReject(ks, table, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wouldReject = append(r.wouldReject, fmt.Sprintf("%s.%s %s", ks, table, op))
}

func (r *recorder) OnRateLimited(ks, table, op, by string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rateLimited = append(r.rateLimited, fmt.Sprintf("%s.%s %s %s", ks, table, op, by))
}

func (r *recorder) OnReadRepair(ks, table string, n int, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.repairs = append(r.repairs, fmt.Sprintf("%s.%s %d %s", ks, table, n, result))
}

func (r *recorder) snapshot() (requests, rateLimited, repairs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests), slices.Clone(r.rateLimited), slices.Clone(r.repairs)
}

// cluster is three nodes, n1, n2 and n3, each with a replica service and a coordinator.
type cluster struct {
	t     testing.TB
	clock *clock
	seeds atomic.Uint64 // the budgets' draws' sequence (scopeSeed)
	// asyncStarted counts the mutations started by asyncTransport (options.async).
	asyncStarted atomic.Int64
	schema       *schemaManager
	ring         *ring
	transport    *transport
	services     map[coordinator.NodeID]*replica.Service
	executors    map[coordinator.NodeID]*shell.Executor
	observer     *recorder
}

var nodes = []coordinator.NodeID{"n1", "n2", "n3"}

// options adjust the executors' configuration.
type options struct {
	draw          float64       // the fixed draw; 0 means 0.99, which rejects above 2L
	writeTimeout  time.Duration // 0: the default
	readTimeout   time.Duration
	logger        *slog.Logger                  // the executors'; nil discards
	order         []coordinator.NodeID          // ring order; nil means n1, n2, n3
	dcs           map[coordinator.NodeID]string // the nodes' data centers; nil: all in one
	maxAhead      time.Duration                 // Options.MaxTimestampAhead; 0: the default
	pageBytes     int                           // the executors' ReadPageBytes; 0: the default
	tombstones    uint32                        // the replicas' tombstone failure threshold; 0: the default
	tombstoneWarn int                           // the executors' TombstoneWarnThreshold; 0: the default
	maxMutation   int                           // the executors' MaxMutationSize; 0: the default
	collections   [2]int                        // the executors' MaxCollectionSize and MaxCollectionItems
	maxStatement  int                           // the executors' MaxStatementSize; 0: the default
	// beforeBatchApply is the executors' BeforeBatchApply hook; nil: none.
	beforeBatchApply func() error
	// hints is the executors' HintSink; nil: none.
	hints shell.HintSink
	// forward is the executors' Forwarder (forward_test.go); nil: none.
	forward func(*cluster) shell.Forwarder
	// propagate turns account propagation on, delivered through the transport every
	// millisecond.
	propagate bool
	// auth is the executors' Auth; nil: authentication off.
	auth *shell.AuthConfig
	// noObserver leaves the executors without an Observer (the recorder allocates).
	noObserver bool
	// system is the executors' System; nil: none.
	system shell.SystemTables
	// budgets is the executors' BudgetsFunc; nil: none.
	budgets shell.BudgetsFunc
	// scopes delivers the budgets' counts between the executors, when a test flushes them
	// (FlushScopes); the executors send none on their own.
	scopes bool
	// async gives the executors a transport that also starts mutations to other nodes
	// without a goroutine of the executor's waiting (shell.AsyncMutator; async_test.go).
	async bool
	// transport, when set, wraps each executor's transport (hintqueue_test.go).
	transport func(id coordinator.NodeID, base shell.Transport) shell.Transport
	// scanPageTime and scanPacer are the executors' Options.ScanPageTime and ScanPacer
	// (scanbudget_test.go); zero: the defaults.
	scanPageTime time.Duration
	scanPacer    shell.ScanPacer
	// indexes runs an index builder beside each replica's store, which builds the secondary
	// indexes CREATE INDEX adds (index_test.go).
	indexes bool
}

// transportOf returns the transport of node id's executor under options o.
func (c *cluster) transportOf(id coordinator.NodeID, o options) shell.Transport {
	t := c.transportFor(id, o.async)
	if o.transport != nil {
		return o.transport(id, t)
	}
	return t
}

// maxMessage is the largest replica answer the transport delivers: gRPC's default limit on
// received messages, which real nodes are subject to.
const maxMessage = 4 << 20

func newCluster(t testing.TB, o options) *cluster {
	t.Helper()
	c := &cluster{
		t:         t,
		clock:     newClock(),
		ring:      &ring{order: o.order, dcs: o.dcs},
		services:  make(map[coordinator.NodeID]*replica.Service),
		executors: make(map[coordinator.NodeID]*shell.Executor),
		observer:  &recorder{},
	}
	if c.ring.order == nil {
		c.ring.order = nodes
	}
	members := slices.Clone(nodes) // n1, n2, n3, and the other nodes of the ring's order
	for _, id := range c.ring.order {
		if !slices.Contains(members, id) {
			members = append(members, id)
		}
	}
	c.schema = newSchemaManager("n1", c.clock)
	c.transport = &transport{
		services: c.services,
		faults:   make(map[coordinator.NodeID]fault),
		calls:    make(map[coordinator.NodeID]int),
	}
	for _, id := range members {
		store, err := replica.Open("db", replica.Options{FS: vfs.NewMem(), CacheSize: 1 << 20, MemTableSize: 1 << 20, NoSync: true, TombstoneFailureThreshold: o.tombstones, Clock: c.clock})
		if err != nil {
			t.Fatalf("opening the store of %s: %v", id, err)
		}
		t.Cleanup(func() { store.Close() })
		if o.indexes {
			b := replica.StartIndexBuilder(store, c.schema.Schema, nil)
			t.Cleanup(b.Stop) // before the store closes
		}
		limits, err := partitionlimit.New(partitionlimit.Options{Capacity: 1024})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := replica.NewService(replica.Config{Store: store, Schema: c.schema, Limits: limits, Now: c.clock.Now, NodeID: string(id)})
		if err != nil {
			t.Fatal(err)
		}
		c.services[id] = svc
	}
	draw := o.draw
	if draw == 0 {
		draw = 0.99
	}
	for _, id := range members {
		e, err := shell.NewExecutor(shell.Config{
			Options: shell.Options{
				WriteTimeout:           o.writeTimeout,
				ReadTimeout:            o.readTimeout,
				MaxTimestampAhead:      o.maxAhead,
				ReadPageBytes:          o.pageBytes,
				TombstoneWarnThreshold: o.tombstoneWarn,
				MaxMutationSize:        o.maxMutation,
				MaxStatementSize:       o.maxStatement,
				MaxCollectionSize:      o.collections[0],
				MaxCollectionItems:     o.collections[1],
				Learning:               o.propagate,
				PropagationInterval:    time.Millisecond,
				ScanPageTime:           o.scanPageTime,
			},
			ScanPacer:        o.scanPacer,
			LocalID:          id,
			Ring:             c.ring,
			Transport:        c.transportOf(id, o),
			Local:            c.services[id],
			Schema:           c.schema,
			Cluster:          describer("cluster test: 3 nodes"),
			Now:              c.clock.Now,
			Draw:             func() float64 { return draw },
			ScopeSeed:        c.scopeSeed,
			Observer:         c.observerFor(o),
			Batchlog:         batchlog{c.transport, c.ring},
			BeforeBatchApply: o.beforeBatchApply,
			Hints:            o.hints,
			Forward:          c.forwarder(o.forward),
			Deltas:           c.deltas(o.propagate),
			Auth:             o.auth,
			Logger:           o.logger,
			System:           o.system,
			Budgets:          o.budgets,
			Scopes:           c.scopeSender(o.scopes),
			ScopeInterval:    -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		c.executors[id] = e
	}
	return c
}

// deltas returns the transport as the executors' DeltaSender when propagation is on.
func (c *cluster) deltas(on bool) shell.DeltaSender {
	if !on {
		return nil
	}
	return c.transport
}

// AccountDelta delivers a batch of propagated deltas to a replica service; of the faults, it
// heeds panics alone (and counts no call).
func (t *transport) AccountDelta(ctx context.Context, to coordinator.NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error) {
	t.mu.Lock()
	svc, f := t.services[to], t.faults[to]
	t.mu.Unlock()
	if svc == nil {
		return nil, fmt.Errorf("no node %s", to)
	}
	if f == panics {
		panic(fmt.Sprintf("a bug in the account delta to %s", to))
	}
	return svc.AccountDelta(ctx, overTheWire(req))
}

type describer string

func (d describer) DescribeCluster() string { return string(d) }

// exec runs stmt through node's coordinator.
func (c *cluster) exec(node coordinator.NodeID, cl coordinator.Consistency, stmt string) (coordinator.Result, error) {
	return c.executors[node].Execute(context.Background(), coordinator.Statement{Text: stmt, Consistency: cl, Keyspace: "ks"})
}

// rowsOf returns the values of a result's rows; nil when it has none.
func rowsOf(r coordinator.Result) [][][]byte {
	if r.Rows == nil {
		return nil
	}
	return r.Rows.Values
}

// must runs stmts through n1 at QUORUM, failing the test on an error, and waits until every
// replica has them.
func (c *cluster) must(stmts ...string) {
	c.t.Helper()
	for _, s := range stmts {
		if _, err := c.exec("n1", quorum, s); err != nil {
			c.t.Fatalf("%s: %v", s, err)
		}
	}
	c.settle()
}

// settle waits until the replica calls of every coordinator have returned: writes keep going
// to the replicas that have not acknowledged them after the client has its answer.
func (c *cluster) settle() {
	for _, e := range c.executors {
		e.WaitIdle()
	}
}

// query runs a SELECT and returns its rows formatted by format.
func (c *cluster) query(node coordinator.NodeID, cl coordinator.Consistency, stmt string) ([]string, error) {
	resp, err := c.exec(node, cl, stmt)
	if err != nil {
		return nil, err
	}
	rows := resp.Rows
	if resp.Kind != coordinator.ResultRows || rows == nil {
		return nil, fmt.Errorf("%s returned %v, want rows", stmt, resp)
	}
	return formatRows(rows), nil
}

// formatRows renders rows as "v1 v2 ..." per row, with null for unset values.
func formatRows(rows *coordinator.Rows) []string {
	out := []string{}
	for _, r := range rows.Values {
		var parts []string
		for j, b := range r {
			parts = append(parts, formatValue(rows.Columns[j].Type, b))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func formatValue(t schema.Type, b []byte) string {
	v, err := t.Decode(b)
	if err != nil {
		return "invalid: " + err.Error()
	}
	switch k := v.(type) {
	case nil:
		return "null"
	case string:
		return "'" + k + "'"
	case []byte:
		return fmt.Sprintf("0x%x", k)
	case time.Time:
		return k.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// localRows runs a SELECT at ONE against node's storage alone, bypassing the cluster's
// transport (no faults, no call counting): what that one replica holds.
func (c *cluster) localRows(node coordinator.NodeID, stmt string) []string {
	c.t.Helper()
	direct := &transport{services: c.services, faults: map[coordinator.NodeID]fault{}, calls: map[coordinator.NodeID]int{}}
	e, err := shell.NewExecutor(shell.Config{
		LocalID: node, Ring: &ring{order: []coordinator.NodeID{node}}, Transport: direct,
		Schema: c.schema, Now: c.clock.Now,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	defer e.Close()
	resp, err := e.Execute(context.Background(), coordinator.Statement{Text: stmt, Keyspace: "ks"})
	if err != nil || resp.Rows == nil {
		c.t.Fatalf("%s on %s alone: %+v, %v", stmt, node, resp, err)
	}
	return formatRows(resp.Rows)
}
