package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/replica"
)

// corruptHealth is a health service whose check of "storage" panics with pebble's corruption
// error, as a storage call that panics on a corrupt block would.
type corruptHealth struct {
	healthpb.UnimplementedHealthServer
}

func (corruptHealth) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if req.Service == "storage" {
		panic(fmt.Errorf("block checksum mismatch: %w", pebble.ErrCorruption))
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// recordPolicy is a replica.FailureHandler that records the failures it is told.
type recordPolicy chan *replica.Failure

func (p recordPolicy) StorageFailed(f *replica.Failure) { p <- f }

// TestGRPCStoragePanicGoesToThePolicy: a panic carrying a storage failure in a gRPC call is
// not recovered as that call's failure (nor counted as a bug): it fails the store, which runs the
// disk failure policy, and the call fails as Unavailable.
func TestGRPCStoragePanicGoesToThePolicy(t *testing.T) {
	policy := make(recordPolicy, 1)
	store, err := replica.Open("db", replica.Options{FS: vfs.NewMem(), CacheSize: 1 << 20, MemTableSize: 1 << 20, OnFailure: policy})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n := &Node{log: slog.New(slog.DiscardHandler), grpcPanics: newGRPCPanics(), store: store}
	srv := grpc.NewServer(n.recoveryOptions("internode")...)
	healthpb.RegisterHealthServer(srv, corruptHealth{})
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
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "storage"})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "storage failed") {
		t.Errorf("a call that panicked with a corruption: %v, want Unavailable naming the storage failure", err)
	}
	select {
	case f := <-policy:
		if f.Kind != replica.FailureCorruption {
			t.Errorf("the policy was told %v, want a corruption", f)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the disk failure policy was not told of the storage panic")
	}
	if got := testutil.ToFloat64(n.grpcPanics); got != 0 {
		t.Errorf("kvnode_grpc_panics_total = %v, want 0: a storage failure is no bug", got)
	}
}
