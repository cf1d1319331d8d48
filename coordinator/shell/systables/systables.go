package systables

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// The system keyspaces this package serves.
const (
	KeyspaceSystem       = "system"
	KeyspaceSystemSchema = "system_schema"
)

// What the node reports about the software it runs.
const (
	// ReleaseVersion is what ScyllaDB reports: drivers take it for Cassandra 3.0, whose schema
	// tables (system_schema, not the 2.x system.schema_*) they then read, and whose
	// virtual-table keyspaces (4.0's system_virtual_schema) they do not ask for.
	ReleaseVersion = "3.0.8"
	// CQLVersion is the CQL language version reported in system.local.
	CQLVersion = "3.3.1"
	// NativeProtocolVersion is the highest native protocol version served.
	NativeProtocolVersion = "4"
	// Partitioner is the partitioner kvnode uses (Cassandra's Murmur3).
	Partitioner = "org.apache.cassandra.dht.Murmur3Partitioner"
	// DefaultNativePort is the native port reported for a node that did not gossip its own.
	DefaultNativePort = 9042
)

// Node is what the system tables report about one ring member.
type Node struct {
	// ID is the kvnode node id; host_id derives from it (HostID).
	ID string
	// Address is the node's internode address: system.local's broadcast_address and
	// listen_address, system.peers' peer.
	Address netip.Addr
	// Port is the node's internode port: system.peers_v2's peer_port (with it, the rows of nodes
	// sharing an IP stay distinct).
	Port int
	// NativeAddr and NativePort are where the node serves the native protocol: rpc_address,
	// native_address and native_port. An invalid NativeAddr means Address; zero NativePort
	// means DefaultNativePort.
	NativeAddr netip.Addr
	NativePort int
	// DataCenter and Rack place the node.
	DataCenter, Rack string
	// SchemaDigest is the node's schema digest (the local one, or as the peer last gossiped it);
	// "" when unknown, which makes schema_version null.
	SchemaDigest string
	// Tokens are the node's vnode tokens.
	Tokens []int64
}

// Source is the node as the system tables see it. Its methods must be safe for concurrent use
// and return values the caller may keep (not modified afterwards).
type Source interface {
	// ClusterName is system.local's cluster_name.
	ClusterName() string
	// Schema is the node's current schema.
	Schema() *schema.Schema
	// Local is the local node.
	Local() Node
	// Peers are the other ring members, live or down, in any order.
	Peers() []Node
}

// Tables serves the system tables of one node. It is safe for concurrent use.
type Tables struct {
	src    Source
	defs   []*table
	tables map[tableKey]*table
}

type tableKey struct{ keyspace, name string }

// New returns the system tables of the node src describes.
func New(src Source) (*Tables, error) {
	if src == nil {
		return nil, errors.New("systables: Source is nil")
	}
	t := &Tables{src: src, defs: definitions(), tables: map[tableKey]*table{}}
	for _, d := range t.defs {
		t.tables[tableKey{d.keyspace, d.name}] = d
	}
	return t, nil
}

// IsSystemKeyspace reports whether name is one of the keyspaces this package serves.
func IsSystemKeyspace(name string) bool {
	return name == KeyspaceSystem || name == KeyspaceSystemSchema
}

// HasKeyspace reports whether name is one of the keyspaces t serves (IsSystemKeyspace).
func (t *Tables) HasKeyspace(name string) bool { return IsSystemKeyspace(name) }

