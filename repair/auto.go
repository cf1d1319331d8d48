package repair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/kvnode/kvnode/internal/atomicfile"
	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/schema"
)

// The automatic repair: a node repairs its tables by itself, so that tombstones and expired data,
// which are purged only after a complete repair (replica/purge.go), go without an operator
// running kvnode repair every gc_grace_seconds.
//
// A table is due when its last complete repair on this node (by either kind of repair:
// Host.RepairedAt) is older than its period: auto_repair_interval, or half its
// gc_grace_seconds when that is shorter (but at least MinAutoRepairPeriod). The due table
// repaired longest ago goes first, one table at a time and one range at a time, with
// auto_repair_pause between ranges; its writes share the node's stream throughput like every
// repair's. After each range the round's progress is written to the state file, so a restarted
// node resumes the round where it stopped, as long as its ranges did not change. A round with a
// failed range records nothing (the table stays due) and is tried again after
// auto_repair_retry. A manual repair has precedence: it waits for the range in progress, and
// the automatic repair waits for it.

// Options are repair's operator settings; node inlines them into kvnode's configuration file,
// whose keys the YAML tags are. The zero value of every field means its default.
type Options struct {
	// AutoRepair is "on" (the node repairs its tables by itself) or "off". Default "on".
	AutoRepair string `yaml:"auto_repair"`
	// AutoRepairInterval is the longest time between two complete repairs of a table on this
	// node; a table whose gc_grace_seconds/2 is shorter is repaired that often (at least
	// MinAutoRepairPeriod apart). Default DefaultAutoRepairInterval.
	AutoRepairInterval time.Duration `yaml:"auto_repair_interval"`
	// AutoRepairPause is how long the automatic repair waits after each range. Default
	// DefaultAutoRepairPause.
	AutoRepairPause time.Duration `yaml:"auto_repair_pause"`
	// AutoRepairRetry is how long after a round with a failed range (a replica down) the table
	// is tried again. Default DefaultAutoRepairRetry.
	AutoRepairRetry time.Duration `yaml:"auto_repair_retry"`
}

// The automatic repair's settings and defaults.
const (
	AutoRepairOn  = "on"
	AutoRepairOff = "off"

	DefaultAutoRepairInterval = 24 * time.Hour
	DefaultAutoRepairPause    = time.Second
	DefaultAutoRepairRetry    = 10 * time.Minute
	// MinAutoRepairPeriod bounds how often a table is repaired, whatever its gc_grace_seconds.
	MinAutoRepairPeriod = 10 * time.Minute
	// AutoRepairCheck is how often an idle automatic repair looks for a due table.
	AutoRepairCheck = time.Minute
)

// EnsureDefaults replaces zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.AutoRepair == "" {
		o.AutoRepair = AutoRepairOn
	}
	if o.AutoRepairInterval == 0 {
		o.AutoRepairInterval = DefaultAutoRepairInterval
	}
	if o.AutoRepairPause == 0 {
		o.AutoRepairPause = DefaultAutoRepairPause
	}
	if o.AutoRepairRetry == 0 {
		o.AutoRepairRetry = DefaultAutoRepairRetry
	}
	return o
}

// Validate reports the first setting out of range, naming it and its configuration key.
func (o *Options) Validate() error {
	switch {
	case o.AutoRepair != AutoRepairOn && o.AutoRepair != AutoRepairOff:
		return fmt.Errorf("repair: Options.AutoRepair (auto_repair) is %q, want %q or %q", o.AutoRepair, AutoRepairOn, AutoRepairOff)
	case o.AutoRepairInterval < MinAutoRepairPeriod:
		return fmt.Errorf("repair: Options.AutoRepairInterval (auto_repair_interval) is %v, want at least %v", o.AutoRepairInterval, MinAutoRepairPeriod)
	case o.AutoRepairPause < 0:
		return fmt.Errorf("repair: Options.AutoRepairPause (auto_repair_pause) is %v, want a positive duration", o.AutoRepairPause)
	case o.AutoRepairRetry < 0:
		return fmt.Errorf("repair: Options.AutoRepairRetry (auto_repair_retry) is %v, want a positive duration", o.AutoRepairRetry)
	}
	return nil
}

