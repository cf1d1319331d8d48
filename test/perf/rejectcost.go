package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/tool/bench"
)

// maxLimit is the largest per_partition_rate_limit value (2^31-1): a limit that never rejects.
const maxLimit = 1<<31 - 1

// rejectKey is the partition every rejection-cost write goes to: kvnode bench's hot partition.
const rejectKey = bench.HotTextKey

// rejectCost is the server CPU of accepted and of rejected writes on one limiter path.
type rejectCost struct {
	Path     string `json:"path"`     // "coordinator" or "replicas"
	Protocol string `json:"protocol"` // "cql" (gocql, prepared statements) or "grpc"
	Sync     bool   `json:"sync"`
	// Setup says how the path was obtained (replication factor, coordinators).
	Setup       string   `json:"setup"`
	AcceptPhase opCounts `json:"accept_phase"`
	RejectPhase opCounts `json:"reject_phase"` // the rounds' phases summed
	// RejectReps are the rounds of rejected writes; CPURejectNS is their median.
	RejectReps   []rejectRep `json:"reject_reps"`
	IdleCPUPerS  float64     `json:"idle_cpu_us_per_s"`   // the servers' CPU when idle, subtracted
	CPUAcceptNS  float64     `json:"cpu_ns_per_accepted"` // server CPU per accepted write
	CPURejectNS  float64     `json:"cpu_ns_per_rejected"` // server CPU per rejected write
	Ratio        float64     `json:"ratio"`               // CPURejectNS / CPUAcceptNS
	RatioByTicks float64     `json:"ratio_by_stat_ticks"` // the same from /proc/<pid>/stat utime+stime
}

// idleWindows is how many windows idleCPU measures; it keeps the quietest.
const idleWindows = 3

// idleCPU measures the servers' CPU per second of wall time while nothing is sent to them
// (gossip, timers), to subtract from the phases: the least of idleWindows windows of d each,
// because a window can catch leftover work of the previous phase (a flush, a compaction) that
// is not idle cost.
func idleCPU(ctx context.Context, c *testCluster, d time.Duration) (cpuSample, error) {
	var least cpuSample
	for i := range idleWindows {
		before, err := c.cpu()
		if err != nil {
			return cpuSample{}, err
		}
		start := time.Now()
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return cpuSample{}, ctx.Err()
		case <-timer.C:
		}
		after, err := c.cpu()
		if err != nil {
			return cpuSample{}, err
		}
		el := time.Since(start).Seconds()
		used := after.sub(before)
		rate := cpuSample{Run: time.Duration(float64(used.Run) / el), Ticks: time.Duration(float64(used.Ticks) / el)}
		if i == 0 || rate.Run < least.Run {
			least = rate
		}
	}
	return least, nil
}

// writer sends write i of a rejection-cost phase to table's partition rejectKey.
type writer func(ctx context.Context, i int64) error

// grpcWriter writes through the gRPC clients, write i through clients[i mod len(clients)].
func grpcWriter(clients []*client.Client, table string) writer {
	insert := hotInsert(table)
	return func(ctx context.Context, i int64) error {
		_, err := clients[i%int64(len(clients))].Execute(ctx, client.Quorum, insert(i))
		return err
	}
}

// cqlWriter writes through a gocql session with the prepared INSERT (gocql prepares it once per
// node), the same rows as hotInsert.
func cqlWriter(sess *gocql.Session, table string) writer {
	stmt := fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES (?, ?, ?)", table)
	return func(ctx context.Context, i int64) error {
		q := sess.Query(stmt, rejectKey, int32(i%1024), fmt.Sprintf("value-%08d", i)).WithContext(ctx)
		err := q.Exec()
		q.Release()
		return err
	}
}

// gocqlSession opens a gocql session at QUORUM that never retries: token-aware over the nodes it
// discovers from hosts, or (tokenAware false) to hosts[0] alone, with discovery off.
func gocqlSession(hosts []string, tokenAware bool) (*gocql.Session, error) {
	cluster := gocqlCluster(hosts)
	if tokenAware {
		cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	} else {
		cluster.Hosts = hosts[:1]
		cluster.DisableInitialHostLookup = true
		cluster.Events.DisableTopologyEvents = true
	}
	sess, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("gocql session on %s: %w", strings.Join(cluster.Hosts, ","), err)
	}
	return sess, nil
}

