package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The batchlog: logged batches a coordinator stored on this node before applying them, kept
// until the coordinator removes them or this node replays them (Cassandra's system.batches).
//
// Its keys live in a reserved key space no table can reach: they begin with table id 0, which
// the schema never assigns (schema ids are hashes mapped away from 0, and a schema holding id
// 0 does not decode), then kindBatchlog and the entry's 16-byte id:
//
//	00 00 00 00 00 00 00 00  'B'  id (16 bytes: coordinator nanos big-endian, 8 random)
//
// so entries sort by their coordinator's clock. A value is this node's clock when it stored
// the entry (8 bytes big-endian nanoseconds since the Unix epoch), which the replay age is
// measured against, then the replicapb.BatchlogEntry in protobuf encoding.
const (
	batchlogPrefix = "\x00\x00\x00\x00\x00\x00\x00\x00B"
	// BatchIDSize is the size of a batchlog entry's id.
	BatchIDSize = 16
	// DefaultMaxBatchlogEntry is Config.MaxBatchlogEntry when it is zero: the coordinator's
	// default max_mutation_size.
	DefaultMaxBatchlogEntry = 16 << 20
)

// batchlogUpper is the exclusive upper bound of the batchlog's key space.
const batchlogUpper = "\x00\x00\x00\x00\x00\x00\x00\x00C"

// BatchlogRecord is one entry of a node's batchlog as Store.ScanBatchlog returns it.
type BatchlogRecord struct {
	// ID is the entry's 16-byte id.
	ID []byte
	// StoredAt is this node's clock when it stored the entry.
	StoredAt time.Time
	// Entry is the replicapb.BatchlogEntry in protobuf encoding.
	Entry []byte
}

func batchlogKey(id []byte) []byte {
	return append([]byte(batchlogPrefix), id...)
}

// StoreBatch writes a batchlog entry under id, synced whatever Options.NoSync says (the entry is
// what makes its batch survive its coordinator), stamped with storedAt. Storing an id again
// replaces the entry.
func (s *Store) StoreBatch(id []byte, storedAt time.Time, entry []byte) error {
	if len(id) != BatchIDSize {
		return fmt.Errorf("%w: batchlog id is %d bytes, want %d", ErrBadRequest, len(id), BatchIDSize)
	}
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.ReserveError(); err != nil {
		return err // the batch's coordinator stores it on another node
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	val := make([]byte, 8, 8+len(entry))
	binary.BigEndian.PutUint64(val, uint64(storedAt.UnixNano()))
	val = append(val, entry...)
	if err := s.db.Set(batchlogKey(id), val, pebble.Sync); err != nil {
		return fmt.Errorf("replica: store batchlog entry %x: %w", id, err)
	}
	return nil
}

// RemoveBatch deletes the batchlog entry id and reports whether the store held it. The deletion
// is not synced: an entry a crash brings back is replayed again, which writes nothing new.
func (s *Store) RemoveBatch(id []byte) (bool, error) {
	if len(id) != BatchIDSize {
		return false, fmt.Errorf("%w: batchlog id is %d bytes, want %d", ErrBadRequest, len(id), BatchIDSize)
	}
	if err := s.usable(); err != nil {
		return false, err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return false, errStoreClosed
	}
	key := batchlogKey(id)
	_, closer, err := s.db.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("replica: remove batchlog entry %x: %w", id, err)
	}
	closer.Close()
	if err := s.db.Delete(key, pebble.NoSync); err != nil {
		return false, fmt.Errorf("replica: remove batchlog entry %x: %w", id, err)
	}
	return true, nil
}

// ScanBatchlog calls fn with each batchlog entry, in id order (the coordinators' clocks), until
// fn returns an error, which ScanBatchlog returns. The record's slices are fn's to keep. A
// malformed value (shorter than its 8-byte stamp) is an error naming the id.
func (s *Store) ScanBatchlog(fn func(BatchlogRecord) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(batchlogPrefix), UpperBound: []byte(batchlogUpper)})
	if err != nil {
		return fmt.Errorf("replica: scan batchlog: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		id := bytes.Clone(it.Key()[len(batchlogPrefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("replica: scan batchlog: entry %x: %w", id, err)
		}
		if len(id) != BatchIDSize || len(v) < 8 {
			it.Close()
			return fmt.Errorf("replica: scan batchlog: entry %x: %w (%d-byte id, %d-byte value)", id, errBadKey, len(id), len(v))
		}
		rec := BatchlogRecord{ID: id, StoredAt: time.Unix(0, int64(binary.BigEndian.Uint64(v))), Entry: bytes.Clone(v[8:])}
		if err := fn(rec); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("replica: scan batchlog: %w", err)
	}
	return nil
}

