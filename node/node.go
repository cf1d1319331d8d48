package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/kvnode/kvnode/catalog"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/frontend/admission"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/frontend/native"
	"github.com/kvnode/kvnode/hints"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/repair"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/snapshot"
)

// Node is one running kvnode: storage, the replica service, membership, the coordinator, and the
// gRPC and metrics servers.
type Node struct {
	cfg      Config
	log      *slog.Logger
	lock     *dirLock
	schema   *catalog.Holder // the agreed schema (node/catalog.go)
	store    *replica.Store
	replica  *replica.Service
	cluster  *cluster.Cluster
	exec     *shell.Executor
	mux      *internode.Mux    // serves the internode requests (handleInternode)
	sender   *internode.Sender // sends every internode request, to peers and in process
	trans    transport         // the shell's and hints' replica calls over sender
	grpc     *grpc.Server      // the client API's
	health   *health.Server
	lis      net.Listener
	igrpc    *grpc.Server            // serves mux (startInternode)
	iframed  *internode.FramedServer // serves mux's pipes beside igrpc (startInternode)
	ilis     net.Listener
	native   *native.Server
	clis     net.Listener // the native protocol's
	registry *prometheus.Registry
	// grpcPanics counts the panics the gRPC servers recovered (recoveryOptions).
	grpcPanics *prometheus.CounterVec
	metrics    *http.Server
	mlis       net.Listener
	replayer   *loop.Loop // replays the batchlog (batchlog.go)
	sec        security   // TLS and gossip keys (listeners.go)
	topo       *topology
	hints      *hints.Store          // hinted handoff (hints.go)
	hinter     *hints.Replayer       // replays hints
	repair     *repair.Service       // anti-entropy repair and the tombstone purge (repair.go)
	schemaGC   *loop.Loop            // collects schema tombstones (catalog.go)
	paxosGC    *loop.Loop            // purges lightweight transactions' old Paxos state (replica)
	indexes    *replica.IndexBuilder // builds secondary indexes over the rows held before them
	// availability tells peers when the node cannot take writes, woken by spaceKick (diskfull.go).
	availability *loop.Loop
	spaceKick    spaceKick
	// admission bounds the client requests of both front ends (node/admission.go).
	admission *admission.Controller
	// logins counts, logs and slows down the failed logins of both front ends (auth.go).
	logins    *loginguard.Guard
	authSetup *loop.Loop // creates the superuser role (auth.go); nil without authentication
	// snapshots takes, lists, clears and restores the store's snapshots (snapshot.go).
	snapshots *snapshot.Manager

	// The disk failure policy (storage.go): stopOnce starts the stop, which closes stopped;
	// started is closed when Start returns, serving set if it succeeded.
	stopOnce sync.Once
	stopped  chan struct{}
	started  chan struct{}
	serving  atomic.Bool

	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Start starts a node: it locks the data directory, opens storage, binds its listeners (a port in
// use is an error naming the address), joins the cluster and starts serving. Close stops it.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	defaultName := cfg.Cluster.ClusterName == ""
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	superuserPassword, err := readSuperuserPassword(cfg)
	if err != nil {
		return nil, err
	}
	if defaultName && !loopback(cfg.Listen.GossipAddr) {
		cfg.Logger.Warn("cluster_name is the default; give each cluster its own so that unrelated clusters reaching each other's addresses cannot merge",
			"cluster_name", cfg.Cluster.ClusterName, "gossip_addr", cfg.Listen.GossipAddr)
	}
	now := time.Now
	if cfg.Testing != nil && cfg.Testing.Now != nil {
		now = cfg.Testing.Now
	}
	n := &Node{cfg: cfg, log: cfg.Logger, stopped: make(chan struct{}), started: make(chan struct{}), spaceKick: make(spaceKick, 1)}
	defer func() {
		n.serving.Store(err == nil)
		close(n.started)
		if err != nil {
			n.shutdown(context.Background(), true) // its errors are err's consequences
		}
	}()

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data directory: %w", err)
	}
	if n.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}

	// Bind the listeners first: the internode address goes into the gossip metadata.
	if err := n.listen(); err != nil {
		return nil, err
	}

	// The node id is created by cluster.Start; the catalog needs it only to stamp versions and
	// ballots, so it is given with the cluster (startDDL), before any DDL can arrive over the API.
	if err := n.openCatalog(); err != nil {
		return nil, err
	}
	storeOpts := cfg.Storage
	if storeOpts.Logger == nil {
		storeOpts.Logger = cfg.Logger.With("component", "pebble")
	}
	storeOpts.OnFailure = storagePolicy{n} // the disk failure policy (storage.go)
	storeOpts.OnSpaceChange = n.spaceKick  // peers see a full disk (diskfull.go)
	if n.store, err = replica.Open(filepath.Join(cfg.DataDir, "data"), storeOpts); err != nil {
		return nil, err
	}
	limits, err := partitionlimit.New(cfg.Limiter)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	// The node's id addresses the calls to itself, which its Sender makes in process; membership
	// uses the Sender (removals) while it starts. It names the node's counter shards.
	id, err := cluster.LoadOrCreateNodeID(cfg.DataDir, "")
	if err != nil {
		return nil, err
	}
	if n.replica, err = replica.NewService(replica.Config{
		Store: n.store, Schema: n.schema, Limits: limits, Now: now, Logger: cfg.Logger.With("component", "replica"),
		MaxBatchlogEntry: cfg.Coordinator.MaxMutationSize, NodeID: string(id),
	}); err != nil {
		return nil, err
	}
	if err := n.openSnapshots(string(id)); err != nil {
		return nil, err
	}
	if err := n.initDDL(); err != nil {
		return nil, err
	}
	n.mux = internode.NewMux()
	if n.sender, err = n.newSender(id); err != nil {
		return nil, err
	}
	if n.cluster, err = cluster.Start(ctx, cluster.Config{
		Options:       cfg.Cluster,
		DataDir:       cfg.DataDir,
		NodeID:        id,
		BindAddr:      cfg.Listen.GossipAddr,
		RPCAddr:       n.ilis.Addr().String(), // peers dial the internode listener
		NativeAddr:    n.clis.Addr().String(), // drivers read it from system.peers
		Logger:        cfg.Logger,             // cluster labels its own records
		Schema:        n.schema,
		Now:           now,
		Keyring:       n.sec.gossipKeys,
		Removals:      removalPeers{n.sender},     // removals travel over the internode port only
		Joining:       len(cfg.Cluster.Seeds) > 0, // a new node with seeds bootstraps (node/topology.go)
		Unrepaired:    n.store.Unrepaired(),       // started despite a corrupt log: no reads until repaired
		DataFormat:    replica.FormatVersion,      // Open upgraded the storage to it
		GossipDelay:   cfg.Testing.gossipDelay(),
		GossipDelayTo: cfg.Testing.gossipDelayTo(),
	}); err != nil {
		return nil, err
	}
	n.topo = newTopology(n)
	n.log = cfg.Logger.With("node", string(n.cluster.LocalID()))
	n.startAvailability()
	n.handleInternode()

	self := coordinator.NodeID(n.cluster.LocalID())
	n.trans = transport{Peers: internode.Peers{S: n.sender}, c: n.cluster}
	if err := n.openHints(now); err != nil {
		return nil, err
	}
	ring := ringView{c: n.cluster, name: cfg.Cluster.ClusterName}
	n.sender.CountCrossDataCenter(func(id internode.NodeID) string { return ring.DataCenter(coordinator.NodeID(id)) })
	coordMetrics := newCoordinatorMetrics()
	sysTables, err := systables.New(systemSource{n: n, clusterName: cfg.Cluster.ClusterName})
	if err != nil {
		return nil, err
	}
	if n.exec, err = shell.NewExecutor(shell.Config{
		Options:          cfg.Coordinator,
		LocalID:          self,
		Ring:             ring,
		Transport:        n.trans,
		Forward:          n.trans, // a write's copies for a remote data center go through one node there
		ScanPacer:        scanPacer{n},
		Deltas:           n.trans,
		Scopes:           n.trans,
		Local:            n.replica,
		Schema:           n.schema,
		Cluster:          ring,
		System:           sysTables,
		Now:              now,
		Logger:           cfg.Logger.With("component", "coordinator"),
		Observer:         coordMetrics,
		Batchlog:         n.trans,
		Hints:            n.hints,
		BeforeBatchApply: cfg.Testing.beforeBatchApply(),
		Auth:             cfg.authConfig(),
	}); err != nil {
		return nil, err
	}
	n.startDDL(coordMetrics)
	n.startBatchlogReplay(now)
	if err := n.startHintReplay(now); err != nil {
		return nil, err
	}
	if err := n.startRepair(); err != nil {
		return nil, err
	}
	n.startSchemaGC()
	n.paxosGC = n.store.StartPaxosGC(n.log)
	n.indexes = replica.StartIndexBuilder(n.store, n.schema.Schema, n.log.With("component", "index"))

	// The node's own registry (never the global one): several nodes share a test process.
	n.registry = prometheus.NewRegistry()
	n.grpcPanics = newGRPCPanics()
	n.registry.MustRegister(
		n.grpcPanics,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		coordMetrics,
		n.replica.Collector(),
		n.replica.PaxosCollector(),
		n.exec.LWTCollector(),
		n.replica.BatchlogCollector(),
		n.hints,
		n.repair,
		n.snapshots,
		n.store.Collector(),
		n.indexes.Collector(),
		n.cluster.Collector(),
		newTopologyCollector(n.topo),
		n.sender.Collector(),
	)
	if c := n.exec.Collector(); c != nil {
		n.registry.MustRegister(c) // partitions learned hot from replicas' rejections
	}

	n.startInternode()
	n.startReloader()
	if n.admission, err = n.newAdmission(); err != nil {
		return nil, err
	}
	if n.logins, err = n.newLoginGuard(); err != nil {
		return nil, err
	}
	limit := MessageLimit(cfg.Coordinator.MaxMutationSize)
	// The client API only: the internode service is startInternode's.
	n.grpc = grpc.NewServer(append(n.serverOptions(false), n.authServerOptions()...)...)
	api, err := grpcapi.New(grpcapi.Config{
		Executor: n.exec, Top: topSource{n}, MessageLimit: limit, LimitHint: "2 × max_mutation_size + 4 MiB",
		Admission: n.admission,
	})
	if err != nil {
		return nil, err
	}
	kvnodepb.RegisterKVNodeServer(n.grpc, api)
	kvnodepb.RegisterAdminServer(n.grpc, adminServer{n: n})
	kvnodepb.RegisterRepairServer(n.grpc, repairServer{n: n})
	kvnodepb.RegisterSnapshotServer(n.grpc, snapshotServer{n: n})
	n.health = health.NewServer()
	healthpb.RegisterHealthServer(n.grpc, n.health)
	reflection.Register(n.grpc)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.grpc.Serve(n.lis); err != nil {
			n.log.Error("gRPC server stopped", "err", err)
		}
	}()
	for _, svc := range []string{"", kvnodepb.KVNode_ServiceDesc.ServiceName} {
		n.health.SetServingStatus(svc, healthpb.HealthCheckResponse_SERVING)
	}

	if err := n.bootstrap(ctx); err != nil {
		return nil, err
	}
	n.startCleanup()
	n.startScopes(ctx)

	if err := n.startNative(); err != nil {
		return nil, err
	}
	n.startAuthSetup(superuserPassword)

	if n.mlis != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{Registry: n.registry}))
		n.metrics = &http.Server{
			Handler: mux,
			// The TLS handshake and the request's header; a scrape's answer; keep-alive.
			ReadHeaderTimeout: cfg.Listen.HandshakeTimeout,
			WriteTimeout:      metricsWriteTimeout,
			IdleTimeout:       cfg.Listen.IdleConnectionTimeout,
			MaxHeaderBytes:    metricsMaxHeaderBytes,
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := n.metrics.Serve(n.mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.log.Error("metrics server stopped", "err", err)
			}
		}()
	}

	n.log.Info("kvnode started", "addr", n.Addr(), "cql", n.CQLAddr(), "internode", n.InternodeAddr(), "gossip", n.GossipAddr(), "metrics", n.MetricsAddr(),
		"data_dir", cfg.DataDir, "seeds", cfg.Cluster.Seeds)
	return n, nil
}

