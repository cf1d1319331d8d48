package grpcapi

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/frontend/loginguard/loginguardtest"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// testAuthenticator logs in admin/apw (a superuser) and app/pw.
type testAuthenticator struct{}

func (testAuthenticator) Authenticate(_ context.Context, user, pass string) (auth.Login, error) {
	switch {
	case user == "admin" && pass == "apw":
		return auth.Login{Role: "admin", Superuser: true}, nil
	case user == "app" && pass == "pw":
		return auth.Login{Role: "app"}, nil
	}
	return auth.Login{}, &auth.AuthenticationError{Username: user}
}

// roleExecutor answers every statement with the role its context carries, as a keyspace.
type roleExecutor struct{}

func (roleExecutor) Execute(ctx context.Context, _ coordinator.Statement) (coordinator.Result, error) {
	role, ok := auth.RoleFrom(ctx)
	if !ok {
		return coordinator.Result{}, &auth.UnauthorizedError{Msg: "anonymous"}
	}
	return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: role}, nil
}

// TestAuthInterceptors checks, on a real gRPC server, that the client API needs credentials
// and runs as their role, that health checks need none, that the admin services need a
// superuser, and that malformed credentials are refused.
func TestAuthInterceptors(t *testing.T) {
	unary, stream := AuthInterceptors(testAuthenticator{}, nil)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream),
		// Stands in for the Admin and Repair services: answers any unknown method after the
		// interceptors let it through.
		grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error { return status.Error(codes.Unimplemented, "reached the service") }))
	api, err := New(Config{Executor: roleExecutor{}})
	if err != nil {
		t.Fatal(err)
	}
	kvnodepb.RegisterKVNodeServer(srv, api)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	kv := kvnodepb.NewKVNodeClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	as := func(cred string) context.Context {
		if cred == "" {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, AuthMetadataKey, cred)
	}

	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("anonymous health check: %v, want served", err)
	}
	resp, err := kv.Execute(as(BasicCredentials("app", "pw")), &kvnodepb.ExecuteRequest{Statement: "USE x"})
	if err != nil || resp.GetSetKeyspace() != "app" {
		t.Errorf("Execute as app: %v, %v; want it run as role app", resp, err)
	}
	for _, tt := range []struct {
		cred string
		code codes.Code
		want string
	}{
		{"", codes.Unauthenticated, "this node requires authentication"},
		{BasicCredentials("app", "nope"), codes.Unauthenticated, "Provided username app and/or password are incorrect"},
		{"Bearer abc", codes.Unauthenticated, `must be "Basic " + base64(username:password)`},
		{"Basic !!!", codes.Unauthenticated, "not valid base64"},
		{"Basic YXBw", codes.Unauthenticated, "not username:password"},
	} {
		_, err := kv.Execute(as(tt.cred), &kvnodepb.ExecuteRequest{Statement: "USE x"})
		if s := status.Convert(err); s.Code() != tt.code || !strings.Contains(s.Message(), tt.want) {
			t.Errorf("Execute with credentials %q: %v, want %v saying %q", tt.cred, err, tt.code, tt.want)
		}
	}
	for _, method := range []string{"/kvnode.v1.Admin/Status", "/kvnode.v1.Repair/Repair"} {
		call := func(cred string) error {
			return conn.Invoke(as(cred), method, &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
		}
		if s := status.Convert(call("")); s.Code() != codes.Unauthenticated {
			t.Errorf("%s anonymously: %v, want UNAUTHENTICATED", method, s.Err())
		}
		if s := status.Convert(call(BasicCredentials("app", "pw"))); s.Code() != codes.PermissionDenied || !strings.Contains(s.Message(), "User app is not a superuser") {
			t.Errorf("%s as app: %v, want PERMISSION_DENIED naming the role", method, s.Err())
		}
		if s := status.Convert(call(BasicCredentials("admin", "apw"))); s.Code() != codes.Unimplemented || s.Message() != "reached the service" {
			t.Errorf("%s as admin: %v, want the service reached", method, s.Err())
		}
	}
}

