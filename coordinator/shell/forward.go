package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// This file forwards a write's copies for a remote data center through one node there, as
// Cassandra does: the coordinator sends one message across the WAN per remote data center
// instead of one per replica, and the forwarder sends the write on to the other replicas of
// its data center and relays each one's answer back as it comes.

// Forwarder sends a write for several replicas of a remote data center to one node there, via,
// which applies it if it is one of req's targets, sends it on to the others, and streams back
// one answer per target as each comes. ForwardMutate passes them to recv on the calling
// goroutine and returns once every target answered, or with the stream's error.
type Forwarder interface {
	ForwardMutate(ctx context.Context, via coordinator.NodeID, req *replicapb.ForwardMutateRequest, recv func(*replicapb.ForwardMutateAck) error) error
}

// forwardExchange is a write's exchange when some of its Sends go to remote data centers
// with two or more of them: the Sends to each such data center go as one forwarded message
// (forwardGroup), every other Send directly through x. Each Send's call still returns that
// replica's own answer, as soon as it arrives, so the core, the hint watch and the observer
// see one answer per replica as without forwarding, and a replica the forwarder could not
// reach, or whose answer never came, is a failed or missing acknowledgement that the
// coordinator hints.
type forwardExchange struct {
	x      exchange
	groups []*forwardGroup
	// group holds the index in groups of each Send's forwardGroup, by Seq-1; -1 for a Send
	// made directly.
	group []int
}

// forwardGroup is the Sends of one write to the replicas of one remote data center, sent as
// one ForwardMutateRequest through via.
type forwardGroup struct {
	e      *Executor
	fw     Forwarder
	direct exchange // for a forwarder that does not serve forward_mutate (an older release)
	m      *replicapb.Mutation
	via    coordinator.NodeID
	sends  []coordinator.Send
	// acks holds each Send's answer, by its index in sends: each channel gets exactly one.
	acks []chan coordinator.Response
	once sync.Once
}

// forwarding returns x, or a forwardExchange over it when the executor has a Forwarder and
// sends include two or more replicas of a data center other than this node's (the replicas'
// data centers as the ring places them; replicas, numbered as the core wants them, rule out
// the common case of one data center without a lookup). The forwarder of each such data center is the one of
// its replicas sent to with the best score (score.go; the first in ring order while none is
// worse), so a replica that answers slowly or fails is not chosen while another is not.
func (e *Executor) forwarding(x exchange, m *replicapb.Mutation, replicas []coordinator.Replica, sends []coordinator.Send) exchange {
	remote := func(r coordinator.Replica) bool { return r.DC != 0 }
	if e.forwarder == nil || len(sends) < 2 || !slices.ContainsFunc(replicas, remote) {
		return x // the common case, one data center: no lookups
	}
	local := e.ring.DataCenter(e.localID)
	var fx *forwardExchange
	var dcs []string
	for i, s := range sends {
		dc := e.ring.DataCenter(s.To)
		if s.To == e.localID || dc == local || dc == "" || s.Seq != i+1 {
			continue
		}
		n := 0
		for _, o := range sends {
			if o.To != e.localID && e.ring.DataCenter(o.To) == dc {
				n++
			}
		}
		if n < 2 {
			continue // one message either way: sent directly
		}
		if fx == nil {
			fx = &forwardExchange{x: x, group: slices.Repeat([]int{-1}, len(sends))}
		}
		g := slices.Index(dcs, dc)
		if g < 0 {
			g = len(dcs)
			dcs = append(dcs, dc)
			fx.groups = append(fx.groups, &forwardGroup{e: e, fw: e.forwarder, direct: x, m: m})
		}
		fg := fx.groups[g]
		fg.sends = append(fg.sends, s)
		fg.acks = append(fg.acks, make(chan coordinator.Response, 1))
		fx.group[i] = g
	}
	if fx == nil {
		return x
	}
	now := e.mono()
	for _, g := range fx.groups {
		best := 0
		for i, s := range g.sends {
			if e.scores.of(s.To).score(now) < e.scores.of(g.sends[best].To).score(now) {
				best = i
			}
		}
		g.via = g.sends[best].To
	}
	return fx
}