// BatchlogLen returns how many entries the batchlog holds. It reads the keys only.
func (s *Store) BatchlogLen() (int, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return 0, errStoreClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(batchlogPrefix), UpperBound: []byte(batchlogUpper)})
	if err != nil {
		return 0, fmt.Errorf("replica: scan batchlog: %w", err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("replica: scan batchlog: %w", err)
	}
	return n, nil
}

// batchlogMetrics counts what the batchlog did; the pending gauge is read at scrape time.
type batchlogMetrics struct {
	stored, replayed, removed atomic.Uint64

	store                                 *Store
	storedDesc, replayedDesc, removedDesc *prometheus.Desc
	pendingDesc                           *prometheus.Desc
}

func newBatchlogMetrics(store *Store) *batchlogMetrics {
	return &batchlogMetrics{
		store:        store,
		storedDesc:   prometheus.NewDesc("kvnode_batchlog_stored_total", "Logged batches coordinators stored in this node's batchlog before applying them.", nil, nil),
		replayedDesc: prometheus.NewDesc("kvnode_batchlog_replayed_total", "Batchlog entries this node replayed to every replica of their partitions, because their coordinator had not removed them within the replay age (it failed part way, or its removal was lost).", nil, nil),
		removedDesc:  prometheus.NewDesc("kvnode_batchlog_removed_total", "Batchlog entries removed from this node: by their coordinator once the batch was applied, or by this node after replaying them.", nil, nil),
		pendingDesc:  prometheus.NewDesc("kvnode_batchlog_pending", "Entries in this node's batchlog now: batches in flight, and batches awaiting replay.", nil, nil),
	}
}

func (m *batchlogMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.storedDesc
	ch <- m.replayedDesc
	ch <- m.removedDesc
	ch <- m.pendingDesc
}

func (m *batchlogMetrics) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(m.storedDesc, prometheus.CounterValue, float64(m.stored.Load()))
	ch <- prometheus.MustNewConstMetric(m.replayedDesc, prometheus.CounterValue, float64(m.replayed.Load()))
	ch <- prometheus.MustNewConstMetric(m.removedDesc, prometheus.CounterValue, float64(m.removed.Load()))
	if n, err := m.store.BatchlogLen(); err == nil { // a closed store exports no gauge
		ch <- prometheus.MustNewConstMetric(m.pendingDesc, prometheus.GaugeValue, float64(n))
	}
}

// BatchlogCollector returns the batchlog's Prometheus metrics, for the node to register:
// kvnode_batchlog_{stored,replayed,removed}_total and kvnode_batchlog_pending.
func (s *Service) BatchlogCollector() prometheus.Collector { return s.batchlog }