func TestMethodAccess(t *testing.T) {
	for _, tt := range []struct {
		method string
		want   access
	}{
		{"/kvnode.v1.KVNode/Execute", accessLogin},
		{"/kvnode.v1.KVNode/TopPartitions", accessSuperuser},
		{"/kvnode.v1.Admin/Decommission", accessSuperuser},
		{"/kvnode.Admin/Status", accessSuperuser},
		{"/kvnode.v1.Repair/Repair", accessSuperuser},
		{"/kvnode.v1.Snapshot/Restore", accessSuperuser},
		{"/kvnode.v1.Snapshot/List", accessSuperuser},
		{"/kvnode.replica.v1.Internode/Call", accessNone},
		{"/grpc.health.v1.Health/Check", accessNone},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", accessLogin},
		{"/other.Service/Method", accessLogin},
		{"garbage", accessLogin},
	} {
		if got := methodAccess(tt.method); got != tt.want {
			t.Errorf("methodAccess(%q) = %d, want %d", tt.method, got, tt.want)
		}
	}
}

// countingAuthenticator is testAuthenticator counting its calls.
type countingAuthenticator struct {
	mu    sync.Mutex
	calls int
}

func (c *countingAuthenticator) Authenticate(ctx context.Context, user, pass string) (auth.Login, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return testAuthenticator{}.Authenticate(ctx, user, pass)
}

func (c *countingAuthenticator) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestAuthBruteForceSlowed checks, on a real gRPC server, that calls with wrong passwords from
// one host are counted, that the 11th to the 15th each wait 1 s of the guard's clock before the
// password is checked, and that a client on another host is served at once meanwhile.
func TestAuthBruteForceSlowed(t *testing.T) {
	clock := loginguardtest.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	guard, err := loginguard.New(loginguard.Config{Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a := &countingAuthenticator{}
	unary, stream := AuthInterceptors(a, guard)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream))
	api, err := New(Config{Executor: roleExecutor{}})
	if err != nil {
		t.Fatal(err)
	}
	kvnodepb.RegisterKVNodeServer(srv, api)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	client := func(local string) kvnodepb.KVNodeClient {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return kvnodepb.NewKVNodeClient(conn)
	}
	attacker, other := client("127.0.0.1"), client("127.0.0.2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	as := func(cred string) context.Context { return metadata.AppendToOutgoingContext(ctx, AuthMetadataKey, cred) }
	others := 0
	for i := range 15 {
		done := make(chan error, 1)
		go func() {
			_, err := attacker.Execute(as(BasicCredentials("app", "guess")), &kvnodepb.ExecuteRequest{Statement: "USE x"})
			done <- err
		}()
		if i >= 10 {
			poll.Must(t, 20*time.Second, "the guess waits", poll.Bool(func() bool { return clock.Sleepers() == 1 }))
			if n := a.count() - others; n != i {
				t.Fatalf("guess %d: the password was checked %d times for the attacker while it waited, want %d", i+1, n, i)
			}
			if i == 10 {
				if resp, err := other.Execute(as(BasicCredentials("app", "pw")), &kvnodepb.ExecuteRequest{Statement: "USE x"}); err != nil || resp.GetSetKeyspace() != "app" {
					t.Fatalf("app from another host while the attacker waits: %v, %v; want served at once", resp, err)
				}
				others++
			}
			clock.Advance(time.Second)
		}
		if s := status.Convert(<-done); s.Code() != codes.Unauthenticated {
			t.Fatalf("guess %d: %v, want UNAUTHENTICATED", i+1, s.Err())
		}
	}
	if n := len(clock.Slept()); n != 5 {
		t.Errorf("%d guesses waited, want 5", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(guard.Collector())
	want := `
# HELP kvnode_auth_delayed_logins_total Logins made to wait before their check because their address (or their role from that address) failed too often recently, by protocol.
# TYPE kvnode_auth_delayed_logins_total counter
kvnode_auth_delayed_logins_total{protocol="grpc"} 5
kvnode_auth_delayed_logins_total{protocol="native"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kvnode_auth_delayed_logins_total"); err != nil {
		t.Error(err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "kvnode_auth_failures_total" && m.GetLabel()[0].GetValue() == "grpc" && m.GetLabel()[1].GetValue() == "bad_password" && m.GetCounter().GetValue() != 15 {
				t.Errorf("kvnode_auth_failures_total{protocol=grpc,reason=bad_password} = %v, want 15", m.GetCounter().GetValue())
			}
		}
	}
}
