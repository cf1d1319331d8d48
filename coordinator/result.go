package coordinator

import (
	"fmt"

	"github.com/kvnode/kvnode/schema"
)

// Statement is one statement to execute with its options: the domain API's input, which every
// front end (the gRPC client API, the native protocol) translates its own requests into.
type Statement struct {
	// Text is the statement: exactly one CQL statement.
	Text string
	// Keyspace is the keyspace for table names the statement does not qualify ("" for none).
	Keyspace string
	// Consistency is the consistency level of a read or write; the zero value means One, as an
	// unspecified level does in Cassandra. Front ends map their aliases (LOCAL_ONE,
	// LOCAL_QUORUM) onto the three levels.
	Consistency Consistency
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
)

// String returns "KEYSPACE" or "TABLE".
func (t SchemaTarget) String() string {
	switch t {
	case TargetKeyspace:
		return "KEYSPACE"
	case TargetTable:
		return "TABLE"
	}
	return fmt.Sprintf("SchemaTarget(%d)", uint8(t))
}