// Period returns how long at most may pass between two complete repairs of t.
func (o *Options) Period(t *schema.Table) time.Duration {
	half := time.Duration(t.GCGraceSeconds()) * time.Second / 2
	return min(o.AutoRepairInterval, max(half, MinAutoRepairPeriod))
}

// autoState is the automatic repair's round in progress, as the state file holds it.
type autoState struct {
	Table   schema.TableID `json:"table_id"`
	Name    string         `json:"table"` // for a reader of the file
	Started time.Time      `json:"started"`
	Ranges  string         `json:"ranges"` // fingerprint of the round's ranges
	Done    int            `json:"done"`   // ranges done, in LocalRanges order
	Failed  int            `json:"failed"` // of them
}

// AutoStatus is what the automatic repair reports of one table.
type AutoStatus struct {
	Keyspace, Table string
	// LastRepaired is when the last complete repair of the table on this node started (by
	// either kind of repair); zero when it never completed.
	LastRepaired time.Time
	// Due is when the table is to be repaired next.
	Due time.Time
	// Done and Total are the ranges of the round in progress; both 0 when none is.
	Done, Total int
}

// StartAuto starts the automatic repair (with Options.AutoRepair "on"; otherwise it does
// nothing): the first look for a due table AutoRepairCheck from now.
func (s *Service) StartAuto() {
	if s.opts.AutoRepair != AutoRepairOn {
		return
	}
	s.auto = loop.Start(loop.Options{Every: AutoRepairCheck, Delay: true}, s.autoRound)
}

// AutoRound runs one round of the automatic repair now: the due table repaired longest ago,
// or the round in progress, range after range. It returns how long until the next round
// should start, at most (0: AutoRepairCheck).
func (s *Service) AutoRound(ctx context.Context) time.Duration { return s.autoRound(ctx) }

func (s *Service) autoRound(ctx context.Context) time.Duration {
	st, tb, rf := s.nextAutoTable()
	if tb == nil {
		return 0
	}
	ranges := LocalRanges(s.host.Ring(), s.host.Self(), rf)
	fp := fingerprint(ranges)
	if st == nil || st.Table != tb.ID || st.Ranges != fp {
		st = &autoState{Table: tb.ID, Name: tb.QualifiedName(), Started: s.now(), Ranges: fp}
	}
	s.setAuto(st, len(ranges))
	defer s.setAuto(nil, 0)
	tr := TableResult{Keyspace: tb.Keyspace, Table: tb.Name, Started: st.Started}
	for st.Done < len(ranges) {
		if !s.running.TryLock() {
			return 0 // a manual repair runs: the round resumes after it
		}
		s.autoHolding.Store(true)
		err := s.repairRange(ctx, tb, ranges[st.Done], &tr)
		s.autoHolding.Store(false)
		s.running.Unlock()
		if ctx.Err() != nil {
			return 0 // stopped: the range is done again after a restart
		}
		if err != nil {
			st.Failed++
			s.autoFailed.Add(1)
			s.log.Warn("automatic repair: a range failed", "table", tb.QualifiedName(), "err", &RangeError{Range: ranges[st.Done], Err: err})
		} else {
			s.autoOK.Add(1)
		}
		st.Done++
		s.setAuto(st, len(ranges))
		if err := s.saveAuto(st); err != nil {
			s.log.Error("automatic repair: saving its progress failed", "err", err)
		}
		if st.Done < len(ranges) && !s.pause(ctx, s.opts.AutoRepairPause) {
			return 0
		}
	}
	if err := s.saveAuto(nil); err != nil {
		s.log.Error("automatic repair: saving its progress failed", "err", err)
	}
	if st.Failed > 0 {
		s.retryAt[tb.ID] = s.now().Add(s.opts.AutoRepairRetry)
		s.log.Warn("automatic repair of a table incomplete; it is tried again later", "table", tb.QualifiedName(),
			"ranges", len(ranges), "failed", st.Failed, "retry_in", s.opts.AutoRepairRetry)
		return s.opts.AutoRepairPause
	}
	if err := s.repaired(ctx, tb, st.Started); err != nil {
		s.log.Error("automatic repair: recording the repair failed", "table", tb.QualifiedName(), "err", err)
		return 0
	}
	s.log.Info("table repaired automatically", "table", tb.QualifiedName(), "ranges", len(ranges),
		"leaves_mismatched", tr.LeavesMismatched, "partitions_streamed", tr.PartitionsStreamed, "took", s.now().Sub(st.Started))
	return s.opts.AutoRepairPause // the next due table, soon
}

