package internode

import (
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// forwardNodes are a coordinator c in dc1 and a, b and d in dc2, each serving the test
// handlers on loopback; b also relays forwarded writes through its own Sender.
type forwardNodes struct {
	c, b       *Sender
	h          map[NodeID]*testHandlers
	dcs        map[NodeID]string
	book       *addrBook
	relayCalls func() uint64
}

func newForwardNodes(t *testing.T) *forwardNodes {
	f := &forwardNodes{h: map[NodeID]*testHandlers{}, book: &addrBook{},
		dcs: map[NodeID]string{"c": "dc1", "a": "dc2", "b": "dc2", "d": "dc2"}}
	muxes := map[NodeID]*Mux{}
	for _, id := range []NodeID{"c", "a", "b", "d"} {
		m, h := newTestMux(id)
		muxes[id], f.h[id] = m, h
		f.book.set(id, serve(t, m))
	}
	dc := func(id NodeID) string { return f.dcs[id] }
	f.c = newSender(t, Options{Self: "c", Local: muxes["c"], Addresses: f.book})
	f.b = newSender(t, Options{Self: "b", Local: muxes["b"], Addresses: f.book})
	f.c.CountCrossDataCenter(dc)
	f.b.CountCrossDataCenter(dc)
	HandleStream(muxes["b"], f.b.RelayMutations)
	return f
}

func forwardRequest(table uint64, nodes ...string) *replicapb.ForwardMutateRequest {
	req := &replicapb.ForwardMutateRequest{Mutation: &replicapb.Mutation{TableId: table}}
	for _, n := range nodes {
		req.Targets = append(req.Targets, &replicapb.ForwardTarget{Node: n, Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_ACCOUNT_ONLY}})
	}
	return req
}

// TestForwardMutate: a write for a, b and d sent through b crosses from dc1 to dc2 as one
// forward_mutate request and no mutate; b applies it, sends it on to a and d, and relays
// their three answers; the cross-DC count shows in the Collector.
func TestForwardMutate(t *testing.T) {
	f := newForwardNodes(t)
	var mu sync.Mutex
	acks := map[string]*replicapb.ForwardMutateAck{}
	err := Peers{S: f.c}.ForwardMutate(ctxT(t), "b", forwardRequest(mutateOK, "a", "b", "d"), func(ack *replicapb.ForwardMutateAck) error {
		mu.Lock()
		defer mu.Unlock()
		acks[ack.GetNode()] = ack
		return nil
	})
	if err != nil {
		t.Fatalf("ForwardMutate through b: %v", err)
	}
	for _, id := range []string{"a", "b", "d"} {
		if a := acks[id]; a.GetResponse().GetStatus() != replicapb.Status_STATUS_OK || a.GetUnreachable() != "" {
			t.Errorf("the ack of %s = %v, want STATUS_OK", id, a)
		}
		if n := f.h[NodeID(id)].calls.Load(); n != 1 {
			t.Errorf("%s's mutate handler ran %d times, want 1", id, n)
		}
	}
	if n := f.c.CrossDataCenter("forward_mutate"); n != 1 {
		t.Errorf("c sent %d forward_mutate requests to dc2, want 1", n)
	}
	if n := f.c.CrossDataCenter("mutate"); n != 0 {
		t.Errorf("c sent %d mutate requests to dc2, want 0", n)
	}
	if n := f.b.stats.relayed.Load(); n != 2 {
		t.Errorf("b relayed %d writes, want 2 (to a and d)", n)
	}
	want := `
# HELP kvnode_internode_cross_dc_requests_total Internode requests this node sent to nodes of another data center, by kind (a write's copies for a remote data center go as one forward_mutate).
# TYPE kvnode_internode_cross_dc_requests_total counter
kvnode_internode_cross_dc_requests_total{kind="forward_mutate"} 1
`
	if err := testutil.CollectAndCompare(f.c.Collector(), strings.NewReader(want), "kvnode_internode_cross_dc_requests_total"); err != nil {
		t.Error(err)
	}
}

// TestForwardMutateUnreachable: a target the forwarder cannot reach is answered with why, and
// the others are answered as usual.
func TestForwardMutateUnreachable(t *testing.T) {
	f := newForwardNodes(t)
	acks := map[string]*replicapb.ForwardMutateAck{}
	var mu sync.Mutex
	err := Peers{S: f.c}.ForwardMutate(ctxT(t), "b", forwardRequest(mutateOK, "b", "gone"), func(ack *replicapb.ForwardMutateAck) error {
		mu.Lock()
		defer mu.Unlock()
		acks[ack.GetNode()] = ack
		return nil
	})
	if err != nil {
		t.Fatalf("ForwardMutate through b: %v", err)
	}
	if a := acks["gone"]; a == nil || a.GetResponse() != nil || !strings.Contains(a.GetUnreachable(), "no internode address known") {
		t.Errorf("the ack of the unknown node = %v, want unreachable: no internode address known", a)
	}
	if a := acks["b"]; a.GetResponse().GetStatus() != replicapb.Status_STATUS_OK {
		t.Errorf("the ack of b = %v, want STATUS_OK", a)
	}
}

// TestForwardMutateBadRequests: a forwarded write without a mutation or targets, naming a
// target twice or without an id, is InvalidArgument, and no target is written.
func TestForwardMutateBadRequests(t *testing.T) {
	f := newForwardNodes(t)
	many := forwardRequest(mutateOK)
	for range MaxForwardTargets + 1 {
		many.Targets = append(many.Targets, &replicapb.ForwardTarget{Node: "a"})
	}
	for name, req := range map[string]*replicapb.ForwardMutateRequest{
		"no mutation": {Targets: forwardRequest(mutateOK, "a").Targets},
		"no targets":  forwardRequest(mutateOK),
		"twice":       forwardRequest(mutateOK, "a", "a"),
		"no id":       forwardRequest(mutateOK, ""),
		"too many":    many,
	} {
		err := Peers{S: f.c}.ForwardMutate(ctxT(t), "b", req, func(*replicapb.ForwardMutateAck) error { return nil })
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	if n := f.h["a"].calls.Load(); n != 0 {
		t.Errorf("a was written %d times by malformed forwarded writes", n)
	}
}
