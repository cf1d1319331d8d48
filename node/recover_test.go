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
