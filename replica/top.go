package replica

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// TopPartitions lists the partitions this node's limiter saw above twice their limit in the last
// seconds, per (table, op), hottest first (by estimated rate, then token), at most req.Limit per
// pair (0: all it tracks).
//
// Counters are read (never incremented) at the service's clock; rates use EstimateRate. A
// partition whose key no operation carried (it was only checked by a coordinator, or counted by
// an account delta) gets its key from storage when the node holds data of it, and none
// otherwise.
func (s *Service) TopPartitions(_ context.Context, req *replicapb.TopPartitionsRequest) (*replicapb.TopPartitionsResponse, error) {
	now := s.now()
	states := s.ops.all()
	keys := make([]labelKey, 0, len(states))
	for k := range states {
		if req.GetTableId() == 0 || uint64(k.table) == req.GetTableId() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b labelKey) int {
		return cmp.Or(cmp.Compare(a.table, b.table), cmp.Compare(a.op, b.op))
	})
	resp := &replicapb.TopPartitionsResponse{}
	var snaps []hotSnapshot
	for _, k := range keys {
		t, ok := s.schema.TableByID(k.table)
		if !ok {
			continue // dropped
		}
		st := states[k]
		snaps = st.hot.snapshot(snaps[:0], now)
		start := len(resp.Partitions)
		for _, h := range snaps {
			count := s.limits.Peek(h.token, st.label, now)
			p := &replicapb.HotPartition{
				TableId:                         uint64(k.table),
				Op:                              internode.WireOp(k.op),
				Token:                           h.token,
				Count:                           count,
				Limit:                           t.Limit(k.op),
				OpsPerSecond:                    EstimateRate(count, now),
				CoordinatorRejectionsPerSecond:  EstimateRate(h.rejected[byCoordinator], now),
				ReplicaRejectionsPerSecond:      EstimateRate(h.rejected[byReplica], now),
				CoordinatorWouldRejectPerSecond: EstimateRate(h.wouldReject[byCoordinator], now),
				ReplicaWouldRejectPerSecond:     EstimateRate(h.wouldReject[byReplica], now),
			}
			if h.key != nil {
				p.PartitionKey = splitPartitionKey(h.key, len(t.PartitionKey))
			} else if pk, err := s.store.partitionKeyOf(t, h.token); err != nil {
				if s.logger != nil {
					s.logger.Warn("looking up the key of a hot partition failed", "table", t.QualifiedName(), "token", h.token, "err", err)
				}
			} else {
				p.PartitionKey = pk
			}
			resp.Partitions = append(resp.Partitions, p)
		}
		part := resp.Partitions[start:]
		slices.SortFunc(part, func(a, b *replicapb.HotPartition) int {
			return cmp.Or(cmp.Compare(b.OpsPerSecond, a.OpsPerSecond), cmp.Compare(a.Token, b.Token))
		})
		if n := int(req.GetLimit()); n > 0 && len(part) > n {
			resp.Partitions = resp.Partitions[:start+n]
		}
	}
	return resp, nil
}

// splitPartitionKey splits a serialized partition key (partitioner.AppendKey) of a table with n
// partition key columns into its components. A key that does not split into n components is
// returned whole, as one component.
func splitPartitionKey(key []byte, n int) [][]byte {
	if n <= 1 {
		return [][]byte{key}
	}
	out := make([][]byte, 0, n)
	rest := key
	for len(rest) > 0 {
		if len(rest) < 3 {
			return [][]byte{key}
		}
		l := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+l+1 {
			return [][]byte{key}
		}
		out = append(out, rest[2:2+l:2+l])
		rest = rest[2+l+1:]
	}
	if len(out) != n {
		return [][]byte{key}
	}
	return out
}

// partitionKeyOf returns the components of the key of a partition with token in table t, read
// from the first storage key with that token, or nil when the store holds no data of one (a
// token shared by two keys, about one chance in 2^64 per pair, returns either). It returns an
// error only when storage fails.
func (s *Store) partitionKeyOf(t *schema.Table, token int64) ([][]byte, error) {
	lower := appendPartitionPrefix(nil, uint64(t.ID), token, nil)
	lower = lower[:16] // table id and token, without the (empty) partition key
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return nil, fmt.Errorf("replica: table %s: %w", t.QualifiedName(), err)
	}
	defer it.Close()
	if !it.First() {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("replica: table %s: %w", t.QualifiedName(), err)
		}
		return nil, nil
	}
	_, tok, pk, _, err := decodePartitionPrefix(it.Key())
	if err != nil || tok != token || partitioner.Token(pk) != token {
		return nil, corrupt(t, bytes.Clone(it.Key()), errBadKey)
	}
	return splitPartitionKey(pk, len(t.PartitionKey)), nil
}

// collectHot sends, per (table, op) with a limit that has seen limited traffic, the number of
// its tracked partitions whose counter is above twice the limit at now. A pair whose partitions
// all cooled down reports 0 rather than vanishing.
func (s *Service) collectHot(ch chan<- prometheus.Metric, desc *prometheus.Desc, now time.Time) {
	var tokens []int64
	for k, st := range s.ops.all() {
		t, ok := s.schema.TableByID(k.table)
		if !ok {
			continue
		}
		limit := t.Limit(k.op)
		if limit == 0 {
			continue
		}
		n := 0
		tokens = st.hot.appendTokens(tokens[:0])
		for _, tok := range tokens {
			if isHot(s.limits.Peek(tok, st.label, now), limit) {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), t.Keyspace, t.Name, k.op.String())
	}
}
