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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Config configures one node. DataDir is required; the zero value of every other field means its
// default.
type Config struct {
	// DataDir holds everything the node persists: its id, known peers, schema and data. One node
	// process per directory; a second one is refused with ErrDataDirInUse.
	DataDir string
	// Addr is the gRPC address for clients and peers (host:port). Port 0 picks a free port; Addr()
	// reports the real one. Default 127.0.0.1:9043.
	Addr string
	// GossipAddr is the memberlist address (host:port, TCP and UDP). Default 127.0.0.1:7946.
	GossipAddr string
	// MetricsAddr serves Prometheus metrics at /metrics (host:port). Empty disables the endpoint.
	MetricsAddr string
	// Seeds are gossip addresses of nodes to join.
	Seeds []string
	// NumTokens is the number of vnode tokens this node owns. Default cluster.DefaultNumTokens.
	NumTokens int
	// NoSync acknowledges writes before they are synced to disk (see replica.Options.NoSync).
	NoSync bool
	// ClusterName keeps clusters apart. Default cluster.DefaultClusterName.
	ClusterName string
	// Profile selects gossip and failure-detection timings. Default cluster.ProfileLAN.
	Profile cluster.Profile
	// Storage overrides storage options other than NoSync (cache and memtable sizes).
	Storage replica.Options
	// LimiterCapacity is the number of partitions the rate limiter tracks per node. Default
	// partitionlimit's (about 1M).
	LimiterCapacity int
	// WriteTimeout and ReadTimeout bound coordinated requests. Defaults 2 s and 5 s.
	WriteTimeout, ReadTimeout time.Duration
	// SchemaAgreementTimeout bounds how long DDL waits for every live node to agree. Default 10 s.
	SchemaAgreementTimeout time.Duration
	// MaxMutationSize bounds one write's keys, column names and values, in bytes; a larger write
	// is refused by the coordinator with an error naming the limit. The gRPC message limits of
	// the client API and of internode traffic derive from it (see MessageLimit). Default
	// coordinator.DefaultMaxMutationSize (16 MiB).
	MaxMutationSize int
	// MaxTimestampAhead is how far ahead of this node's clock a client's USING TIMESTAMP may be
	// when the node coordinates the write; a write beyond it is refused as invalid. Default
	// DefaultMaxTimestampAhead.
	MaxTimestampAhead time.Duration
	// Logger receives the node's logs. Default slog.Default().
	Logger *slog.Logger

	// Now is a test-only knob: the clock of the rate limiter, the coordinator (write
	// timestamps, deadlines) and the clock peers measure through gossip. Nil means time.Now.
	// Tests freeze it to make counters exact, or shift it to give a node a skewed clock.
	Now func() time.Time
}

// Default listen addresses.
const (
	DefaultAddr        = "127.0.0.1:9043"
	DefaultGossipAddr  = "127.0.0.1:7946"
	DefaultMetricsAddr = "127.0.0.1:9180"
)

// MaxMutationSizeLimit is the largest Config.MaxMutationSize accepted: it keeps MessageLimit
// within gRPC's int32 message lengths.
const MaxMutationSizeLimit = 512 << 20

// MessageLimit is the largest gRPC message a node with the given MaxMutationSize receives or
// sends, on the client API and between nodes. It leaves room for the largest write as a CQL
// statement (a blob literal spells each byte with two hex digits) and for a replica's read page
// holding the largest row; larger messages fail with gRPC's ResourceExhausted naming both sizes.
func MessageLimit(maxMutationSize int) int { return 2*maxMutationSize + 4<<20 }

// DefaultMaxTimestampAhead is the bound on client timestamps ahead of the coordinator's clock
// when Config.MaxTimestampAhead is zero (docs/operations.md explains the choice).
const DefaultMaxTimestampAhead = coordinator.DefaultMaxTimestampAhead

