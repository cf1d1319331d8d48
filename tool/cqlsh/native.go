package cqlsh

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// conn is the shell's connection to a node: *client.Client (the gRPC API) or *nativeConn.
type conn interface {
	Execute(ctx context.Context, cl client.Consistency, stmt string) (*client.Result, error)
	Keyspace() string
	Addr() string
	Close() error
}

// nativeConn is one CQL native protocol (v4) connection, spoken with kvnode's own cqlwire
// codec rather than a driver: the shell runs statements as typed, USE included (gocql refuses
// USE, since its pool spans connections), and renders the server's answer exactly as the gRPC
// path does, with the same Go values and the same error types. One statement at a time: the
// shell is sequential, and mu keeps it so.
type nativeConn struct {
	addr string
	nc   net.Conn
	fr   *cqlwire.FrameReader
	buf  []byte
	// pageSize is the page size of every QUERY (nativePageSize; tests set less).
	pageSize int32

	mu       sync.Mutex
	stream   int16
	keyspace string
	broken   error // set once the connection cannot be trusted (a request was cut off)
}

// nativePageSize is the page size the shell asks for; it reads every page.
const nativePageSize = 5000

// dialNative connects to addr, over TLS when tlsCfg is set, and completes the STARTUP
// handshake, opting in to ScyllaDB's rate-limit error so rejections come back as such, and
// logging in as username when it is set.
func dialNative(ctx context.Context, addr string, tlsCfg *tls.Config, username, password string) (*nativeConn, error) {
	var (
		nc  net.Conn
		err error
	)
	if tlsCfg != nil {
		nc, err = (&tls.Dialer{Config: tlsCfg}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	c := &nativeConn{addr: addr, nc: nc, pageSize: nativePageSize, fr: cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})}
	startup := &cqlwire.Startup{Options: map[string]string{
		"CQL_VERSION":             "3.0.0",
		"DRIVER_NAME":             "kvnode cql",
		"SCYLLA_RATE_LIMIT_ERROR": fmt.Sprintf("ERROR_CODE=%d", cqlwire.ErrRateLimit),
	}}
	m, _, err := c.roundTrip(ctx, startup)
	answered := err == nil
	if err == nil {
		switch m := m.(type) {
		case cqlwire.Ready, *cqlwire.Ready:
		case *cqlwire.Authenticate:
			err = c.login(ctx, m.Authenticator, username, password)
		case *cqlwire.Error:
			err = fmt.Errorf("STARTUP refused: %s", m.Message)
		default:
			err = fmt.Errorf("STARTUP answered with %s, want READY", m.Opcode())
		}
	}
	if err != nil {
		nc.Close()
		return nil, &handshakeError{err: err, answered: answered}
	}
	return c, nil
}

// handshakeError is a failure of dialNative after the TCP connection was made: STARTUP (and
// the login) went wrong. answered is whether the node answered STARTUP in the native
// protocol.
type handshakeError struct {
	err      error
	answered bool
}

func (e *handshakeError) Error() string { return e.err.Error() }

func (e *handshakeError) Unwrap() error { return e.err }

func (c *nativeConn) Addr() string { return c.addr }

func (c *nativeConn) Keyspace() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keyspace
}

func (c *nativeConn) Close() error { return c.nc.Close() }

// roundTrip sends m and returns the answer on its stream, skipping answers to earlier requests
// that were cut off. ctx's end interrupts it, after which the connection is unusable.
func (c *nativeConn) roundTrip(ctx context.Context, m cqlwire.Message) (cqlwire.Message, []string, error) {
	if c.broken != nil {
		return nil, nil, c.broken
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
	} else {
		c.nc.SetDeadline(time.Time{})
	}
	c.stream = (c.stream + 1) & 0x7fff
	c.buf = cqlwire.AppendFrame(c.buf[:0], c.stream, m, cqlwire.FrameOptions{})
	fail := func(err error) (cqlwire.Message, []string, error) {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		c.broken = fmt.Errorf("connection to %s lost: %w", c.addr, err)
		return nil, nil, err
	}
	if _, err := c.nc.Write(c.buf); err != nil {
		return fail(err)
	}
	for {
		h, body, err := c.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fail(err)
		}
		if h.Stream != c.stream {
			continue // an event, or the answer to a request that was cut off
		}
		f, err := cqlwire.DecodeFrame(h, body)
		if err != nil {
			return fail(err)
		}
		return f.Message, f.Warnings, nil
	}
}