// StoreBatch stores a logged batch in this node's batchlog, synced, stamped with this node's
// clock. The entry must carry a 16-byte id and at least
// one mutation, each naming a table and writing something (with a partition key and token
// that match, when this node knows the table), and be at most
// Config.MaxBatchlogEntry bytes; a table dropped before replay is skipped then. Outcomes are in the response's status; the error is non-nil only when ctx
// ended first.
func (s *Service) StoreBatch(ctx context.Context, req *replicapb.StoreBatchRequest) (*replicapb.BatchlogResponse, error) {
	e := req.GetEntry()
	if err := s.checkBatchlogEntry(e); err != nil {
		return batchlogError(replicapb.Error_BAD_REQUEST, err.Error()), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
	if err != nil {
		return batchlogError(replicapb.Error_BAD_REQUEST, fmt.Sprintf("replica: bad request: batchlog entry %x: %v", e.Id, err)), nil
	}
	if err := s.store.guarded(func() error { return s.store.StoreBatch(e.Id, s.now(), b) }); err != nil {
		if s.logger != nil && !errors.Is(err, ErrLowDiskSpace) && !errors.Is(err, ErrStorageFailed) {
			s.logger.Error("batchlog store failed", "id", fmt.Sprintf("%x", e.Id), "err", err)
		}
		return batchlogError(replicapb.Error_INTERNAL, err.Error()), nil
	}
	s.batchlog.stored.Add(1)
	return &replicapb.BatchlogResponse{Status: replicapb.Status_STATUS_OK}, nil
}

// checkBatchlogEntry reports what is wrong with e, if anything, naming the entry and the part.
func (s *Service) checkBatchlogEntry(e *replicapb.BatchlogEntry) error {
	if e == nil {
		return fmt.Errorf("%w: the store batch request carries no entry", ErrBadRequest)
	}
	if len(e.Id) != BatchIDSize {
		return fmt.Errorf("%w: batchlog entry id is %d bytes, want %d", ErrBadRequest, len(e.Id), BatchIDSize)
	}
	if len(e.Mutations) == 0 {
		return fmt.Errorf("%w: batchlog entry %x has no mutations", ErrBadRequest, e.Id)
	}
	for i, m := range e.Mutations {
		switch {
		case m == nil:
			return fmt.Errorf("%w: batchlog entry %x: mutation %d is nil", ErrBadRequest, e.Id, i)
		case m.TableId == 0:
			return fmt.Errorf("%w: batchlog entry %x: mutation %d names table id 0", ErrBadRequest, e.Id, i)
		case len(m.Rows) == 0 && m.PartitionDeletion == nil && len(m.RangeTombstones) == 0 && m.StaticRow == nil:
			return fmt.Errorf("%w: batchlog entry %x: mutation %d writes nothing", ErrBadRequest, e.Id, i)
		}
		// A key or token the replicas would refuse would fail every replay: refuse it now. A
		// table this node does not know yet (its schema lags) is checked by the replicas.
		if t, ok := s.schema.TableByID(schema.TableID(m.TableId)); ok {
			if _, err := serializePartitionKey(t, nil, m.PartitionKey, m.Token); err != nil {
				return fmt.Errorf("batchlog entry %x: mutation %d: %w", e.Id, i, err)
			}
		}
	}
	if n := proto.Size(e); n > s.maxBatchlog {
		return fmt.Errorf("%w: batchlog entry %x is %d bytes, more than the largest batch, %d bytes (max_mutation_size)", ErrBadRequest, e.Id, n, s.maxBatchlog)
	}
	return nil
}

// RemoveBatch removes a batch from this node's batchlog; removing one it does not hold is not
// an error.
func (s *Service) RemoveBatch(_ context.Context, req *replicapb.RemoveBatchRequest) (*replicapb.BatchlogResponse, error) {
	held, err := s.store.RemoveBatch(req.GetId())
	if err != nil {
		if errors.Is(err, ErrBadRequest) {
			return batchlogError(replicapb.Error_BAD_REQUEST, err.Error()), nil
		}
		return batchlogError(replicapb.Error_INTERNAL, err.Error()), nil
	}
	if held {
		s.batchlog.removed.Add(1)
	}
	return &replicapb.BatchlogResponse{Status: replicapb.Status_STATUS_OK}, nil
}

// BatchlogReplay is what one round of ReplayBatchlog did.
type BatchlogReplay struct {
	// Replayed counts the entries replayed and removed; Failed those whose replay failed, kept
	// for the next round; Pending the entries younger than the age, left alone.
	Replayed, Failed, Pending int
}

// ReplayBatchlog replays the entries of this node's batchlog stored at or before olderThan, in
// id order: replay re-applies an entry's mutations (the node's coordinator sends them to every
// replica of their partitions); once it returns nil the entry is removed. An entry whose replay
// fails is kept for the next round; one that does not decode is logged and kept. The error is
// the store's, or ctx's when it ended (the round stops there).
func (s *Service) ReplayBatchlog(ctx context.Context, olderThan time.Time, replay func(context.Context, *replicapb.BatchlogEntry) error) (BatchlogReplay, error) {
	var due []BatchlogRecord
	var r BatchlogReplay
	err := s.store.ScanBatchlog(func(rec BatchlogRecord) error {
		if rec.StoredAt.After(olderThan) {
			r.Pending++
			return nil
		}
		due = append(due, rec)
		return nil
	})
	if err != nil {
		return r, err
	}
	for _, rec := range due {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		var e replicapb.BatchlogEntry
		if err := proto.Unmarshal(rec.Entry, &e); err != nil {
			r.Failed++
			if s.logger != nil {
				s.logger.Error("batchlog entry does not decode; kept for inspection", "id", fmt.Sprintf("%x", rec.ID), "err", err)
			}
			continue
		}
		if err := replay(ctx, &e); err != nil {
			r.Failed++
			if s.logger != nil {
				s.logger.Warn("batchlog replay failed; retrying next round", "id", fmt.Sprintf("%x", rec.ID), "err", err)
			}
			continue
		}
		r.Replayed++
		s.batchlog.replayed.Add(1)
		held, err := s.store.RemoveBatch(rec.ID)
		if err != nil {
			return r, err
		}
		if held {
			s.batchlog.removed.Add(1)
		}
	}
	return r, nil
}

func batchlogError(code replicapb.Error_Code, msg string) *replicapb.BatchlogResponse {
	return &replicapb.BatchlogResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: code, Message: msg}}
}