// Node is one running kvnode: storage, the replica service, membership, the coordinator, and the
// gRPC and metrics servers.
type Node struct {
	cfg      Config
	log      *slog.Logger
	lock     *dirLock
	schema   *schemaHolder
	store    *replica.Store
	replica  *replica.Service
	cluster  *cluster.Cluster
	exec     *coordinator.Executor
	trans    *transport
	grpc     *grpc.Server
	health   *health.Server
	lis      net.Listener
	registry *prometheus.Registry
	metrics  *http.Server
	mlis     net.Listener

	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Start starts a node: it locks the data directory, opens storage, binds its listeners (a port in
// use is an error naming the address), joins the cluster and starts serving. Close stops it.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: Config.DataDir is required")
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.GossipAddr == "" {
		cfg.GossipAddr = DefaultGossipAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.MaxMutationSize < 0:
		return nil, fmt.Errorf("node: Config.MaxMutationSize is %d, want ≥ 0", cfg.MaxMutationSize)
	case cfg.MaxMutationSize == 0:
		cfg.MaxMutationSize = coordinator.DefaultMaxMutationSize
	case cfg.MaxMutationSize > MaxMutationSizeLimit:
		return nil, fmt.Errorf("node: Config.MaxMutationSize is %d, want at most %d", cfg.MaxMutationSize, MaxMutationSizeLimit)
	}
	n := &Node{cfg: cfg, log: cfg.Logger}
	defer func() {
		if err != nil {
			n.shutdown(false)
		}
	}()

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: data directory: %w", err)
	}
	if n.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, err
	}

	// Bind the RPC listener first: its real address goes into the gossip metadata.
	if n.lis, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("node: listen on --addr %s: %w", cfg.Addr, err)
	}
	if cfg.MetricsAddr != "" {
		if n.mlis, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return nil, fmt.Errorf("node: listen on --metrics-addr %s: %w", cfg.MetricsAddr, err)
		}
	}

	// The node id is created by cluster.Start; the schema holder needs it only to stamp versions,
	// so it is set once membership is up and before any DDL can arrive over the API.
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if n.schema, err = openSchema(cfg.DataDir, "", time.Now); err != nil {
		return nil, err
	}
	storeOpts := cfg.Storage
	storeOpts.NoSync = cfg.NoSync
	if storeOpts.Logger == nil {
		storeOpts.Logger = cfg.Logger.With("component", "pebble")
	}
	if n.store, err = replica.Open(filepath.Join(cfg.DataDir, "data"), storeOpts); err != nil {
		return nil, err
	}
	limits, err := partitionlimit.New(partitionlimit.Options{Capacity: cfg.LimiterCapacity})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if n.replica, err = replica.NewService(replica.Config{
		Store: n.store, Schema: n.schema, Limits: limits, Now: cfg.Now, Logger: cfg.Logger.With("component", "replica"),
	}); err != nil {
		return nil, err
	}
	if err := n.initDDL(); err != nil {
		return nil, err
	}

	if n.cluster, err = cluster.Start(ctx, cluster.Config{
		DataDir:                cfg.DataDir,
		ClusterName:            cfg.ClusterName,
		BindAddr:               cfg.GossipAddr,
		RPCAddr:                n.lis.Addr().String(),
		Seeds:                  cfg.Seeds,
		NumTokens:              cfg.NumTokens,
		Profile:                cfg.Profile,
		Logger:                 cfg.Logger, // cluster labels its own records
		Schema:                 n.schema,
		SchemaAgreementTimeout: cfg.SchemaAgreementTimeout,
		Now:                    cfg.Now,
	}); err != nil {
		return nil, err
	}
	n.schema.nodeID = string(n.cluster.LocalID())
	n.schema.announce = n.announceSchema
	n.log = cfg.Logger.With("node", string(n.cluster.LocalID()))

	self := coordinator.NodeID(n.cluster.LocalID())
	n.trans = newTransport(self, n.replica, n.cluster, MessageLimit(cfg.MaxMutationSize))
	ring := ringView{c: n.cluster, name: clusterName(cfg.ClusterName)}
	coordMetrics := newCoordinatorMetrics()
	if n.exec, err = coordinator.NewExecutor(coordinator.Config{
		LocalID:           self,
		Ring:              ring,
		Transport:         n.trans,
		Deltas:            n.trans,
		Local:             n.replica,
		Schema:            n.schema,
		Cluster:           ring,
		Now:               cfg.Now,
		WriteTimeout:      cfg.WriteTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		MaxMutationSize:   cfg.MaxMutationSize,
		Logger:            cfg.Logger.With("component", "coordinator"),
		Observer:          coordMetrics,
		MaxTimestampAhead: cfg.MaxTimestampAhead,
	}); err != nil {
		return nil, err
	}
	n.startDDL(coordMetrics)

	// The node's own registry (never the global one): several nodes share a test process.
	n.registry = prometheus.NewRegistry()
	n.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		coordMetrics,
		n.replica.Collector(),
		n.store.Collector(),
		newClusterCollector(n.cluster),
	)

	limit := MessageLimit(cfg.MaxMutationSize)
	n.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(limit), grpc.MaxSendMsgSize(limit))
	replicapb.RegisterReplicaServer(n.grpc, n.replica)
	replicapb.RegisterSchemaPaxosServer(n.grpc, n.schema.acceptor)
	api, err := grpcapi.New(grpcapi.Config{
		Executor: n.exec, Top: topSource{n}, MessageLimit: limit, LimitHint: "2 × max_mutation_size + 4 MiB",
	})
	if err != nil {
		return nil, err
	}
	kvnodepb.RegisterKVNodeServer(n.grpc, api)
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
	for _, svc := range []string{"", kvnodepb.KVNode_ServiceDesc.ServiceName, replicapb.Replica_ServiceDesc.ServiceName} {
		n.health.SetServingStatus(svc, healthpb.HealthCheckResponse_SERVING)
	}

	if n.mlis != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{Registry: n.registry}))
		n.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := n.metrics.Serve(n.mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.log.Error("metrics server stopped", "err", err)
			}
		}()
	}

	n.log.Info("kvnode started", "addr", n.Addr(), "gossip", n.GossipAddr(), "metrics", n.MetricsAddr(),
		"data_dir", cfg.DataDir, "seeds", cfg.Seeds)
	return n, nil
}

