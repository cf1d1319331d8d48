package hints

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// ReplayInterval is how often a Replayer looks for live replicas with hints, besides every
// membership change.
const ReplayInterval = 2 * time.Second

// batch is how many hints replay reads at a time.
const batch = 64

// Sender sends a mutation to a node: the node's internode transport.
type Sender interface {
	Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error)
}

// Tables resolves a hint's table: the node's current schema.
type Tables interface {
	TableByID(id schema.TableID) (*schema.Table, bool)
}

// ReplayConfig configures NewReplayer: what the node wires in (the replay's rate is the store's
// Options.Throttle). Sender, Tables, Members and Timeout are required; the zero value of every
// other field means its default.
type ReplayConfig struct {
	// Sender sends the replayed writes. Required.
	Sender Sender
	// Tables resolves each hint's table (its gc_grace_seconds). Required.
	Tables Tables
	// Members says which targets are members, and up. Required.
	Members Membership
	// Logger receives the replay's log. Nil discards it.
	Logger *slog.Logger
	// Now is the clock hints expire on (against their tables' gc_grace_seconds). Nil means
	// time.Now.
	Now func() time.Time
	// Timeout bounds one replayed write. Required.
	Timeout time.Duration
	// MaxBurst caps the bytes replayed at once before the store's Options.Throttle applies; a
	// hint larger than the burst takes the whole burst. Zero means the throttle's bytes per
	// second.
	MaxBurst int
	// Paused, if set, skips the periodic rounds while it returns true (a testing knob; Drain
	// still replays).
	Paused func() bool
}

// Replayer replays a Store's hints to their replicas once they are up: every ReplayInterval
// and at every membership change once started, and all of them at once on Drain. Its owner
// starts it with Start and stops it with Stop.
type Replayer struct {
	store    *Store
	opts     ReplayConfig
	log      *slog.Logger
	throttle *rate.Limiter // the store's Options.Throttle

	// mu serialises replays: the periodic rounds and a decommission's hand-off.
	mu   sync.Mutex
	loop *loop.Loop
}

// NewReplayer returns a replayer of store's hints, not yet started.
func NewReplayer(store *Store, cfg ReplayConfig) (*Replayer, error) {
	if store == nil {
		return nil, errors.New("hints: NewReplayer: store is nil")
	}
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	burst := store.throttle
	if cfg.MaxBurst > 0 {
		burst = min(burst, int64(cfg.MaxBurst))
	}
	return &Replayer{store: store, opts: cfg, log: cfg.Logger, throttle: rate.NewLimiter(rate.Limit(store.throttle), int(burst))}, nil
}

// EnsureDefaults replaces zero fields with their defaults and returns c.
func (c *ReplayConfig) EnsureDefaults() *ReplayConfig {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports whether c, after EnsureDefaults, describes a replayer NewReplayer can build.
func (c *ReplayConfig) Validate() error {
	switch {
	case c.Sender == nil:
		return errors.New("hints: ReplayConfig.Sender is nil")
	case c.Tables == nil:
		return errors.New("hints: ReplayConfig.Tables is nil")
	case c.Members == nil:
		return errors.New("hints: ReplayConfig.Members is nil")
	case c.Timeout <= 0:
		return fmt.Errorf("hints: ReplayConfig.Timeout is %v, want a positive duration", c.Timeout)
	case c.MaxBurst < 0:
		return fmt.Errorf("hints: ReplayConfig.MaxBurst is %d, want ≥ 0 bytes", c.MaxBurst)
	}
	return nil
}

// Start starts the periodic replay, once: a round at once, then one every ReplayInterval and
// at every membership change. Each round first notes which members are down (for the store's
// max hint window).
func (r *Replayer) Start() {
	// The loop takes the channel of the next change before each round, so that a change during
	// the round starts another.
	r.loop = loop.Start(loop.Options{
		Every: ReplayInterval,
		Wake:  []func() <-chan struct{}{r.opts.Members.Changed},
	}, func(ctx context.Context) time.Duration {
		r.store.observe(r.opts.Members.Members())
		r.round(ctx)
		return 0
	})
}

// Stop ends the periodic replay (a replay in progress is canceled; its hint stays) and waits
// for it. It may be called on a nil or unstarted Replayer.
func (r *Replayer) Stop() {
	if r == nil {
		return
	}
	r.loop.Stop()
}

// round replays the hints of every live target that has some.
func (r *Replayer) round(ctx context.Context) {
	if r.opts.Paused != nil && r.opts.Paused() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, target := range r.store.pendingTargets() {
		if ctx.Err() != nil {
			return
		}
		if !r.opts.Members.IsMember(target) {
			r.discard(target, dropRemoved)
			continue
		}
		if !r.opts.Members.IsLive(target) {
			continue
		}
		n, err := r.replayTarget(ctx, target)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("hint replay stopped; retrying later", "target", string(target), "replayed", n, "err", err)
		case n > 0:
			r.log.Info("hints replayed", "target", string(target), "replayed", n)
		}
	}
}

