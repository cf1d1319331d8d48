package cqlwire

import (
	"fmt"
	"maps"
	"slices"
)

// Message is the body of a frame. AppendBody appends the encoded body (not
// the frame prefix of tracing id, warnings and custom payload).
type Message interface {
	Opcode() Opcode
	AppendBody(dst []byte) []byte
}

// Consistency is a consistency level ([consistency], a [short]).
type Consistency uint16

// Consistency levels (spec section 3).
const (
	Any         Consistency = 0x0000
	One         Consistency = 0x0001
	Two         Consistency = 0x0002
	Three       Consistency = 0x0003
	Quorum      Consistency = 0x0004
	All         Consistency = 0x0005
	LocalQuorum Consistency = 0x0006
	EachQuorum  Consistency = 0x0007
	Serial      Consistency = 0x0008
	LocalSerial Consistency = 0x0009
	LocalOne    Consistency = 0x000A
)

// Value is a bound value ([value]). Bytes nil is null, Unset is "not set"
// (-2); a non-nil empty Bytes is the empty value. Decoded Bytes alias the
// frame body.
type Value struct {
	Bytes []byte
	Unset bool
}

// Options is the OPTIONS request.
type Options struct{}

// MaxStartupOptions bounds the options of a STARTUP request a server decodes: drivers send a
// handful (CQL_VERSION, COMPRESSION, DRIVER_NAME, DRIVER_VERSION and a few of their own), and a
// STARTUP arrives before any login, so its size is an unauthenticated client's to choose.
const MaxStartupOptions = 64

// Startup is the STARTUP request: CQL_VERSION, COMPRESSION, DRIVER_NAME, and
// protocol extensions such as SCYLLA_RATE_LIMIT_ERROR.
type Startup struct{ Options map[string]string }

// AuthResponse is the AUTH_RESPONSE request.
type AuthResponse struct{ Token []byte }

// Register is the REGISTER request: the event types to receive.
type Register struct{ Events []string }

// Query is the QUERY request.
type Query struct {
	Query  string
	Params QueryParams
}

// Prepare is the PREPARE request.
type Prepare struct{ Query string }

// Execute is the EXECUTE request. ID aliases the frame body when decoded.
type Execute struct {
	ID     []byte
	Params QueryParams
}

// Query parameter flags (spec 4.1.4).
const (
	queryValues            = 0x01
	querySkipMetadata      = 0x02
	queryPageSize          = 0x04
	queryPagingState       = 0x08
	querySerialConsistency = 0x10
	queryDefaultTimestamp  = 0x20
	queryValueNames        = 0x40
	queryKnown             = 0x7F
)

// QueryParams are the <query_parameters> of QUERY and EXECUTE.
type QueryParams struct {
	Consistency Consistency
	// Values are the bound values; Names, when non-nil, names each of them
	// (the "names for values" flag) and has the same length.
	Values       []Value
	Names        []string
	SkipMetadata bool
	// PageSize is the page size; 0 means the flag is absent (no paging).
	PageSize    int32
	PagingState []byte // nil means absent
	// SerialConsistency is the serial level; 0 means the flag is absent.
	SerialConsistency Consistency
	// Timestamp is the default timestamp in microseconds when HasTimestamp.
	Timestamp    int64
	HasTimestamp bool
}

func (p *QueryParams) append(dst []byte) []byte {
	var flags byte
	if p.Values != nil {
		flags |= queryValues
	}
	if p.Names != nil {
		flags |= queryValueNames | queryValues
	}
	if p.SkipMetadata {
		flags |= querySkipMetadata
	}
	if p.PageSize != 0 {
		flags |= queryPageSize
	}
	if p.PagingState != nil {
		flags |= queryPagingState
	}
	if p.SerialConsistency != 0 {
		flags |= querySerialConsistency
	}
	if p.HasTimestamp {
		flags |= queryDefaultTimestamp
	}
	dst = appendShort(dst, uint16(p.Consistency))
	dst = append(dst, flags)
	if flags&queryValues != 0 {
		dst = appendShort(dst, uint16(len(p.Values)))
		for i, v := range p.Values {
			if p.Names != nil {
				dst = appendString(dst, p.Names[i])
			}
			dst = appendValue(dst, v)
		}
	}
	if p.PageSize != 0 {
		dst = appendInt(dst, p.PageSize)
	}
	if p.PagingState != nil {
		dst = appendBytes(dst, p.PagingState)
	}
	if p.SerialConsistency != 0 {
		dst = appendShort(dst, uint16(p.SerialConsistency))
	}
	if p.HasTimestamp {
		dst = appendLong(dst, p.Timestamp)
	}
	return dst
}

