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

// ErrTooManyTombstones is wrapped by the error of a read that scanned more
// tombstones than Options.TombstoneFailureThreshold.
var ErrTooManyTombstones = errors.New("replica: too many tombstones")

// badRequest returns an error wrapping ErrBadRequest that names the table.
func badRequest(t *schema.Table, format string, args ...any) error {
	return fmt.Errorf("%w: table %s: %s", ErrBadRequest, t.QualifiedName(), fmt.Sprintf(format, args...))
}

// regularType returns the type of regular column name of t, or a
// bad-request error that says why name is not one.
func regularType(t *schema.Table, name string) (schema.Type, error) {
	c, ok := t.Column(name)
	if !ok {
		return schema.TypeInvalid, badRequest(t, "unknown column %q", name)
	}
	if c.Kind != schema.RegularColumn {
		return schema.TypeInvalid, badRequest(t, "column %q is a %s column, not a regular column", name, c.Kind)
	}
	return c.Type, nil
}

// serializePartitionKey checks the partition key components against the
// table and token, and appends the serialized key (partitioner.AppendKey) to
// dst.
func serializePartitionKey(t *schema.Table, dst []byte, components [][]byte, token int64) ([]byte, error) {
	if len(components) != len(t.PartitionKey) {
		return nil, badRequest(t, "partition key has %d components, want %d (%s)", len(components), len(t.PartitionKey), names(t.PartitionKey))
	}
	for i, c := range components {
		if err := t.PartitionKey[i].Check(nonNil(c)); err != nil {
			return nil, badRequest(t, "partition key column %q: %v", t.PartitionKey[i].Name, err)
		}
	}
	if err := partitioner.CheckComponents(components); err != nil {
		return nil, badRequest(t, "partition key: %v", err)
	}
	start := len(dst)
	dst = partitioner.AppendKey(dst, components)
	key := dst[start:]
	if len(key) == 0 {
		return nil, badRequest(t, "partition key is empty")
	}
	if want := partitioner.Token(key); token != want {
		return nil, badRequest(t, "token %d is not the partition key's token %d", token, want)
	}
	return dst, nil
}

// appendClusteringKey checks a full or partial clustering key (at most one
// component per clustering column, starting with the first) and appends its
// encoding to dst. Its errors are for the caller to wrap with badRequest.
func appendClusteringKey(t *schema.Table, dst []byte, components [][]byte) ([]byte, error) {
	if len(components) > len(t.Clustering) {
		return nil, fmt.Errorf("%d clustering components, the table has %d (%s)", len(components), len(t.Clustering), names(t.Clustering))
	}
	for i, c := range components {
		c = nonNil(c)
		if err := t.Clustering[i].Check(c); err != nil {
			return nil, fmt.Errorf("clustering column %q: %w", t.Clustering[i].Name, err)
		}
		dst = appendClustering(dst, t.Clustering[i].Type, t.Clustering[i].Descending, c)
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

func names(cols []schema.Column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
	}
	return b.String()
}