// Select answers st when it reads a table of a system keyspace (ok is true), with values binding
// its markers; errors are *coordinator.InvalidError. keyspace is the session's keyspace for an
// unqualified table name. A SELECT of any other keyspace is not answered (ok is false).
func (t *Tables) Select(ctx context.Context, st *cql.SelectStmt, keyspace string, values []coordinator.Value) (res coordinator.Result, ok bool, err error) {
	ks := qualify(st.Table, keyspace)
	if !IsSystemKeyspace(ks) {
		return coordinator.Result{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return coordinator.Result{}, true, err
	}
	res, err = t.selectRows(ctx, st, ks, values)
	return res, true, err
}

func qualify(tn cql.TableName, keyspace string) string {
	if tn.Keyspace.Name != "" {
		return tn.Keyspace.Name
	}
	return keyspace
}

// query is a SELECT on a system table, resolved: the table, the projection and the restrictions.
type query struct {
	ks   string
	tbl  *table
	proj []int // column indexes, in the order selected; -1-k for the selector consts[k]
	// consts are the selected function calls (SELECT now() FROM system.local): their columns
	// and values, the same in every row.
	consts  []constSelector
	where   []restriction
	limit   *cql.Literal // nil without LIMIT
	markers []coordinator.Variable
}

// constSelector is a function call of a SELECT list over a system table: no column is its
// argument, so its value is the same in every row.
type constSelector struct {
	col   coordinator.RowColumn
	value []byte
}

// restriction is col = value, the value a literal's encoding or (bind ≥ 0) the bind-th marker's.
type restriction struct {
	col  int
	lit  []byte
	bind int
	pos  cql.Pos
}

// resolve checks a SELECT against system keyspace ks's tables.
func (t *Tables) resolve(st *cql.SelectStmt, ks string) (*query, error) {
	tbl, ok := t.tables[tableKey{ks, st.Table.Name.Name}]
	if !ok {
		return nil, &coordinator.InvalidError{
			Pos: st.Table.Name.NamePos,
			Err: fmt.Errorf("%w %s.%s (the %s keyspace has %s)", schema.ErrUnknownTable, cql.QuoteIdent(ks),
				cql.QuoteIdent(st.Table.Name.Name), ks, strings.Join(t.tableNames(ks), ", ")),
		}
	}
	if len(st.OrderBy) > 0 {
		return nil, &coordinator.InvalidError{Pos: st.OrderBy[0].Column.NamePos,
			Err: fmt.Errorf("ORDER BY is not supported on system table %s.%s", ks, tbl.name)}
	}
	if what := unsupportedShape(st); what != "" {
		return nil, &coordinator.InvalidError{Pos: st.Start, Err: fmt.Errorf("%s is not supported on system table %s.%s", what, ks, tbl.name)}
	}
	q := &query{ks: ks, tbl: tbl, limit: st.Limit}
	if st.Star {
		q.proj = make([]int, len(tbl.columns))
		for i := range q.proj {
			q.proj[i] = i
		}
	} else {
		now := time.Now()
		for i, id := range st.Columns {
			if st.Funcs != nil && st.Funcs[i].Kind == cql.SelectElement {
				return nil, &coordinator.InvalidError{Pos: st.Funcs[i].Pos,
					Err: fmt.Errorf("element selection is not supported on system table %s.%s", ks, tbl.name)}
			}
			if st.Funcs != nil && st.Funcs[i].Kind == cql.SelectExpr {
				if len(cql.BindMarkers(st)) > 0 {
					return nil, &coordinator.InvalidError{Pos: st.Funcs[i].Pos,
						Err: fmt.Errorf("bind markers in the selectors of system table %s.%s are not supported", ks, tbl.name)}
				}
				rc, v, err := schema.SystemSelector(ks, tbl.name, st.Funcs[i].Expr, now)
				if err != nil {
					return nil, &coordinator.InvalidError{Pos: st.Funcs[i].Pos,
						Err: fmt.Errorf("system table %s.%s: %w (its selectors may be functions of no column, as now())", ks, tbl.name, err)}
				}
				q.proj = append(q.proj, -1-len(q.consts))
				q.consts = append(q.consts, constSelector{col: coordinator.RowColumn{Name: rc.Name, Type: rc.Type}, value: v})
				continue
			}
			i, ok := tbl.column(id.Name)
			if !ok {
				return nil, &coordinator.InvalidError{Pos: id.NamePos,
					Err: fmt.Errorf("undefined column name %s in system table %s.%s", cql.QuoteIdent(id.Name), ks, tbl.name)}
			}
			q.proj = append(q.proj, i)
		}
	}
	// Markers number in order of appearance, the WHERE clause's before LIMIT's.
	for _, r := range st.Where {
		i, ok := tbl.column(r.Column.Name)
		if !ok {
			return nil, &coordinator.InvalidError{Pos: r.Column.NamePos,
				Err: fmt.Errorf("undefined column name %s in system table %s.%s", cql.QuoteIdent(r.Column.Name), ks, tbl.name)}
		}
		col := tbl.columns[i]
		if r.Op != cql.EQ {
			return nil, &coordinator.InvalidError{Pos: r.OpPos,
				Err: fmt.Errorf("system table %s.%s supports only '=' restrictions, found '%s' on %s", ks, tbl.name, r.Op, col.name)}
		}
		res := restriction{col: i, bind: -1, pos: r.Value.Pos()}
		if isBind(r.Value) {
			res.bind = len(q.markers)
			q.markers = append(q.markers, coordinator.Variable{Keyspace: ks, Table: tbl.name, Name: col.name, Type: col.typ})
		} else {
			b, err := schema.LiteralValue(col.typ, r.Value)
			if err != nil {
				return nil, &coordinator.InvalidError{Pos: r.Value.Pos(),
					Err: fmt.Errorf("restriction on %s of system table %s.%s: %w", col.name, ks, tbl.name, err)}
			}
			res.lit = b
		}
		q.where = append(q.where, res)
	}
	if st.Limit != nil {
		if st.Limit.Kind == cql.LitBind {
			q.markers = append(q.markers, coordinator.Variable{Keyspace: ks, Table: tbl.name, Name: "[limit]", Type: schema.TypeInt})
		} else if _, err := limitValue(st.Limit, nil, 0); err != nil {
			return nil, &coordinator.InvalidError{Pos: st.Limit.ValuePos, Err: err}
		}
	}
	return q, nil
}

// columns returns the result's columns.
func (q *query) columns() []coordinator.RowColumn {
	cols := make([]coordinator.RowColumn, len(q.proj))
	for i, c := range q.proj {
		if c < 0 {
			cols[i] = q.consts[-1-c].col
			continue
		}
		cols[i] = coordinator.RowColumn{Name: q.tbl.columns[c].name, Type: q.tbl.columns[c].typ}
	}
	return cols
}

// Prepare describes a SELECT of a system table as the native protocol's PREPARE answer does (ok
// is true): its bind markers and result columns. A SELECT of any other keyspace is not handled.
func (t *Tables) Prepare(st *cql.SelectStmt, keyspace string) (vars []coordinator.Variable, cols []coordinator.RowColumn, ok bool, err error) {
	ks := qualify(st.Table, keyspace)
	if !IsSystemKeyspace(ks) {
		return nil, nil, false, nil
	}
	q, err := t.resolve(st, ks)
	if err != nil {
		return nil, nil, true, err
	}
	return q.markers, q.columns(), true, nil
}

// selectRows answers a SELECT on system keyspace ks.
func (t *Tables) selectRows(ctx context.Context, st *cql.SelectStmt, ks string, values []coordinator.Value) (coordinator.Result, error) {
	q, err := t.resolve(st, ks)
	if err != nil {
		return coordinator.Result{}, err
	}
	if len(values) != len(q.markers) {
		return coordinator.Result{}, &coordinator.InvalidError{
			Err: fmt.Errorf("the statement has %d bind markers but %d values were bound", len(q.markers), len(values))}
	}
	want := make([][]byte, len(q.where))
	for i, r := range q.where {
		if r.bind < 0 {
			want[i] = r.lit
			continue
		}
		v := values[r.bind]
		if v.Unset || v.Bytes == nil {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: r.pos,
				Err: fmt.Errorf("invalid null or unset value bound for %s of system table %s.%s", q.tbl.columns[r.col].name, q.ks, q.tbl.name)}
		}
		want[i] = v.Bytes
	}
	limit := 0
	if q.limit != nil {
		if limit, err = limitValue(q.limit, values, len(values)-1); err != nil {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: q.limit.ValuePos, Err: err}
		}
	}

	restrict := make(map[string][]byte, len(q.where))
	for i, r := range q.where {
		restrict[q.tbl.columns[r.col].name] = want[i]
	}
	out := &coordinator.Rows{Keyspace: q.ks, Table: q.tbl.name, Columns: q.columns()}
	v, err := t.view(ctx, q.tbl, restrict)
	if err != nil {
		return coordinator.Result{}, err
	}
