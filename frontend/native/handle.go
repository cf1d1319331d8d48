package native

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
)

// CQLVersion is the CQL version kvnode reports in SUPPORTED: ScyllaDB's, whose dialect (and
// rate-limit extension) it follows.
const CQLVersion = "3.3.1"

// rateLimitOption is the STARTUP and SUPPORTED key of ScyllaDB's rate-limit error extension.
const rateLimitOption = "SCYLLA_RATE_LIMIT_ERROR"

// newSupported returns the SUPPORTED answer to OPTIONS, encoded once.
func newSupported() *encoded {
	m := &cqlwire.Supported{Options: map[string][]string{
		"CQL_VERSION":   {CQLVersion},
		"COMPRESSION":   {"lz4", "snappy"},
		rateLimitOption: {fmt.Sprintf("ERROR_CODE=%d", cqlwire.ErrRateLimit)},
	}}
	return &encoded{op: m.Opcode(), body: m.AppendBody(nil)}
}

// encoded is a message whose body is encoded already; it is shared read-only.
type encoded struct {
	op   cqlwire.Opcode
	body []byte
}

func (m *encoded) Opcode() cqlwire.Opcode       { return m.op }
func (m *encoded) AppendBody(dst []byte) []byte { return append(dst, m.body...) }

// startupOptions checks STARTUP's options and returns the compression they choose (nil for none)
// and whether the client opted in to the rate-limit error.
func startupOptions(opts map[string]string) (cqlwire.Compression, bool, error) {
	v, ok := opts["CQL_VERSION"]
	if !ok {
		return nil, false, fmt.Errorf("the CQL_VERSION option is missing (this node speaks CQL %s)", CQLVersion)
	}
	if major, _, _ := strings.Cut(v, "."); major != "3" {
		return nil, false, fmt.Errorf("CQL_VERSION %q is not supported (this node speaks CQL %s)", v, CQLVersion)
	}
	var comp cqlwire.Compression
	if name, ok := opts["COMPRESSION"]; ok && name != "" {
		if comp = cqlwire.CompressionByName(strings.ToLower(name)); comp == nil {
			return nil, false, fmt.Errorf("COMPRESSION %q is not supported (supported: lz4, snappy)", name)
		}
	}
	_, rateLimit := opts[rateLimitOption]
	return comp, rateLimit, nil
}

// The event types of REGISTER.
const (
	eventTopology = "TOPOLOGY_CHANGE"
	eventStatus   = "STATUS_CHANGE"
	eventSchema   = "SCHEMA_CHANGE"
)

// register subscribes c to the events m names and answers READY, or answers a PROTOCOL_ERROR
// naming an unknown event type (subscribing to none).
func (c *conn) register(m *cqlwire.Register) cqlwire.Message {
	var mask eventMask
	for _, ev := range m.Events {
		switch ev {
		case eventTopology:
			mask |= maskTopology
		case eventStatus:
			mask |= maskStatus
		case eventSchema:
			mask |= maskSchema
		default:
			return &cqlwire.Error{Code: cqlwire.ErrProtocol, Message: fmt.Sprintf(
				"REGISTER: unknown event type %q (valid: %s, %s, %s)", ev, eventTopology, eventStatus, eventSchema)}
		}
	}
	c.srv.events.subscribe(c, mask)
	return cqlwire.Ready{}
}

// request is what a statement's answer needs to know of its request.
type request struct {
	consistency cqlwire.Consistency // as the client asked for it
	batch       *cqlwire.BatchType  // a BATCH
}