// gocqlCluster is the configuration of every gocql session of the program: protocol v4,
// QUORUM, 10 s timeouts, no retries.
func gocqlCluster(hosts []string) *gocql.ClusterConfig {
	cluster := gocql.NewCluster(hosts...)
	cluster.ProtoVersion = 4
	cluster.Timeout = 10 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.Consistency = gocql.Quorum
	cluster.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	return cluster
}

// hotInsert returns the statement of write i to table's partition rejectKey: one of 1024 rows.
func hotInsert(table string) func(i int64) string {
	return func(i int64) string {
		return fmt.Sprintf("INSERT INTO %s (k, c, v) VALUES ('%s', %d, 'value-%08d')", table, rejectKey, i%1024, i)
	}
}

// phaseOps returns how many operations a measured phase runs (warm: an unmeasured one):
// s.RejectOps (s.RejectWarmOps) closed loop, or s.RejectRate × s.RejectDuration (s.RejectWarm)
// open loop.
func phaseOps(s settings, warm bool) int64 {
	switch {
	case s.RejectRate > 0 && warm:
		return int64(s.RejectRate * s.RejectWarm.Seconds())
	case s.RejectRate > 0:
		return int64(s.RejectRate * s.RejectDuration.Seconds())
	case warm:
		return int64(s.RejectWarmOps)
	}
	return int64(s.RejectOps)
}

// measureCPU runs an unmeasured warm phase and then a measured phase of op, and returns the
// measured phase's outcomes and the servers' CPU meanwhile, less idle CPU over its wall time.
// Any error other than a rate limit fails it.
func measureCPU(ctx context.Context, s settings, c *testCluster, idle cpuSample, what string, op func(ctx context.Context, i int64) error) (opCounts, cpuSample, error) {
	if w := drive(ctx, phaseOps(s, true), s.RejectConcurrency, s.RejectRate, op); w.Errors > 0 {
		return opCounts{}, cpuSample{}, fmt.Errorf("%s: %d of %d failed; first: %s", what, w.Errors, w.Ops, w.FirstError)
	}
	before, err := c.cpu()
	if err != nil {
		return opCounts{}, cpuSample{}, err
	}
	oc := drive(ctx, phaseOps(s, false), s.RejectConcurrency, s.RejectRate, op)
	after, err := c.cpu()
	if err != nil {
		return opCounts{}, cpuSample{}, err
	}
	if err := ctx.Err(); err != nil {
		return opCounts{}, cpuSample{}, err
	}
	if oc.Errors > 0 {
		return opCounts{}, cpuSample{}, fmt.Errorf("%s: %d of %d failed; first: %s", what, oc.Errors, oc.Ops, oc.FirstError)
	}
	used := after.sub(before)
	used.Run -= time.Duration(float64(idle.Run) * oc.ElapsedS)
	used.Ticks -= time.Duration(float64(idle.Ticks) * oc.ElapsedS)
	return oc, used, nil
}

// rejectRep is one measured phase of rejected writes.
type rejectRep struct {
	Phase       opCounts `json:"phase"`
	CPURejectNS float64  `json:"cpu_ns_per_rejected"`
	// CPURejectTicksNS is the same from /proc/<pid>/stat utime+stime.
	CPURejectTicksNS float64 `json:"cpu_ns_per_rejected_by_stat_ticks"`
}

// rejectWriter is one protocol's way of writing on a limiter path.
type rejectWriter struct {
	protocol, setup string
	write           writer
}

