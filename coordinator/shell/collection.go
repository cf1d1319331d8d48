package shell

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// This file turns the operations on non-frozen collections (schema.CollectionOp) into element
// cells and collection tombstones, reads a list before the operations that need its elements
// (by index or by value, as Cassandra does), and assembles a collection's value from its
// elements for a read.
//
// A list element's path is 16 bytes whose byte order is the list's order (schema.ListPathLen):
// 8 bytes of an ordering time (big-endian with the sign bit flipped), 4 random bytes of the
// write, and 4 bytes of the element's position in the write. Appended elements take the write's
// timestamp as their time, prepended ones its negation, so a later prepend comes before an
// earlier one and every prepend before every append, as Cassandra's time-based cell paths.

// listElement is one element cell an operation on a list by index or value resolved to.
type listElement struct {
	path, value []byte // value nil: a tombstone
}

// listPath returns the path of the i-th element of a write to a list at ordering time at.
func listPath(at int64, salt uint32, i int) []byte {
	p := make([]byte, 0, schema.ListPathLen)
	p = binary.BigEndian.AppendUint64(p, uint64(at)^(1<<63))
	p = binary.BigEndian.AppendUint32(p, salt)
	return binary.BigEndian.AppendUint32(p, uint32(i))
}

// appendCollection adds to row what cell c of a non-frozen collection writes at ts (with the
// write's TTL, expiring at expires when not 0); lists is what an operation on a list by index
// or value resolved to.
func appendCollection(row *replicapb.Row, c schema.Cell, lists []listElement, ts int64, ttl int32, expires int64) {
	name := c.Column.Name
	kind := c.Column.ParamKind()
	elem := func(path, value []byte) {
		pc := &replicapb.Cell{Column: name, Path: path, Timestamp: ts}
		if value == nil {
			pc.Tombstone = true
		} else {
			pc.Value = value
			if expires != 0 {
				pc.Ttl, pc.Expires = ttl, expires
			}
		}
		row.Cells = append(row.Cells, pc)
	}
	if c.Reads() {
		for _, e := range lists {
			elem(e.path, e.value)
		}
		return
	}
	switch c.Op {
	case schema.CollectionAssign:
		if c.Value == nil { // DELETE c, c = null
			row.Collections = append(row.Collections, &replicapb.CollectionDeletion{Column: name, Timestamp: ts})
			return
		}
		row.Collections = append(row.Collections, &replicapb.CollectionDeletion{Column: name, Timestamp: ts - 1})
	case schema.CollectionPut: // a map's key, a user type's field
		elem(c.Element, c.Value)
		return
	}
	if kind == schema.ParamUDT { // a whole value: its non-null fields
		for i, f := range schema.SplitFields(c.Value) {
			if f != nil {
				elem(schema.FieldPath(i), f)
			}
		}
		return
	}
	keys, values, err := schema.SplitCollection(c.Value, kind == schema.ParamMap && c.Op != schema.CollectionRemove)
	if err != nil { // the schema checked the value
		return
	}
	salt := rand.Uint32()
	for i, k := range keys {
		switch {
		case c.Op == schema.CollectionRemove: // a set's elements, a map's keys
			elem(k, nil)
		case kind == schema.ParamSet:
			elem(k, []byte{})
		case kind == schema.ParamMap:
			elem(k, nonNil(values[i]))
		case c.Op == schema.CollectionPrepend:
			elem(listPath(-ts, salt, i), nonNil(k))
		default:
			elem(listPath(ts, salt, i), nonNil(k))
		}
	}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// refuseListReads refuses, where they cannot read the list first (in a BATCH, in a conditional
// statement), the operations on lists that do.
func refuseListReads(w *schema.Write, pos cql.Pos, where string) error {
	for _, c := range w.Cells {
		if c.Reads() {
			return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("list operations by index or by value (column %s) are not supported %s: they read the list first", cql.QuoteIdent(c.Column.Name), where)}
		}
	}
	return nil
}

