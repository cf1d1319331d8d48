package repair

import (
	"context"
	"fmt"
	"time"

	"github.com/kvnode/kvnode/internal/loop"
	"github.com/kvnode/kvnode/schema"
)

// PurgeInterval is how often a started Service purges the tombstones its tables may let go
// (besides right after each repair of a table): gc_grace_seconds counts in seconds, but a
// tombstone an hour late costs only its space.
const PurgeInterval = time.Hour

// repaired records that a repair that started at start repaired every range of t this node
// replicates, and purges t at once.
func (s *Service) repaired(ctx context.Context, t *schema.Table, start time.Time) error {
	if err := s.host.SetRepairedAt(t.ID, start); err != nil {
		return err
	}
	return s.purge(ctx, t)
}

// purge runs one purge pass over t.
func (s *Service) purge(ctx context.Context, t *schema.Table) error {
	st, err := s.host.Purge(ctx, t, s.now())
	if err != nil {
		return fmt.Errorf("purge %s: %w", t.QualifiedName(), err)
	}
	if st.Tombstones > 0 || st.Shadowed > 0 || st.Expired > 0 {
		s.purgeLog.Info("tombstones purged", "table", t.QualifiedName(), "tombstones", st.Tombstones, "shadowed", st.Shadowed, "expired", st.Expired, "compacted", st.Compacted, "partitions", st.Partitions)
	}
	return nil
}

// purgeAll runs one purge pass over every table of the node's schema.
func (s *Service) purgeAll(ctx context.Context) time.Duration {
	sc := s.host.Schema()
	for _, k := range sc.Keyspaces() {
		for _, tb := range sc.Tables(k.Name) {
			if err := s.purge(ctx, tb); err != nil && ctx.Err() == nil {
				s.purgeLog.Error("tombstone purge failed", "err", err)
			}
		}
	}
	return 0
}

// Start starts the periodic purge: every table of the node's schema, each PurgeInterval, the
// first one PurgeInterval from now.
func (s *Service) Start() {
	s.purger = loop.Start(loop.Options{Every: PurgeInterval, Delay: true}, s.purgeAll)
}

// Stop ends the periodic purge (a pass in progress stops at its next partition) and the
// automatic repair (at its range in progress, which a restart does again), and waits for them.
// It may be called on a nil or unstarted Service.
func (s *Service) Stop() {
	if s == nil {
		return
	}
	s.auto.Stop()
	s.purger.Stop()
}