// Execute runs stmt, reading every page of rows, and returns the result as the gRPC client
// would: the same column type names, Go values and error types.
func (c *nativeConn) Execute(ctx context.Context, cl client.Consistency, stmt string) (*client.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wcl, err := wireConsistency(cl)
	if err != nil {
		return nil, err
	}
	q := &cqlwire.Query{Query: stmt, Params: cqlwire.QueryParams{Consistency: wcl, PageSize: c.pageSize}}
	res := &client.Result{}
	for {
		m, warnings, err := c.roundTrip(ctx, q)
		if err != nil {
			return nil, err
		}
		res.Warnings = append(res.Warnings, warnings...)
		switch m := m.(type) {
		case *cqlwire.Error:
			return nil, nativeError(m)
		case cqlwire.VoidResult, *cqlwire.VoidResult:
			return res, nil
		case *cqlwire.SetKeyspaceResult:
			c.keyspace = m.Keyspace
			res.Keyspace = m.Keyspace
			return res, nil
		case *cqlwire.SchemaChangeResult:
			res.SchemaChange = &client.SchemaChange{Change: m.Change, Keyspace: m.Keyspace, Table: m.Name}
			return res, nil
		case *cqlwire.RowsResult:
			if err := addRows(res, m); err != nil {
				return nil, fmt.Errorf("cql: the answer from %s: %w", c.addr, err)
			}
			if m.Metadata.PagingState == nil {
				return describeResult(res, stmt)
			}
			q.Params.PagingState = append([]byte(nil), m.Metadata.PagingState...)
		default:
			return nil, fmt.Errorf("cql: %s answered a QUERY with %s", c.addr, m.Opcode())
		}
	}
}

// describeResult turns the answer to DESCRIBE, which the native server sends as one text row
// (as ScyllaDB's server-side DESCRIBE does), back into a description.
func describeResult(res *client.Result, stmt string) (*client.Result, error) {
	st, err := cql.ParseStatement(stmt)
	if _, ok := st.(*cql.DescribeStmt); err != nil || !ok {
		return res, nil
	}
	if len(res.Columns) != 1 || len(res.Rows) != 1 {
		return nil, fmt.Errorf("cql: DESCRIBE answered with %d columns and %d rows, want one text row", len(res.Columns), len(res.Rows))
	}
	desc, ok := res.Rows[0][0].(string)
	if !ok {
		return nil, fmt.Errorf("cql: DESCRIBE answered with a %s value, want text", res.Columns[0].Type)
	}
	return &client.Result{Description: desc, Warnings: res.Warnings}, nil
}

// addRows appends m's columns (on the first page) and rows to res.
func addRows(res *client.Result, m *cqlwire.RowsResult) error {
	types := make([]schema.Type, len(m.Metadata.Columns))
	for i, col := range m.Metadata.Columns {
		t, err := schemaType(col.Type)
		if err != nil {
			return fmt.Errorf("column %s: %w", col.Name, err)
		}
		types[i] = t
	}
	if res.Columns == nil {
		res.Columns = make([]client.Column, len(types))
		for i, col := range m.Metadata.Columns {
			res.Columns[i] = client.Column{Name: col.Name, Type: types[i].String()}
		}
	}
	if len(types) != len(res.Columns) {
		return fmt.Errorf("a page has %d columns, the first had %d", len(types), len(res.Columns))
	}
	for i := range m.NumRows() {
		cells := m.Row(i)
		row := make([]any, len(cells))
		for j, b := range cells {
			v, err := types[j].Decode(b)
			if err != nil {
				return fmt.Errorf("row %d, column %s: %w", len(res.Rows)+1, res.Columns[j].Name, err)
			}
			row[j] = goValue(v)
		}
		res.Rows = append(res.Rows, row)
	}
	return nil
}

// goValue turns schema's decoded map values into the maps of client.Result.
func goValue(v any) any {
	switch v := v.(type) {
	case []schema.MapEntry[string]:
		m := make(map[string]string, len(v))
		for _, e := range v {
			m[e.Key] = e.Value
		}
		return m
	case []schema.MapEntry[[]byte]:
		m := make(map[string][]byte, len(v))
		for _, e := range v {
			m[e.Key] = e.Value
		}
		return m
	}
	return v
}

