package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Secondary indexes (data format 12), node-local as Cassandra's: each replica indexes the rows it
// holds. An index entry is a key of its own in the reserved key space of table id 0, written in
// the same batch as the cell it indexes (Apply, ApplyStreamed; for a span streamed as sstables,
// durably before the span is ingested: sststream.go), so hints, repair, read repair, streaming
// and snapshots' restore keep the index beside the data without a step of their own:
//
//	8 zero bytes, 'X'   indexPrefix
//	table id            8 bytes, big-endian
//	index id            8 bytes, big-endian (schema.Index.ID)
//	indexed value       escaped and terminated (appendEscaped)
//	token               8 bytes, as in a row's key
//	partition key       escaped and terminated, as in a row's key
//	clustering          the row's clustering key encoding, as in a row's key
//
// with an empty value. Entries are never updated: a value overwritten, deleted or expired leaves
// its entry, which a read checks against the row it names (readIndex) and skips when the row no
// longer holds the value. A dropped index's or table's entries are deleted by a range deletion.
//
// Each index's build state on this node is a key of its own, 8 zero bytes, 'Y', table id,
// index id, whose value is one byte, indexBuilding or indexBuilt: an index created while the
// table held rows is built in the background (IndexBuilder), and its reads fail until then.
const (
	indexPrefix      = "\x00\x00\x00\x00\x00\x00\x00\x00X"
	indexStatePrefix = "\x00\x00\x00\x00\x00\x00\x00\x00Y"

	indexBuilding byte = 0
	indexBuilt    byte = 1
)

// ErrIndexNotBuilt is wrapped by the error of an index read on a node whose build of the index
// has not finished.
var ErrIndexNotBuilt = errors.New("secondary index is not built yet on this node")

// appendIndexID appends the prefix of every entry of index (table, index) after p.
func appendIndexID(dst []byte, p string, table, index uint64) []byte {
	dst = append(dst, p...)
	dst = binary.BigEndian.AppendUint64(dst, table)
	return binary.BigEndian.AppendUint64(dst, index)
}

// appendIndexValue appends the prefix of index (table, index)'s entries for value v.
func appendIndexValue(dst []byte, table, index uint64, v []byte) []byte {
	return appendEscaped(appendIndexID(dst, indexPrefix, table, index), v)
}

// appendIndexEntry appends the key of the entry for value v of the row whose serialized
// partition key is pk and whose clustering key encoding is ck.
func appendIndexEntry(dst []byte, table, index uint64, v []byte, token int64, pk, ck []byte) []byte {
	dst = appendIndexValue(dst, table, index, v)
	dst = binary.BigEndian.AppendUint64(dst, uint64(token)^(1<<63))
	dst = appendEscaped(dst, pk)
	return append(dst, ck...)
}

// indexTableSpan returns the span of every index entry (p = indexPrefix) or build state (p =
// indexStatePrefix) of table id.
func indexTableSpan(p string, id uint64) (start, end []byte) {
	start = binary.BigEndian.AppendUint64([]byte(p), id)
	return start, prefixEnd(start)
}

// indexCell writes to b the index entry of cell c of the row whose key (partition prefix, kind,
// clustering) is rowKey, when t indexes c's column; prefixLen is the partition prefix's length.
func indexCell(b *pebble.Batch, t *schema.Table, token int64, pk, rowKey []byte, prefixLen int, c *replicapb.Cell) error {
	if c.Tombstone {
		return nil
	}
	return indexEntries(b, t, c.Column, c.Path, c.Value, token, pk, rowKey[prefixLen+1:])
}

