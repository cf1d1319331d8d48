package node_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// TestAdmissionShedsClientRequestsNotInternalOnes fills node 0's execution slots (as requests
// blocked in them would) and checks that its client requests are refused at once, over both
// protocols, with Overloaded and a retry hint, while its health check, OPTIONS and the replica
// traffic of another coordinator's writes still get through; and that a queued request is
// refused when its wait times out.
func TestAdmissionShedsClientRequestsNotInternalOnes(t *testing.T) {
	tc := startClusterWith(t, 2, func(c *node.Config) {
		c.Admission.MaxConcurrent = 2
		c.Admission.MaxQueued = 1
		c.Admission.QueueTimeout = 100 * time.Millisecond
	})
	tc.waitLive(30*time.Second, 2)
	c0, c1 := tc.client(0), tc.client(1)
	exec(t, c1, client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c1, client.All, "CREATE TABLE ks.t (k text PRIMARY KEY, v int)")

	adm := tc.nodes[0].Admission()
	ctx := context.Background()
	for range 2 {
		if err := adm.Acquire(ctx, "test"); err != nil {
			t.Fatal(err)
		}
	}
	// One request waits in the queue (its place reserved, as a request's would be) so that
	// the next finds the queue full.
	// (A client of its own, holding the whole queue but no more than the one place the others
	// would get, so that they are refused rather than take it.)
	queued, err := adm.Try("test")
	if queued == nil || err != nil {
		t.Fatalf("Try with both slots taken = %v, %v; want a place in the queue", queued, err)
	}

	// gRPC: RESOURCE_EXHAUSTED with RetryInfo and ErrorInfo OVERLOADED; the Go client's
	// *OverloadedError.
	_, err = c0.Execute(ctx, client.One, "INSERT INTO ks.t (k, v) VALUES ('a', 1)")
	var oe *client.OverloadedError
	if !errors.As(err, &oe) || oe.RetryAfter <= 0 || !strings.Contains(oe.Message, "retry after") {
		t.Fatalf("a gRPC write to the full node: %v, want a *client.OverloadedError with a retry hint", err)
	}
	conn, err := grpc.NewClient(tc.nodes[0].Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = kvnodepb.NewKVNodeClient(conn).Execute(ctx, &kvnodepb.ExecuteRequest{Statement: "SELECT * FROM ks.t WHERE k = 'a'"})
	st := status.Convert(err)
	var retry *errdetails.RetryInfo
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.ErrorInfo:
			info = d
		}
	}
	if st.Code() != codes.ResourceExhausted || retry == nil || info.GetReason() != "OVERLOADED" || info.GetMetadata()["why"] != "queue_full" {
		t.Errorf("a gRPC read of the full node: %v (details %v), want RESOURCE_EXHAUSTED with RetryInfo and ErrorInfo OVERLOADED queue_full", st, st.Details())
	}
	if resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("the health check of the full node: %v, %v; want SERVING", resp, err)
	}

	// The native protocol: Overloaded (0x1001); OPTIONS is still answered.
	nc := nativeConn(t, tc.nodes[0].CQLAddr())
	if m := nc.do(cqlwire.Options{}); m.Opcode() != cqlwire.OpSupported {
		t.Errorf("OPTIONS to the full node answered %#v, want SUPPORTED", m)
	}
	e, ok := nc.do(&cqlwire.Query{Query: "SELECT * FROM ks.t WHERE k = 'a'", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrOverloaded || !strings.Contains(e.Message, "retry after") {
		t.Errorf("a native QUERY to the full node answered %#v, want Overloaded with a retry hint", e)
	}

	// Internal traffic is never shed: node 1 coordinates writes at ALL, which node 0 must
	// apply as a replica.
	for _, k := range []string{"b", "c", "d"} {
		exec(t, c1, client.All, "INSERT INTO ks.t (k, v) VALUES ('"+k+"', 1)")
	}
	if got := shedCounter(t, tc.nodes[0], "queue_full"); got != 3 {
		t.Errorf("kvnode_admission_shed_total{reason=queue_full} = %v, want 3 (gRPC write, gRPC read, native QUERY)", got)
	}

	// A request that waits in the queue is refused when its wait times out.
	queued.Leave()
	_, err = c0.Execute(ctx, client.One, "SELECT * FROM ks.t WHERE k = 'a'")
	if !errors.As(err, &oe) || !strings.Contains(oe.Message, "waited 100ms") {
		t.Errorf("a request queued behind full slots: %v, want an *OverloadedError after the 100ms queue timeout", err)
	}
	if got := shedCounter(t, tc.nodes[0], "queue_timeout"); got != 1 {
		t.Errorf("kvnode_admission_shed_total{reason=queue_timeout} = %v, want 1", got)
	}

	// Once the slots free, the node serves again.
	adm.Release()
	adm.Release()
	if res := exec(t, c0, client.All, "SELECT v FROM ks.t WHERE k = 'b'"); len(res.Rows) != 1 {
		t.Errorf("after the slots freed, SELECT answered %d rows, want 1", len(res.Rows))
	}
}

// shedCounter finds kvnode_admission_shed_total{reason} in the node's registry.
func shedCounter(t *testing.T, nd *node.Node, reason string) float64 {
	t.Helper()
	mfs, err := nd.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kvnode_admission_shed_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// nativeClient is a started native-protocol connection, one request at a time.
type nativeClient struct {
	t  *testing.T
	nc net.Conn
	fr *cqlwire.FrameReader
}

func nativeConn(t *testing.T, addr string) *nativeClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &nativeClient{t: t, nc: nc, fr: cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})}
	if m := c.do(&cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}); m.Opcode() != cqlwire.OpReady {
		t.Fatalf("STARTUP answered %#v", m)
	}
	return c
}

func (c *nativeClient) do(m cqlwire.Message) cqlwire.Message {
	c.t.Helper()
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.nc.Write(cqlwire.AppendFrame(nil, 1, m, cqlwire.FrameOptions{})); err != nil {
		c.t.Fatal(err)
	}
	h, body, err := c.fr.ReadFrame()
	if err != nil {
		c.t.Fatal(err)
	}
	f, err := cqlwire.DecodeFrame(h, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return f.Message
}
