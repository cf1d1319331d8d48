package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Counter updates. The coordinator of UPDATE ... SET c = c + n sends it to one replica, the
// leader (CounterUpdate), which alone changes its own shard of each counter: under the
// partition's lock it reads its shard, adds the increment with the next clock and writes the
// new shard durably, then returns the shards it wrote, which the coordinator replicates to the
// other replicas as ordinary counter cells (Mutate); the merge operator keeps, per shard, the
// version with the highest clock (value.go, cell.MergeCounters). A read sums the shards.

// counterStripes is how many locks serialise the leader's read-modify-writes, by partition.
const counterStripes = 64

// counterLock locks the counter updates of the partition with the given token of table t.
func (s *Service) counterLock(t schema.TableID, token int64) func() {
	h := fnv.New32a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], uint64(t))
	binary.BigEndian.PutUint64(b[8:], uint64(token))
	h.Write(b[:])
	mu := &s.counters[h.Sum32()%counterStripes]
	mu.Lock()
	return mu.Unlock
}

// checkCounterCell checks c, a cell of a column of type typ of which one is a counter: a
// counter column takes tombstones and counter cells whose shards decode, without TTL or path;
// no other column takes counter cells.
func checkCounterCell(c *replicapb.Cell, typ schema.Type) error {
	switch {
	case typ != schema.TypeCounter:
		return fmt.Errorf("a counter cell for a column of type %s", typ)
	case c.Path != nil:
		return errors.New("a counter cell with an element path")
	case c.Tombstone:
		return nil
	case !c.Counter:
		return errors.New("a counter column takes counter cells (its shards) or tombstones, not plain values")
	case c.Ttl != 0 || c.Expires != 0:
		return errors.New("a counter cell cannot expire")
	}
	shards, err := cell.DecodeShards(c.Value)
	if err != nil {
		return err
	}
	if len(shards) == 0 {
		return errors.New("a counter cell without shards")
	}
	for _, sh := range shards {
		if err := cell.CheckShard(sh); err != nil {
			return err
		}
	}
	return nil
}

// CounterUpdate leads a counter update (see the comment above): unless the limiter rejects it,
// it applies req's increments to this node's shards and answers with the shards it wrote.
// Outcomes are in the response's status; the error is non-nil only when ctx ended before the
// update.
func (s *Service) CounterUpdate(ctx context.Context, req *replicapb.CounterUpdateRequest) (*replicapb.CounterUpdateResponse, error) {
	m := req.GetMutation()
	if m == nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return counterError(replicapb.Error_BAD_REQUEST, "replica: bad request: the counter update carries no mutation"), nil
	}
	t, ok := s.schema.TableByID(schema.TableID(m.TableId))
	if !ok {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return counterError(replicapb.Error_UNKNOWN_TABLE, unknownTable(m.TableId).Error()), nil
	}
	if s.nodeID == "" {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return counterError(replicapb.Error_INTERNAL, "replica: this replica has no node id to lead counter updates with"), nil
	}
	d, err := s.admit(t, m.Token, schema.OpWrite, req.Limiter, m.PartitionKey)
	if err != nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return counterError(replicapb.Error_BAD_REQUEST, err.Error()), nil
	}
	if !d.Admitted {
		rl := mutateRateLimited(d)
		return &replicapb.CounterUpdateResponse{Status: rl.Status, RateLimited: rl.RateLimited}, nil
	}
	if err := ctx.Err(); err != nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return nil, status.FromContextError(err).Err()
	}
	start := time.Now()
	var applied *replicapb.Mutation
	unlock := s.counterLock(t.ID, m.Token)
	err = s.store.guarded(func() (err error) {
		applied, err = s.store.applyCounter(t, m, s.nodeID, &s.shards)
		return err
	})
	unlock()
	s.metrics.latency[reqWrite].Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.requests[reqWrite][statusError].Add(1)
		return counterError(s.classify(err, "counter update", t), err.Error()), nil
	}
	s.metrics.requests[reqWrite][statusOK].Add(1)
	return &replicapb.CounterUpdateResponse{Status: replicapb.Status_STATUS_OK, WouldReject: d.WouldReject, Applied: applied}, nil
}

func counterError(code replicapb.Error_Code, msg string) *replicapb.CounterUpdateResponse {
	return &replicapb.CounterUpdateResponse{Status: replicapb.Status_STATUS_ERROR, Error: &replicapb.Error{Code: code, Message: msg}}
}