// indexEntries writes to b the entries of every index of t on column col for its cell (path,
// value) in the row (token, pk, ck): path is nil for a simple cell, a non-frozen collection's
// element path else.
func indexEntries(b *pebble.Batch, t *schema.Table, col string, path, value []byte, token int64, pk, ck []byte) error {
	for _, ix := range t.Indexes() {
		if ix.Column != col {
			continue
		}
		v, ok := indexedValue(t, &ix, path, value)
		if !ok {
			continue
		}
		if err := b.Set(appendIndexEntry(nil, uint64(t.ID), uint64(ix.ID), v, token, pk, ck), nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// indexedValue returns what index ix keeps of a live cell (path, value) of its column: the value
// of a simple cell (targets "" and full); of a non-frozen collection's element, its key (target
// keys: a map's key) or its value (target values: a set's element, which is its path, or a list's
// or map's value).
func indexedValue(t *schema.Table, ix *schema.Index, path, value []byte) ([]byte, bool) {
	switch ix.Target {
	case "", "full":
		return value, path == nil
	case "keys":
		return path, path != nil
	case "entries":
		return schema.EntryValue(path, value), path != nil
	case "values":
		if path == nil {
			return nil, false
		}
		if c, ok := t.Column(ix.Column); ok && strings.HasPrefix(string(c.Type), "set<") {
			return path, true
		}
		return value, true
	}
	return nil, false
}

// indexStreamed adds to b the index entry of a streamed storage entry (key, value), when it is
// a live cell of a column t indexes.
func indexStreamed(b *pebble.Batch, t *schema.Table, key, value []byte) error {
	if len(t.Indexes()) == 0 {
		return nil
	}
	_, token, pk, rest, err := decodePartitionPrefix(key)
	if err != nil {
		return err
	}
	ck, entry, ok, err := rowEntry(t, rest)
	if err != nil || !ok {
		return err
	}
	col, path, ok := entryCell(entry)
	if !ok {
		return nil
	}
	c, err := decodeValue(value)
	if err != nil || c.Tombstone {
		return err
	}
	return indexEntries(b, t, col, path, c.Value, token, pk, ck)
}

// entryCell returns the column and element path (nil for a simple cell) of a row entry that
// holds a cell: false for markers and tombstones.
func entryCell(entry []byte) (col string, path []byte, ok bool) {
	switch {
	case len(entry) > 0 && entry[0] == rowCell:
		return string(entry[1:]), nil, true
	case len(entry) > 0 && entry[0] == rowElement:
		name, path, err := decodeElementEntry(entry)
		return name, path, err == nil
	}
	return "", nil, false
}

// rowEntry splits what follows a partition prefix in a key into the clustering key encoding
// and the row entry after it: for a row's key (kindRow), or for the static row's (kindStatic),
// whose clustering key is empty. ok is false for other keys.
func rowEntry(t *schema.Table, rest []byte) (ck, entry []byte, ok bool, err error) {
	switch {
	case len(rest) > 0 && rest[0] == kindStatic:
		return nil, rest[1:], true, nil
	case len(rest) > 0 && rest[0] == kindRow:
		ck, entry, err = splitRowKey(t, rest[1:])
		return ck, entry, err == nil, err
	}
	return nil, nil, false, nil
}

// splitRowKey splits what follows kindRow in a row's key into the clustering key encoding and
// the row entry after it.
func splitRowKey(t *schema.Table, rest []byte) (ck, entry []byte, err error) {
	cur := rest
	for _, c := range t.Clustering {
		if _, cur, err = decodeClustering(cur, c.Type, c.Descending); err != nil {
			return nil, nil, err
		}
	}
	return rest[:len(rest)-len(cur)], cur, nil
}

// clusteringComponents decodes a clustering key encoding into its components.
func clusteringComponents(t *schema.Table, ck []byte) ([][]byte, error) {
	out := make([][]byte, len(t.Clustering))
	for i, c := range t.Clustering {
		v, rest, err := decodeClustering(ck, c.Type, c.Descending)
		if err != nil {
			return nil, err
		}
		out[i], ck = bytes.Clone(v), rest
	}
	if len(ck) != 0 {
		return nil, errBadKey
	}
	return out, nil
}

// IndexState returns the build state of index (table, index) on this node: built, and whether
// any state is recorded (a build begun).
func (s *Store) IndexState(table, index schema.TableID) (built, recorded bool, err error) {
	v, closer, err := s.db.Get(appendIndexID(nil, indexStatePrefix, uint64(table), uint64(index)))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("replica: index state: %w", err)
	}
	defer closer.Close()
	return len(v) == 1 && v[0] == indexBuilt, true, nil
}

// IndexStates returns every index build state recorded on this node: table id, index id and
// whether it is built.
func (s *Store) IndexStates() ([]IndexStateEntry, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, errStoreClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(indexStatePrefix), UpperBound: prefixEnd([]byte(indexStatePrefix))})
	if err != nil {
		return nil, fmt.Errorf("replica: index states: %w", err)
	}
	defer it.Close()
	var out []IndexStateEntry
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()[len(indexStatePrefix):]
		if len(k) != 16 {
			return nil, fmt.Errorf("replica: index states: %w: %x", errBadKey, it.Key())
		}
		v := it.Value()
		out = append(out, IndexStateEntry{
			Table: schema.TableID(binary.BigEndian.Uint64(k)), Index: schema.TableID(binary.BigEndian.Uint64(k[8:])),
			Built: len(v) == 1 && v[0] == indexBuilt,
		})
	}
	return out, it.Error()
}