func clusterName(name string) string {
	if name == "" {
		return cluster.DefaultClusterName
	}
	return name
}

// announceSchema pushes a local schema change to live peers and waits for agreement, returning
// the nodes that had not agreed when the bounded wait ended.
func (n *Node) announceSchema(ctx context.Context) ([]string, error) {
	if err := n.cluster.NotifySchemaChanged(); err != nil {
		return nil, err
	}
	ids, err := n.cluster.AwaitSchemaAgreement(ctx, 0)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out, err
}

// ID returns the node's id.
func (n *Node) ID() string { return string(n.cluster.LocalID()) }

// Addr returns the gRPC address clients and peers use.
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

// Registry returns the node's Prometheus registry.
func (n *Node) Registry() *prometheus.Registry { return n.registry }

// Schema returns the node's current schema.
func (n *Node) Schema() *schema.Schema { return n.schema.Schema() }

// SchemaDigest returns the digest of the node's current schema.
func (n *Node) SchemaDigest() string { return n.schema.Digest() }

// Close stops the node gracefully: it reports NOT_SERVING, stops accepting requests and lets
// in-flight ones finish (bounded), leaves the cluster, and closes storage. It stops every
// goroutine the node started and releases the data directory.
func (n *Node) Close() error {
	n.closeOnce.Do(func() { n.closeErr = n.shutdown(true) })
	return n.closeErr
}

// shutdownGrace bounds how long Close waits for in-flight requests.
const shutdownGrace = 5 * time.Second

func (n *Node) shutdown(leave bool) error {
	var errs []error
	if n.health != nil {
		n.health.Shutdown()
	}
	if n.grpc != nil {
		done := make(chan struct{})
		go func() { n.grpc.GracefulStop(); close(done) }()
		t := time.NewTimer(shutdownGrace)
		select {
		case <-done:
		case <-t.C:
			n.grpc.Stop()
			<-done
		}
		t.Stop()
	} else if n.lis != nil {
		n.lis.Close()
	}
	if n.metrics != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		if err := n.metrics.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics server: %w", err))
		}
		cancel()
	} else if n.mlis != nil {
		n.mlis.Close()
	}
	if n.exec != nil {
		n.exec.Close() // cancels replica requests still in flight (writes past their ack)
	}
	if n.trans != nil {
		n.trans.close()
	}
	if n.cluster != nil {
		if err := n.cluster.Close(); err != nil && leave {
			errs = append(errs, err)
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
	if len(errs) > 0 {
		return fmt.Errorf("node: close: %w", errors.Join(errs...))
	}
	return nil
}