// Bounds of a /metrics request: its answer is written within metricsWriteTimeout (a
// Prometheus scrape times out after 10 s by default), and its header is at most
// metricsMaxHeaderBytes (a scrape sends a few hundred bytes).
const (
	metricsWriteTimeout   = time.Minute
	metricsMaxHeaderBytes = 64 << 10
)

// loopback reports whether addr's host is a loopback address, where only this host's nodes can
// reach it.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// ID returns the node's id.
func (n *Node) ID() string { return string(n.cluster.LocalID()) }

// Addr returns the gRPC address clients use.
func (n *Node) Addr() string { return n.lis.Addr().String() }

// GossipAddr returns the gossip address peers use as a seed.
func (n *Node) GossipAddr() string { return n.cluster.GossipAddr() }

// MetricsAddr returns the metrics address, or "" when metrics are disabled.
func (n *Node) MetricsAddr() string {
	if n.mlis == nil {
		return ""
	}
	return n.mlis.Addr().String()
}

// Cluster returns the node's membership.
func (n *Node) Cluster() *cluster.Cluster { return n.cluster }

// Replica returns the node's replica service.
func (n *Node) Replica() *replica.Service { return n.replica }

// Executor returns the node's coordinator: the domain API the front ends adapt.
func (n *Node) Executor() *shell.Executor { return n.exec }