func (x *forwardExchange) call(ctx context.Context, s coordinator.Send) coordinator.Response {
	if s.Seq < 1 || s.Seq > len(x.group) || x.group[s.Seq-1] < 0 {
		return x.x.call(ctx, s)
	}
	g := x.groups[x.group[s.Seq-1]]
	k := slices.IndexFunc(g.sends, func(o coordinator.Send) bool { return o.Seq == s.Seq })
	g.once.Do(func() {
		// The stream runs on a goroutine of its own, the executor's (Close waits for it),
		// bounded by ctx: the write's calls share it (the deadline, or Close).
		if !g.e.spawn(func() { g.run(ctx) }) {
			g.fail(errors.New("coordinator closed"))
		}
	})
	select {
	case r := <-g.acks[k]:
		return r
	case <-ctx.Done():
		return coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, ctx.Err())}
	}
}

// run sends the group's forwarded write and hands each target's answer to its Send's call; the
// targets left without an answer when the stream ends fail with the stream's error.
func (g *forwardGroup) run(ctx context.Context) {
	answered := make([]bool, len(g.sends))
	var err error
	defer func() {
		if err == nil {
			err = fmt.Errorf("the forwarder %s ended without its answer", g.via)
		}
		for i, s := range g.sends {
			if !answered[i] {
				answered[i] = true
				g.acks[i] <- coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
			}
		}
	}()
	defer recovered(g.e.logger, "a forwarded write", g.via, &err)
	req := &replicapb.ForwardMutateRequest{Mutation: g.m, Targets: make([]*replicapb.ForwardTarget, len(g.sends))}
	for i, s := range g.sends {
		req.Targets[i] = &replicapb.ForwardTarget{Node: string(s.To), Limiter: &replicapb.Limiter{
			Mode: limiterMode(s.Mode), Draw: s.Draw, StampUnixNanos: stampNanos(s.Stamp),
		}}
	}
	acked := false
	err = g.fw.ForwardMutate(ctx, g.via, req, func(ack *replicapb.ForwardMutateAck) error {
		acked = true
		i := slices.IndexFunc(g.sends, func(s coordinator.Send) bool { return string(s.To) == ack.GetNode() })
		if i < 0 || answered[i] {
			return nil // not a target, or answered already: a forwarder's bug, ignored
		}
		answered[i] = true
		s := g.sends[i]
		if ack.GetResponse() == nil {
			g.acks[i] <- coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed,
				Err: transportError(s.To, fmt.Errorf("forwarded through %s: %s", g.via, ack.GetUnreachable()))}
			return nil
		}
		resp := ack.GetResponse()
		r := response(s, resp.GetStatus(), resp.GetRateLimited(), resp.GetError(), nil)
		r.WouldReject = resp.GetWouldReject()
		g.acks[i] <- r
		return nil
	})
	if status.Code(err) == codes.Unimplemented && !acked {
		// The forwarder runs a release without forwarding (a rolling upgrade): each replica
		// gets its copy directly, as before forwarding.
		var wg sync.WaitGroup
		for i, s := range g.sends {
			answered[i] = true
			wg.Go(func() { g.acks[i] <- g.e.callRecovering(ctx, g.direct, s) })
		}
		wg.Wait()
		return
	}
	if err != nil {
		err = fmt.Errorf("forwarded through %s: %w", g.via, err)
	}
}

// fail answers every Send of the group with err.
func (g *forwardGroup) fail(err error) {
	for i, s := range g.sends {
		g.acks[i] <- coordinator.Response{Seq: s.Seq, From: s.To, Status: coordinator.StatusFailed, Err: transportError(s.To, err)}
	}
}

// spawn runs f on one of the executor's goroutines, which Close waits for; it reports false,
// without running f, once the executor is closed.
func (e *Executor) spawn(f func()) bool {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return false
	}
	e.wg.Add(1)
	e.mu.Unlock()
	e.calls.Go(func() {
		defer e.wg.Done()
		f()
	})
	return true
}