rowLoop:
	for _, row := range q.tbl.rows(v) {
		for i, r := range q.where {
			if row[r.col] == nil || string(row[r.col]) != string(want[i]) {
				continue rowLoop
			}
		}
		vals := make([][]byte, len(q.proj))
		for i, c := range q.proj {
			if c < 0 {
				vals[i] = q.consts[-1-c].value
				continue
			}
			vals[i] = row[c]
		}
		out.Values = append(out.Values, vals)
		if limit > 0 && len(out.Values) == limit {
			break
		}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: out, Warnings: v.warnings}, nil
}

func isBind(t cql.Term) bool {
	l, ok := t.(*cql.Literal)
	return ok && l.Kind == cql.LitBind
}

// limitValue returns a LIMIT's value: a positive integer literal or bound int.
func limitValue(l *cql.Literal, values []coordinator.Value, i int) (int, error) {
	var n int64
	switch l.Kind {
	case cql.LitBind:
		v := values[i]
		if v.Unset || len(v.Bytes) != 4 {
			return 0, fmt.Errorf("LIMIT must be bound to a 4-byte int, got %d bytes", len(v.Bytes))
		}
		n = int64(int32(binary.BigEndian.Uint32(v.Bytes)))
	case cql.LitInteger:
		b, err := schema.LiteralValue(schema.TypeInt, l)
		if err != nil {
			return 0, fmt.Errorf("LIMIT: %w", err)
		}
		n = int64(int32(binary.BigEndian.Uint32(b)))
	default:
		return 0, fmt.Errorf("LIMIT must be an integer, found %s", l.Kind)
	}
	if n <= 0 {
		return 0, fmt.Errorf("LIMIT must be strictly positive, found %d", n)
	}
	return int(n), nil
}