// execute runs a QUERY, PREPARE, EXECUTE or BATCH and returns the answer and its warnings. adm,
// when not nil, is the EXECUTE's admission by the limiter (admitExecute): it runs the statement.
func (s *Server) execute(c *conn, f cqlwire.Frame, adm AdmittedWrite) (cqlwire.Message, []string) {
	defer abandon(adm) // an admitted write not executed below
	var (
		res coordinator.Result
		err error
		req request
		ok  bool
	)
	ctx := c.ctx
	switch m := f.Message.(type) {
	case *cqlwire.Query:
		req.consistency = m.Params.Consistency
		var st coordinator.Statement
		if st, err = s.statement(c, &m.Params); err == nil && m.Params.Names != nil {
			st.Values, err = s.queryValuesByName(ctx, c, m.Query, &m.Params)
		}
		if err == nil {
			st.Text = m.Query
			res, err = s.cfg.Executor.Execute(ctx, st)
		}
		if err == nil {
			return s.result(c, res, m.Params.SkipMetadata)
		}
	case *cqlwire.Prepare:
		var p *coordinator.Prepared
		if p, err = s.cfg.Executor.Prepare(ctx, m.Query, *c.keyspace.Load()); err == nil {
			res, err := preparedResult(p)
			if err != nil {
				return s.serverError(err), nil
			}
			s.prepared.put(p)
			return res, nil
		}
	case *cqlwire.Execute:
		req.consistency = m.Params.Consistency
		var p *coordinator.Prepared
		if adm != nil {
			p = adm.Prepared() // the statement admitted, even if it was prepared again since
		} else if p, ok = s.prepared.get(m.ID); !ok {
			return unprepared(m.ID), nil
		}
		var st coordinator.Statement
		if st, err = s.statement(c, &m.Params); err == nil && m.Params.Names != nil {
			st.Values, err = valuesByName(p.Variables, &m.Params)
		}
		if err == nil {
			st.Prepared = p
			if adm != nil {
				res, err = adm.Execute(ctx, st)
			} else {
				res, err = s.cfg.Executor.Execute(ctx, st)
			}
		}
		if err == nil {
			return s.result(c, res, m.Params.SkipMetadata)
		}
	case *cqlwire.Batch:
		req.consistency, req.batch = m.Consistency, &m.Type
		var b coordinator.BatchStatement
		if b, err = s.batch(c, m); err != nil {
			if u, ok := err.(unpreparedError); ok {
				return unprepared(u.id), nil
			}
		} else if res, err = s.cfg.Executor.ExecuteBatch(ctx, b); err == nil {
			return s.result(c, res, false)
		}
	default:
		// The reader handles every other request opcode itself.
		err = fmt.Errorf("%v is not a statement", f.Header.Opcode)
	}
	return s.errorMessage(c, err, req), nil
}

// executeRecovering is execute, except that a panic in it, which is a bug of the node's, is
// answered SERVER_ERROR and logged with its stack instead of ending the process and every
// other client's requests with it. The connection goes on; the deferred calls on the way up
// (execute's among them) have released what the statement held.
func (s *Server) executeRecovering(c *conn, f cqlwire.Frame, adm AdmittedWrite) (msg cqlwire.Message, warnings []string) {
	defer func() {
		if r := recover(); r != nil {
			s.metrics.panics.Inc()
			s.log.Error("native: a statement panicked; answered SERVER_ERROR", "panic", r,
				"opcode", f.Header.Opcode, "remote", c.nc.RemoteAddr(), "stack", string(debug.Stack()))
			msg, warnings = &cqlwire.Error{Code: cqlwire.ErrServer,
				Message: "internal error: the statement hit a bug in this node, which logged it"}, nil
		}
	}()
	return s.execute(c, f, adm)
}

// statement translates QUERY's and EXECUTE's parameters.
func (s *Server) statement(c *conn, p *cqlwire.QueryParams) (coordinator.Statement, error) {
	st := coordinator.Statement{
		Keyspace:     *c.keyspace.Load(),
		PageSize:     int(p.PageSize),
		PagingState:  p.PagingState,
		Timestamp:    p.Timestamp,
		HasTimestamp: p.HasTimestamp,
	}
	var err error
	if st.Consistency, err = consistency(p.Consistency); err != nil {
		return st, err
	}
	if st.SerialConsistency, err = serialConsistency(p.SerialConsistency); err != nil {
		return st, err
	}
	if p.Names == nil { // values bound by name are ordered by the caller (valuesByName)
		st.Values = values(p.Values)
	}
	return st, nil
}

