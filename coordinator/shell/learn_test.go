package shell_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// grpcReplicas is a Transport and DeltaSender over an internode.Sender, reaching replica
// services served by internode.Muxes on loopback listeners, counting the Mutate requests each
// replica is sent.
type grpcReplicas struct {
	sender   *internode.Sender
	addrs    staticAddrs
	mutates  map[coordinator.NodeID]*atomic.Int64
	observed *recorder // what the coordinator told its Observer
}

// staticAddrs resolves nodes' internode addresses from a map (internode.Addresses).
type staticAddrs map[internode.NodeID]string

func (a staticAddrs) InternodeAddr(id internode.NodeID) (string, bool) {
	addr, ok := a[id]
	return addr, ok
}

func (g *grpcReplicas) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	g.mutates[to].Add(1)
	return internode.Call[*replicapb.MutateResponse](ctx, g.sender, internode.NodeID(to), req)
}

func (g *grpcReplicas) Read(ctx context.Context, to coordinator.NodeID, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	return internode.Call[*replicapb.ReadResponse](ctx, g.sender, internode.NodeID(to), req)
}

func (g *grpcReplicas) AccountDelta(ctx context.Context, to coordinator.NodeID, req *replicapb.AccountDeltaRequest) (*replicapb.AccountDeltaResponse, error) {
	return internode.Call[*replicapb.AccountDeltaResponse](ctx, g.sender, internode.NodeID(to), req)
}

func (g *grpcReplicas) sent() int64 {
	var n int64
	for _, c := range g.mutates {
		n += c.Load()
	}
	return n
}