func (t *Tables) tableNames(ks string) []string {
	var names []string
	for _, d := range t.defs {
		if d.keyspace == ks {
			names = append(names, d.name)
		}
	}
	return names
}

// Describe answers DESCRIBE KEYSPACE ks, or DESCRIBE TABLE ks.table when table is not "", for a
// system keyspace, as Cassandra does for its local keyspaces: the keyspace's CREATE statement
// (LocalStrategy) then each table's, for reference (running them is refused: system keyspaces
// are reserved). ok is false when ks is not a system keyspace or it has no such table.
func (t *Tables) Describe(ks, table string) (els []schema.Element, ok bool) {
	if !IsSystemKeyspace(ks) {
		return nil, false
	}
	if table == "" {
		els = append(els, schema.Element{Keyspace: ks, Type: "keyspace", Name: ks,
			CreateStatement: "CREATE KEYSPACE " + cql.QuoteIdent(ks) + " WITH replication = {'class': '" + localStrategy + "'} AND durable_writes = true;"})
	}
	for _, d := range t.defs {
		if d.keyspace != ks || (table != "" && d.name != table) {
			continue
		}
		els = append(els, schema.Element{Keyspace: ks, Type: "table", Name: d.name, CreateStatement: d.createStatement()})
	}
	return els, len(els) > 0
}

// unsupportedShape names what of st a system table does not answer (aggregates, DISTINCT,
// GROUP BY, PER PARTITION LIMIT, SELECT JSON, aliases, tuple relations), or "".
func unsupportedShape(st *cql.SelectStmt) string {
	for _, f := range st.Funcs {
		if f.Kind == cql.SelectAggregate {
			return "an aggregate"
		}
	}
	for _, r := range st.Where {
		if r.Multi() {
			return "a multi-column relation"
		}
	}
	switch {
	case st.Distinct:
		return "SELECT DISTINCT"
	case st.JSON:
		return "SELECT JSON"
	case len(st.GroupBy) > 0:
		return "GROUP BY"
	case st.PerPartitionLimit != nil:
		return "PER PARTITION LIMIT"
	case st.Aliases != nil:
		return "a selector alias (AS)"
	}
	return ""
}