// queryValuesByName orders the values of a QUERY bound by name (the "names for values"
// flag): it prepares the statement for its variables' names, then binds as valuesByName.
func (s *Server) queryValuesByName(ctx context.Context, c *conn, text string, p *cqlwire.QueryParams) ([]coordinator.Value, error) {
	prep, err := s.cfg.Executor.Prepare(ctx, text, *c.keyspace.Load())
	if err != nil {
		return nil, err
	}
	return valuesByName(prep.Variables, p)
}

// valuesByName orders values bound by name as the statement's variables, as Cassandra does:
// each variable takes the value bound to its name (a named marker's :name, or for ? the
// column it binds), so that a name used by several markers binds them all. A name matches
// exactly or, failing that, case-insensitively. A variable without a value, or a value whose
// name no variable has, is an error naming it.
func valuesByName(vars []coordinator.Variable, p *cqlwire.QueryParams) ([]coordinator.Value, error) {
	if len(p.Names) != len(p.Values) {
		return nil, &coordinator.InvalidError{Err: fmt.Errorf("%d value names for %d values", len(p.Names), len(p.Values))}
	}
	find := func(name string) int {
		for i, n := range p.Names {
			if n == name {
				return i
			}
		}
		for i, n := range p.Names {
			if strings.EqualFold(n, name) {
				return i
			}
		}
		return -1
	}
	used := make([]bool, len(p.Names))
	out := make([]coordinator.Value, len(vars))
	for i, v := range vars {
		j := find(v.Name)
		if j < 0 {
			return nil, &coordinator.InvalidError{Err: fmt.Errorf("no value is bound to the name %s (bind marker %d); the statement's markers are %s", v.Name, i, variableNames(vars))}
		}
		used[j] = true
		out[i] = coordinator.Value{Bytes: p.Values[j].Bytes, Unset: p.Values[j].Unset}
	}
	for j, u := range used {
		if !u {
			return nil, &coordinator.InvalidError{Err: fmt.Errorf("a value is bound to the name %s, which no bind marker has; the statement's markers are %s", p.Names[j], variableNames(vars))}
		}
	}
	return out, nil
}