// applyCounter applies m, a counter update of table t whose cells carry increments (8 bytes
// big-endian), to shard id of each counter, and returns the mutation it wrote: the same rows
// with each cell's new shard. The caller holds the partition's counter lock. Several
// increments of one counter in m (a COUNTER BATCH) add up in one new shard.
func (s *Store) applyCounter(t *schema.Table, m *replicapb.Mutation, id string, cache *shardCache) (*replicapb.Mutation, error) {
	if !t.IsCounter() {
		return nil, badRequest(t, "a counter update of a table without counter columns")
	}
	if m.GetTableId() != uint64(t.ID) {
		return nil, badRequest(t, "counter update is for table id %d", m.GetTableId())
	}
	if len(m.Rows) == 0 || m.PartitionDeletion != nil || len(m.RangeTombstones) > 0 {
		return nil, badRequest(t, "a counter update holds rows of increments only")
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	pk, err := serializePartitionKey(t, nil, m.PartitionKey, m.Token)
	if err != nil {
		return nil, err
	}
	prefix := appendPartitionPrefix(nil, uint64(t.ID), m.Token, pk)
	out := &replicapb.Mutation{TableId: m.TableId, PartitionKey: m.PartitionKey, Token: m.Token}
	shards := map[string]cell.Shard{} // by stored key: this update's new shards so far
	outCells := map[string]*replicapb.Cell{}
	for i, row := range m.Rows {
		if row == nil || len(row.Cells) == 0 || row.Marker != nil || row.Deletion != nil || len(row.Collections) > 0 {
			return nil, badRequest(t, "row %d of a counter update holds something other than increments", i)
		}
		key := append(bytes.Clone(prefix), kindRow)
		if key, err = appendClusteringKey(t, key, row.Clustering); err != nil || len(row.Clustering) != len(t.Clustering) {
			return nil, badRequest(t, "row %d: clustering key of %d components: %v", i, len(row.Clustering), err)
		}
		orow := &replicapb.Row{Clustering: row.Clustering}
		for _, c := range row.Cells {
			typ, err := regularType(t, c.GetColumn())
			if err != nil {
				return nil, err
			}
			if typ != schema.TypeCounter || !c.Counter || c.Tombstone || len(c.Value) != 8 || c.Path != nil || c.Ttl != 0 {
				return nil, badRequest(t, "row %d column %q: a counter update's cell is an 8-byte increment of a counter column", i, c.Column)
			}
			if err := checkTimestamp(c.Timestamp); err != nil {
				return nil, badRequest(t, "row %d column %q: %v", i, c.Column, err)
			}
			ck := string(append(append(bytes.Clone(key), rowCell), c.Column...))
			sh, seen := shards[ck]
			if !seen {
				if sh, seen = cache.get(ck); !seen {
					if sh, err = s.counterShard([]byte(ck), id); err != nil {
						return nil, corrupt(t, []byte(ck), err)
					}
				}
				sh.ID = id
			}
			sh.Clock++
			sh.Value += int64(binary.BigEndian.Uint64(c.Value))
			shards[ck] = sh
			if oc, ok := outCells[ck]; ok {
				oc.Value = cell.AppendShards(oc.Value[:0], []cell.Shard{sh})
				oc.Timestamp = max(oc.Timestamp, c.Timestamp)
				continue
			}
			oc := &replicapb.Cell{Column: c.Column, Timestamp: c.Timestamp, Counter: true, Value: cell.AppendShards(nil, []cell.Shard{sh})}
			outCells[ck] = oc
			orow.Cells = append(orow.Cells, oc)
		}
		if len(orow.Cells) > 0 {
			out.Rows = append(out.Rows, orow)
		}
	}
	if err := s.Apply(t, out); err != nil {
		for ck := range shards {
			cache.drop(ck)
		}
		return nil, err
	}
	for ck, sh := range shards {
		cache.put(ck, sh)
	}
	return out, nil
}

// maxCachedShards bounds the shard cache; a full cache starts over.
const maxCachedShards = 1 << 16

// shardCache remembers this node's newest shard of the counters it led updates of, by storage
// key (Cassandra's counter cache): only the leader writes its own shard, under the partition's
// lock, so the cached version is the stored one, and a hot counter's update does not read
// storage, whose read merges every version the memtable holds. A miss reads storage.
type shardCache struct {
	mu sync.Mutex
	m  map[string]cell.Shard
}

func (c *shardCache) get(k string) (cell.Shard, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, ok := c.m[k]
	return sh, ok
}

func (c *shardCache) put(k string, sh cell.Shard) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedShards {
		c.m = make(map[string]cell.Shard)
	}
	c.m[k] = sh
}

func (c *shardCache) drop(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// counterShard returns this node's shard (id) of the counter cell stored at key; the zero shard
// when there is none, or the counter was deleted (then the update is lost, as in Cassandra:
// a deleted counter must not be used again).
func (s *Store) counterShard(key []byte, id string) (cell.Shard, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return cell.Shard{}, errStoreClosed
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return cell.Shard{}, nil
	}
	if err != nil {
		return cell.Shard{}, fmt.Errorf("replica: read counter: %w", err)
	}
	defer closer.Close()
	c, err := decodeValue(v)
	if err != nil {
		return cell.Shard{}, err
	}
	if c.Tombstone {
		return cell.Shard{}, nil
	}
	sh, _, err := cell.ShardOf(c, id)
	return sh, err
}
