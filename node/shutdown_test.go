package node_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
)

// blockingCollector holds every scrape of the registry it is in until release is closed.
type blockingCollector struct {
	entered     chan struct{}
	enteredOnce sync.Once
	release     chan struct{}
	desc        *prometheus.Desc
}

func (b *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

func (b *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	b.enteredOnce.Do(func() { close(b.entered) })
	<-b.release
	ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, 1)
}

func startOne(t *testing.T, adjust func(*node.Config)) *node.Node {
	t.Helper()
	cfg := nodeConfig(filepath.Join(t.TempDir(), "n"), nil)
	if adjust != nil {
		adjust(&cfg)
	}
	nd, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	return nd
}

// TestShutdownDrainsInFlightRequest holds a metrics scrape in flight while Shutdown runs: the
// node stops accepting connections, waits for the scrape, which completes, and Shutdown returns
// nil once it has.
func TestShutdownDrainsInFlightRequest(t *testing.T) {
	nd := startOne(t, func(c *node.Config) { c.Listen.MetricsAddr = "127.0.0.1:0" })
	b := &blockingCollector{entered: make(chan struct{}), release: make(chan struct{}),
		desc: prometheus.NewDesc("shutdown_test_blocked", "held until released", nil, nil)}
	nd.Registry().MustRegister(b)
	defer func() {
		select {
		case <-b.release:
		default:
			close(b.release) // a failed test must not leave the scrape hanging
		}
	}()

	type result struct {
		status int
		body   string
		err    error
	}
	scraped := make(chan result, 1)
	url := "http://" + nd.MetricsAddr() + "/metrics"
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			scraped <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		scraped <- result{resp.StatusCode, string(body), err}
	}()
	<-b.entered

	stopped := make(chan error, 1)
	go func() { stopped <- nd.Shutdown(context.Background()) }()
	metricsAddr := nd.MetricsAddr()
	poll.Must(t, 30*time.Second, "the metrics listener refuses new connections", poll.Bool(func() bool {
		c, err := net.Dial("tcp", metricsAddr)
		if err == nil {
			c.Close()
		}
		return err != nil
	}))
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned %v while a scrape was in flight, want it to wait", err)
	default:
	}
	close(b.release)
	r := <-scraped
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "shutdown_test_blocked 1") {
		t.Errorf("the in-flight scrape got status %d, error %v, body with the held metric %v; want 200, nil, true",
			r.status, r.err, strings.Contains(r.body, "shutdown_test_blocked 1"))
	}
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown after the in-flight request completed = %v, want nil", err)
	}
}

// TestShutdownReturnsCtxErrWhenGraceEnds holds a gRPC stream open (a health Watch, which only
// the client ends): Shutdown waits for it until its context is canceled, then forces the stream
// closed, finishes stopping the node and returns ctx.Err().
func TestShutdownReturnsCtxErrWhenGraceEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	cfg := nodeConfig(dir, nil)
	nd, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(nd.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch, err := healthpb.NewHealthClient(conn).Watch(watchCtx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := watch.Recv(); err != nil || st.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first health status = %v, %v; want SERVING", st, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- nd.Shutdown(ctx) }()
	if st, err := watch.Recv(); err != nil || st.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health status once Shutdown began = %v, %v; want NOT_SERVING", st, err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned %v while a stream was open and its context live, want it to wait", err)
	default:
	}
	cancel()
	if err := <-stopped; err != context.Canceled {
		t.Errorf("Shutdown whose context ended first = %v, want context.Canceled", err)
	}
	if _, err := watch.Recv(); err == nil {
		t.Error("the open stream still delivers after a forced shutdown")
	}
	if err := nd.Close(); err != context.Canceled {
		t.Errorf("Close after Shutdown = %v, want Shutdown's result again", err)
	}
	// The node is fully down: its data directory can be opened again.
	again, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("restart on the same data directory after a forced shutdown: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestStartRefusesInvalidConfig checks that Start validates: a bad value is an error naming its
// key, before anything is opened.
func TestStartRefusesInvalidConfig(t *testing.T) {
	cfg := nodeConfig(filepath.Join(t.TempDir(), "n"), nil)
	cfg.Cluster.NumTokens = 5000
	nd, err := node.Start(context.Background(), cfg)
	if err == nil {
		nd.Close()
		t.Fatal("Start with num_tokens 5000 succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "num_tokens") || errors.Is(err, node.ErrDataDirInUse) {
		t.Errorf("Start with num_tokens 5000 = %v, want an error naming num_tokens", err)
	}
}