func (p *QueryParams) decode(r *reader) {
	p.Consistency = Consistency(r.short("consistency"))
	flags := r.byte("query flags")
	if r.err != nil {
		return
	}
	if flags&^queryKnown != 0 {
		r.failf("unknown query flags 0x%02x", flags&^queryKnown)
		return
	}
	if flags&queryValues != 0 {
		min := 4
		if flags&queryValueNames != 0 {
			min = 6
		}
		n := r.count(int(r.short("value count")), min, "values")
		p.Values = make([]Value, n)
		if flags&queryValueNames != 0 {
			p.Names = make([]string, n)
		}
		for i := range n {
			if p.Names != nil {
				p.Names[i] = r.string("value name")
			}
			p.Values[i] = r.value("value")
		}
	}
	p.SkipMetadata = flags&querySkipMetadata != 0
	if flags&queryPageSize != 0 {
		p.PageSize = r.int("page size")
	}
	if flags&queryPagingState != 0 {
		p.PagingState = r.bytes("paging state")
		if p.PagingState == nil && r.err == nil {
			p.PagingState = []byte{}
		}
	}
	if flags&querySerialConsistency != 0 {
		p.SerialConsistency = Consistency(r.short("serial consistency"))
	}
	if flags&queryDefaultTimestamp != 0 {
		p.Timestamp = r.long("timestamp")
		p.HasTimestamp = true
	}
}

// BatchType is the kind of a BATCH.
type BatchType uint8

// Batch types.
const (
	BatchLogged   BatchType = 0
	BatchUnlogged BatchType = 1
	BatchCounter  BatchType = 2
)

// BatchChild is one statement of a BATCH: a query string, or a prepared id
// when ID is non-nil.
type BatchChild struct {
	Query  string
	ID     []byte
	Values []Value
}

// Batch is the BATCH request.
type Batch struct {
	Type              BatchType
	Children          []BatchChild
	Consistency       Consistency
	SerialConsistency Consistency // 0: absent
	Timestamp         int64
	HasTimestamp      bool
}

const (
	batchSerialConsistency = 0x10
	batchDefaultTimestamp  = 0x20
	batchValueNames        = 0x40
)

// Request bodies.

func (Options) Opcode() Opcode               { return OpOptions }
func (Options) AppendBody(dst []byte) []byte { return dst }
func (*Startup) Opcode() Opcode              { return OpStartup }
func (m *Startup) AppendBody(dst []byte) []byte {
	return appendStringMap(dst, m.Options)
}
func (*AuthResponse) Opcode() Opcode                 { return OpAuthResponse }
func (m *AuthResponse) AppendBody(dst []byte) []byte { return appendBytes(dst, m.Token) }
func (*Register) Opcode() Opcode                     { return OpRegister }
func (m *Register) AppendBody(dst []byte) []byte     { return appendStringList(dst, m.Events) }
func (*Query) Opcode() Opcode                        { return OpQuery }
func (m *Query) AppendBody(dst []byte) []byte {
	dst = appendLongString(dst, m.Query)
	return m.Params.append(dst)
}
func (*Prepare) Opcode() Opcode                 { return OpPrepare }
func (m *Prepare) AppendBody(dst []byte) []byte { return appendLongString(dst, m.Query) }
func (*Execute) Opcode() Opcode                 { return OpExecute }
func (m *Execute) AppendBody(dst []byte) []byte {
	dst = appendShortBytes(dst, m.ID)
	return m.Params.append(dst)
}
func (*Batch) Opcode() Opcode { return OpBatch }
func (m *Batch) AppendBody(dst []byte) []byte {
	dst = append(dst, byte(m.Type))
	dst = appendShort(dst, uint16(len(m.Children)))
	for _, c := range m.Children {
		if c.ID != nil {
			dst = append(dst, 1)
			dst = appendShortBytes(dst, c.ID)
		} else {
			dst = append(dst, 0)
			dst = appendLongString(dst, c.Query)
		}
		dst = appendShort(dst, uint16(len(c.Values)))
		for _, v := range c.Values {
			dst = appendValue(dst, v)
		}
	}
	dst = appendShort(dst, uint16(m.Consistency))
	var flags byte
	if m.SerialConsistency != 0 {
		flags |= batchSerialConsistency
	}
	if m.HasTimestamp {
		flags |= batchDefaultTimestamp
	}
	dst = append(dst, flags)
	if m.SerialConsistency != 0 {
		dst = appendShort(dst, uint16(m.SerialConsistency))
	}
	if m.HasTimestamp {
		dst = appendLong(dst, m.Timestamp)
	}
	return dst
}