// Drain replays every hint the store holds until none is left (a decommissioning node hands
// its hints off so: nobody would replay them once it has left). Hints of a target that left the
// cluster are dropped, as a round drops them. It fails when a target is down, when one fails a
// hint, or when ctx ends first; the hints not replayed stay.
func (r *Replayer) Drain(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		targets := r.store.pendingTargets()
		if len(targets) == 0 {
			return nil
		}
		for _, target := range targets {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !r.opts.Members.IsMember(target) {
				r.discard(target, dropRemoved)
				continue
			}
			if !r.opts.Members.IsLive(target) {
				return fmt.Errorf("node %s, which this node holds hints for, is down", target)
			}
			if n, err := r.replayTarget(ctx, target); err != nil {
				return fmt.Errorf("replaying hints to %s (%d replayed): %w", target, n, err)
			}
		}
	}
}

// discard drops every hint of target.
func (r *Replayer) discard(target coordinator.NodeID, reason string) {
	for {
		hs, err := r.store.next(target, nil, batch)
		if err != nil || len(hs) == 0 {
			return
		}
		for _, hn := range hs {
			if r.store.remove(target, hn) == nil {
				r.store.drop(reason, 1)
			}
		}
	}
}

// replayTarget sends target its hints in the order they were stored, up to replayWindow of
// them (and about replayWindowBytes) in flight at once, so that a replica across a WAN takes a
// window of hints per round trip rather than one. A hint is deleted once it and every hint sent
// before it were acknowledged. At the first failure no more are sent: the hint that failed and
// every later one stay, also those a replica applied meanwhile, for a later round to send again
// in order (a hint applied twice does no harm: hints carry cells and counter shards, which
// replicas merge idempotently). It returns how many it replayed.
func (r *Replayer) replayTarget(ctx context.Context, target coordinator.NodeID) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		inFlight      []*replaySend // in the order sent
		inFlightBytes int
		replayed      int
		failed        error
	)
	// retire waits for the oldest hint in flight and settles it.
	retire := func() {
		s := inFlight[0]
		inFlight = inFlight[1:]
		inFlightBytes -= len(s.hn.val)
		res := <-s.done
		if failed != nil {
			return // kept: a later round sends it again
		}
		ok, err := r.settle(target, s.hn, res.resp, res.err)
		if err != nil {
			failed = err
			cancel() // the later ones in flight are kept whatever they answer
			return
		}
		if ok {
			replayed++
		}
	}
	defer func() {
		for len(inFlight) > 0 {
			retire()
		}
	}()
	var after []byte
	for {
		hs, err := r.store.next(target, after, batch)
		if err != nil || len(hs) == 0 {
			for len(inFlight) > 0 {
				retire()
			}
			return replayed, errors.Join(failed, err)
		}
		for _, hn := range hs {
			after = hn.key
			m, ok, err := r.prepare(target, hn)
			if err != nil {
				failed = errors.Join(failed, err)
			}
			if failed != nil {
				return replayed, failed
			}
			if !ok {
				continue
			}
			for len(inFlight) > 0 && (len(inFlight) >= replayWindow || inFlightBytes+len(hn.val) > replayWindowBytes) {
				if retire(); failed != nil {
					return replayed, failed
				}
			}
			if err := r.throttle.WaitN(ctx, min(len(hn.val), r.throttle.Burst())); err != nil {
				return replayed, errors.Join(failed, err)
			}
			inFlight = append(inFlight, r.send(ctx, target, hn, m))
			inFlightBytes += len(hn.val)
		}
	}
}

