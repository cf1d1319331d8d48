package node

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// panickyHealth is a health service whose check of the service "boom" panics, as a bug would.
type panickyHealth struct {
	healthpb.UnimplementedHealthServer
}

func (panickyHealth) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if req.Service == "boom" {
		var m map[string]int
		m["x"] = 1
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// TestGRPCPanicFailsOnlyItsCall: a gRPC call whose handler panics fails as Internal, counted
// and logged with its stack, and the server goes on answering other calls.
func TestGRPCPanicFailsOnlyItsCall(t *testing.T) {
	var logged lockedbuf.Buffer
	n := &Node{log: slog.New(slog.NewTextHandler(&logged, nil)), grpcPanics: newGRPCPanics()}
	srv := grpc.NewServer(n.recoveryOptions("client")...)
	healthpb.RegisterHealthServer(srv, panickyHealth{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(conn)
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "boom"}); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "bug") {
		t.Fatalf("a call whose handler panics: %v, want Internal", err)
	}
	if resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("the next call: %v, %v; want SERVING", resp, err)
	}
	if got := testutil.ToFloat64(n.grpcPanics.WithLabelValues("client")); got != 1 {
		t.Errorf("kvnode_grpc_panics_total{server=\"client\"} = %v, want 1", got)
	}
	if log := logged.String(); !strings.Contains(log, "assignment to entry in nil map") || !strings.Contains(log, "grpc.health.v1.Health/Check") || !strings.Contains(log, "goroutine") {
		t.Errorf("the log does not hold the panic, its method and its stack:\n%s", log)
	}
}

// staticAddrs resolves nodes' internode addresses from a map (internode.Addresses).
type staticAddrs map[internode.NodeID]string

func (a staticAddrs) InternodeAddr(id internode.NodeID) (string, bool) {
	addr, ok := a[id]
	return addr, ok
}

// TestInternodePanicNamesItsKind: on the internode server every request is an Internode Call or
// Stream, so a panic is logged with the request's kind, for calls and streams alike, and counted;
// the call fails as Internal and the server goes on answering.
func TestInternodePanicNamesItsKind(t *testing.T) {
	var logged lockedbuf.Buffer
	mux := internode.NewMux() // its pipes' requests are recovered too (recoveryOptions)
	n := &Node{log: slog.New(slog.NewTextHandler(&logged, nil)), grpcPanics: newGRPCPanics(), mux: mux}
	internode.Handle(mux, func(_ context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
		if req.GetMutation().GetTableId() == 13 {
			var m map[string]int
			m["x"] = 1
		}
		return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK}, nil
	})
	internode.HandleStream(mux, func(context.Context, *replicapb.PullRequest, func(*replicapb.PullChunk) error) error {
		var s []int
		_ = s[3]
		return nil
	})
	srv := grpc.NewServer(n.recoveryOptions("internode")...)
	mux.Register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	s, err := internode.NewSender(internode.Options{Addresses: staticAddrs{"n2": lis.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	bad := &replicapb.MutateRequest{Mutation: &replicapb.Mutation{TableId: 13}}
	if _, err := internode.Call[*replicapb.MutateResponse](ctx, s, "n2", bad); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "bug") {
		t.Fatalf("a mutate whose handler panics: %v, want Internal", err)
	}
	if _, err := internode.Call[*replicapb.MutateResponse](ctx, s, "n2", &replicapb.MutateRequest{}); err != nil {
		t.Errorf("the next mutate: %v", err)
	}
	err = internode.Stream(ctx, s, "n2", &replicapb.PullRequest{}, func(*replicapb.PullChunk) error { return nil })
	if status.Code(err) != codes.Internal {
		t.Errorf("a pull whose handler panics: %v, want Internal", err)
	}
	if got := testutil.ToFloat64(n.grpcPanics.WithLabelValues("internode")); got != 2 {
		t.Errorf("kvnode_grpc_panics_total{server=\"internode\"} = %v, want 2", got)
	}
	log := logged.String()
	for _, want := range []string{"method=mutate", "method=pull", "assignment to entry in nil map", "index out of range", "goroutine"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}