// IndexStateEntry is one index's build state on this node (Store.IndexStates).
type IndexStateEntry struct {
	Table, Index schema.TableID
	Built        bool
}

func (s *Store) setIndexState(table, index schema.TableID, state byte) error {
	return s.db.Set(appendIndexID(nil, indexStatePrefix, uint64(table), uint64(index)), []byte{state}, pebble.Sync)
}

// DropIndex deletes every entry and the build state of index (table, index), durably.
func (s *Store) DropIndex(table, index schema.TableID) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	start := appendIndexID(nil, indexPrefix, uint64(table), uint64(index))
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(start, prefixEnd(start), nil); err != nil {
		return err
	}
	if err := b.Delete(appendIndexID(nil, indexStatePrefix, uint64(table), uint64(index)), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("replica: drop index %d of table id %d: %w", index, table, err)
	}
	return nil
}

// dropTableIndexes adds to b the deletion of every index entry and build state of table id.
func dropTableIndexes(b *pebble.Batch, id schema.TableID) error {
	for _, p := range []string{indexPrefix, indexStatePrefix} {
		start, end := indexTableSpan(p, uint64(id))
		if err := b.DeleteRange(start, end, nil); err != nil {
			return err
		}
	}
	return nil
}

// BuildIndex indexes the rows table t holds on this node for index ix: it records the build
// begun, writes an entry for every live cell of the indexed column (in batches, calling
// progress with the rows indexed so far), and records the index built. Writes that land during
// the build index themselves; an entry the build writes for a value overwritten meanwhile is a
// stale entry as any other. A build interrupted (ctx, a restart) starts again from the start.
func (s *Store) BuildIndex(ctx context.Context, t *schema.Table, ix *schema.Index, progress func(rows int)) error {
	if err := s.setIndexState(t.ID, ix.ID, indexBuilding); err != nil {
		return fmt.Errorf("replica: build index %s: %w", ix.Name, err)
	}
	if err := s.buildIndex(ctx, t, ix, progress); err != nil {
		return fmt.Errorf("replica: build index %s of table %s: %w", ix.Name, t.QualifiedName(), err)
	}
	return s.setIndexState(t.ID, ix.ID, indexBuilt)
}

// indexBuildBatch is how many entries a build writes per batch.
const indexBuildBatch = 1024

func (s *Store) buildIndex(ctx context.Context, t *schema.Table, ix *schema.Index, progress func(rows int)) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errStoreClosed
	}
	start, end := tableSpan(t.ID)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return err
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	rows, pending := 0, 0
	flush := func() error {
		if pending == 0 {
			return nil
		}
		if err := b.Commit(s.writeOpts); err != nil {
			return err
		}
		b.Close()
		b = s.db.NewBatch()
		pending = 0
		if progress != nil {
			progress(rows)
		}
		return ctx.Err()
	}
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		_, token, pk, rest, err := decodePartitionPrefix(key)
		if err != nil {
			return corrupt(t, key, err)
		}
		ck, entry, ok, err := rowEntry(t, rest)
		if err != nil {
			return corrupt(t, key, err)
		}
		if !ok {
			continue
		}
		col, path, ok := entryCell(entry)
		if !ok || col != ix.Column {
			continue
		}
		c, err := decodeValue(it.Value())
		if err != nil {
			return corrupt(t, key, err)
		}
		if c.Tombstone {
			continue
		}
		v, ok := indexedValue(t, ix, path, c.Value)
		if !ok {
			continue
		}
		if err := b.Set(appendIndexEntry(nil, uint64(t.ID), uint64(ix.ID), v, token, pk, ck), nil, nil); err != nil {
			return err
		}
		rows++
		if pending++; pending >= indexBuildBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return flush()
}

