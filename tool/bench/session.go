package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/schema"
)

// Session is a connection to a cluster for one or more runs on one table: Execute opens one for
// a single run; programs that run many short runs (kvnode demo's run per second, test/perf's
// phases) open one and reuse it, so that each run measures the load rather than the driver
// connecting, discovering the nodes and preparing its statements.
//
// Over the native protocol it is one gocql session; over gRPC one client per address. Runs may
// overlap: a Session is safe for concurrent use.
type Session struct {
	cfg   Config // what Open was given: every run must agree on its connection fields
	table *schema.Table

	native  *gocql.Session   // ProtocolCQL
	clients []*client.Client // ProtocolGRPC, one per address
}

// Run runs the benchmark cfg describes over the session and returns its summary, as Execute
// does. cfg's connection fields (Protocol, Addrs, Coordinator, Consistency, Table) must be the
// ones the session was opened with; the load fields (Writes, Partitions, Hot, Rate,
// Concurrency, Duration, Seed) are free.
func (s *Session) Run(ctx context.Context, cfg Config, progress io.Writer) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := s.cfg
	if cfg.Protocol != o.Protocol || !slices.Equal(cfg.Addrs, o.Addrs) || cfg.Coordinator != o.Coordinator ||
		cfg.Consistency != o.Consistency || cfg.Table != o.Table {
		return nil, fmt.Errorf("bench: a run on the session opened for %s %s (%s, %v, %s) asks for %s %s (%s, %v, %s); open a session for it",
			o.Protocol, strings.Join(o.Addrs, ","), o.Coordinator, o.Consistency, o.Table,
			cfg.Protocol, strings.Join(cfg.Addrs, ","), cfg.Coordinator, cfg.Consistency, cfg.Table)
	}
	wl, err := newWorkload(s.table, cfg)
	if err != nil {
		return nil, err
	}
	var snd sender
	if s.native != nil {
		snd = &nativeSender{session: s.native, wl: wl}
	} else {
		execs := make([]executor, len(s.clients))
		for i, c := range s.clients {
			execs[i] = c
		}
		snd = &grpcSender{cfg: cfg, execs: execs}
	}
	return run(ctx, cfg, wl, snd, progress), nil
}

// Close closes the session's connections.
func (s *Session) Close() error {
	var errs []error
	if s.native != nil {
		s.native.Close()
	}
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
