package bench

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

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

	insertPrefix string // INSERT INTO ks.t (a, b, c) VALUES (
	selectPrefix string // SELECT * FROM ks.t WHERE pk =
}

// op is one generated operation.
type op struct {
	stmt  string
	hot   bool // the operation targets the hot partition
	write bool
}

// newWorkload prepares the statements for table t (as schema builds it from its CREATE TABLE),
// with the hot share, write fraction and cold partition count of cfg. It rejects a table whose
// partition key is not exactly one text or bigint column.
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
	for i, c := range t.Columns {
		names[i] = cql.QuoteIdent(c.Name)
	}
	return &workload{
		table:        t,
		partitions:   cfg.Partitions,
		hot:          cfg.Hot,
		writes:       cfg.Writes,
		insertPrefix: "INSERT INTO " + t.QualifiedName() + " (" + strings.Join(names, ", ") + ") VALUES (",
		selectPrefix: "SELECT * FROM " + t.QualifiedName() + " WHERE " + names[0] + " = ",
	}, nil
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
	var b strings.Builder
	b.Grow(128)
	if o.write {
		b.WriteString(w.insertPrefix)
		w.appendKey(&b, o.hot, cold)
		row := r.IntN(RowsPerPartition)
		for _, c := range w.table.Columns[1:] {
			b.WriteString(", ")
			if c.Kind == schema.ClusteringColumn {
				appendRowValue(&b, c.Type, row)
			} else {
				appendRandomValue(&b, c.Type, r)
			}
		}
		b.WriteString(")")
	} else {
		b.WriteString(w.selectPrefix)
		w.appendKey(&b, o.hot, cold)
	}
	o.stmt = b.String()
	return o
}

func (w *workload) appendKey(b *strings.Builder, hot bool, cold int) {
	if w.table.PartitionKey[0].Type == schema.TypeText {
		if hot {
			b.WriteString(cql.QuoteString(HotTextKey))
		} else {
			b.WriteString("'cold-" + strconv.Itoa(cold) + "'")
		}
		return
	}
	if hot {
		b.WriteString(strconv.Itoa(HotBigIntKey))
	} else {
		b.WriteString(strconv.Itoa(cold + 1))
	}
}

// appendRowValue writes the value of a clustering column of type t for row j: distinct rows
// get distinct values (booleans aside, which have two).
func appendRowValue(b *strings.Builder, t schema.Type, j int) {
	switch t {
	case schema.TypeText:
		b.WriteString(cql.QuoteString(fmt.Sprintf("row-%02d", j)))
	case schema.TypeInt, schema.TypeBigInt:
		b.WriteString(strconv.Itoa(j))
	case schema.TypeDouble:
		b.WriteString(formatDouble(float64(j) + 0.5))
	case schema.TypeBoolean:
		b.WriteString(strconv.FormatBool(j%2 == 1))
	case schema.TypeBlob:
		b.WriteString("0x" + hex.EncodeToString([]byte{byte(j)}))
	case schema.TypeTimestamp:
		b.WriteString(strconv.FormatInt(timestampBase+int64(j), 10))
	default:
		b.WriteString("NULL")
	}
}

const textAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// valueBytes is the size of generated text and blob values.
const valueBytes = 16

// appendRandomValue writes a random literal of type t drawn from r.
func appendRandomValue(b *strings.Builder, t schema.Type, r *rand.Rand) {
	switch t {
	case schema.TypeText:
		var s [valueBytes]byte
		for i := range s {
			s[i] = textAlphabet[r.IntN(len(textAlphabet))]
		}
		b.WriteString(cql.QuoteString(string(s[:])))
	case schema.TypeInt:
		b.WriteString(strconv.FormatInt(int64(int32(r.Uint32())), 10))
	case schema.TypeBigInt:
		b.WriteString(strconv.FormatInt(int64(r.Uint64()), 10))
	case schema.TypeDouble:
		b.WriteString(formatDouble(r.NormFloat64() * 1000))
	case schema.TypeBoolean:
		b.WriteString(strconv.FormatBool(r.IntN(2) == 1))
	case schema.TypeBlob:
		var s [valueBytes]byte
		for i := range s {
			s[i] = byte(r.Uint32())
		}
		b.WriteString("0x" + hex.EncodeToString(s[:]))
	case schema.TypeTimestamp:
		b.WriteString(strconv.FormatInt(timestampBase+r.Int64N(millisPerYear), 10))
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