// measureRejectPath measures one limiter path over each protocol of ws: a fixed number of
// writes to one partition of table with the write limit at maxLimit (all accepted), per
// protocol, then, with the limit at 1 on the partition already hot (almost all rejected),
// s.RejectReps rounds of as many writes per protocol, the protocols' order alternating from
// round to round, so that a disturbance of the machine falls on the protocols alike rather
// than on one protocol's single phase. A protocol's cost per rejected write is the median over
// its rounds. Each measured phase follows an unmeasured one of the same load that warms the
// connections and, under limit 1, the partition's counters; want says who must reject. The
// servers' CPU is read before and after each measured phase; idle is their CPU per second at
// rest, subtracted over the phase's wall time.
//
// By default the writes run closed loop, as fast as s.RejectConcurrency workers get answers:
// the servers stay busy, the regime of an overload. At a moderate open-loop rate (--reject-rate)
// a server's CPU per request is dominated instead by what every request pays to be received and
// answered one at a time (system calls, thread wake-ups), accepted or not; noopCost measures
// that floor.
func measureRejectPath(ctx context.Context, s settings, c *testCluster, table string, ws []rejectWriter,
	want client.RejectedBy, synced bool, idle cpuSample, log io.Writer) ([]rejectCost, error) {
	rcs := make([]rejectCost, len(ws))
	accTicks := make([]float64, len(ws))
	if err := c.exec(ctx, log, alterLimit(table, 0, maxLimit)); err != nil {
		return nil, err
	}
	for i, w := range ws {
		rc := &rcs[i]
		*rc = rejectCost{Path: string(want), Protocol: w.protocol, Sync: synced, Setup: w.setup, IdleCPUPerS: float64(idle.Run) / 1e3}
		oc, cpu, err := measureCPU(ctx, s, c, idle, w.protocol+" writes to "+table, w.write)
		if err != nil {
			return nil, err
		}
		if oc.Accepted == 0 {
			return nil, fmt.Errorf("no %s write to %s was accepted under limit %d", w.protocol, table, maxLimit)
		}
		rc.AcceptPhase = oc
		rc.CPUAcceptNS = float64(cpu.Run) / float64(oc.Accepted)
		accTicks[i] = float64(cpu.Ticks) / float64(oc.Accepted)
	}
	if err := c.exec(ctx, log, alterLimit(table, 0, 1)); err != nil {
		return nil, err
	}
	for round := range max(s.RejectReps, 1) {
		for k := range ws {
			i := k
			if round%2 == 1 {
				i = len(ws) - 1 - k
			}
			rc := &rcs[i]
			oc, cpu, err := measureCPU(ctx, s, c, idle, ws[i].protocol+" writes to "+table, ws[i].write)
			if err != nil {
				return nil, err
			}
			rejected := oc.rejected()
			// On the coordinator path every rejection is the coordinator's. On the replicas
			// path the replicas reject first; a coordinator that has learned the partition is
			// hot from them then rejects it itself (the learned copy), so both appear there.
			wrongPath := oc.ByReplicas
			if want == client.RejectedByReplicas {
				wrongPath = 0
			}
			if rejected == 0 || wrongPath > 0 {
				return nil, fmt.Errorf("%s writes to %s under limit 1: %d rejected by coordinator, %d by replicas; want rejections, on the coordinator path all by the coordinator (path %s)",
					ws[i].protocol, table, oc.ByCoordinator, oc.ByReplicas, want)
			}
			// The few writes admitted under limit 1 are charged at the accepted cost.
			perOp := func(used, accepted float64) float64 {
				return (used - accepted*float64(oc.Accepted)) / float64(rejected)
			}
			rc.RejectReps = append(rc.RejectReps, rejectRep{Phase: oc,
				CPURejectNS:      perOp(float64(cpu.Run), rc.CPUAcceptNS),
				CPURejectTicksNS: perOp(float64(cpu.Ticks), accTicks[i])})
			rc.RejectPhase = rc.RejectPhase.add(oc)
		}
	}
	for i := range rcs {
		rc := &rcs[i]
		var run, ticks []float64
		for _, r := range rc.RejectReps {
			run, ticks = append(run, r.CPURejectNS), append(ticks, r.CPURejectTicksNS)
		}
		rc.CPURejectNS = median(run)
		rc.Ratio = ratio(rc.CPURejectNS, rc.CPUAcceptNS)
		rc.RatioByTicks = ratio(median(ticks), accTicks[i])
		fmt.Fprintf(log, "perf: rejection cost (%s, %s, sync=%v): %.1f µs CPU per accepted write, %.1f µs per rejected (median of %s), ratio %.3f (stat ticks: %.3f)\n",
			rc.Protocol, want, rc.Sync, rc.CPUAcceptNS/1e3, rc.CPURejectNS/1e3, repsUS(run), rc.Ratio, rc.RatioByTicks)
	}
	return rcs, nil
}

