package bench

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// The keys of the partitions. A text partition key is HotTextKey for the hot partition and
// "cold-<i>" for cold partition i (0 ≤ i < Partitions); a bigint key is HotBigIntKey and i+1.
const (
	HotTextKey   = "hot"
	HotBigIntKey = 0
)

// RowsPerPartition is how many distinct clustering keys writes use per partition: each write
// picks row j in [0, RowsPerPartition) and derives every clustering column's value from j, so
// writes overwrite a bounded set of rows and a read of the hot partition stays the same size
// however long the run.
const RowsPerPartition = 16

// timestampBase is the earliest generated timestamp, 2026-01-01T00:00:00Z in milliseconds since
// the Unix epoch; generated values fall in the year after it. A fixed base keeps seeded runs
// identical.
const timestampBase = 1_767_225_600_000

const millisPerYear = 365 * 24 * 3600 * 1000

// workload generates the statements of a run against one table. It is immutable and safe for
// concurrent use; randomness comes from the *rand.Rand each caller passes.
type workload struct {
	table      *schema.Table
	partitions int
	hot        float64
	writes     float64
	literal    bool // operations carry literal statements (gRPC)

	insertPrefix string // INSERT INTO ks.t (a, b, c) VALUES (
	selectPrefix string // SELECT * FROM ks.t WHERE pk =
	insertBound  string // INSERT INTO ks.t (a, b, c) VALUES (?, ?, ?)
	selectBound  string // SELECT * FROM ks.t WHERE pk = ?

	// coll is Config.Collection's column, nil without one; writes then update one of its
	// elements (see collectionWrite), with the statement writeBound.
	coll *schema.Column
}

// op is one generated operation.
type op struct {
	// stmt is the statement with literal values, for the gRPC API; "" when the workload binds
	// values instead (the native protocol's prepared statements).
	stmt string
	// args are the values the prepared statement binds: the partition key for a read; every
	// column, in table order, for a write. Go types as gocql marshals them (string, int32,
	// int64, float64, bool, []byte, time.Time; nil for NULL).
	args  []any
	hot   bool // the operation targets the hot partition
	write bool
}

// newWorkload prepares the statements for table t (as schema builds it from its CREATE TABLE),
// with the hot share, write fraction and cold partition count of cfg. It rejects a table whose
// partition key is not exactly one text or bigint column. With cfg.Protocol ProtocolGRPC the
// operations carry literal statements, else only bound values.
func newWorkload(t *schema.Table, cfg Config) (*workload, error) {
	if len(t.PartitionKey) != 1 || (t.PartitionKey[0].Type != schema.TypeText && t.PartitionKey[0].Type != schema.TypeBigInt) {
		parts := make([]string, len(t.PartitionKey))
		for i, c := range t.PartitionKey {
			parts[i] = cql.QuoteIdent(c.Name) + " " + c.Type.String()
		}
		return nil, fmt.Errorf("bench: table %s has partition key (%s); kvnode bench needs exactly one text or bigint partition key column",
			t.QualifiedName(), strings.Join(parts, ", "))
	}
	names := make([]string, len(t.Columns))
	marks := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = cql.QuoteIdent(c.Name)
		marks[i] = "?"
	}
	wl := &workload{
		table:        t,
		partitions:   cfg.Partitions,
		hot:          cfg.Hot,
		writes:       cfg.Writes,
		literal:      cfg.Protocol == ProtocolGRPC,
		insertPrefix: "INSERT INTO " + t.QualifiedName() + " (" + strings.Join(names, ", ") + ") VALUES (",
		selectPrefix: "SELECT * FROM " + t.QualifiedName() + " WHERE " + names[0] + " = ",
		insertBound:  "INSERT INTO " + t.QualifiedName() + " (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")",
		selectBound:  "SELECT * FROM " + t.QualifiedName() + " WHERE " + names[0] + " = ?",
	}
	if cfg.Collection != "" {
		if err := wl.setCollection(cfg.Collection); err != nil {
			return nil, err
		}
	}
	return wl, nil
}

