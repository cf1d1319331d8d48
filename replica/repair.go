package replica

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Anti-entropy repair, the replica side: a table's partitions in a token range, read as a read
// would return them (ReadPartition without limits: live data and tombstones with their
// timestamps, without what the tombstones shadow), hashed per partition and per leaf (an equal
// token sub-range), and fetched as mutations that recreate them on another replica. Replicas
// that answer reads alike hash alike, whatever their storage holds besides (shadowed data one
// has purged and another not, merge operands not compacted yet).

// HashSize is the size of a partition or leaf hash.
const HashSize = 16

// MaxLeaves is the most leaves RangeHashes splits a range into.
const MaxLeaves = 4096

// TokenRange is the tokens t with Start < t <= End.
type TokenRange struct{ Start, End int64 }

// Check reports whether r is a range RangeHashes and ScanPartitions accept.
func (r TokenRange) Check() error {
	if r.Start >= r.End {
		return fmt.Errorf("%w: token range (%d, %d] is empty: its start must be below its end", ErrBadRequest, r.Start, r.End)
	}
	return nil
}

// Contains reports whether token lies in r.
func (r TokenRange) Contains(token int64) bool { return r.Start < token && token <= r.End }

// LeafRanges splits r into n leaves: n consecutive sub-ranges of (almost) equal width, the first
// starting at r.Start and the last ending at r.End. Leaves are empty when r holds fewer than n
// tokens. Every replica splits a range alike.
func LeafRanges(r TokenRange, n int) []TokenRange {
	span := uint64(r.End - r.Start) // start < end, so the difference fits
	out := make([]TokenRange, n)
	prev := r.Start
	for i := range n {
		hi, lo := bits.Mul64(span, uint64(i+1))
		q, _ := bits.Div64(hi, lo, uint64(n)) // span·(i+1)/n < 2^64 since i+1 ≤ n
		end := r.Start + int64(q)
		out[i] = TokenRange{Start: prev, End: end}
		prev = end
	}
	out[n-1].End = r.End
	return out
}

// keyRange returns the storage keys of table id's partitions whose tokens lie in r.
func keyRange(id schema.TableID, r TokenRange) (lower, upper []byte) {
	tokenKey := func(token int64) []byte {
		k := binary.BigEndian.AppendUint64(nil, uint64(id))
		return binary.BigEndian.AppendUint64(k, uint64(token)^(1<<63))
	}
	lower = tokenKey(r.Start + 1) // r.Start < r.End ≤ MaxInt64
	if r.End == math.MaxInt64 {
		_, upper = tableSpan(id)
		return lower, upper
	}
	return lower, tokenKey(r.End + 1)
}

// ScanPartitions calls fn, in token order, with each partition of table t whose token lies in r
// that holds anything a read returns, as the mutation that recreates it (see FetchPartition),
// until fn returns an error, which ScanPartitions returns.
func (s *Store) ScanPartitions(ctx context.Context, t *schema.Table, r TokenRange, fn func(*replicapb.Mutation) error) error {
	if err := r.Check(); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	lower, upper := keyRange(t.ID, r)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("replica: table %s: scan: %w", t.QualifiedName(), err)
	}
	defer it.Close()
	for valid := it.First(); valid; {
		if err := ctx.Err(); err != nil {
			return err
		}
		key := it.Key()
		_, token, pk, rest, err := decodePartitionPrefix(key)
		if err != nil {
			return corrupt(t, key, err)
		}
		next := prefixEnd(key[:len(key)-len(rest)])
		components := splitPartitionKey(pk, len(t.PartitionKey))
		if len(components) != len(t.PartitionKey) {
			return corrupt(t, key, errBadKey)
		}
		m, err := s.fetch(t, token, components)
		if err != nil {
			return err
		}
		if m != nil {
			if err := fn(m); err != nil {
				return err
			}
		}
		valid = it.SeekGE(next)
	}
	return it.Error()
}

