package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// maxRangePartitions bounds the partitions one range read page returns, whatever its limits: a
// range of many partitions that hold only tombstones still ends its page.
const maxRangePartitions = 4096

// ReadRange serves one page of a scan of a token range of table t (a RangeReadRequest): the
// partitions whose tokens lie in the range, in storage order (token, then serialized partition
// key), from the request's start position to its end token, each read as ReadPartition reads a
// whole partition. It stops once the page holds req.Limit live rows or req.PageBytes bytes of rows
// (inside a partition, whose page then says where), or maxRangePartitions partitions, and says so
// (RangeReadResponse.stopped). An invalid request returns an error wrapping ErrBadRequest.
func (s *Store) ReadRange(t *schema.Table, req *replicapb.RangeReadRequest) (*replicapb.RangeReadResponse, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if req.GetTableId() != uint64(t.ID) {
		return nil, badRequest(t, "range read is for table id %d", req.GetTableId())
	}
	if req.After != nil && len(req.StartPartitionKey) == 0 {
		return nil, badRequest(t, "range read resumes after a row but names no partition")
	}
	if req.IndexId != 0 {
		return s.readIndex(t, req) // index.go
	}
	tableStart, tableEnd := tableSpan(t.ID)
	tokenKey := func(token int64) []byte {
		k := binary.BigEndian.AppendUint64(nil, uint64(t.ID))
		return binary.BigEndian.AppendUint64(k, uint64(token)^(1<<63))
	}
	// lower is where the partitions to scan start; the first one is resumed after req.After.
	var lower, resumePrefix []byte
	switch {
	case len(req.StartPartitionKey) > 0:
		pk, err := serializePartitionKey(t, nil, req.StartPartitionKey, req.StartToken)
		if err != nil {
			return nil, err
		}
		prefix := appendPartitionPrefix(nil, uint64(t.ID), req.StartToken, pk)
		if req.After != nil {
			lower, resumePrefix = prefix, prefix
		} else {
			lower = prefixEnd(prefix)
		}
	case req.StartToken == math.MaxInt64:
		return &replicapb.RangeReadResponse{Status: replicapb.Status_STATUS_OK}, nil
	default:
		lower = tokenKey(req.StartToken + 1)
	}
	if req.EndToken < req.StartToken {
		return nil, badRequest(t, "range read ends at token %d, before its start %d", req.EndToken, req.StartToken)
	}
	upper := tableEnd
	if req.EndToken != math.MaxInt64 {
		upper = tokenKey(req.EndToken + 1)
	}
	if bytes.Compare(lower, tableStart) < 0 {
		lower = tableStart
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("replica: table %s: range read: %w", t.QualifiedName(), err)
	}
	defer it.Close()
	// The partitions are read through a second iterator, reused (its bounds set per partition).
	pit, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("replica: table %s: range read: %w", t.QualifiedName(), err)
	}
	defer pit.Close()

	resp := &replicapb.RangeReadResponse{Status: replicapb.Status_STATUS_OK}
	now := s.now().Unix()
	var live, size uint64
	for valid := it.First(); valid; {
		key := it.Key()
		_, token, pk, rest, err := decodePartitionPrefix(key)
		if err != nil {
			return nil, corrupt(t, key, err)
		}
		next := prefixEnd(key[:len(key)-len(rest)])
		components := splitPartitionKey(pk, len(t.PartitionKey))
		if len(components) != len(t.PartitionKey) {
			return nil, corrupt(t, key, errBadKey)
		}
		preq := &replicapb.ReadRequest{TableId: uint64(t.ID), PartitionKey: components, Token: token}
		if resumePrefix != nil && bytes.Equal(key[:len(key)-len(rest)], resumePrefix) {
			preq.After = req.After // the partition the page resumes in
		}
		resumePrefix = nil
		if req.Limit > 0 {
			preq.Limit = uint32(uint64(req.Limit) - live)
		}
		if req.PageBytes > 0 {
			preq.PageBytes = uint32(uint64(req.PageBytes) - size)
		}
		// Tombstone keys sort before rows': a partition whose first key is a row's has none.
		rowsOnly := len(rest) > 0 && rest[0] == kindRow
		page, err := s.readPartition(t, preq, s.tombstoneFailure, pit, rowsOnly)
		if err != nil {
			return nil, err
		}
		if len(page.Rows) > 0 || page.PartitionDeletion != nil || len(page.RangeTombstones) > 0 || page.StaticRow != nil {
			resp.Partitions = append(resp.Partitions, &replicapb.RangePartition{PartitionKey: components, Token: token, Page: page})
			for _, r := range page.Rows {
				size += uint64(rowSize(r))
				if liveRow(r, now) {
					live++
				}
			}
			size += staticSize(page) // static.go
		}
		if page.StoppedAfter != nil ||
			req.Limit > 0 && live >= uint64(req.Limit) ||
			req.PageBytes > 0 && size >= uint64(req.PageBytes) ||
			len(resp.Partitions) >= maxRangePartitions {
			// Stopped inside the partition, or at its end with the page full: the caller
			// continues after the last partition returned (which the page full at its end
			// always has: a partition without rows adds nothing to the counts).
			resp.Stopped = len(resp.Partitions) > 0 || page.StoppedAfter != nil
			if resp.Stopped && len(resp.Partitions) == 0 {
				return nil, fmt.Errorf("replica: table %s: range read stopped without a partition", t.QualifiedName())
			}
			break
		}
		valid = it.SeekGE(next)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("replica: table %s: range read: %w", t.QualifiedName(), err)
	}
	return resp, nil
}

// liveRow reports whether row, as a read returns it (purged by its tombstones, expired cells
// turned into tombstones), is live at now: it has a live marker or a live cell.
func liveRow(r *replicapb.Row, now int64) bool {
	if r.Marker != nil && (r.MarkerExpires == 0 || r.MarkerExpires > now) {
		return true
	}
	for _, c := range r.Cells {
		if !c.Tombstone && (c.Expires == 0 || c.Expires > now) {
			return true
		}
	}
	return false
}

// ReadRange serves req, one page of a scan of a token range. Scans are exempt from the
// per-partition limiter: nothing is counted or decided. Outcomes are in the response's status;
// the error is non-nil only when ctx ended before the read.
func (s *Service) ReadRange(ctx context.Context, req *replicapb.RangeReadRequest) (*replicapb.RangeReadResponse, error) {
	t, ok := s.schema.TableByID(schema.TableID(req.GetTableId()))
	if !ok {
		return &replicapb.RangeReadResponse{Status: replicapb.Status_STATUS_ERROR,
			Error: &replicapb.Error{Code: replicapb.Error_UNKNOWN_TABLE, Message: unknownTable(req.GetTableId()).Error()}}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	var resp *replicapb.RangeReadResponse
	err := s.store.guarded(func() (err error) {
		resp, err = s.store.ReadRange(t, req)
		return err
	})
	if err != nil {
		return &replicapb.RangeReadResponse{Status: replicapb.Status_STATUS_ERROR,
			Error: &replicapb.Error{Code: s.classify(err, "range read", t), Message: err.Error()}}, nil
	}
	return resp, nil
}
