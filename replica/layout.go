package replica

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// ErrBadRequest is wrapped by every error about a malformed request or one
// that does not match the table: retrying it will not help.
var ErrBadRequest = errors.New("replica: bad request")

// ErrUnknownTable is wrapped by the error for a table id the node's schema
// does not hold (its schema may lag the coordinator's).
var ErrUnknownTable = errors.New("replica: unknown table")

// column is a named, typed column.
type column struct {
	name string
	typ  schema.Type
}

// layout is what storage needs to know of a table: its id, its key columns
// in key order, and the types of its regular columns.
type layout struct {
	id         uint64
	name       string // keyspace.table, for messages
	partition  []column
	clustering []column
	regular    map[string]schema.Type
}

// badRequest returns an error wrapping ErrBadRequest that names the table.
func (l *layout) badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: table %s: %s", ErrBadRequest, l.name, fmt.Sprintf(format, args...))
}

// regularType returns the type of regular column name, or a bad-request error
// that says why name is not one.
func (l *layout) regularType(name string) (schema.Type, error) {
	if t, ok := l.regular[name]; ok {
		return t, nil
	}
	for _, c := range l.partition {
		if c.name == name {
			return 0, l.badRequest("column %q is a partition key column, not a regular column", name)
		}
	}
	for _, c := range l.clustering {
		if c.name == name {
			return 0, l.badRequest("column %q is a clustering column, not a regular column", name)
		}
	}
	return 0, l.badRequest("unknown column %q", name)
}

// serializePartitionKey checks the partition key components against the
// table and token, and appends the serialized key (partitioner.AppendKey) to
// dst.
func (l *layout) serializePartitionKey(dst []byte, components [][]byte, token int64) ([]byte, error) {
	if len(components) != len(l.partition) {
		return nil, l.badRequest("partition key has %d components, want %d (%s)", len(components), len(l.partition), names(l.partition))
	}
	for i, c := range components {
		if err := l.partition[i].typ.Check(nonNil(c)); err != nil {
			return nil, l.badRequest("partition key column %q: %v", l.partition[i].name, err)
		}
	}
	if err := partitioner.CheckComponents(components); err != nil {
		return nil, l.badRequest("partition key: %v", err)
	}
	start := len(dst)
	dst = partitioner.AppendKey(dst, components)
	key := dst[start:]
	if len(key) == 0 {
		return nil, l.badRequest("partition key is empty")
	}
	if want := partitioner.Token(key); token != want {
		return nil, l.badRequest("token %d is not the partition key's token %d", token, want)
	}
	return dst, nil
}

// appendClusteringKey checks a full or partial clustering key (at most one
// component per clustering column, starting with the first) and appends its
// encoding to dst. Its errors are for the caller to wrap with badRequest.
func (l *layout) appendClusteringKey(dst []byte, components [][]byte) ([]byte, error) {
	if len(components) > len(l.clustering) {
		return nil, fmt.Errorf("%d clustering components, the table has %d (%s)", len(components), len(l.clustering), names(l.clustering))
	}
	for i, c := range components {
		c = nonNil(c)
		if err := l.clustering[i].typ.Check(c); err != nil {
			return nil, fmt.Errorf("clustering column %q: %w", l.clustering[i].name, err)
		}
		dst = appendClustering(dst, l.clustering[i].typ, c)
	}
	return dst, nil
}

// checkTimestamp rejects the timestamp reserved for "no timestamp". Its
// error is for the caller to wrap with badRequest.
func checkTimestamp(ts int64) error {
	if ts == cell.NoTimestamp {
		return fmt.Errorf("timestamp %d is reserved", ts)
	}
	return nil
}

// nonNil returns v, or an empty slice for nil: on the wire an empty value and
// an absent one look alike, and a key component or live cell is never null.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func names(cols []column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.name)
	}
	return b.String()
}