// grpcCluster starts three replica services (n1, n2, n3, over in-memory pebble, on the clock
// clk) served by internode.Muxes behind real gRPC servers on loopback, and a coordinator localID
// whose transport and account propagation reach them over an internode.Sender, drawing with
// draw.
func grpcCluster(t *testing.T, clk *clock, localID coordinator.NodeID, draw func() float64) (*shell.Executor, map[coordinator.NodeID]*replica.Service, *grpcReplicas, *schemaManager) {
	t.Helper()
	sm := newSchemaManager("n1", clk)
	g := &grpcReplicas{addrs: staticAddrs{}, mutates: map[coordinator.NodeID]*atomic.Int64{}, observed: &recorder{}}
	services := map[coordinator.NodeID]*replica.Service{}
	for _, id := range nodes {
		store, err := replica.Open("db", replica.Options{FS: vfs.NewMem(), CacheSize: 1 << 20, MemTableSize: 1 << 20, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		limits, err := partitionlimit.New(partitionlimit.Options{Capacity: 1024})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := replica.NewService(replica.Config{Store: store, Schema: sm, Limits: limits, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		services[id] = svc
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mux := internode.NewMux()
		internode.Handle(mux, svc.Mutate)
		internode.Handle(mux, svc.Read)
		internode.Handle(mux, svc.AccountDelta)
		srv := grpc.NewServer()
		mux.Register(srv)
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		g.addrs[internode.NodeID(id)] = lis.Addr().String()
		g.mutates[id] = &atomic.Int64{}
	}
	var err error
	if g.sender, err = internode.NewSender(internode.Options{Self: internode.NodeID(localID), Addresses: g.addrs}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.sender.Close() })
	e, err := shell.NewExecutor(shell.Config{
		LocalID:   localID,
		Ring:      &ring{order: nodes},
		Transport: g,
		Schema:    sm,
		Now:       clk.Now,
		Draw:      draw,
		Deltas:    g,
		Options:   shell.Options{Learning: true, PropagationInterval: time.Millisecond},
		Observer:  g.observed,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, services, g, sm
}

// TestCoordinatorOutsideReplicasLearnsHotPartition: a coordinator that is not a replica of a
// partition forwards its writes to the replicas (three replica services behind real gRPC
// servers on loopback) until they reject one; from then on it rejects the partition's writes
// itself, with the replicas' rule and the same draw, sending no replica request, and account
// propagation still counts every one of them on every replica. Once the partition cools down
// (its learned copy decays) the coordinator forwards again.
func TestCoordinatorOutsideReplicasLearnsHotPartition(t *testing.T) {
	// 100 ms into a second, standing still: counters do not decay unless the test moves the
	// clock, and the learned copy (LearnedLead ahead) is in the same second.
	clk := &clock{}
	clk.ns.Store(time.Unix(1_700_000_000, 100_000_000).UnixNano())
	// "c" is not in the ring's replica set n1, n2, n3.
	e, services, g, sm := grpcCluster(t, clk, "c", func() float64 { return 0.99 })
	exec := func(stmt string) error {
		_, err := e.Execute(context.Background(), coordinator.Statement{Text: stmt, Keyspace: "ks", Consistency: coordinator.Quorum})
		return err
	}
	for _, s := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_writes_per_second': 10}",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	tbl, ok := sm.Schema().Table("ks", "t")
	if !ok {
		t.Fatal("table ks.t missing")
	}
	token := partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte("hot")}))
	rejectedBy := func(err error) coordinator.Rejecter {
		var rl *coordinator.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("write returned %v, want a rate-limit error", err)
		}
		return rl.RejectedBy
	}

	insert := func() error { return exec("INSERT INTO t (k, v) VALUES ('hot', 1)") }
	// 2L = 20 writes are admitted in the partition's first second. (Nothing is learned from a
	// counter in its first second: Request.Learn.)
	for i := range 20 {
		if err := insert(); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	// A second later (the counters halve to 10), the replicas reject the partition's writes
	// (draw 0.99), which teaches the coordinator their counter; the coordinator's copy, ahead of
	// its clock and so judged a little more leniently in the onset, rejects on its own once
	// it is past 2L, at the latest a few writes later.
	e.WaitIdle() // every replica has the first second's writes before the clock moves
	clk.Advance(time.Second)
	forwarded := 0
	for {
		err := insert()
		if err == nil {
			forwarded++
			continue
		}
		by := rejectedBy(err)
		if by == coordinator.RejectedByCoordinator {
			break
		}
		if forwarded++; forwarded > 20 {
			t.Fatalf("after %d writes rejected by the replicas the coordinator still forwards them", forwarded)
		}
	}
	e.WaitIdle()
	sent := g.sent()
	if sent != int64(20+forwarded)*3 {
		t.Fatalf("the replicas were sent %d writes, want %d (%d writes to 3 replicas)", sent, (20+forwarded)*3, 20+forwarded)
	}

	// Now the coordinator rejects on its own: no replica request.
	const more = 50
	for i := range more - 1 {
		if by := rejectedBy(insert()); by != coordinator.RejectedByCoordinator {
			t.Fatalf("write %d after learning was rejected by %v, want by the coordinator", i+2, by)
		}
	}
	if got := g.sent(); got != sent {
		t.Errorf("after learning, the replicas were sent %d writes, want still %d: the coordinator forwarded rejected writes", got, sent)
	}
	want := strings.NewReader(`# HELP kvnode_coordinator_learned_rejections_total Operations this node rejected as a coordinator that is not a replica of their partition, on the counter it learned from the replicas' earlier rejections (no replica request was sent; propagation counts them on the replicas), by table and op.
# TYPE kvnode_coordinator_learned_rejections_total counter
kvnode_coordinator_learned_rejections_total{keyspace="ks",op="write",table="t"} 50
`)
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collector())
	if err := testutil.GatherAndCompare(reg, want, "kvnode_coordinator_learned_rejections_total"); err != nil {
		t.Error(err)
	}

	// Every replica's counter still counts every write: the first second's 20 halved to 10,
	// those it was sent since, and the 50 the coordinator rejected, propagated.
	wantCount := uint32(10 + forwarded + more)
	for _, id := range nodes {
		poll.Must(t, 10*time.Second, fmt.Sprintf("replica %s counting %d writes of the hot partition", id, wantCount), func() error {
			if n := services[id].Count(tbl.ID, token, schema.OpWrite, clk.Now()); n != wantCount {
				return fmt.Errorf("it counts %d", n)
			}
			return nil
		})
	}

	// Eight seconds later the counters have decayed to 0 and the learned copy with them: the
	// partition is forwarded, and admitted, again.
	clk.Advance(8 * time.Second)
	if err := insert(); err != nil {
		t.Fatalf("a write after the partition cooled down: %v", err)
	}
	e.WaitIdle() // the third replica's write may still be on its way once QUORUM answered
	if got := g.sent(); got != sent+3 {
		t.Errorf("after the partition cooled down the replicas were sent %d writes, want %d: the write was not forwarded", got, sent+3)
	}
}
