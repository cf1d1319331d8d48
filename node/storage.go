package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/replica"
)

// Storage failures (docs/operations.md, "Storage failures"): the node runs its disk failure
// policy (replica.Options.DiskFailurePolicy) when its store fails. With "die" it exits at once.
// With "stop" it stops serving: the client listeners (gRPC and the native protocol) and the
// internode one close, the health service says NOT_SERVING, and gossip stops without a leave,
// so that its peers find it down by failure detection and keep it in the ring (down, never
// removed); its metrics and logs go on until it is stopped, and stopping it waits on nothing the
// broken storage holds. A node started despite a corrupt write-ahead log is unrepaired: it says
// so in gossip, and reads leave it out, until a repair run on it completes.

// ExitStorageFailed is the exit status of a node whose storage failed under disk_failure_policy
// die.
const ExitStorageFailed = 3

// failedStopWait bounds each wait of a Shutdown after a storage failure on what may be held by
// the broken storage: the node goes on without it.
const failedStopWait = time.Second

// storagePolicy runs the node's disk failure policy: it is the store's replica.FailureHandler.
type storagePolicy struct{ n *Node }

// StorageFailed implements replica.FailureHandler. The store logged the failure at ERROR. It may
// run on one of pebble's goroutines holding its locks: it starts the stop and returns.
func (p storagePolicy) StorageFailed(f *replica.Failure) {
	n := p.n
	if n.cfg.Storage.DiskFailurePolicy == replica.PolicyDie {
		n.cfg.Logger.Error("disk_failure_policy die: exiting", "kind", string(f.Kind), "exit_status", ExitStorageFailed)
		n.exit(ExitStorageFailed)
		return // only a test's exit returns
	}
	n.stopOnce.Do(func() { go n.stopServing() })
}

// exit ends the process with code (TestingKnobs.Exit in tests).
func (n *Node) exit(code int) {
	if n.cfg.Testing != nil && n.cfg.Testing.Exit != nil {
		n.cfg.Testing.Exit(code)
		return
	}
	os.Exit(code)
}

// stopServing carries out disk_failure_policy stop, once Start has returned: it closes the
// client and internode listeners and connections, reports NOT_SERVING, and stops gossip without
// leaving. It closes n.stopped when done.
func (n *Node) stopServing() {
	defer close(n.stopped)
	<-n.started
	if !n.serving.Load() {
		return // Start failed: its own shutdown stops what it started
	}
	start := time.Now()
	n.health.Shutdown()
	// Tell the peers first, so that they see it down at once rather than after failure
	// detection, and why (diskfull.go).
	told := time.NewTimer(failedStopWait)
	select {
	case <-n.cluster.SetUnavailable(cluster.ReasonStorageFailed):
	case <-told.C:
	}
	told.Stop()
	var wg sync.WaitGroup
	// No leave: peers find the node down by failure detection and keep its ranges. Gossip stops
	// at once; Kill then persists the peers, which a hung disk may hold: the listeners do not
	// wait for it.
	wg.Go(func() { n.cluster.Kill() })
	wg.Go(func() {
		n.grpc.Stop()
		n.igrpc.Stop()
		closeNow, cancel := context.WithCancel(context.Background())
		cancel()
		n.iframed.Stop(closeNow) // its connections close at once
		n.native.Close()
	})
	// The automatic repair and the purge would only fail range after range against the failed
	// store; they stop at their partition in progress.
	wg.Go(n.repair.Stop)
	wg.Wait()
	n.cfg.Logger.Warn("disk_failure_policy stop: this node stopped serving clients and peers, which see it down; its metrics stay up. Stop it (SIGTERM) and restart it once the disk is fixed",
		"node", n.ID(), "took", time.Since(start).Round(time.Millisecond))
}

// StorageFailed returns the node's storage failure, or nil while its storage works.
func (n *Node) StorageFailed() *replica.Failure {
	if n.store == nil {
		return nil
	}
	return n.store.Failed()
}

// shutdownFailed is shutdown after a storage failure: it stops serving (the policy's stop, if
// not done yet), closes the metrics server, and stops the rest without waiting more than
// failedStopWait (or ctx) on what the broken storage may hold. It never closes pebble, and it
// returns the failure.
func (n *Node) shutdownFailed(ctx context.Context, f *replica.Failure) error {
	log := n.cfg.Logger
	wait := func(what string, done <-chan struct{}) {
		t := time.NewTimer(failedStopWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			log.Warn("storage failed: not waiting for "+what+", which the broken storage may hold", "waited", failedStopWait)
		case <-ctx.Done():
		}
	}
	n.stopOnce.Do(func() { go n.stopServing() })
	wait("the node to stop serving", n.stopped)
	if n.metrics != nil {
		n.metrics.Close() // a scrape cannot wait on the storage: its collector skips pebble
	} else if n.mlis != nil {
		n.mlis.Close()
	}
	n.stopReloader()
	rest := make(chan struct{})
	go func() {
		defer close(rest)
		n.availability.Stop()
		n.replayer.Stop()
		n.hinter.Stop()
		n.repair.Stop()
		n.schemaGC.Stop()
		n.paxosGC.Stop()
		n.authSetup.Stop()
		if n.exec != nil {
			n.exec.Close()
		}
		if n.hints != nil {
			n.hints.Close()
		}
		if n.sender != nil {
			n.sender.Close()
		}
		n.topo.stop()
		n.wg.Wait()
	}()
	wait("its loops and requests", rest)
	n.store.Close() // leaves pebble as it is
	errs := []error{fmt.Errorf("node: stopped after its storage failed: %w", f)}
	if err := n.lock.release(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// IsUnrepaired implements shell.UnrepairedRing: reads leave out the members that gossip that they
// are unrepaired.
func (r ringView) IsUnrepaired(id coordinator.NodeID) bool {
	return r.c.IsUnrepaired(cluster.NodeID(id))
}

// BelowFormat implements shell.FormatRing: writes with a TTL are refused while a member of an
// older data format remains.
func (r ringView) BelowFormat(v int) []coordinator.NodeID {
	ids := r.c.BelowFormat(v)
	if len(ids) == 0 {
		return nil
	}
	out := make([]coordinator.NodeID, len(ids))
	for i, id := range ids {
		out[i] = coordinator.NodeID(id)
	}
	return out
}

// repaired clears the node's unrepaired mark once a repair run on it, of every table, completed
// every range: the node serves reads again.
func (n *Node) repaired() error {
	if !n.store.Unrepaired() {
		return nil
	}
	if err := n.store.SetRepaired(); err != nil {
		return err
	}
	return n.cluster.SetUnrepaired(false)
}
