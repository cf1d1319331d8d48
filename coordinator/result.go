package coordinator

import (
	"crypto/md5"
	"fmt"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// Statement is one statement to execute with its options: the domain API's input, which every
// front end (the gRPC client API, the native protocol) translates its own requests into.
type Statement struct {
	// Text is the statement: exactly one CQL statement. Ignored when Prepared is set.
	Text string
	// Prepared, when set, is the statement to execute, as Executor.Prepare returned it: it is
	// not parsed again, only resolved against the current schema.
	Prepared *Prepared
	// Keyspace is the keyspace for table names the statement does not qualify ("" for none).
	Keyspace string
	// Consistency is the consistency level of a read or write; the zero value means One, as an
	// unspecified level does in Cassandra. Front ends map their aliases (LOCAL_ONE,
	// LOCAL_QUORUM) onto the three levels.
	Consistency Consistency
	// SerialConsistency is the Paxos level of a conditional statement: Serial (the zero value
	// means Serial) or LocalSerial; a conditional statement refuses any other. Other
	// statements ignore it.
	SerialConsistency Consistency
	// Values are the values of the statement's bind markers (?), in the order they appear.
	// There must be exactly one per marker.
	Values []Value
	// PageSize is the most rows a SELECT returns in one Result; the Result's PagingState then
	// asks for the next page. Zero or negative means every row at once.
	PageSize int
	// PagingState continues a SELECT where the Result that returned it stopped; nil starts
	// from the beginning. It is opaque to the client and only valid for the same statement.
	PagingState []byte
	// Timestamp is the client's default write timestamp in microseconds since the Unix epoch
	// (the native protocol's default timestamp), used when HasTimestamp is set and the
	// statement has no USING TIMESTAMP.
	Timestamp    int64
	HasTimestamp bool
}

// Value is one bound value: its canonical encoding (schema.Type.Check holds), nil for null, or
// Unset (the native protocol's "not set", which leaves a column as it is). It is the schema's
// BindValue, so that values reach the schema's binding without a copy.
type Value = schema.BindValue

// Prepared is a statement parsed and validated once, to be executed many times with different
// values (Statement.Prepared). It describes the statement's bind markers and the columns of
// its result, as the native protocol's PREPARE answer does.
type Prepared struct {
	// ID identifies the statement: the same text and keyspace prepare to the same ID on every
	// node (drivers prepare on each node and execute on any). It is the MD5 of the keyspace, a
	// NUL byte and the text, as the client sent it (PreparedID).
	ID [16]byte
	// Text and Keyspace are the statement and the keyspace it was prepared in.
	Text, Keyspace string
	// Variables describe the bind markers, one per marker in order.
	Variables []Variable
	// PKIndexes holds, for each partition key column in key order, the index in Variables of
	// the marker that binds it; nil unless markers bind the whole partition key (token-aware
	// drivers route on it).
	PKIndexes []int
	// Columns are the columns of a SELECT's rows; nil for other statements.
	Columns []RowColumn
	// RowsKeyspace and RowsTable name the table a SELECT reads (its results' Rows.Keyspace and
	// Rows.Table); "" for other statements.
	RowsKeyspace, RowsTable string
	// Statement is the parsed statement; only the coordinator shell reads it.
	Statement cql.Statement
	// Tables are the tables the statement names and the version each had when it was
	// prepared: a front end that finds one altered, dropped or truncated since drops the
	// statement and answers Unprepared, so that the driver prepares it again against the
	// current schema (protocol v4 has no result metadata id to tell it otherwise).
	Tables []PreparedTable
}

// PreparedTable is a table a prepared statement names, at the version it was prepared against.
type PreparedTable struct {
	Keyspace, Table string
	Version         schema.Version
}

// Current reports whether every table of p still has the version p was prepared against.
func (p *Prepared) Current(s *schema.Schema) bool {
	for _, pt := range p.Tables {
		t, ok := s.Table(pt.Keyspace, pt.Table)
		if !ok || t.Version != pt.Version {
			return false
		}
	}
	return true
}

// Variable describes one bind marker: the column (or the role: "[limit]", "[timestamp]") it
// gives a value for, and its type. It is the schema's Variable.
type Variable = schema.Variable

// PreparedID returns the ID of text prepared in keyspace: the MD5 of keyspace, a NUL byte (which
// neither can contain) and text. Cassandra hashes the query string (with the keyspace since
// 4.0) the same way, so the ID is stable across nodes and restarts, which lets drivers
// prepare on one node and execute on another.
func PreparedID(text, keyspace string) [16]byte {
	h := md5.New()
	h.Write([]byte(keyspace))
	h.Write([]byte{0})
	h.Write([]byte(text))
	var id [16]byte
	h.Sum(id[:0])
	return id
}

// BatchType is the kind of a BATCH.
type BatchType uint8

// The batch types.
const (
	// BatchLogged: all of the batch's writes apply, or none (eventually, even when the
	// coordinator fails part way).
	BatchLogged BatchType = iota + 1
	// BatchUnlogged: each partition's writes apply together; partitions independently.
	BatchUnlogged
	// BatchCounter: a batch of counter updates, applied as an unlogged batch is.
	BatchCounter
)

// BatchStatement is a BATCH: writes applied together, with one consistency level and one timestamp.
type BatchStatement struct {
	Type        BatchType
	Keyspace    string
	Consistency Consistency
	// SerialConsistency is the Paxos level of a BATCH with conditions, as for Statement.
	SerialConsistency Consistency
	Children          []BatchChild
	// Timestamp is the client's default timestamp, as for Statement.
	Timestamp    int64
	HasTimestamp bool
}

// BatchChild is one write of a BatchStatement: Text, or Prepared when set, with its bound values.
type BatchChild struct {
	Text     string
	Prepared *Prepared
	Values   []Value
}

// ResultKind says which of its fields a Result carries.
type ResultKind uint8

// The result kinds, as Cassandra's native protocol names them.
const (
	// ResultVoid: INSERT, UPDATE, DELETE, and schema statements that IF [NOT] EXISTS made a no-op.
	ResultVoid ResultKind = iota
	// ResultRows: a SELECT's rows, in Result.Rows.
	ResultRows
	// ResultSetKeyspace: USE; Result.Keyspace is the keyspace the client now uses.
	ResultSetKeyspace
	// ResultSchemaChange: a schema statement that changed the schema, in Result.SchemaChange.
	ResultSchemaChange
	// ResultDescription: DESCRIBE; Result.Description is its CQL text.
	ResultDescription
)

// String returns "void", "rows", "set_keyspace", "schema_change" or "description".
func (k ResultKind) String() string {
	switch k {
	case ResultVoid:
		return "void"
	case ResultRows:
		return "rows"
	case ResultSetKeyspace:
		return "set_keyspace"
	case ResultSchemaChange:
		return "schema_change"
	case ResultDescription:
		return "description"
	}
	return fmt.Sprintf("ResultKind(%d)", uint8(k))
}

// Result is the answer to one statement: the domain API's output. Kind says which field is set;
// Warnings may accompany any kind.
type Result struct {
	Kind         ResultKind
	Rows         *Rows        // ResultRows
	Keyspace     string       // ResultSetKeyspace
	SchemaChange SchemaChange // ResultSchemaChange
	Description  string       // ResultDescription
	// PagingState, on a ResultRows that stopped at Statement.PageSize rows, continues the SELECT
	// (Statement.PagingState); nil when these were the last rows.
	PagingState []byte
	// Warnings are for the client to show (a read that scanned many tombstones, nodes that had
	// not agreed on a schema change yet).
	Warnings []string
}

// Rows are a SELECT's answer: its columns and, per row, each column's value in the schema's
// canonical encoding (schema.Type.Check holds for every one of them), nil for null. Front ends
// render them: the native protocol sends the bytes as they are, the gRPC client API decodes them
// to typed values (RowColumn.Type.Decode).
type Rows struct {
	// Keyspace and Table name the table read.
	Keyspace, Table string
	Columns         []RowColumn
	// Values holds one slice per row, with one value per column.
	Values [][][]byte
}

// RowColumn is a column of Rows.
type RowColumn struct {
	Name string
	Type schema.Type
}

// SchemaChange describes what a schema statement changed.
type SchemaChange struct {
	Change SchemaChangeKind
	Target SchemaTarget
	// Keyspace is the keyspace changed, or the table's keyspace; Table is the table's name
	// (Target TargetTable), "" for a keyspace.
	Keyspace, Table string
}

// SchemaChangeKind is how the schema changed.
type SchemaChangeKind uint8

// The schema change kinds.
const (
	Created SchemaChangeKind = iota + 1
	Updated
	Dropped
)

// String returns "CREATED", "UPDATED" or "DROPPED", as the native protocol spells them.
func (k SchemaChangeKind) String() string {
	switch k {
	case Created:
		return "CREATED"
	case Updated:
		return "UPDATED"
	case Dropped:
		return "DROPPED"
	}
	return fmt.Sprintf("SchemaChangeKind(%d)", uint8(k))
}

// SchemaTarget is what a schema change changed: a keyspace or a table.
type SchemaTarget uint8

// The schema change targets.
const (
	TargetKeyspace SchemaTarget = iota + 1
	TargetTable
	TargetType // a user-defined type: Table holds its name
)

// String returns "KEYSPACE" or "TABLE".
func (t SchemaTarget) String() string {
	switch t {
	case TargetKeyspace:
		return "KEYSPACE"
	case TargetTable:
		return "TABLE"
	case TargetType:
		return "TYPE"
	}
	return fmt.Sprintf("SchemaTarget(%d)", uint8(t))
}
