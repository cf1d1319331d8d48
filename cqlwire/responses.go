package cqlwire

import (
	"fmt"
	"net/netip"
)

// ErrorCode is the code of an ERROR response.
type ErrorCode int32

// Error codes (spec section 9), and ScyllaDB's rate-limit extension.
const (
	ErrServer          ErrorCode = 0x0000
	ErrProtocol        ErrorCode = 0x000A
	ErrBadCredentials  ErrorCode = 0x0100
	ErrUnavailable     ErrorCode = 0x1000
	ErrOverloaded      ErrorCode = 0x1001
	ErrIsBootstrapping ErrorCode = 0x1002
	ErrTruncateError   ErrorCode = 0x1003
	ErrWriteTimeout    ErrorCode = 0x1100
	ErrReadTimeout     ErrorCode = 0x1200
	ErrReadFailure     ErrorCode = 0x1300
	ErrFunctionFailure ErrorCode = 0x1400
	ErrWriteFailure    ErrorCode = 0x1500
	ErrSyntax          ErrorCode = 0x2000
	ErrUnauthorized    ErrorCode = 0x2100
	ErrInvalid         ErrorCode = 0x2200
	ErrConfig          ErrorCode = 0x2300
	ErrAlreadyExists   ErrorCode = 0x2400
	ErrUnprepared      ErrorCode = 0x2500
	// ErrRateLimit is the code kvnode advertises for ScyllaDB's
	// SCYLLA_RATE_LIMIT_ERROR extension (ERROR_CODE=61440), as ScyllaDB does.
	ErrRateLimit ErrorCode = 0xF000
)

// RateLimitOp is the op_type of a rate-limit error.
type RateLimitOp uint8

// Rate-limited operation types.
const (
	RateLimitRead  RateLimitOp = 0
	RateLimitWrite RateLimitOp = 1
)

// Error is the ERROR response. Which fields beyond Code and Message are on
// the wire depends on Code (spec 9): Consistency, Received, BlockFor for the
// timeouts, failures and Unavailable (where Received is <alive> and BlockFor
// <required>); WriteType for write timeouts and failures; DataPresent for
// read timeouts and failures; NumFailures for failures; Keyspace and Table
// for AlreadyExists; Keyspace, Function and ArgTypes for Function_failure;
// UnpreparedID for Unprepared; RateLimitOp and RejectedByCoordinator for
// ErrRateLimit.
type Error struct {
	Code                  ErrorCode
	Message               string
	Consistency           Consistency
	Received, BlockFor    int32
	NumFailures           int32
	WriteType             string
	DataPresent           bool
	Keyspace, Table       string
	Function              string
	ArgTypes              []string
	UnpreparedID          []byte
	RateLimitOp           RateLimitOp
	RejectedByCoordinator bool
}

func (*Error) Opcode() Opcode { return OpError }