// repsUS formats per-round costs in ns as µs: "20.1, 24.3, 22.0".
func repsUS(ns []float64) string {
	parts := make([]string, len(ns))
	for i, v := range ns {
		parts[i] = fmt.Sprintf("%.1f", v/1e3)
	}
	return strings.Join(parts, ", ")
}

// rejectCosts measures both limiter paths on cluster c, whose servers run with --sync=synced,
// over both protocols: the coordinator path on tableRF3 (every node a replica; gRPC coordinators
// in turn, gocql token-aware), the replicas path on tableRF1 through a node that does not own
// the partition; and the no-op request of each protocol.
func rejectCosts(ctx context.Context, s settings, c *testCluster, synced bool, log io.Writer) ([]rejectCost, []noopCost, error) {
	idle, err := idleCPU(ctx, c, s.Idle)
	if err != nil {
		return nil, nil, err
	}
	owner, err := c.owner(rejectKey)
	if err != nil {
		return nil, nil, err
	}
	other := (owner + 1) % len(c.servers)
	replSetup := fmt.Sprintf("RF=1, QUORUM writes, all through node %s, which does not own the partition (owner %s, from the ring rebuilt from node ids)",
		c.servers[other].ID[:8], c.servers[owner].ID[:8])

	tokenAware, err := gocqlSession(c.cqlAddrs(), true)
	if err != nil {
		return nil, nil, err
	}
	defer tokenAware.Close()
	nonOwner, err := gocqlSession([]string{c.cqlAddrs()[other]}, false)
	if err != nil {
		return nil, nil, err
	}
	defer nonOwner.Close()

	var costs []rejectCost
	for _, p := range []struct {
		table string
		ws    []rejectWriter
		want  client.RejectedBy
	}{
		{tableRF3, []rejectWriter{
			{"grpc", "RF=3 on 3 nodes, QUORUM writes, gRPC coordinators in turn (every node is a replica)", grpcWriter(c.clients, tableRF3)},
			{"cql", "RF=3 on 3 nodes, QUORUM writes, gocql token-aware (every node is a replica)", cqlWriter(tokenAware, tableRF3)},
		}, client.RejectedByCoordinator},
		{tableRF1, []rejectWriter{
			{"grpc", replSetup, grpcWriter(c.clients[other:other+1], tableRF1)},
			{"cql", replSetup + ", gocql to that node alone", cqlWriter(nonOwner, tableRF1)},
		}, client.RejectedByReplicas},
	} {
		rcs, err := measureRejectPath(ctx, s, c, p.table, p.ws, p.want, synced, idle, log)
		if err != nil {
			return nil, nil, fmt.Errorf("rejection cost, %s path: %w", p.want, err)
		}
		costs = append(costs, rcs...)
	}
	var noops []noopCost
	for _, m := range []func(context.Context, settings, *testCluster, bool, cpuSample, io.Writer) (noopCost, error){measureNoop, measureNativeNoop} {
		noop, err := m(ctx, s, c, synced, idle, log)
		if err != nil {
			return nil, nil, fmt.Errorf("no-op request cost: %w", err)
		}
		noops = append(noops, noop)
	}
	return costs, noops, nil
}

// noopCost is the server CPU of a request that does nothing: a gRPC health check, or the native
// protocol's OPTIONS, sent the way the coordinator path's writes are (same workers, same rate,
// nodes in turn). It is the floor under any request's cost, rejected or not.
type noopCost struct {
	Protocol    string   `json:"protocol"`
	Request     string   `json:"request"`
	Sync        bool     `json:"sync"`
	Phase       opCounts `json:"phase"`
	CPUPerReqNS float64  `json:"cpu_ns_per_request"`
}