func appendStringMap(dst []byte, m map[string]string) []byte {
	dst = appendShort(dst, uint16(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		dst = appendString(dst, k)
		dst = appendString(dst, m[k])
	}
	return dst
}

func appendStringMultimap(dst []byte, m map[string][]string) []byte {
	dst = appendShort(dst, uint16(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		dst = appendString(dst, k)
		dst = appendStringList(dst, m[k])
	}
	return dst
}

func appendBytesMap(dst []byte, m map[string][]byte) []byte {
	dst = appendShort(dst, uint16(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		dst = appendString(dst, k)
		dst = appendBytes(dst, m[k])
	}
	return dst
}

// DecodeRequest decodes the body of a request frame. Byte slices in the
// result (values, ids, paging state, tokens) alias body.
func DecodeRequest(op Opcode, body []byte) (Message, error) {
	r := &reader{b: body}
	var m Message
	switch op {
	case OpOptions:
		m = Options{}
	case OpStartup:
		m = &Startup{Options: r.stringMapMax("STARTUP options", MaxStartupOptions)}
	case OpAuthResponse:
		m = &AuthResponse{Token: r.bytes("token")}
	case OpRegister:
		m = &Register{Events: r.stringList("event types")}
	case OpQuery:
		q := &Query{Query: r.longString("query string")}
		q.Params.decode(r)
		m = q
	case OpPrepare:
		m = &Prepare{Query: r.longString("query string")}
	case OpExecute:
		e := &Execute{ID: r.shortBytes("prepared id")}
		e.Params.decode(r)
		m = e
	case OpBatch:
		m = decodeBatch(r)
	default:
		return nil, fmt.Errorf("%w 0x%02x for a request", ErrUnknownOpcode, uint8(op))
	}
	if err := r.done(op.String()); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeBatch(r *reader) *Batch {
	b := &Batch{Type: BatchType(r.byte("batch type"))}
	if r.err == nil && b.Type > BatchCounter {
		r.failf("unknown batch type %d", b.Type)
	}
	// A child is at least kind (1) + [short bytes] (2) + value count (2).
	n := r.count(int(r.short("batch child count")), 5, "batch children")
	b.Children = make([]BatchChild, n)
	for i := range b.Children {
		c := &b.Children[i]
		switch kind := r.byte("batch child kind"); {
		case r.err != nil:
		case kind == 0:
			c.Query = r.longString("batch query string")
		case kind == 1:
			c.ID = r.shortBytes("batch prepared id")
		default:
			r.failf("batch child %d: unknown kind %d", i, kind)
		}
		nv := r.count(int(r.short("batch value count")), 4, "batch values")
		if nv > 0 {
			c.Values = make([]Value, nv)
			for j := range c.Values {
				c.Values[j] = r.value("batch value")
			}
		}
	}
	b.Consistency = Consistency(r.short("batch consistency"))
	flags := r.byte("batch flags")
	if r.err != nil {
		return b
	}
	if flags&batchValueNames != 0 {
		// Cassandra has never honoured named values in BATCH (CASSANDRA-10246).
		r.failf("BATCH with named values is not supported")
		return b
	}
	if flags&^(batchSerialConsistency|batchDefaultTimestamp) != 0 {
		r.failf("unknown batch flags 0x%02x", flags)
		return b
	}
	if flags&batchSerialConsistency != 0 {
		b.SerialConsistency = Consistency(r.short("batch serial consistency"))
	}
	if flags&batchDefaultTimestamp != 0 {
		b.Timestamp = r.long("batch timestamp")
		b.HasTimestamp = true
	}
	return b
}