// readIndex serves a range read with index_id (see RangeReadRequest): the partitions of the
// range, from the start position, that hold a row whose indexed column is index_value here, at
// most req.Limit of them (0: no limit). Each candidate entry is checked against its row, read
// as a read of that row would (tombstones, expiry): a stale entry is skipped.
func (s *Store) readIndex(t *schema.Table, req *replicapb.RangeReadRequest) (*replicapb.RangeReadResponse, error) {
	ix, ok := t.IndexByID(schema.TableID(req.IndexId))
	if !ok {
		return nil, badRequest(t, "table has no index of id %d (dropped, or this node's schema is behind)", req.IndexId)
	}
	built, _, err := s.IndexState(t.ID, ix.ID)
	if err != nil {
		return nil, err
	}
	if !built {
		return nil, fmt.Errorf("replica: index %s of table %s: %w (it is being built from the rows this node holds; retry once it is)", ix.Name, t.QualifiedName(), ErrIndexNotBuilt)
	}
	if req.EndToken < req.StartToken {
		return nil, badRequest(t, "index read ends at token %d, before its start %d", req.EndToken, req.StartToken)
	}
	vp := appendIndexValue(nil, uint64(t.ID), uint64(ix.ID), req.IndexValue)
	tokenKey := func(token int64) []byte {
		return binary.BigEndian.AppendUint64(bytes.Clone(vp), uint64(token)^(1<<63))
	}
	var lower []byte
	switch {
	case len(req.StartPartitionKey) > 0:
		pk, err := serializePartitionKey(t, nil, req.StartPartitionKey, req.StartToken)
		if err != nil {
			return nil, err
		}
		k := appendEscaped(tokenKey(req.StartToken), pk)
		if req.After != nil {
			lower = k
		} else {
			lower = prefixEnd(k)
		}
	case req.StartToken == math.MaxInt64:
		return &replicapb.RangeReadResponse{Status: replicapb.Status_STATUS_OK}, nil
	default:
		lower = tokenKey(req.StartToken + 1)
	}
	upper := prefixEnd(vp)
	if req.EndToken != math.MaxInt64 {
		upper = tokenKey(req.EndToken + 1)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("replica: table %s: index read: %w", t.QualifiedName(), err)
	}
	defer it.Close()
	resp := &replicapb.RangeReadResponse{Status: replicapb.Status_STATUS_OK}
	now := s.now().Unix()
	for valid := it.First(); valid; {
		key := it.Key()
		rest := key[len(vp):]
		if len(rest) < 8 {
			return nil, corrupt(t, key, errBadKey)
		}
		token := int64(binary.BigEndian.Uint64(rest) ^ (1 << 63))
		pk, ck, err := decodeEscaped(rest[8:])
		if err != nil {
			return nil, corrupt(t, key, err)
		}
		components := splitPartitionKey(pk, len(t.PartitionKey))
		var clustering [][]byte
		if len(ck) > 0 || !t.HasStatic() { // else the entry of a static column (no clustering key)
			if clustering, err = clusteringComponents(t, ck); err != nil {
				return nil, corrupt(t, key, err)
			}
		}
		live, err := s.rowHolds(t, ix, components, token, clustering, req.IndexValue, now)
		if err != nil {
			return nil, err
		}
		if !live {
			valid = it.Next() // a stale entry
			continue
		}
		resp.Partitions = append(resp.Partitions, &replicapb.RangePartition{PartitionKey: components, Token: token,
			Page: &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK}})
		if req.Limit > 0 && len(resp.Partitions) >= int(req.Limit) || len(resp.Partitions) >= maxRangePartitions {
			resp.Stopped = true
			break
		}
		valid = it.SeekGE(prefixEnd(key[:len(key)-len(ck)])) // the next partition
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("replica: table %s: index read: %w", t.QualifiedName(), err)
	}
	return resp, nil
}

// rowHolds reports whether the row (pk, clustering) of t holds value v in column col at now, as a
// read of it returns it here; the static row when col is static.
func (s *Store) rowHolds(t *schema.Table, ix *schema.Index, pk [][]byte, token int64, clustering [][]byte, v []byte, now int64) (bool, error) {
	col := ix.Column
	req := &replicapb.ReadRequest{TableId: uint64(t.ID), PartitionKey: pk, Token: token, Columns: []string{col}}
	static := t.IsStatic(col)
	switch {
	case static:
		req.Limit = 1 // the static row comes with the page
	case len(clustering) > 0:
		req.Filter = &replicapb.ClusteringFilter{Equal: clustering}
	}
	resp, err := s.readPartition(t, req, 0, nil, false)
	if err != nil {
		return false, err
	}
	rows := resp.Rows
	if static {
		rows = nil
		if resp.StaticRow != nil {
			rows = []*replicapb.Row{resp.StaticRow}
		}
	}
	for _, r := range rows {
		if !slicesEqual(r.Clustering, clustering) {
			continue
		}
		for _, c := range r.Cells {
			if c.Column != col || c.Tombstone || c.Expires != 0 && c.Expires <= now {
				continue
			}
			if got, ok := indexedValue(t, ix, c.Path, c.Value); ok && bytes.Equal(got, v) {
				return true, nil
			}
		}
	}
	return false, nil
}

func slicesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TableSource finds a table of the schema by id (a *schema.Schema, or the node's schema
// holder).
type TableSource interface {
	TableByID(id schema.TableID) (*schema.Table, bool)
}