// Registry returns the node's Prometheus registry.
func (n *Node) Registry() *prometheus.Registry { return n.registry }

// Schema returns the node's current schema.
func (n *Node) Schema() *schema.Schema { return n.schema.Schema() }

// SchemaDigest returns the digest of the node's current schema.
func (n *Node) SchemaDigest() string { return n.schema.Digest() }

// Shutdown stops the node gracefully, in the manner of net/http's Server.Shutdown: it reports
// NOT_SERVING, stops accepting connections and requests, and waits for in-flight requests (gRPC
// calls and streams, metrics scrapes) to finish. If ctx ends first it cancels those still running
// and Shutdown returns ctx.Err() once the node is down. Either way it then leaves the cluster,
// closes storage, stops every goroutine the node started and releases the data directory.
// Shutdown and Close stop the node once; later calls return the first call's result. After a
// storage failure (StorageFailed) it does not leave the cluster, leaves pebble as it is, waits
// at most about a second on what the broken storage may hold, and returns an error wrapping
// replica.ErrStorageFailed.
func (n *Node) Shutdown(ctx context.Context) error {
	n.closeOnce.Do(func() { n.closeErr = n.shutdown(ctx, true) })
	return n.closeErr
}

// Close is Shutdown bounded by Config.ShutdownGrace; running out of grace is not an error.
func (n *Node) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownGrace)
	defer cancel()
	n.closeOnce.Do(func() {
		n.closeErr = n.shutdown(ctx, true)
		if errors.Is(n.closeErr, context.DeadlineExceeded) && ctx.Err() != nil {
			n.closeErr = nil
			n.log.Warn("requests still running after the shutdown grace were canceled", "grace", n.cfg.ShutdownGrace)
		}
	})
	return n.closeErr
}

