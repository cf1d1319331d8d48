package shell_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// peerAddrs are the loopback addresses of the nodes a Sender reaches.
type peerAddrs struct {
	mu    sync.Mutex
	addrs map[internode.NodeID]string
}

func (a *peerAddrs) InternodeAddr(id internode.NodeID) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.addrs[id]
	return s, ok
}

// internodeTransport sends a node's mutations to the other nodes over a real internode Sender
// (pipes on framed loopback connections), its other requests through base.
type internodeTransport struct {
	shell.Transport
	peers internode.Peers
}

func (t internodeTransport) Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	return t.peers.Mutate(ctx, to, req)
}

func (t internodeTransport) MutateAsync(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest, done func(*replicapb.MutateResponse, error)) bool {
	return t.peers.MutateAsync(ctx, to, req, done)
}

// servePeer serves node id's mutations on a loopback internode server (gRPC and framed
// connections) through the cluster's transport, whose faults apply; a request finding hold set
// waits for that channel to close first. It returns the server's address.
func servePeer(t *testing.T, c *cluster, id coordinator.NodeID, hold *atomic.Pointer[chan struct{}]) string {
	t.Helper()
	mux := internode.NewMux()
	internode.Handle(mux, func(ctx context.Context, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
		if g := hold.Swap(nil); g != nil {
			<-*g
		}
		return c.transport.Mutate(ctx, id, req)
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	mux.Register(srv)
	framed := internode.NewFramedServer(mux, internode.FramedServerOptions{})
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(framed.Split(lis)) }()
	t.Cleanup(func() {
		srv.Stop()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		framed.Stop(ctx)
		<-served
	})
	return lis.Addr().String()
}

// TestHintStoreBlockingOverARealPipe is TestHintStoreBlockingHoldsUpNoAnswers over internode's
// pipes: n1's mutations go to n2, n3 and n4 on a Sender's pipes, whose reader hands n2's failure
// of a write to the executor, which decides the write's hint there; the hint sink blocks, and a
// write at ALL still gets n2's answer on the same pipe.
func TestHintStoreBlockingOverARealPipe(t *testing.T) {
	sink := newBlockingSink()
	addrs := &peerAddrs{addrs: map[internode.NodeID]string{}}
	var sender *internode.Sender
	o := options{hints: sink, writeTimeout: 5 * time.Second, order: []coordinator.NodeID{"n2", "n3", "n4"}}
	o.transport = func(id coordinator.NodeID, base shell.Transport) shell.Transport {
		if id != "n1" {
			return base
		}
		var err error
		if sender, err = internode.NewSender(internode.Options{Self: "n1", Addresses: addrs}); err != nil {
			t.Fatal(err)
		}
		return internodeTransport{Transport: base, peers: internode.Peers{S: sender}}
	}
	c := newCluster(t, o)
	var hold atomic.Pointer[chan struct{}]
	var none atomic.Pointer[chan struct{}]
	addrs.mu.Lock()
	addrs.addrs["n2"] = servePeer(t, c, "n2", &hold)
	addrs.addrs["n3"] = servePeer(t, c, "n3", &none)
	addrs.addrs["n4"] = servePeer(t, c, "n4", &none)
	addrs.mu.Unlock()
	t.Cleanup(func() { // first: before the servers stop and the executors close
		sink.open()
		sender.Close()
	})
	c.must(schemaRF3...)

	// n2 fails the write, and answers only after it returned at QUORUM: its answer is the
	// write's last, and comes on the pipe's reader, which decides the hint.
	c.transport.setFault(failWrites, "n2")
	gate := make(chan struct{})
	hold.Store(&gate)
	if _, err := c.exec("n1", quorum, "INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	close(gate)
	<-sink.entered // the hint for n2 is being stored, and blocks
	c.transport.clearFaults()

	if _, err := c.exec("n1", all, "INSERT INTO t (k, c, v) VALUES ('b', 2, 'y')"); err != nil {
		t.Fatalf("a write at ALL while a hint store blocks: %v, want its answers, n2's on the pipe whose answer left the hint", err)
	}
	sink.open()
	c.settle()
	if hints, dropped := sink.state(); !slices.Equal(hints, []string{"n2"}) || dropped != 0 {
		t.Errorf("the sink holds hints for %v and counted %d dropped, want one for n2 and none dropped", hints, dropped)
	}
}