// resolveLists reads the row w writes, at consistency cl, when w has operations on lists by
// index or by value (l[i] = v, DELETE l[i], l = l - [..]), and returns by cell index the element
// cells they write; nil when w has none.
func (e *Executor) resolveLists(ctx context.Context, w *schema.Write, rf schema.Replication, token int64, cl coordinator.Consistency, now, dl time.Time) (map[int][]listElement, error) {
	reads := false
	for _, c := range w.Cells {
		reads = reads || c.Reads()
	}
	if !reads {
		return nil, nil
	}
	rows, _, err := e.read(ctx, readSpec{table: w.Table, pk: w.PartitionKey, token: token, clustering: w.Clustering, limit: 1, rf: rf, cl: cl}, now, dl)
	if err != nil {
		return nil, err
	}
	var row cell.Row
	if len(rows) > 0 {
		row = rows[0].Row
	}
	out := make(map[int][]listElement)
	for i, c := range w.Cells {
		if !c.Reads() {
			continue
		}
		paths, values := liveElements(c.Column, row, now.Unix())
		switch c.Op {
		case schema.CollectionPut:
			idx := int32(binary.BigEndian.Uint32(c.Element))
			if idx < 0 || int(idx) >= len(paths) {
				return nil, &coordinator.InvalidError{Err: fmt.Errorf("list index %d out of bound, list has size %d", idx, len(paths))}
			}
			out[i] = append(out[i], listElement{path: paths[idx], value: c.Value})
		case schema.CollectionRemove:
			drop, _, err := schema.SplitCollection(c.Value, false)
			if err != nil {
				return nil, &coordinator.InvalidError{Err: err}
			}
			for j, v := range values {
				if slices.ContainsFunc(drop, func(d []byte) bool { return string(d) == string(v) }) {
					out[i] = append(out[i], listElement{path: paths[j]})
				}
			}
		}
	}
	return out, nil
}

// liveElements returns the live elements of non-frozen collection column c in row at now
// (seconds since the Unix epoch), in path order: their paths and values.
func liveElements(c *schema.Column, row cell.Row, now int64) (paths, values [][]byte) {
	i, _ := slices.BinarySearchFunc(row.Columns, c.Name, func(x cell.Column, name string) int {
		if x.Name == name && x.Path == nil {
			return -1
		}
		return strings.Compare(x.Name, name)
	})
	del := max(row.Deletion, row.CollectionDeletion(c.Name))
	for _, e := range row.Columns[i:] {
		if e.Name != c.Name {
			break
		}
		if e.Path != nil && e.Live(now, del) {
			paths, values = append(paths, e.Path), append(values, e.Value)
		}
	}
	return paths, values
}

// collectionValue assembles the value of non-frozen collection column c of row at now: its live
// elements in the collection's order (a set's and a map's by their type's order, a list's by
// path), encoded as the frozen collection is; nil (null) when none is live, as in Cassandra.
func collectionValue(c *schema.Column, row cell.Row, now int64) []byte {
	paths, values := liveElements(c, row, now)
	if len(paths) == 0 {
		return nil
	}
	switch c.ParamKind() {
	case schema.ParamUDT: // fields by position (paths are 2 bytes big-endian, in order)
		fields := make([][]byte, int(binary.BigEndian.Uint16(paths[len(paths)-1]))+1)
		for i, p := range paths {
			fields[binary.BigEndian.Uint16(p)] = values[i]
		}
		return schema.JoinFields(fields)
	case schema.ParamList:
		return schema.JoinCollection(values, nil)
	case schema.ParamSet:
		slices.SortFunc(paths, c.CompareKeys)
		return schema.JoinCollection(paths, nil)
	}
	idx := make([]int, len(paths))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return c.CompareKeys(paths[a], paths[b]) })
	keys, vals := make([][]byte, len(idx)), make([][]byte, len(idx))
	for i, j := range idx {
		keys[i], vals[i] = paths[j], values[j]
	}
	return schema.JoinCollection(keys, vals)
}

// checkCollections applies the collection guardrails, limits = {bytes, items} (0: no limit;
// Options.MaxCollectionSize and MaxCollectionItems), to the collections w writes: the whole value
// of a frozen collection, the elements a write of a non-frozen one adds or sets.
func checkCollections(w *schema.Write, pos cql.Pos, limits [2]int) error {
	if limits == [2]int{} {
		return nil
	}
	for _, c := range w.Cells {
		kind, _ := c.Column.Type.Params()
		if c.Value == nil || (kind != schema.ParamList && kind != schema.ParamSet && kind != schema.ParamMap) || c.Op == schema.CollectionRemove {
			continue
		}
		size, items := len(c.Element)+len(c.Value), 1
		if c.Op != schema.CollectionPut {
			items = int(binary.BigEndian.Uint32(c.Value))
		}
		if limits[0] > 0 && size > limits[0] {
			return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("column %s: this write's collection is %d bytes; the guardrail allows %d bytes (max_collection_size)", cql.QuoteIdent(c.Column.Name), size, limits[0])}
		}
		if limits[1] > 0 && items > limits[1] {
			return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("column %s: this write's collection has %d elements; the guardrail allows %d (max_collection_items)", cql.QuoteIdent(c.Column.Name), items, limits[1])}
		}
	}
	return nil
}