// Kill stops the node as a process killed with SIGKILL looks to its peers and clients: client
// requests are not drained but cut, and the node does not leave the cluster, so peers find it
// down by failure detection. Storage is closed (acknowledged writes are on disk already). It is
// for tests that crash a node in process; Shutdown and Close are the ways to stop one.
func (n *Node) Kill() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.closeOnce.Do(func() {
		n.closeErr = n.shutdown(ctx, false)
		if errors.Is(n.closeErr, context.Canceled) {
			n.closeErr = nil // the requests it cut
		}
	})
	return n.closeErr
}

// shutdown stops what Start started, draining requests until ctx ends. Without leave it leaves
// the cluster as a crashed node would: without telling its peers. It returns ctx.Err() when
// it had to cancel requests, joined with the errors of closing the parts.
func (n *Node) shutdown(ctx context.Context, leave bool) error {
	if f := n.StorageFailed(); f != nil {
		return n.shutdownFailed(ctx, f) // storage.go: no leave, no wait on the broken storage
	}
	var errs []error
	if n.health != nil {
		n.health.Shutdown()
	}
	if n.grpc != nil {
		if err := stopGRPC(ctx, n.grpc); err != nil {
			errs = append(errs, err)
		}
	} else if n.lis != nil {
		n.lis.Close()
	}
	if n.native != nil {
		if err := n.native.Shutdown(ctx); err != nil && !errors.Is(err, ctx.Err()) {
			errs = append(errs, err)
		} else if err != nil && len(errs) == 0 {
			errs = append(errs, err)
		}
	} else if n.clis != nil {
		n.clis.Close()
	}
	if n.metrics != nil {
		if err := n.metrics.Shutdown(ctx); err != nil {
			// The metrics server's own Close cancels the scrapes still running.
			n.metrics.Close()
			if !errors.Is(err, ctx.Err()) || len(errs) == 0 {
				errs = append(errs, err)
			}
		}
	} else if n.mlis != nil {
		n.mlis.Close()
	}
	n.stopReloader()
	n.availability.Stop()
	n.replayer.Stop() // before the executor it replays through closes
	n.hinter.Stop()
	n.repair.Stop()
	n.schemaGC.Stop()
	n.paxosGC.Stop()
	n.indexes.Stop()
	n.authSetup.Stop()
	if n.exec != nil {
		n.exec.Close() // cancels replica requests still in flight (writes past their ack)
	}
	if n.hints != nil { // after the executor, whose last replica calls store hints
		if err := n.hints.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	n.topo.stop() // a background bootstrap
	if n.cluster != nil {
		if leave {
			if err := n.cluster.Close(); err != nil {
				errs = append(errs, err)
			}
		} else {
			n.cluster.Kill()
		}
	}
	// Peers' requests are served until the node has left: their coordinators stop sending
	// once they see it go.
	if n.igrpc != nil {
		n.mux.Drain() // the peers end their pipes, which the graceful stop waits for
		if err := stopGRPC(ctx, n.igrpc); err != nil && !slices.Contains(errs, err) {
			errs = append(errs, err)
		}
		if err := n.iframed.Stop(ctx); err != nil && !slices.Contains(errs, err) {
			errs = append(errs, err)
		}
	} else if n.ilis != nil {
		n.ilis.Close()
	}
	if n.sender != nil { // once nothing of the node calls a peer, the internode handlers included
		if err := n.sender.Close(); err != nil {
			n.log.Debug("closing the internode connections", "err", err)
		}
	}
	n.wg.Wait()
	if n.store != nil {
		if err := n.store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := n.lock.release(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case len(errs) == 1 && errs[0] == ctx.Err():
		return errs[0] // as net/http's Shutdown does, so callers may compare it
	case len(errs) > 0:
		return fmt.Errorf("node: shutdown: %w", errors.Join(errs...))
	}
	return nil
}
