package replica

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// Store is a node's replica storage: one pebble database holding every
// table's partitions under the key layout documented in key.go. It is safe
// for concurrent use.
type Store struct {
	db        *pebble.DB
	writeOpts *pebble.WriteOptions
}

// Open opens (creating it if needed) the store in directory dir.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	db, err := pebble.Open(dir, opts.pebbleOptions())
	if err != nil {
		return nil, fmt.Errorf("replica: open store in %s: %w", dir, err)
	}
	s := &Store{db: db, writeOpts: pebble.Sync}
	if opts.NoSync {
		s.writeOpts = pebble.NoSync
	}
	return s, nil
}

// Close flushes nothing extra (every acknowledged write is already in the
// write-ahead log), closes the database and releases its block cache.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("replica: close store: %w", err)
	}
	return nil
}

// apply validates m against table l and writes it as one pebble batch, so a
// mutation of a partition is atomic; it returns once the batch is durable
// (unless Options.NoSync). An invalid mutation writes nothing and returns an
// error wrapping ErrBadRequest.
func (s *Store) apply(l *layout, m *replicapb.Mutation) error {
	if m.GetTableId() != l.id {
		return l.badRequest("mutation is for table id %d", m.GetTableId())
	}
	if len(m.Rows) == 0 && m.PartitionDeletion == nil {
		return l.badRequest("mutation writes nothing: no rows and no partition deletion")
	}
	var pkBuf, keyBuf, valBuf [128]byte
	pk, err := l.serializePartitionKey(pkBuf[:0], m.PartitionKey, m.Token)
	if err != nil {
		return err
	}
	key := appendPartitionPrefix(keyBuf[:0], l.id, m.Token, pk)
	prefixLen := len(key)
	val := valBuf[:0]

	b := s.db.NewBatch()
	defer b.Close()
	if m.PartitionDeletion != nil {
		if err := checkTimestamp(*m.PartitionDeletion); err != nil {
			return l.badRequest("partition deletion: %v", err)
		}
		key = append(key[:prefixLen], kindPartitionDeletion)
		val = appendValue(val[:0], cell.Cell{Timestamp: *m.PartitionDeletion, Tombstone: true})
		if err := b.Merge(key, val, nil); err != nil {
			return err
		}
	}
	for i, row := range m.Rows {
		if row == nil || (len(row.Cells) == 0 && row.Marker == nil && row.Deletion == nil) {
			return l.badRequest("row %d writes nothing: no cells, marker or deletion", i)
		}
		if len(row.Clustering) != len(l.clustering) {
			return l.badRequest("row %d has %d clustering components, want %d (%s)", i, len(row.Clustering), len(l.clustering), names(l.clustering))
		}
		key = append(key[:prefixLen], kindRow)
		if key, err = l.appendClusteringKey(key, row.Clustering); err != nil {
			return l.badRequest("row %d: %v", i, err)
		}
		rowLen := len(key)
		if row.Deletion != nil {
			if err := checkTimestamp(*row.Deletion); err != nil {
				return l.badRequest("row %d deletion: %v", i, err)
			}
			key = append(key[:rowLen], rowDeletion)
			val = appendValue(val[:0], cell.Cell{Timestamp: *row.Deletion, Tombstone: true})
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
		if row.Marker != nil {
			if err := checkTimestamp(*row.Marker); err != nil {
				return l.badRequest("row %d marker: %v", i, err)
			}
			key = append(key[:rowLen], rowMarker)
			val = appendValue(val[:0], cell.Cell{Timestamp: *row.Marker})
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
		for _, c := range row.Cells {
			if c == nil {
				return l.badRequest("row %d has a nil cell", i)
			}
			typ, err := l.regularType(c.Column)
			if err != nil {
				return err
			}
			if err := checkTimestamp(c.Timestamp); err != nil {
				return l.badRequest("row %d column %q: %v", i, c.Column, err)
			}
			if !c.Tombstone {
				if err := typ.Check(nonNil(c.Value)); err != nil {
					return l.badRequest("row %d column %q: %v", i, c.Column, err)
				}
			}
			key = append(key[:rowLen], rowCell)
			key = append(key, c.Column...)
			val = appendValue(val[:0], cell.Cell{Timestamp: c.Timestamp, Value: c.Value, Tombstone: c.Tombstone})
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
	}
	if err := b.Commit(s.writeOpts); err != nil {
		return fmt.Errorf("replica: table %s: commit: %w", l.name, err)
	}
	return nil
}

// read serves req, a read of one partition of table l, from storage. The
// response's status is left for the caller to set.
func (s *Store) read(l *layout, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	if req.GetTableId() != l.id {
		return nil, l.badRequest("read is for table id %d", req.GetTableId())
	}
	for _, name := range req.Columns {
		if _, err := l.regularType(name); err != nil {
			return nil, err
		}
	}
	pk, err := l.serializePartitionKey(nil, req.PartitionKey, req.Token)
	if err != nil {
		return nil, err
	}
	prefix := appendPartitionPrefix(nil, l.id, req.Token, pk)
	prefixLen := len(prefix)
	lower, upper, err := l.rowBounds(prefix, req.GetFilter())
	if err != nil {
		return nil, err
	}

	partKey := append(prefix[:prefixLen:prefixLen], kindPartitionDeletion)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: partKey, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("replica: table %s: read: %w", l.name, err)
	}
	defer it.Close()

	resp := &replicapb.ReadResponse{}
	partDel := cell.NoTimestamp
	if it.First() && bytes.Equal(it.Key(), partKey) {
		c, err := iterCell(it)
		if err != nil {
			return nil, l.corrupt(it.Key(), err)
		}
		partDel = c.Timestamp
		resp.PartitionDeletion = &partDel
	}
	if bytes.Compare(lower, upper) >= 0 {
		return resp, nil
	}

	r := rowReader{l: l, req: req, partDel: partDel, resp: resp, rowsStart: prefixLen + 1}
	for valid := it.SeekGE(lower); valid; valid = it.Next() {
		done, err := r.add(it)
		if err != nil {
			return nil, err
		}
		if done {
			return resp, nil
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("replica: table %s: read: %w", l.name, err)
	}
	r.flush()
	return resp, nil
}

// rowBounds returns the key range [lower, upper) of the rows filter selects
// in the partition with key prefix prefix.
func (l *layout) rowBounds(prefix []byte, f *replicapb.ClusteringFilter) (lower, upper []byte, err error) {
	rows := append(prefix[:len(prefix):len(prefix)], kindRow)
	if f == nil {
		return rows, prefixEnd(rows), nil
	}
	if f.Lower != nil || f.Upper != nil {
		if len(f.Equal) >= len(l.clustering) {
			return nil, nil, l.badRequest("filter restricts %d clustering columns by equality and one more by range, the table has %d (%s)", len(f.Equal), len(l.clustering), names(l.clustering))
		}
	}
	if rows, err = l.appendClusteringKey(rows, f.Equal); err != nil {
		return nil, nil, l.badRequest("filter: %v", err)
	}
	lower, upper = rows, prefixEnd(rows)
	col := len(f.Equal)
	bound := func(b *replicapb.Bound, what string) ([]byte, error) {
		v := nonNil(b.Value)
		if err := l.clustering[col].typ.Check(v); err != nil {
			return nil, l.badRequest("filter %s bound on clustering column %q: %v", what, l.clustering[col].name, err)
		}
		return appendClustering(rows[:len(rows):len(rows)], l.clustering[col].typ, v), nil
	}
	if f.Lower != nil {
		k, err := bound(f.Lower, "lower")
		if err != nil {
			return nil, nil, err
		}
		if lower = k; !f.Lower.Inclusive {
			lower = prefixEnd(k)
		}
	}
	if f.Upper != nil {
		k, err := bound(f.Upper, "upper")
		if err != nil {
			return nil, nil, err
		}
		if upper = k; f.Upper.Inclusive {
			upper = prefixEnd(k)
		}
	}
	return lower, upper, nil
}

// rowReader assembles the rows of a partition from its keys, in order.
type rowReader struct {
	l         *layout
	req       *replicapb.ReadRequest
	partDel   int64
	resp      *replicapb.ReadResponse
	rowsStart int // offset of the clustering key in a row's keys

	rowKey     []byte // the current row's key up to its clustering key; empty between rows
	clustering [][]byte
	row        cell.Row
	live       uint32 // live rows added to resp
}

// add adds the key and value at it to the current row, finishing the row
// before it if it belongs to a new one. It reports done when the read's limit
// is reached.
func (r *rowReader) add(it *pebble.Iterator) (done bool, err error) {
	k := it.Key()
	if len(r.rowKey) == 0 || len(k) <= len(r.rowKey) || !bytes.HasPrefix(k, r.rowKey) {
		if r.flush() {
			return true, nil
		}
		rest := k[r.rowsStart:]
		r.clustering = make([][]byte, len(r.l.clustering))
		for i, c := range r.l.clustering {
			if r.clustering[i], rest, err = decodeClustering(rest, c.typ); err != nil {
				return false, r.l.corrupt(k, err)
			}
		}
		if len(rest) == 0 {
			return false, r.l.corrupt(k, errBadKey)
		}
		r.rowKey = append(r.rowKey[:0], k[:len(k)-len(rest)]...)
		r.row = cell.EmptyRow()
	}
	c, err := iterCell(it)
	if err != nil {
		return false, r.l.corrupt(k, err)
	}
	switch entry := k[len(r.rowKey):]; entry[0] {
	case rowDeletion:
		r.row.Deletion = c.Timestamp
	case rowMarker:
		r.row.Marker = c.Timestamp
	case rowCell:
		name := entry[1:]
		if _, ok := r.l.regular[string(name)]; !ok {
			return false, nil // a dropped column: not part of the row any more
		}
		if !c.Tombstone {
			c.Value = bytes.Clone(c.Value)
		}
		r.row.Columns = append(r.row.Columns, cell.Column{Name: string(name), Cell: c})
	default:
		return false, r.l.corrupt(k, errBadKey)
	}
	return false, nil
}

// flush adds the current row, if any, to the response, and reports whether
// the limit is now reached.
func (r *rowReader) flush() (limitReached bool) {
	if len(r.rowKey) == 0 {
		return false
	}
	row := r.row.Purge(r.partDel)
	live := row.Live(r.partDel)
	r.rowKey = r.rowKey[:0]
	out := &replicapb.Row{Clustering: r.clustering}
	if row.Marker != cell.NoTimestamp {
		out.Marker = &row.Marker
	}
	if row.Deletion != cell.NoTimestamp {
		out.Deletion = &row.Deletion
	}
	for _, c := range row.Columns {
		if !r.selected(c.Name) {
			continue
		}
		out.Cells = append(out.Cells, &replicapb.Cell{Column: c.Name, Value: c.Value, Timestamp: c.Timestamp, Tombstone: c.Tombstone})
	}
	if !live && out.Marker == nil && out.Deletion == nil && len(out.Cells) == 0 {
		return false
	}
	r.resp.Rows = append(r.resp.Rows, out)
	if live {
		r.live++
	}
	return r.req.Limit > 0 && r.live >= r.req.Limit
}

func (r *rowReader) selected(name string) bool {
	if len(r.req.Columns) == 0 {
		return true
	}
	for _, c := range r.req.Columns {
		if c == name {
			return true
		}
	}
	return false
}

// iterCell decodes the value at it. The cell's Value aliases the iterator's
// memory.
func iterCell(it *pebble.Iterator) (cell.Cell, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return cell.Cell{}, err
	}
	return decodeValue(v)
}

// errCorrupt is wrapped by errors about stored data that does not decode.
var errCorrupt = errors.New("replica: corrupt data")

func (l *layout) corrupt(key []byte, err error) error {
	return fmt.Errorf("%w: table %s: key %x: %w", errCorrupt, l.name, key, err)
}
