package internode

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// MaxForwardTargets bounds the targets of one forwarded write: a data center's replicas of one
// partition, which no replication factor comes near.
const MaxForwardTargets = 32

// ForwardMutate sends one write for the replicas of a remote data center to one node there, via
// (kind forward_mutate; see RelayMutations), and passes each target's answer to recv as it
// arrives, on the calling goroutine. It returns nil once every target answered, recv's error,
// or the stream's error (targets whose answers had not come by then are unanswered).
func (p Peers) ForwardMutate(ctx context.Context, via coordinator.NodeID, req *replicapb.ForwardMutateRequest, recv func(*replicapb.ForwardMutateAck) error) error {
	return Stream(ctx, p.S, NodeID(via), req, recv)
}

// RelayMutations serves a forwarded write (kind forward_mutate) on the node the coordinator sent
// it to: it sends the mutation to every target at once with mutate, each with its own limiter
// (to itself in process, when it is a target), and sends each target's answer back as it comes,
// ending once all have answered. A call to a target that fails is answered with the failure
// (ForwardMutateAck.unreachable): the coordinator counts that replica failed and hints it. The
// calls are bounded by the forwarded request's context (the coordinator's deadline travels with
// it). A request without a mutation, without targets or with more than MaxForwardTargets, or
// naming a target twice or none, is InvalidArgument.
func (s *Sender) RelayMutations(ctx context.Context, req *replicapb.ForwardMutateRequest, send func(*replicapb.ForwardMutateAck) error) error {
	targets := req.GetTargets()
	switch {
	case req.GetMutation() == nil:
		return status.Error(codes.InvalidArgument, "internode: forwarded write without a mutation")
	case len(targets) == 0:
		return status.Error(codes.InvalidArgument, "internode: forwarded write without targets")
	case len(targets) > MaxForwardTargets:
		return status.Errorf(codes.InvalidArgument, "internode: forwarded write to %d targets, at most %d", len(targets), MaxForwardTargets)
	}
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		switch {
		case t.GetNode() == "":
			return status.Error(codes.InvalidArgument, "internode: forwarded write to a target without a node id")
		case seen[t.GetNode()]:
			return status.Errorf(codes.InvalidArgument, "internode: forwarded write names target %s twice", t.GetNode())
		}
		seen[t.GetNode()] = true
	}
	var (
		mu      sync.Mutex // serialises send: a stream's sends are not safe for concurrent use
		sendErr error
		wg      sync.WaitGroup
	)
	for _, t := range targets {
		wg.Go(func() {
			ack := &replicapb.ForwardMutateAck{Node: t.GetNode()}
			resp, err := Call[*replicapb.MutateResponse](ctx, s, NodeID(t.GetNode()), &replicapb.MutateRequest{Limiter: t.GetLimiter(), Mutation: req.GetMutation()})
			if err != nil {
				ack.Unreachable = err.Error()
			} else {
				ack.Response = resp
			}
			if NodeID(t.GetNode()) != s.self {
				s.stats.relayed.Add(1)
			}
			mu.Lock()
			defer mu.Unlock()
			if sendErr == nil {
				sendErr = send(ack)
			}
		})
	}
	wg.Wait()
	return sendErr
}