// measureNoop measures noopCost on cluster c.
func measureNoop(ctx context.Context, s settings, c *testCluster, synced bool, idle cpuSample, log io.Writer) (noopCost, error) {
	hcs := make([]healthpb.HealthClient, len(c.servers))
	for i, srv := range c.servers {
		conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return noopCost{}, fmt.Errorf("health check connection to %s: %w", srv.Addr, err)
		}
		defer conn.Close()
		hcs[i] = healthpb.NewHealthClient(conn)
	}
	check := func(ctx context.Context, i int64) error {
		_, err := hcs[i%int64(len(hcs))].Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	oc, used, err := measureCPU(ctx, s, c, idle, "health checks", check)
	if err != nil {
		return noopCost{}, err
	}
	nc := noopCost{Protocol: "grpc", Request: "grpc.health.v1.Health/Check", Sync: synced, Phase: oc, CPUPerReqNS: ratio(float64(used.Run), float64(oc.Ops))}
	fmt.Fprintf(log, "perf: no-op request (gRPC health check, sync=%v): %.1f µs CPU per request\n", synced, nc.CPUPerReqNS/1e3)
	return nc, nil
}

// nativeConn is one native-protocol connection that sends OPTIONS and reads SUPPORTED, nothing
// else. It is started (STARTUP) as a client's is: the server closes a connection that has not
// started within its handshake timeout, which a slow measured phase outlasts.
type nativeConn struct {
	nc  net.Conn
	fr  *cqlwire.FrameReader
	buf []byte
}

// dialNative opens and starts a nativeConn to addr.
func dialNative(ctx context.Context, addr string) (*nativeConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("native connection to %s: %w", addr, err)
	}
	c := &nativeConn{nc: conn, fr: cqlwire.NewFrameReader(bufio.NewReader(conn), cqlwire.ReaderOptions{Responses: true})}
	if err := c.startup(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("native connection to %s: STARTUP: %w", addr, err)
	}
	return c, nil
}

// startup sends STARTUP and reads READY.
func (c *nativeConn) startup(ctx context.Context) error {
	m, err := c.ask(ctx, 0, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	if err != nil {
		return err
	}
	if _, ok := m.(cqlwire.Ready); !ok {
		return fmt.Errorf("answered %s, want READY", m.Opcode())
	}
	return nil
}

// options sends OPTIONS and reads SUPPORTED.
func (c *nativeConn) options(ctx context.Context) error {
	m, err := c.ask(ctx, 1, cqlwire.Options{})
	if err != nil {
		return err
	}
	if _, ok := m.(*cqlwire.Supported); !ok {
		return fmt.Errorf("OPTIONS answered with %s, want SUPPORTED", m.Opcode())
	}
	return nil
}

// ask sends req on stream and returns the answer, within ctx's deadline.
func (c *nativeConn) ask(ctx context.Context, stream int16, req cqlwire.Message) (cqlwire.Message, error) {
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
	}
	c.buf = cqlwire.AppendFrame(c.buf[:0], stream, req, cqlwire.FrameOptions{})
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	h, body, err := c.fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	f, err := cqlwire.DecodeFrame(h, body)
	if err != nil {
		return nil, err
	}
	return f.Message, nil
}

// measureNativeNoop measures noopCost of the native protocol's OPTIONS on cluster c: one
// connection per worker, the workers' connections spread over the nodes.
func measureNativeNoop(ctx context.Context, s settings, c *testCluster, synced bool, idle cpuSample, log io.Writer) (noopCost, error) {
	pool := make(chan *nativeConn, s.RejectConcurrency)
	defer func() {
		close(pool)
		for nc := range pool {
			nc.nc.Close()
		}
	}()
	addrs := c.cqlAddrs()
	for i := range s.RejectConcurrency {
		nc, err := dialNative(ctx, addrs[i%len(addrs)])
		if err != nil {
			return noopCost{}, err
		}
		pool <- nc
	}
	options := func(ctx context.Context, _ int64) error {
		nc := <-pool
		defer func() { pool <- nc }()
		return nc.options(ctx)
	}
	oc, used, err := measureCPU(ctx, s, c, idle, "OPTIONS requests", options)
	if err != nil {
		return noopCost{}, err
	}
	nc := noopCost{Protocol: "cql", Request: "OPTIONS", Sync: synced, Phase: oc, CPUPerReqNS: ratio(float64(used.Run), float64(oc.Ops))}
	fmt.Fprintf(log, "perf: no-op request (native OPTIONS, sync=%v): %.1f µs CPU per request\n", synced, nc.CPUPerReqNS/1e3)
	return nc, nil
}
