package node

import (
	"path/filepath"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/hints"
	"github.com/kvnode/kvnode/replica"
)

// Hinted handoff (package hints): the node opens the hint store in hints/ of its data
// directory, hands it to the coordinator's shell as its HintSink, and runs its replayer over the
// internode transport, the schema and the membership.

// hintMembers adapts the cluster to hints.Membership.
type hintMembers struct{ c *cluster.Cluster }

func (m hintMembers) IsLive(id coordinator.NodeID) bool { return m.c.IsLive(cluster.NodeID(id)) }

func (m hintMembers) IsMember(id coordinator.NodeID) bool {
	_, ok := m.c.Member(cluster.NodeID(id))
	return ok
}

func (m hintMembers) Members() map[coordinator.NodeID]bool {
	out := map[coordinator.NodeID]bool{}
	for _, mb := range m.c.Members() {
		out[coordinator.NodeID(mb.ID)] = mb.Live
	}
	return out
}

func (m hintMembers) Changed() <-chan struct{} { return m.c.Changed() }

// openHints opens the node's hint store (hints/ in the data directory).
func (n *Node) openHints(now func() time.Time) error {
	h, err := hints.Open(hints.Config{
		Options: n.cfg.Hints,
		Dir:     filepath.Join(n.cfg.DataDir, "hints"),
		Members: hintMembers{n.cluster},
		Logger:  n.cfg.Logger.With("component", "hints"),
		Now:     now,
		// The hint store shares the data directory's disk: it keeps out of the reserve, and its
		// failure is the node's storage failure.
		Space:   n.store.ReserveError,
		OnFatal: func(err error) { n.store.Fail(replica.NewFailure(err)) },
	})
	if err != nil {
		return err
	}
	n.hints = h
	return nil
}

// startHintReplay starts replaying hints to replicas that are up.
func (n *Node) startHintReplay(now func() time.Time) error {
	r, err := hints.NewReplayer(n.hints, hints.ReplayConfig{
		Sender:   n.trans,
		Tables:   n.schema,
		Members:  hintMembers{n.cluster},
		Logger:   n.log.With("component", "hints"),
		Now:      now,
		Timeout:  n.cfg.Coordinator.WriteTimeout,
		MaxBurst: MessageLimit(n.cfg.Coordinator.MaxMutationSize),
		Paused:   n.cfg.Testing.pauseHintReplay(),
	})
	if err != nil {
		return err
	}
	n.hinter = r
	r.Start()
	return nil
}