// variableNames lists the variables' names for error messages: "k, c, [limit]", or "none".
func variableNames(vars []coordinator.Variable) string {
	if len(vars) == 0 {
		return "none"
	}
	names := make([]string, len(vars))
	for i, v := range vars {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// unpreparedError is an EXECUTE or BATCH naming a prepared id the node does not know.
type unpreparedError struct{ id []byte }

func (e unpreparedError) Error() string { return fmt.Sprintf("unknown prepared statement id %x", e.id) }

// batch translates a BATCH.
func (s *Server) batch(c *conn, m *cqlwire.Batch) (coordinator.BatchStatement, error) {
	b := coordinator.BatchStatement{
		Keyspace: *c.keyspace.Load(), Timestamp: m.Timestamp, HasTimestamp: m.HasTimestamp,
		Children: make([]coordinator.BatchChild, len(m.Children)),
	}
	switch m.Type {
	case cqlwire.BatchLogged:
		b.Type = coordinator.BatchLogged
	case cqlwire.BatchUnlogged:
		b.Type = coordinator.BatchUnlogged
	case cqlwire.BatchCounter:
		b.Type = coordinator.BatchCounter
	default:
		return b, &coordinator.InvalidError{Err: fmt.Errorf("unknown batch type %d (valid: 0 logged, 1 unlogged, 2 counter)", m.Type)}
	}
	var err error
	if b.Consistency, err = consistency(m.Consistency); err != nil {
		return b, err
	}
	if b.SerialConsistency, err = serialConsistency(m.SerialConsistency); err != nil {
		return b, err
	}
	for i, ch := range m.Children {
		b.Children[i] = coordinator.BatchChild{Text: ch.Query, Values: values(ch.Values)}
		if ch.ID != nil {
			p, ok := s.prepared.get(ch.ID)
			if !ok {
				return b, unpreparedError{id: ch.ID}
			}
			b.Children[i].Prepared = p
		}
	}
	return b, nil
}

// serialConsistency returns the domain level of a request's serial consistency: 0 when absent.
// The executor refuses a level other than SERIAL or LOCAL_SERIAL where it uses it (a
// conditional statement), as Cassandra does.
func serialConsistency(c cqlwire.Consistency) (coordinator.Consistency, error) {
	if c == 0 {
		return 0, nil
	}
	return consistency(c)
}

// consistency returns the domain level of a protocol level (ANY for writes alone: the
// executor refuses it for reads).
func consistency(c cqlwire.Consistency) (coordinator.Consistency, error) {
	switch c {
	case cqlwire.One:
		return coordinator.One, nil
	case cqlwire.Two:
		return coordinator.Two, nil
	case cqlwire.Three:
		return coordinator.Three, nil
	case cqlwire.Quorum:
		return coordinator.Quorum, nil
	case cqlwire.All:
		return coordinator.All, nil
	case cqlwire.LocalOne:
		return coordinator.LocalOne, nil
	case cqlwire.LocalQuorum:
		return coordinator.LocalQuorum, nil
	case cqlwire.EachQuorum:
		return coordinator.EachQuorum, nil
	case cqlwire.Serial:
		return coordinator.Serial, nil
	case cqlwire.LocalSerial:
		return coordinator.LocalSerial, nil
	case cqlwire.Any:
		return coordinator.Any, nil
	}
	return 0, &coordinator.InvalidError{Err: fmt.Errorf("consistency level %s is not supported (valid: ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)", consistencyName(c))}
}

// consistencyName returns the protocol's name of c.
func consistencyName(c cqlwire.Consistency) string {
	names := [...]string{"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "SERIAL", "LOCAL_SERIAL", "LOCAL_ONE"}
	if int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("0x%04x", uint16(c))
}

// values converts bound values; the bytes stay those of the request's frame copy.
func values(vs []cqlwire.Value) []coordinator.Value {
	if len(vs) == 0 {
		return nil
	}
	out := make([]coordinator.Value, len(vs))
	for i, v := range vs {
		out[i] = coordinator.Value{Bytes: v.Bytes, Unset: v.Unset}
	}
	return out
}

// result renders a domain result.
func (s *Server) result(c *conn, res coordinator.Result, skipMetadata bool) (cqlwire.Message, []string) {
	switch res.Kind {
	case coordinator.ResultVoid:
		return cqlwire.VoidResult{}, res.Warnings
	case coordinator.ResultSetKeyspace:
		ks := res.Keyspace
		c.keyspace.Store(&ks)
		return &cqlwire.SetKeyspaceResult{Keyspace: ks}, res.Warnings
	case coordinator.ResultSchemaChange:
		return &cqlwire.SchemaChangeResult{SchemaChange: schemaChange(res.SchemaChange)}, res.Warnings
	case coordinator.ResultRows:
		m, err := rowsMessage(res.Rows, res.PagingState, skipMetadata)
		if err != nil {
			return s.serverError(err), nil
		}
		return m, res.Warnings
	case coordinator.ResultDescription:
		// DESCRIBE is cqlsh's own statement; drivers do not send it. Answer it as one text
		// row, as ScyllaDB's server-side DESCRIBE does.
		return &rows{cols: []cqlwire.ColumnSpec{{Name: "create_statement", Type: cqlwire.Type{ID: cqlwire.TypeVarchar}}},
			values: [][][]byte{{[]byte(res.Description)}}}, res.Warnings
	}
	return s.serverError(fmt.Errorf("native: unknown result kind %v", res.Kind)), nil
}

func schemaChange(sc coordinator.SchemaChange) cqlwire.SchemaChange {
	out := cqlwire.SchemaChange{Change: sc.Change.String(), Target: sc.Target.String(), Keyspace: sc.Keyspace}
	if sc.Target == coordinator.TargetTable || sc.Target == coordinator.TargetType {
		out.Name = sc.Table
	}
	return out
}

// rowsMessage renders rows.
func rowsMessage(r *coordinator.Rows, pagingState []byte, skipMetadata bool) (*rows, error) {
	m := &rows{pagingState: pagingState, noMetadata: skipMetadata}
	if r == nil {
		return m, nil
	}
	m.cols = make([]cqlwire.ColumnSpec, len(r.Columns))
	for i, col := range r.Columns {
		t, err := wireType(col.Type)
		if err != nil {
			return nil, fmt.Errorf("native: column %s of %s.%s: %w", col.Name, r.Keyspace, r.Table, err)
		}
		m.cols[i] = cqlwire.ColumnSpec{Keyspace: r.Keyspace, Table: r.Table, Name: col.Name, Type: t}
	}
	for i, row := range r.Values {
		if len(row) != len(r.Columns) {
			return nil, fmt.Errorf("native: row %d of %s.%s has %d values for %d columns", i, r.Keyspace, r.Table, len(row), len(r.Columns))
		}
	}
	m.values = r.Values
	return m, nil
}

// rows is a RESULT Rows encoded straight from the domain's rows, without copying them into
// cqlwire.RowsResult's flat layout.
type rows struct {
	cols        []cqlwire.ColumnSpec
	values      [][][]byte
	pagingState []byte
	noMetadata  bool
}

func (*rows) Opcode() cqlwire.Opcode { return cqlwire.OpResult }

func (m *rows) AppendBody(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 2) // kind Rows
	md := cqlwire.RowsMetadata{ColumnCount: len(m.cols), PagingState: m.pagingState, NoMetadata: m.noMetadata, Columns: m.cols}
	dst = md.Append(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.values)))
	for _, row := range m.values {
		for _, v := range row {
			if v == nil {
				dst = binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
				continue
			}
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
	}
	return dst
}

// preparedResult renders a prepared statement.
func preparedResult(p *coordinator.Prepared) (*cqlwire.PreparedResult, error) {
	m := &cqlwire.PreparedResult{ID: p.ID[:], Bind: make([]cqlwire.ColumnSpec, len(p.Variables))}
	for i, v := range p.Variables {
		t, err := wireType(v.Type)
		if err != nil {
			return nil, fmt.Errorf("native: bind marker %d (%s): %w", i, v.Name, err)
		}
		m.Bind[i] = cqlwire.ColumnSpec{Keyspace: v.Keyspace, Table: v.Table, Name: v.Name, Type: t}
	}
	if len(p.PKIndexes) > 0 {
		m.PKIndexes = make([]uint16, len(p.PKIndexes))
		for i, x := range p.PKIndexes {
			m.PKIndexes[i] = uint16(x)
		}
	}
	if p.Columns == nil {
		m.Result = cqlwire.RowsMetadata{NoMetadata: true}
		return m, nil
	}
	ks, table := p.RowsKeyspace, p.RowsTable
	m.Result.ColumnCount = len(p.Columns)
	m.Result.Columns = make([]cqlwire.ColumnSpec, len(p.Columns))
	for i, col := range p.Columns {
		t, err := wireType(col.Type)
		if err != nil {
			return nil, fmt.Errorf("native: column %s: %w", col.Name, err)
		}
		m.Result.Columns[i] = cqlwire.ColumnSpec{Keyspace: ks, Table: table, Name: col.Name, Type: t}
	}
	return m, nil
}

func unprepared(id []byte) *cqlwire.Error {
	return &cqlwire.Error{
		Code:         cqlwire.ErrUnprepared,
		Message:      fmt.Sprintf("prepared statement %x is not known to this node; prepare it again", id),
		UnpreparedID: append([]byte(nil), id...),
	}
}