// replayWindow and replayWindowBytes bound the hints of one target in flight at once: a
// replica a WAN round trip away then takes up to this many per round trip (the store's
// throttle still bounds the bytes per second).
const (
	replayWindow      = 32
	replayWindowBytes = 1 << 20
)

// replaySend is a hint sent and its answer, which done carries once.
type replaySend struct {
	hn   hint
	done chan replayResult
}

type replayResult struct {
	resp *replicapb.MutateResponse
	err  error
}

// send sends hint hn (mutation m) to target in a goroutine of its own, bounded by the
// replay's timeout; replayTarget receives its answer from the returned replaySend's done
// before it returns.
func (r *Replayer) send(ctx context.Context, target coordinator.NodeID, hn hint, m *replicapb.Mutation) *replaySend {
	s := &replaySend{hn: hn, done: make(chan replayResult, 1)}
	go func() {
		cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		defer cancel()
		// Hint replay is internal traffic: never counted by the limiter, never rejected.
		resp, err := r.opts.Sender.Mutate(cctx, target, &replicapb.MutateRequest{Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_NONE}, Mutation: m})
		s.done <- replayResult{resp, err}
	}()
	return s
}

// prepare decodes hint hn for sending: it reports false, having dropped the hint, when the
// hint does not decode, its table is gone or it is older than the table's gc_grace_seconds;
// it fails only when dropping it fails.
func (r *Replayer) prepare(target coordinator.NodeID, hn hint) (*replicapb.Mutation, bool, error) {
	var m replicapb.Mutation
	if err := proto.Unmarshal(hn.val, &m); err != nil {
		return nil, false, r.removeDropped(target, hn, dropCorrupt)
	}
	t, ok := r.opts.Tables.TableByID(schema.TableID(m.TableId))
	if !ok {
		return nil, false, r.removeDropped(target, hn, dropTable)
	}
	if r.opts.Now().Sub(hn.storedAt) > time.Duration(t.GCGraceSeconds())*time.Second {
		return nil, false, r.removeDropped(target, hn, dropExpired)
	}
	return &m, true, nil
}

// settle acts on the answer to a replayed hint: it deletes the hint and reports true when the
// replica applied it, drops it when the replica refused it as malformed, and fails when the
// hint must be kept for later (the replica failed or did not answer).
func (r *Replayer) settle(target coordinator.NodeID, hn hint, resp *replicapb.MutateResponse, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	switch {
	case resp.GetStatus() == replicapb.Status_STATUS_OK:
		r.store.replayed.Add(1)
		return true, r.store.remove(target, hn)
	case resp.GetError().GetCode() == replicapb.Error_BAD_REQUEST:
		r.log.Warn("replica refused a hint; dropped", "target", string(target), "err", resp.GetError().GetMessage())
		return false, r.removeDropped(target, hn, dropRefused)
	}
	return false, fmt.Errorf("replica %s: %v: %s", target, resp.GetStatus(), resp.GetError().GetMessage())
}

func (r *Replayer) removeDropped(target coordinator.NodeID, hn hint, reason string) error {
	if err := r.store.remove(target, hn); err != nil {
		return err
	}
	r.store.drop(reason, 1)
	return nil
}