// FetchPartition returns the partition of table t with key pk as the mutation that recreates
// what a read of the whole partition returns on this replica: its partition tombstone, range
// tombstones, and rows with their markers, row tombstones and cells (values and tombstones) at
// their timestamps, without what the tombstones shadow. It returns nil when the replica holds
// nothing of it. It reads without the tombstone failure threshold: repair must see everything.
func (s *Store) FetchPartition(t *schema.Table, token int64, pk [][]byte) (*replicapb.Mutation, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, errStoreClosed
	}
	return s.fetch(t, token, pk)
}

func (s *Store) fetch(t *schema.Table, token int64, pk [][]byte) (*replicapb.Mutation, error) {
	resp, err := s.readPartition(t, &replicapb.ReadRequest{TableId: uint64(t.ID), PartitionKey: pk, Token: token}, 0, nil, false)
	if err != nil {
		return nil, err
	}
	if resp.PartitionDeletion == nil && len(resp.RangeTombstones) == 0 && len(resp.Rows) == 0 && resp.StaticRow == nil {
		return nil, nil
	}
	return &replicapb.Mutation{TableId: uint64(t.ID), PartitionKey: pk, Token: token,
		Rows: resp.Rows, PartitionDeletion: resp.PartitionDeletion, RangeTombstones: resp.RangeTombstones, StaticRow: resp.StaticRow}, nil
}

// PartitionHash returns the hash of a partition as FetchPartition returns it.
func PartitionHash(m *replicapb.Mutation) ([HashSize]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return [HashSize]byte{}, err
	}
	sum := sha256.Sum256(b)
	return [HashSize]byte(sum[:HashSize]), nil
}