// nextAutoTable returns the table to repair now, with its keyspace's placement, and
// the saved round when it is that table's: the saved round's table while it exists and was not
// repaired since the round started, else the due table repaired longest ago. Nil when none is
// due.
func (s *Service) nextAutoTable() (*autoState, *schema.Table, schema.Replication) {
	saved, err := s.loadAuto()
	if err != nil {
		s.log.Error("automatic repair: its saved progress is unreadable; starting afresh", "err", err)
	}
	sc := s.host.Schema()
	now := s.now()
	var (
		best    *schema.Table
		bestRF  schema.Replication
		bestDue time.Time
	)
	for _, k := range sc.Keyspaces() {
		for _, t := range sc.Tables(k.Name) {
			last, _, err := s.host.RepairedAt(t.ID)
			if err != nil {
				s.log.Error("automatic repair: reading a table's repair time failed", "table", t.QualifiedName(), "err", err)
				continue
			}
			if saved != nil && saved.Table == t.ID && last.Before(saved.Started) {
				return saved, t, k.Replication()
			}
			due := last.Add(s.opts.Period(t))
			if r, ok := s.retryAt[t.ID]; ok && r.After(due) {
				due = r
			}
			if due.After(now) {
				continue
			}
			if best == nil || due.Before(bestDue) {
				best, bestRF, bestDue = t, k.Replication(), due
			}
		}
	}
	return nil, best, bestRF
}

// AutoStatus reports every table of the node's schema: when it was last repaired, when it is
// due, and the round in progress.
func (s *Service) AutoStatus() ([]AutoStatus, error) {
	s.autoMu.Lock()
	cur, total := s.autoCur, s.autoTotal
	s.autoMu.Unlock()
	sc := s.host.Schema()
	var out []AutoStatus
	for _, k := range sc.Keyspaces() {
		for _, t := range sc.Tables(k.Name) {
			last, _, err := s.host.RepairedAt(t.ID)
			if err != nil {
				return nil, err
			}
			as := AutoStatus{Keyspace: t.Keyspace, Table: t.Name, LastRepaired: last, Due: last.Add(s.opts.Period(t))}
			if cur != nil && cur.Table == t.ID {
				as.Done, as.Total = cur.Done, total
			}
			out = append(out, as)
		}
	}
	return out, nil
}

// setAuto publishes the round in progress (nil: none) for AutoStatus and the metrics.
func (s *Service) setAuto(st *autoState, total int) {
	s.autoMu.Lock()
	defer s.autoMu.Unlock()
	if st == nil {
		s.autoCur, s.autoTotal = nil, 0
		return
	}
	cp := *st
	s.autoCur, s.autoTotal = &cp, total
}

// pause waits d, or until ctx ends; it reports whether the wait ran out.
func (s *Service) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// loadAuto reads the saved round; nil when there is none (or no state file).
func (s *Service) loadAuto() (*autoState, error) {
	if s.stateFile == "" {
		return s.autoMem, nil
	}
	b, err := os.ReadFile(s.stateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st autoState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", s.stateFile, err)
	}
	return &st, nil
}

// saveAuto writes the round in progress, or removes it (nil).
func (s *Service) saveAuto(st *autoState) error {
	if s.stateFile == "" {
		s.autoMem = st
		return nil
	}
	if st == nil {
		if err := os.Remove(s.stateFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.stateFile, b)
}

// fingerprint identifies a list of ranges and their replicas: a saved round resumes only on the
// same ranges.
func fingerprint(ranges []Range) string {
	h := fnv.New64a()
	for _, r := range ranges {
		fmt.Fprintf(h, "%d,%d", r.Range.Start, r.Range.End)
		for _, id := range r.Replicas {
			fmt.Fprintf(h, ",%s", id)
		}
		h.Write([]byte{';'})
	}
	return strconv.FormatUint(h.Sum64(), 16) + "/" + strconv.Itoa(len(ranges))
}

// lockManual takes the repair lock for a manual repair: at once, or after the automatic
// repair's range in progress. It reports false when another manual repair holds it.
func (s *Service) lockManual() bool {
	if s.running.TryLock() {
		return true
	}
	if s.autoHolding.Load() {
		s.running.Lock()
		return true
	}
	return s.running.TryLock()
}
