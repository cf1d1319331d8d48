package replica

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Store is a node's replica storage: one pebble database holding every
// table's partitions under the key layout documented in key.go. It is safe
// for concurrent use.
type Store struct {
	db        *pebble.DB
	writeOpts *pebble.WriteOptions
	stalls    stalls

	// closeMu keeps Close from closing the database under a metrics scrape.
	closeMu sync.RWMutex
	closed  bool
}

// Open opens (creating it if needed) the store in directory dir.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	s := &Store{writeOpts: pebble.Sync}
	po := opts.pebbleOptions()
	po.EventListener = s.eventListener(pebbleLogger{opts.Logger})
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("replica: open store in %s: %w", dir, err)
	}
	s.db = db
	if opts.NoSync {
		s.writeOpts = pebble.NoSync
	}
	return s, nil
}

// Close closes the database and releases its block cache. Every
// acknowledged write is already in the write-ahead log.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("replica: close store: %w", err)
	}
	return nil
}

// metrics returns pebble's metrics, or false once the store is closed.
func (s *Store) metrics() (*pebble.Metrics, bool) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return nil, false
	}
	return s.db.Metrics(), true
}

// Apply validates m against table t and writes it as one pebble batch, so a
// mutation of a partition is atomic; it returns once the batch is durable
// (unless Options.NoSync). An invalid mutation writes nothing and returns an
// error wrapping ErrBadRequest that names the table and what was wrong.
// Apply ignores the limiter: the Service consults it first.
func (s *Store) Apply(t *schema.Table, m *replicapb.Mutation) error {
	if m.GetTableId() != uint64(t.ID) {
		return badRequest(t, "mutation is for table id %d", m.GetTableId())
	}
	if len(m.Rows) == 0 && m.PartitionDeletion == nil {
		return badRequest(t, "mutation writes nothing: no rows and no partition deletion")
	}
	var pkBuf, keyBuf, valBuf [128]byte
	pk, err := serializePartitionKey(t, pkBuf[:0], m.PartitionKey, m.Token)
	if err != nil {
		return err
	}
	key := appendPartitionPrefix(keyBuf[:0], uint64(t.ID), m.Token, pk)
	prefixLen := len(key)
	val := valBuf[:0]

	b := s.db.NewBatch()
	defer b.Close()
	if m.PartitionDeletion != nil {
		if err := checkTimestamp(*m.PartitionDeletion); err != nil {
			return badRequest(t, "partition deletion: %v", err)
		}
		key = append(key[:prefixLen], kindPartitionDeletion)
		val = appendValue(val[:0], cell.Cell{Timestamp: *m.PartitionDeletion, Tombstone: true})
		if err := b.Merge(key, val, nil); err != nil {
			return err
		}
	}
	for i, row := range m.Rows {
		if row == nil || (len(row.Cells) == 0 && row.Marker == nil && row.Deletion == nil) {
			return badRequest(t, "row %d writes nothing: no cells, marker or deletion", i)
		}
		if len(row.Clustering) != len(t.Clustering) {
			return badRequest(t, "row %d has %d clustering components, want %d (%s)", i, len(row.Clustering), len(t.Clustering), names(t.Clustering))
		}
		key = append(key[:prefixLen], kindRow)
		if key, err = appendClusteringKey(t, key, row.Clustering); err != nil {
			return badRequest(t, "row %d: %v", i, err)
		}
		rowLen := len(key)
		if row.Deletion != nil {
			if err := checkTimestamp(*row.Deletion); err != nil {
				return badRequest(t, "row %d deletion: %v", i, err)
			}
			key = append(key[:rowLen], rowDeletion)
			val = appendValue(val[:0], cell.Cell{Timestamp: *row.Deletion, Tombstone: true})
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
		if row.Marker != nil {
			if err := checkTimestamp(*row.Marker); err != nil {
				return badRequest(t, "row %d marker: %v", i, err)
			}
			key = append(key[:rowLen], rowMarker)
			val = appendValue(val[:0], cell.Cell{Timestamp: *row.Marker})
			if err := b.Merge(key, val, nil); err != nil {
				return err
			}
		}
		for _, c := range row.Cells {
			if c == nil {
				return badRequest(t, "row %d has a nil cell", i)
			}
			typ, err := regularType(t, c.Column)
			if err != nil {
				return err
			}
			if err := checkTimestamp(c.Timestamp); err != nil {
				return badRequest(t, "row %d column %q: %v", i, c.Column, err)
			}
			if !c.Tombstone {
				if err := typ.Check(nonNil(c.Value)); err != nil {
					return badRequest(t, "row %d column %q: %v", i, c.Column, err)
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
		return fmt.Errorf("replica: table %s: commit: %w", t.QualifiedName(), err)
	}
	return nil
}

// ReadPartition serves req, a read of one partition of table t, from
// storage, ignoring req's limiter. The response has STATUS_OK and holds the
// partition tombstone and the selected rows in clustering order (in reverse
// with req.Reversed, reading backwards from the end of the range): live rows
// (at most req.Limit of them, if set) and, between them, deleted rows that
// carry tombstones, with cell tombstones and write timestamps, for a
// coordinator to reconcile replicas with. Cells and markers that tombstones
// shadow are left out. An invalid request returns an error wrapping
// ErrBadRequest.
func (s *Store) ReadPartition(t *schema.Table, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error) {
	if req.GetTableId() != uint64(t.ID) {
		return nil, badRequest(t, "read is for table id %d", req.GetTableId())
	}
	for _, name := range req.Columns {
		if _, err := regularType(t, name); err != nil {
			return nil, err
		}
	}
	pk, err := serializePartitionKey(t, nil, req.PartitionKey, req.Token)
	if err != nil {
		return nil, err
	}
	prefix := appendPartitionPrefix(nil, uint64(t.ID), req.Token, pk)
	prefixLen := len(prefix)
	lower, upper, err := rowBounds(t, prefix, req.GetFilter())
	if err != nil {
		return nil, err
	}

	partKey := append(prefix[:prefixLen:prefixLen], kindPartitionDeletion)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: partKey, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("replica: table %s: read: %w", t.QualifiedName(), err)
	}
	defer it.Close()

	resp := &replicapb.ReadResponse{Status: replicapb.Status_STATUS_OK}
	partDel := cell.NoTimestamp
	if it.First() && bytes.Equal(it.Key(), partKey) {
		c, err := iterCell(it)
		if err != nil {
			return nil, corrupt(t, it.Key(), err)
		}
		partDel = c.Timestamp
		resp.PartitionDeletion = &partDel
	}
	if bytes.Compare(lower, upper) >= 0 {
		return resp, nil
	}

	r := rowReader{t: t, req: req, partDel: partDel, resp: resp, rowsStart: prefixLen + 1}
	sc := scan{it: it, lower: lower, reversed: req.Reversed}
	for valid := sc.first(); valid; valid = sc.next() {
		done, err := r.add(it)
		if err != nil {
			return nil, err
		}
		if done {
			return resp, nil
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("replica: table %s: read: %w", t.QualifiedName(), err)
	}
	r.flush()
	return resp, nil
}

// scan steps it, an iterator whose upper bound is the end of the rows read,
// over the keys from lower up to that end: forwards, or backwards for a
// reversed read, so that a limit stops the scan at the rows it needs.
type scan struct {
	it       *pebble.Iterator
	lower    []byte
	reversed bool
}

func (s scan) first() bool {
	if s.reversed {
		return s.inRange(s.it.Last())
	}
	return s.it.SeekGE(s.lower)
}

func (s scan) next() bool {
	if s.reversed {
		return s.inRange(s.it.Prev())
	}
	return s.it.Next()
}

func (s scan) inRange(valid bool) bool { return valid && bytes.Compare(s.it.Key(), s.lower) >= 0 }

// rowBounds returns the key range [lower, upper) of the rows filter selects
// in the partition with key prefix prefix. A bound on a DESC column bounds
// the keys from the other side: its values are stored in reverse.
func rowBounds(t *schema.Table, prefix []byte, f *replicapb.ClusteringFilter) (lower, upper []byte, err error) {
	rows := append(prefix[:len(prefix):len(prefix)], kindRow)
	if f == nil {
		return rows, prefixEnd(rows), nil
	}
	if f.Lower != nil || f.Upper != nil {
		if len(f.Equal) >= len(t.Clustering) {
			return nil, nil, badRequest(t, "filter restricts %d clustering columns by equality and one more by range, the table has %d (%s)", len(f.Equal), len(t.Clustering), names(t.Clustering))
		}
	}
	if rows, err = appendClusteringKey(t, rows, f.Equal); err != nil {
		return nil, nil, badRequest(t, "filter: %v", err)
	}
	lower, upper = rows, prefixEnd(rows)
	if f.Lower == nil && f.Upper == nil {
		return lower, upper, nil
	}
	col := &t.Clustering[len(f.Equal)]
	bound := func(b *replicapb.Bound, what string) ([]byte, error) {
		v := nonNil(b.Value)
		if err := col.Type.Check(v); err != nil {
			return nil, badRequest(t, "filter %s bound on clustering column %q: %v", what, col.Name, err)
		}
		return appendClustering(rows[:len(rows):len(rows)], col.Type, col.Descending, v), nil
	}
	// The bounds on the column's values, as bounds on its keys.
	keyLower, keyUpper, lowerWhat, upperWhat := f.Lower, f.Upper, "lower", "upper"
	if col.Descending {
		keyLower, keyUpper, lowerWhat, upperWhat = f.Upper, f.Lower, "upper", "lower"
	}
	if keyLower != nil {
		k, err := bound(keyLower, lowerWhat)
		if err != nil {
			return nil, nil, err
		}
		if lower = k; !keyLower.Inclusive {
			lower = prefixEnd(k)
		}
	}
	if keyUpper != nil {
		k, err := bound(keyUpper, upperWhat)
		if err != nil {
			return nil, nil, err
		}
		if upper = k; keyUpper.Inclusive {
			upper = prefixEnd(k)
		}
	}
	return lower, upper, nil
}

// rowReader assembles the rows of a partition from its keys, in order or
// (req.Reversed) in reverse order.
type rowReader struct {
	t         *schema.Table
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
		r.clustering = make([][]byte, len(r.t.Clustering))
		for i, c := range r.t.Clustering {
			if r.clustering[i], rest, err = decodeClustering(rest, c.Type, c.Descending); err != nil {
				return false, corrupt(r.t, k, err)
			}
		}
		if len(rest) == 0 {
			return false, corrupt(r.t, k, errBadKey)
		}
		r.rowKey = append(r.rowKey[:0], k[:len(k)-len(rest)]...)
		r.row = cell.EmptyRow()
	}
	c, err := iterCell(it)
	if err != nil {
		return false, corrupt(r.t, k, err)
	}
	switch entry := k[len(r.rowKey):]; entry[0] {
	case rowDeletion:
		r.row.Deletion = c.Timestamp
	case rowMarker:
		r.row.Marker = c.Timestamp
	case rowCell:
		name := entry[1:]
		if col, ok := r.t.Column(string(name)); !ok || col.Kind != schema.RegularColumn {
			return false, nil // a dropped column: not part of the row any more
		}
		if !c.Tombstone {
			c.Value = bytes.Clone(c.Value)
		}
		r.row.Columns = append(r.row.Columns, cell.Column{Name: string(name), Cell: c})
	default:
		return false, corrupt(r.t, k, errBadKey)
	}
	return false, nil
}

// flush adds the current row, if any, to the response, and reports whether
// the limit is now reached.
func (r *rowReader) flush() (limitReached bool) {
	if len(r.rowKey) == 0 {
		return false
	}
	if r.req.Reversed {
		// A backward scan meets a row's cells last column first.
		slices.Reverse(r.row.Columns)
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

func corrupt(t *schema.Table, key []byte, err error) error {
	return fmt.Errorf("%w: table %s: key %x: %w", errCorrupt, t.QualifiedName(), key, err)
}