// RangeHashes returns the hashes of the leaves (LeafRanges(r, leaves)) of table t's partitions
// in r, and how many partitions r holds. A leaf's hash is the SHA-256 (first HashSize bytes) of
// its partitions' hashes in token order, all zero for an empty leaf.
func (s *Store) RangeHashes(ctx context.Context, t *schema.Table, r TokenRange, leaves int) ([][HashSize]byte, uint64, error) {
	if leaves < 1 || leaves > MaxLeaves {
		return nil, 0, fmt.Errorf("%w: %d leaves, want 1 to %d", ErrBadRequest, leaves, MaxLeaves)
	}
	ranges := LeafRanges(r, leaves)
	out := make([][HashSize]byte, leaves)
	var n uint64
	leaf := -1
	h := sha256.New()
	flush := func() {
		if leaf >= 0 {
			copy(out[leaf][:], h.Sum(nil))
		}
	}
	err := s.ScanPartitions(ctx, t, r, func(m *replicapb.Mutation) error {
		ph, err := PartitionHash(m)
		if err != nil {
			return err
		}
		i, _ := slices.BinarySearchFunc(ranges, m.Token, func(lr TokenRange, token int64) int {
			if lr.End < token {
				return -1
			}
			return 1
		})
		if i != leaf {
			flush()
			leaf = i
			h.Reset()
		}
		h.Write(ph[:])
		n++
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	flush()
	return out, n, nil
}

// AntiEntropy answers the anti-entropy requests (range_hashes, partition_hashes,
// fetch_partitions) over a replica's store: the hashes and the partitions a repair compares and
// streams. Its requests are internal traffic: the rate limiter
// never sees them.
type AntiEntropy struct {
	store  *Store
	schema SchemaSource
}

// AntiEntropy returns the anti-entropy service over s's store and schema.
func (s *Service) AntiEntropy() *AntiEntropy { return &AntiEntropy{store: s.store, schema: s.schema} }

func (a *AntiEntropy) table(id uint64) (*schema.Table, *replicapb.Error) {
	t, ok := a.schema.TableByID(schema.TableID(id))
	if !ok {
		return nil, &replicapb.Error{Code: replicapb.Error_UNKNOWN_TABLE, Message: unknownTable(id).Error()}
	}
	return t, nil
}

func repairError(err error) *replicapb.Error {
	code := replicapb.Error_INTERNAL
	if errors.Is(err, ErrBadRequest) {
		code = replicapb.Error_BAD_REQUEST
	}
	return &replicapb.Error{Code: code, Message: err.Error()}
}

func tokenRange(r *replicapb.RepairRange) (TokenRange, error) {
	if r == nil {
		return TokenRange{}, fmt.Errorf("%w: the request names no token range", ErrBadRequest)
	}
	tr := TokenRange{Start: r.Start, End: r.End}
	return tr, tr.Check()
}

// RangeHashes answers a range_hashes request.
func (a *AntiEntropy) RangeHashes(ctx context.Context, req *replicapb.RangeHashesRequest) (*replicapb.RangeHashesResponse, error) {
	t, perr := a.table(req.GetTableId())
	if perr != nil {
		return &replicapb.RangeHashesResponse{Status: replicapb.Status_STATUS_ERROR, Error: perr}, nil
	}
	r, err := tokenRange(req.GetRange())
	if err != nil {
		return &replicapb.RangeHashesResponse{Status: replicapb.Status_STATUS_ERROR, Error: repairError(err)}, nil
	}
	leaves, n, err := a.store.RangeHashes(ctx, t, r, int(req.GetLeaves()))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &replicapb.RangeHashesResponse{Status: replicapb.Status_STATUS_ERROR, Error: repairError(err)}, nil
	}
	resp := &replicapb.RangeHashesResponse{Status: replicapb.Status_STATUS_OK, Partitions: n, Leaves: make([][]byte, len(leaves))}
	for i := range leaves {
		resp.Leaves[i] = leaves[i][:]
	}
	return resp, nil
}

// PartitionHashes answers a partition_hashes request.
func (a *AntiEntropy) PartitionHashes(ctx context.Context, req *replicapb.PartitionHashesRequest) (*replicapb.PartitionHashesResponse, error) {
	t, perr := a.table(req.GetTableId())
	if perr != nil {
		return &replicapb.PartitionHashesResponse{Status: replicapb.Status_STATUS_ERROR, Error: perr}, nil
	}
	r, err := tokenRange(req.GetRange())
	if err != nil {
		return &replicapb.PartitionHashesResponse{Status: replicapb.Status_STATUS_ERROR, Error: repairError(err)}, nil
	}
	resp := &replicapb.PartitionHashesResponse{Status: replicapb.Status_STATUS_OK}
	err = a.store.ScanPartitions(ctx, t, r, func(m *replicapb.Mutation) error {
		h, err := PartitionHash(m)
		if err != nil {
			return err
		}
		resp.Partitions = append(resp.Partitions, &replicapb.PartitionHash{Token: m.Token, PartitionKey: m.PartitionKey, Hash: h[:]})
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &replicapb.PartitionHashesResponse{Status: replicapb.Status_STATUS_ERROR, Error: repairError(err)}, nil
	}
	return resp, nil
}

// FetchPartitions answers a fetch_partitions request.
func (a *AntiEntropy) FetchPartitions(ctx context.Context, req *replicapb.FetchPartitionsRequest) (*replicapb.FetchPartitionsResponse, error) {
	t, perr := a.table(req.GetTableId())
	if perr != nil {
		return &replicapb.FetchPartitionsResponse{Status: replicapb.Status_STATUS_ERROR, Error: perr}, nil
	}
	resp := &replicapb.FetchPartitionsResponse{Status: replicapb.Status_STATUS_OK}
	for i, ref := range req.GetPartitions() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := serializePartitionKey(t, nil, ref.GetPartitionKey(), ref.GetToken()); err != nil {
			return &replicapb.FetchPartitionsResponse{Status: replicapb.Status_STATUS_ERROR, Error: repairError(fmt.Errorf("partition %d: %w", i, err))}, nil
		}
		m, err := a.store.FetchPartition(t, ref.GetToken(), ref.GetPartitionKey())
		if err != nil {
			return &replicapb.FetchPartitionsResponse{Status: replicapb.Status_STATUS_ERROR, Error: repairError(err)}, nil
		}
		if m != nil {
			resp.Mutations = append(resp.Mutations, m)
		}
	}
	return resp, nil
}