// schemaType maps a native protocol type to kvnode's.
func schemaType(t cqlwire.Type) (schema.Type, error) {
	scalar := map[cqlwire.TypeID]schema.Type{
		cqlwire.TypeVarchar: schema.TypeText, cqlwire.TypeASCII: schema.TypeASCII, cqlwire.TypeInt: schema.TypeInt,
		cqlwire.TypeBigint: schema.TypeBigInt, cqlwire.TypeSmallint: schema.TypeSmallInt, cqlwire.TypeTinyint: schema.TypeTinyInt,
		cqlwire.TypeDouble: schema.TypeDouble, cqlwire.TypeFloat: schema.TypeFloat, cqlwire.TypeBoolean: schema.TypeBoolean,
		cqlwire.TypeBlob: schema.TypeBlob, cqlwire.TypeTimestamp: schema.TypeTimestamp, cqlwire.TypeUUID: schema.TypeUUID,
		cqlwire.TypeTimeUUID: schema.TypeTimeUUID, cqlwire.TypeInet: schema.TypeInet, cqlwire.TypeDate: schema.TypeDate,
		cqlwire.TypeTime: schema.TypeTime, cqlwire.TypeDecimal: schema.TypeDecimal, cqlwire.TypeVarint: schema.TypeVarint,
		cqlwire.TypeDuration: schema.TypeDuration, cqlwire.TypeCounter: schema.TypeCounter,
	}
	if st, ok := scalar[t.ID]; ok {
		return st, nil
	}
	text := func(e cqlwire.Type) bool { return e.ID == cqlwire.TypeVarchar }
	switch {
	case t.ID == cqlwire.TypeSet && len(t.Elems) == 1 && text(t.Elems[0]):
		return schema.TypeSetText, nil
	case t.ID == cqlwire.TypeList && len(t.Elems) == 1 && text(t.Elems[0]):
		return schema.TypeListText, nil
	case t.ID == cqlwire.TypeMap && len(t.Elems) == 2 && text(t.Elems[0]) && text(t.Elems[1]):
		return schema.TypeMapTextText, nil
	case t.ID == cqlwire.TypeMap && len(t.Elems) == 2 && text(t.Elems[0]) && t.Elems[1].ID == cqlwire.TypeBlob:
		return schema.TypeMapTextBlob, nil
	}
	if t.ID == cqlwire.TypeUDT {
		elems := make([]schema.Type, len(t.Elems))
		for i, e := range t.Elems {
			et, err := schemaType(e)
			if err != nil {
				return schema.TypeInvalid, err
			}
			elems[i] = et
		}
		return schema.UserTypeOf(t.Keyspace, t.Name, t.Fields, elems)
	}
	// Any other collection, and every tuple, is a frozen value of a table's column.
	kind := map[cqlwire.TypeID]string{cqlwire.TypeList: "list", cqlwire.TypeSet: "set", cqlwire.TypeMap: "map", cqlwire.TypeTuple: "tuple"}[t.ID]
	if kind != "" && len(t.Elems) > 0 {
		elems := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			et, err := schemaType(e)
			if err != nil {
				return schema.TypeInvalid, err
			}
			elems[i] = et.String()
		}
		if st, err := schema.LookupType("frozen<" + kind + "<" + strings.Join(elems, ", ") + ">>"); err == nil {
			return st, nil
		}
	}
	return schema.TypeInvalid, fmt.Errorf("type %s is not one kvnode has", t)
}

// wireConsistency maps the shell's consistency level to the protocol's.
func wireConsistency(cl client.Consistency) (cqlwire.Consistency, error) {
	switch cl {
	case client.One:
		return cqlwire.One, nil
	case client.Quorum:
		return cqlwire.Quorum, nil
	case client.All:
		return cqlwire.All, nil
	case client.LocalOne:
		return cqlwire.LocalOne, nil
	case client.LocalQuorum:
		return cqlwire.LocalQuorum, nil
	case client.Two:
		return cqlwire.Two, nil
	case client.Three:
		return cqlwire.Three, nil
	case client.EachQuorum:
		return cqlwire.EachQuorum, nil
	case client.Serial:
		return cqlwire.Serial, nil
	case client.LocalSerial:
		return cqlwire.LocalSerial, nil
	}
	return 0, fmt.Errorf("cql: consistency %v has no native protocol level", cl)
}

// nativeError turns an ERROR response into the client's error types, which the shell reports.
func nativeError(e *cqlwire.Error) error {
	switch e.Code {
	case cqlwire.ErrSyntax, cqlwire.ErrInvalid, cqlwire.ErrAlreadyExists, cqlwire.ErrConfig:
		return &client.InvalidError{Message: e.Message}
	case cqlwire.ErrUnauthorized:
		return &client.UnauthorizedError{Message: e.Message}
	case cqlwire.ErrUnavailable:
		return &client.UnavailableError{Live: int(e.Received), Required: int(e.BlockFor), Message: e.Message}
	case cqlwire.ErrWriteTimeout, cqlwire.ErrReadTimeout:
		return &client.TimeoutError{Received: int(e.Received), Required: int(e.BlockFor), Message: e.Message}
	case cqlwire.ErrWriteFailure, cqlwire.ErrReadFailure:
		return &client.FailureError{Received: int(e.Received), Required: int(e.BlockFor), Failures: int(e.NumFailures), Message: e.Message}
	case cqlwire.ErrRateLimit:
		rl := &client.RateLimitError{RejectedBy: client.RejectedByReplicas, Message: e.Message}
		if e.RejectedByCoordinator {
			rl.RejectedBy = client.RejectedByCoordinator
		}
		return rl
	}
	return &nativeServerError{code: e.Code, msg: strings.TrimSpace(e.Message)}
}

// nativeServerError is an ERROR the client has no type for (a server fault, overload).
type nativeServerError struct {
	code cqlwire.ErrorCode
	msg  string
}

func (e *nativeServerError) Error() string {
	return fmt.Sprintf("error 0x%04x: %s", int32(e.code), e.msg)
}