func (m *Error) AppendBody(dst []byte) []byte {
	dst = appendInt(dst, int32(m.Code))
	dst = appendString(dst, m.Message)
	switch m.Code {
	case ErrUnavailable:
		dst = appendShort(dst, uint16(m.Consistency))
		dst = appendInt(dst, m.BlockFor)
		dst = appendInt(dst, m.Received)
	case ErrWriteTimeout:
		dst = appendShort(dst, uint16(m.Consistency))
		dst = appendInt(dst, m.Received)
		dst = appendInt(dst, m.BlockFor)
		dst = appendString(dst, m.WriteType)
	case ErrReadTimeout:
		dst = appendShort(dst, uint16(m.Consistency))
		dst = appendInt(dst, m.Received)
		dst = appendInt(dst, m.BlockFor)
		dst = append(dst, boolByte(m.DataPresent))
	case ErrReadFailure:
		dst = appendShort(dst, uint16(m.Consistency))
		dst = appendInt(dst, m.Received)
		dst = appendInt(dst, m.BlockFor)
		dst = appendInt(dst, m.NumFailures)
		dst = append(dst, boolByte(m.DataPresent))
	case ErrWriteFailure:
		dst = appendShort(dst, uint16(m.Consistency))
		dst = appendInt(dst, m.Received)
		dst = appendInt(dst, m.BlockFor)
		dst = appendInt(dst, m.NumFailures)
		dst = appendString(dst, m.WriteType)
	case ErrFunctionFailure:
		dst = appendString(dst, m.Keyspace)
		dst = appendString(dst, m.Function)
		dst = appendStringList(dst, m.ArgTypes)
	case ErrAlreadyExists:
		dst = appendString(dst, m.Keyspace)
		dst = appendString(dst, m.Table)
	case ErrUnprepared:
		dst = appendShortBytes(dst, m.UnpreparedID)
	case ErrRateLimit:
		dst = append(dst, byte(m.RateLimitOp), boolByte(m.RejectedByCoordinator))
	}
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func decodeError(r *reader) *Error {
	m := &Error{Code: ErrorCode(r.int("error code")), Message: r.string("error message")}
	switch m.Code {
	case ErrUnavailable:
		m.Consistency = Consistency(r.short("consistency"))
		m.BlockFor = r.int("required")
		m.Received = r.int("alive")
	case ErrWriteTimeout, ErrReadTimeout, ErrReadFailure, ErrWriteFailure:
		m.Consistency = Consistency(r.short("consistency"))
		m.Received = r.int("received")
		m.BlockFor = r.int("blockfor")
		if m.Code == ErrReadFailure || m.Code == ErrWriteFailure {
			m.NumFailures = r.int("numfailures")
		}
		if m.Code == ErrWriteTimeout || m.Code == ErrWriteFailure {
			m.WriteType = r.string("write type")
		} else {
			m.DataPresent = r.byte("data_present") != 0
		}
	case ErrFunctionFailure:
		m.Keyspace = r.string("keyspace")
		m.Function = r.string("function")
		m.ArgTypes = r.stringList("arg types")
	case ErrAlreadyExists:
		m.Keyspace = r.string("keyspace")
		m.Table = r.string("table")
	case ErrUnprepared:
		m.UnpreparedID = r.shortBytes("unprepared id")
	case ErrRateLimit:
		m.RateLimitOp = RateLimitOp(r.byte("op_type"))
		m.RejectedByCoordinator = r.byte("rejected_by_coordinator") != 0
	}
	return m
}

// Ready is the READY response.
type Ready struct{}

// Authenticate is the AUTHENTICATE response: the authenticator class.
type Authenticate struct{ Authenticator string }

// Supported is the SUPPORTED response.
type Supported struct{ Options map[string][]string }

// AuthChallenge is the AUTH_CHALLENGE response.
type AuthChallenge struct{ Token []byte }

// AuthSuccess is the AUTH_SUCCESS response.
type AuthSuccess struct{ Token []byte }

func (Ready) Opcode() Opcode                          { return OpReady }
func (Ready) AppendBody(dst []byte) []byte            { return dst }
func (*Authenticate) Opcode() Opcode                  { return OpAuthenticate }
func (m *Authenticate) AppendBody(dst []byte) []byte  { return appendString(dst, m.Authenticator) }
func (*Supported) Opcode() Opcode                     { return OpSupported }
func (m *Supported) AppendBody(dst []byte) []byte     { return appendStringMultimap(dst, m.Options) }
func (*AuthChallenge) Opcode() Opcode                 { return OpAuthChallenge }
func (m *AuthChallenge) AppendBody(dst []byte) []byte { return appendBytes(dst, m.Token) }
func (*AuthSuccess) Opcode() Opcode                   { return OpAuthSuccess }
func (m *AuthSuccess) AppendBody(dst []byte) []byte   { return appendBytes(dst, m.Token) }

// Result kinds.
const (
	resultVoid         = 0x0001
	resultRows         = 0x0002
	resultSetKeyspace  = 0x0003
	resultPrepared     = 0x0004
	resultSchemaChange = 0x0005
)

// VoidResult is a RESULT of kind Void.
type VoidResult struct{}

// SetKeyspaceResult is a RESULT of kind Set_keyspace (the answer to USE).
type SetKeyspaceResult struct{ Keyspace string }

// RowsResult is a RESULT of kind Rows. Cells holds the rows one after the
// other, Metadata.ColumnCount cells each (nil cells are null); decoded cells
// alias the frame body.
type RowsResult struct {
	Metadata RowsMetadata
	Cells    [][]byte
}

// NumRows is the number of rows.
func (m *RowsResult) NumRows() int {
	if m.Metadata.ColumnCount == 0 {
		return 0
	}
	return len(m.Cells) / m.Metadata.ColumnCount
}

// Row returns row i.
func (m *RowsResult) Row(i int) [][]byte {
	n := m.Metadata.ColumnCount
	return m.Cells[i*n : (i+1)*n : (i+1)*n]
}

// PreparedResult is a RESULT of kind Prepared.
type PreparedResult struct {
	ID []byte
	// Bind describes the bound variables; PKIndexes are the indexes of the
	// variables that are partition key columns, in partition key order.
	Bind      []ColumnSpec
	PKIndexes []uint16
	Result    RowsMetadata
}

// SchemaChange is the body of a Schema_change RESULT and of a SCHEMA_CHANGE
// EVENT. Target is KEYSPACE, TABLE, TYPE, FUNCTION or AGGREGATE; Name is
// the table, type, function or aggregate (empty for KEYSPACE); ArgTypes are
// the argument types of FUNCTION and AGGREGATE.
type SchemaChange struct {
	Change   string // CREATED, UPDATED or DROPPED
	Target   string
	Keyspace string
	Name     string
	ArgTypes []string
}

// SchemaChangeResult is a RESULT of kind Schema_change.
type SchemaChangeResult struct{ SchemaChange }

func (VoidResult) Opcode() Opcode         { return OpResult }
func (*SetKeyspaceResult) Opcode() Opcode { return OpResult }
func (*RowsResult) Opcode() Opcode        { return OpResult }
func (*PreparedResult) Opcode() Opcode    { return OpResult }
func (*SchemaChangeResult) Opcode() Opcode {
	return OpResult
}

func (VoidResult) AppendBody(dst []byte) []byte { return appendInt(dst, resultVoid) }
func (m *SetKeyspaceResult) AppendBody(dst []byte) []byte {
	return appendString(appendInt(dst, resultSetKeyspace), m.Keyspace)
}
func (m *SchemaChangeResult) AppendBody(dst []byte) []byte {
	return m.SchemaChange.append(appendInt(dst, resultSchemaChange))
}

func (m *RowsResult) AppendBody(dst []byte) []byte {
	dst = appendInt(dst, resultRows)
	dst = m.Metadata.append(dst)
	return AppendRows(dst, m.Cells, m.Metadata.ColumnCount)
}

// AppendRows appends <rows_count><rows_content> for cells laid out as in
// RowsResult. A server streaming a page can append the metadata with
// RowsMetadata.Append and the rows with this, without building a RowsResult.
func AppendRows(dst []byte, cells [][]byte, columns int) []byte {
	n := 0
	if columns > 0 {
		n = len(cells) / columns
	}
	dst = appendInt(dst, int32(n))
	for _, c := range cells[:n*columns] {
		dst = appendBytes(dst, c)
	}
	return dst
}

func (m *PreparedResult) AppendBody(dst []byte) []byte {
	dst = appendInt(dst, resultPrepared)
	dst = appendShortBytes(dst, m.ID)
	global := sameTable(m.Bind)
	var flags int32
	if global {
		flags |= metaGlobalTablesSpec
	}
	dst = appendInt(dst, flags)
	dst = appendInt(dst, int32(len(m.Bind)))
	dst = appendInt(dst, int32(len(m.PKIndexes)))
	for _, i := range m.PKIndexes {
		dst = appendShort(dst, i)
	}
	dst = appendColumnSpecs(dst, m.Bind, global)
	return m.Result.append(dst)
}

func (s *SchemaChange) append(dst []byte) []byte {
	dst = appendString(dst, s.Change)
	dst = appendString(dst, s.Target)
	dst = appendString(dst, s.Keyspace)
	switch s.Target {
	case "KEYSPACE":
	case "FUNCTION", "AGGREGATE":
		dst = appendString(dst, s.Name)
		dst = appendStringList(dst, s.ArgTypes)
	default:
		dst = appendString(dst, s.Name)
	}
	return dst
}

func (s *SchemaChange) decode(r *reader) {
	s.Change = r.string("schema change type")
	s.Target = r.string("schema change target")
	s.Keyspace = r.string("schema change keyspace")
	switch s.Target {
	case "KEYSPACE":
	case "TABLE", "TYPE":
		s.Name = r.string("schema change name")
	case "FUNCTION", "AGGREGATE":
		s.Name = r.string("schema change name")
		s.ArgTypes = r.stringList("schema change argument types")
	default:
		if r.err == nil {
			r.failf("unknown schema change target %q", s.Target)
		}
	}
}

// Rows metadata flags.
const (
	metaGlobalTablesSpec = 0x0001
	metaHasMorePages     = 0x0002
	metaNoMetadata       = 0x0004
)

// RowsMetadata is the <metadata> of a Rows result and of a Prepared
// result's result metadata.
type RowsMetadata struct {
	ColumnCount int
	// PagingState, when non-nil, sets has_more_pages.
	PagingState []byte
	// NoMetadata omits Columns (the client asked to skip metadata).
	NoMetadata bool
	Columns    []ColumnSpec
}

// Append appends the metadata (see AppendRows).
func (m *RowsMetadata) Append(dst []byte) []byte { return m.append(dst) }

func (m *RowsMetadata) append(dst []byte) []byte {
	var flags int32
	global := !m.NoMetadata && sameTable(m.Columns)
	if global {
		flags |= metaGlobalTablesSpec
	}
	if m.PagingState != nil {
		flags |= metaHasMorePages
	}
	if m.NoMetadata {
		flags |= metaNoMetadata
	}
	dst = appendInt(dst, flags)
	dst = appendInt(dst, int32(m.ColumnCount))
	if m.PagingState != nil {
		dst = appendBytes(dst, m.PagingState)
	}
	if !m.NoMetadata {
		dst = appendColumnSpecs(dst, m.Columns, global)
	}
	return dst
}

func (m *RowsMetadata) decode(r *reader) {
	flags := r.int("metadata flags")
	n := r.int("column count")
	if r.err != nil {
		return
	}
	if flags&^(metaGlobalTablesSpec|metaHasMorePages|metaNoMetadata) != 0 {
		r.failf("unknown metadata flags 0x%x", flags)
		return
	}
	if n < 0 {
		r.failf("negative column count %d", n)
		return
	}
	m.ColumnCount = int(n)
	if flags&metaHasMorePages != 0 {
		m.PagingState = r.bytes("paging state")
		if m.PagingState == nil && r.err == nil {
			m.PagingState = []byte{}
		}
	}
	if flags&metaNoMetadata != 0 {
		m.NoMetadata = true
		return
	}
	m.Columns = decodeColumnSpecs(r, m.ColumnCount, flags&metaGlobalTablesSpec != 0)
}

// sameTable reports whether cols all belong to one table (and there are
// some), in which case the table spec is written once.
func sameTable(cols []ColumnSpec) bool {
	if len(cols) == 0 {
		return false
	}
	for _, c := range cols[1:] {
		if c.Keyspace != cols[0].Keyspace || c.Table != cols[0].Table {
			return false
		}
	}
	return true
}

func appendColumnSpecs(dst []byte, cols []ColumnSpec, global bool) []byte {
	if global {
		dst = appendString(dst, cols[0].Keyspace)
		dst = appendString(dst, cols[0].Table)
	}
	for i := range cols {
		c := &cols[i]
		if !global {
			dst = appendString(dst, c.Keyspace)
			dst = appendString(dst, c.Table)
		}
		dst = appendString(dst, c.Name)
		dst = c.Type.append(dst)
	}
	return dst
}

func decodeColumnSpecs(r *reader, n int, global bool) []ColumnSpec {
	var ks, table string
	if global {
		ks = r.string("global keyspace")
		table = r.string("global table")
	}
	// A column spec is at least a name (2) and a type id (2).
	n = r.count(n, 4, "column specs")
	if n == 0 {
		return nil
	}
	cols := make([]ColumnSpec, n)
	for i := range cols {
		c := &cols[i]
		if global {
			c.Keyspace, c.Table = ks, table
		} else {
			c.Keyspace = r.string("column keyspace")
			c.Table = r.string("column table")
		}
		c.Name = r.string("column name")
		c.Type = decodeType(r, 0)
	}
	return cols
}

func decodeResult(r *reader) Message {
	switch kind := r.int("result kind"); kind {
	case resultVoid:
		return VoidResult{}
	case resultRows:
		m := &RowsResult{}
		m.Metadata.decode(r)
		rows := r.int("rows count")
		cols := m.Metadata.ColumnCount
		if r.err != nil {
			return m
		}
		if rows < 0 {
			r.failf("negative rows count %d", rows)
			return m
		}
		if rows > 0 && cols == 0 {
			r.failf("%d rows of zero columns", rows)
			return m
		}
		// Every cell takes at least its 4-byte length.
		total := int64(rows) * int64(cols)
		if total*4 > int64(r.remaining()) {
			r.fail(fmt.Sprintf("rows (%d rows of %d columns claimed)", rows, cols))
			return m
		}
		if total > 0 {
			m.Cells = make([][]byte, total)
		}
		for i := range m.Cells {
			m.Cells[i] = r.bytes("cell")
		}
		return m
	case resultSetKeyspace:
		return &SetKeyspaceResult{Keyspace: r.string("keyspace")}
	case resultPrepared:
		m := &PreparedResult{ID: r.shortBytes("prepared id")}
		flags := r.int("prepared metadata flags")
		n := r.int("bind column count")
		pk := r.int("pk count")
		if r.err != nil {
			return m
		}
		if flags&^metaGlobalTablesSpec != 0 {
			r.failf("unknown prepared metadata flags 0x%x", flags)
			return m
		}
		if n < 0 || pk < 0 {
			r.failf("negative bind column count %d or pk count %d", n, pk)
			return m
		}
		if npk := r.count(int(pk), 2, "pk indexes"); npk > 0 {
			m.PKIndexes = make([]uint16, npk)
			for i := range m.PKIndexes {
				m.PKIndexes[i] = r.short("pk index")
			}
		}
		m.Bind = decodeColumnSpecs(r, int(n), flags&metaGlobalTablesSpec != 0)
		m.Result.decode(r)
		return m
	case resultSchemaChange:
		m := &SchemaChangeResult{}
		m.decode(r)
		return m
	default:
		if r.err == nil {
			r.failf("unknown result kind %d", kind)
		}
		return nil
	}
}

// Event is the EVENT response (pushed on stream -1). Type is
// TOPOLOGY_CHANGE, STATUS_CHANGE or SCHEMA_CHANGE; Change and Addr are set
// for the first two (NEW_NODE, REMOVED_NODE, MOVED_NODE, UP, DOWN), Schema
// for the last.
type Event struct {
	Type   string
	Change string
	Addr   netip.AddrPort
	Schema SchemaChange
}

func (*Event) Opcode() Opcode { return OpEvent }

func (m *Event) AppendBody(dst []byte) []byte {
	dst = appendString(dst, m.Type)
	if m.Type == "SCHEMA_CHANGE" {
		return m.Schema.append(dst)
	}
	dst = appendString(dst, m.Change)
	return appendInet(dst, m.Addr)
}

func decodeEvent(r *reader) *Event {
	m := &Event{Type: r.string("event type")}
	switch m.Type {
	case "SCHEMA_CHANGE":
		m.Schema.decode(r)
	case "TOPOLOGY_CHANGE", "STATUS_CHANGE":
		m.Change = r.string("event change")
		m.Addr = r.inet("event address")
	default:
		if r.err == nil {
			r.failf("unknown event type %q", m.Type)
		}
	}
	return m
}

// DecodeResponse decodes the body of a response frame (after the prefix
// that DecodeFrame strips). Byte slices in the result alias body.
func DecodeResponse(op Opcode, body []byte) (Message, error) {
	r := &reader{b: body}
	var m Message
	switch op {
	case OpError:
		m = decodeError(r)
	case OpReady:
		m = Ready{}
	case OpAuthenticate:
		m = &Authenticate{Authenticator: r.string("authenticator")}
	case OpSupported:
		m = &Supported{Options: r.stringMultimap("SUPPORTED options")}
	case OpResult:
		m = decodeResult(r)
	case OpEvent:
		m = decodeEvent(r)
	case OpAuthChallenge:
		m = &AuthChallenge{Token: r.bytes("token")}
	case OpAuthSuccess:
		m = &AuthSuccess{Token: r.bytes("token")}
	default:
		return nil, fmt.Errorf("%w 0x%02x for a response", ErrUnknownOpcode, uint8(op))
	}
	if err := r.done(op.String()); err != nil {
		return nil, err
	}
	return m, nil
}