// next draws one operation from r: the hot partition with probability w.hot, else a uniformly
// chosen cold one; a write with probability w.writes, else a read of the whole partition.
func (w *workload) next(r *rand.Rand) op {
	o := op{hot: w.partitions == 0 || r.Float64() < w.hot}
	o.write = r.Float64() < w.writes
	cold := 0
	if !o.hot {
		cold = r.IntN(w.partitions)
	}
	if o.write && w.coll != nil {
		return w.collectionWrite(o, r, cold)
	}
	if o.write {
		o.args = make([]any, len(w.table.Columns))
		o.args[0] = w.key(o.hot, cold)
		row := r.IntN(RowsPerPartition)
		for i, c := range w.table.Columns[1:] {
			if c.Kind == schema.ClusteringColumn {
				o.args[i+1] = rowValue(c.Type, row)
			} else {
				o.args[i+1] = randomValue(c.Type, r)
			}
		}
	} else {
		o.args = []any{w.key(o.hot, cold)}
	}
	if !w.literal {
		return o
	}
	var b strings.Builder
	b.Grow(128)
	if o.write {
		b.WriteString(w.insertPrefix)
		for i, v := range o.args {
			if i > 0 {
				b.WriteString(", ")
			}
			appendLiteral(&b, v)
		}
		b.WriteString(")")
	} else {
		b.WriteString(w.selectPrefix)
		appendLiteral(&b, o.args[0])
	}
	o.stmt = b.String()
	return o
}

// key returns the partition key value of the hot partition or of cold partition cold.
func (w *workload) key(hot bool, cold int) any {
	if w.table.PartitionKey[0].Type == schema.TypeText {
		if hot {
			return HotTextKey
		}
		return "cold-" + strconv.Itoa(cold)
	}
	if hot {
		return int64(HotBigIntKey)
	}
	return int64(cold + 1)
}

// rowValue returns the value of a clustering column of type t for row j: distinct rows get
// distinct values (booleans aside, which have two).
func rowValue(t schema.Type, j int) any {
	switch t {
	case schema.TypeText:
		return fmt.Sprintf("row-%02d", j)
	case schema.TypeInt:
		return int32(j)
	case schema.TypeBigInt:
		return int64(j)
	case schema.TypeDouble:
		return float64(j) + 0.5
	case schema.TypeBoolean:
		return j%2 == 1
	case schema.TypeBlob:
		return []byte{byte(j)}
	case schema.TypeTimestamp:
		return time.UnixMilli(timestampBase + int64(j)).UTC()
	}
	return nil
}

const textAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// valueBytes is the size of generated text and blob values.
const valueBytes = 16

// randomValue returns a random value of type t drawn from r.
func randomValue(t schema.Type, r *rand.Rand) any {
	switch t {
	case schema.TypeText:
		var s [valueBytes]byte
		for i := range s {
			s[i] = textAlphabet[r.IntN(len(textAlphabet))]
		}
		return string(s[:])
	case schema.TypeInt:
		return int32(r.Uint32())
	case schema.TypeBigInt:
		return int64(r.Uint64())
	case schema.TypeDouble:
		return r.NormFloat64() * 1000
	case schema.TypeBoolean:
		return r.IntN(2) == 1
	case schema.TypeBlob:
		s := make([]byte, valueBytes)
		for i := range s {
			s[i] = byte(r.Uint32())
		}
		return s
	case schema.TypeTimestamp:
		return time.UnixMilli(timestampBase + r.Int64N(millisPerYear)).UTC()
	}
	return nil
}

// appendLiteral writes v, a value of rowValue or randomValue, as a CQL literal.
func appendLiteral(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		b.WriteString(cql.QuoteString(v))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(formatDouble(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case []byte:
		b.WriteString("0x" + hex.EncodeToString(v))
	case time.Time:
		b.WriteString(strconv.FormatInt(v.UnixMilli(), 10))
	default:
		b.WriteString("NULL")
	}
}

// formatDouble writes a finite f as a float literal: the shortest decimal that reads back as f,
// with ".0" added when it would otherwise read as an integer.
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
