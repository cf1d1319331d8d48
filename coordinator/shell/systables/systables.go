package systables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

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
	tables map[tableKey]*table
}

type tableKey struct{ keyspace, name string }

// New returns the system tables of the node src describes.
func New(src Source) (*Tables, error) {
	if src == nil {
		return nil, errors.New("systables: Source is nil")
	}
	t := &Tables{src: src, tables: map[tableKey]*table{}}
	for _, d := range definitions() {
		t.tables[tableKey{d.keyspace, d.name}] = d
	}
	return t, nil
}

// IsSystemKeyspace reports whether name is one of the keyspaces this package serves.
func IsSystemKeyspace(name string) bool {
	return name == KeyspaceSystem || name == KeyspaceSystemSchema
}

// Execute answers stmt when it concerns a system keyspace (handled is true): a SELECT is
// answered, USE is taken, and every write and schema statement is refused with an
// *coordinator.InvalidError. keyspace is the session's keyspace for unqualified names; values
// are the statement's bound values. Statements on other keyspaces are not handled.
func (t *Tables) Execute(stmt cql.Statement, keyspace string, values []coordinator.Value) (res coordinator.Result, handled bool, err error) {
	switch st := stmt.(type) {
	case *cql.SelectStmt:
		ks := qualify(st.Table, keyspace)
		if !IsSystemKeyspace(ks) {
			return coordinator.Result{}, false, nil
		}
		res, err := t.selectRows(st, ks, values)
		return res, true, err
	case *cql.UseStmt:
		if !IsSystemKeyspace(st.Keyspace.Name) {
			return coordinator.Result{}, false, nil
		}
		return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: st.Keyspace.Name}, true, nil
	case *cql.InsertStmt:
		return t.refuseWrite(st.Table, keyspace, "INSERT")
	case *cql.UpdateStmt:
		return t.refuseWrite(st.Table, keyspace, "UPDATE")
	case *cql.DeleteStmt:
		return t.refuseWrite(st.Table, keyspace, "DELETE")
	case *cql.CreateTableStmt:
		return refuseDDL(st.Start, qualify(st.Table, keyspace), "CREATE TABLE")
	case *cql.AlterTableStmt:
		return refuseDDL(st.Start, qualify(st.Table, keyspace), "ALTER TABLE")
	case *cql.DropTableStmt:
		return refuseDDL(st.Start, qualify(st.Table, keyspace), "DROP TABLE")
	case *cql.CreateKeyspaceStmt:
		return refuseDDL(st.Start, st.Name.Name, "CREATE KEYSPACE")
	case *cql.DropKeyspaceStmt:
		return refuseDDL(st.Start, st.Name.Name, "DROP KEYSPACE")
	}
	return coordinator.Result{}, false, nil
}

func qualify(tn cql.TableName, keyspace string) string {
	if tn.Keyspace.Name != "" {
		return tn.Keyspace.Name
	}
	return keyspace
}

func (t *Tables) refuseWrite(tn cql.TableName, keyspace, what string) (coordinator.Result, bool, error) {
	ks := qualify(tn, keyspace)
	if !IsSystemKeyspace(ks) {
		return coordinator.Result{}, false, nil
	}
	return coordinator.Result{}, true, &coordinator.InvalidError{
		Pos: tn.Name.NamePos,
		Err: fmt.Errorf("%s on %s.%s: the %s keyspace is read-only (its tables are served by each node from its own state)",
			what, cql.QuoteIdent(ks), cql.QuoteIdent(tn.Name.Name), ks),
	}
}

func refuseDDL(pos cql.Pos, ks, what string) (coordinator.Result, bool, error) {
	if !IsSystemKeyspace(ks) {
		return coordinator.Result{}, false, nil
	}
	return coordinator.Result{}, true, &coordinator.InvalidError{
		Pos: pos,
		Err: fmt.Errorf("%s in keyspace %s: system keyspaces cannot be changed", what, cql.QuoteIdent(ks)),
	}
}

// selectRows answers a SELECT on system keyspace ks.
func (t *Tables) selectRows(st *cql.SelectStmt, ks string, values []coordinator.Value) (coordinator.Result, error) {
	tbl, ok := t.tables[tableKey{ks, st.Table.Name.Name}]
	if !ok {
		return coordinator.Result{}, &coordinator.InvalidError{
			Pos: st.Table.Name.NamePos,
			Err: fmt.Errorf("%w %s.%s (the %s keyspace has %s)", schema.ErrUnknownTable, cql.QuoteIdent(ks),
				cql.QuoteIdent(st.Table.Name.Name), ks, strings.Join(t.tableNames(ks), ", ")),
		}
	}
	if len(st.OrderBy) > 0 {
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.OrderBy[0].Column.NamePos,
			Err: fmt.Errorf("ORDER BY is not supported on system table %s.%s", ks, tbl.name)}
	}
	// Projection.
	var proj []int
	if st.Star {
		proj = make([]int, len(tbl.columns))
		for i := range proj {
			proj[i] = i
		}
	} else {
		for _, id := range st.Columns {
			i, ok := tbl.column(id.Name)
			if !ok {
				return coordinator.Result{}, &coordinator.InvalidError{Pos: id.NamePos,
					Err: fmt.Errorf("undefined column name %s in system table %s.%s", cql.QuoteIdent(id.Name), ks, tbl.name)}
			}
			proj = append(proj, i)
		}
	}
	// Bound values: markers number in order of appearance, the WHERE clause's before LIMIT's.
	markers := 0
	for _, r := range st.Where {
		if isBind(r.Value) {
			markers++
		}
	}
	if st.Limit != nil && st.Limit.Kind == cql.LitBind {
		markers++
	}
	if len(values) != markers {
		return coordinator.Result{}, &coordinator.InvalidError{
			Err: fmt.Errorf("the statement has %d bind markers but %d values were bound", markers, len(values))}
	}
	next := 0
	type filter struct {
		col  int
		want []byte
	}
	var filters []filter
	for _, r := range st.Where {
		i, ok := tbl.column(r.Column.Name)
		if !ok {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: r.Column.NamePos,
				Err: fmt.Errorf("undefined column name %s in system table %s.%s", cql.QuoteIdent(r.Column.Name), ks, tbl.name)}
		}
		col := tbl.columns[i]
		if r.Op != cql.EQ {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: r.OpPos,
				Err: fmt.Errorf("system table %s.%s supports only '=' restrictions, found '%s' on %s", ks, tbl.name, r.Op, col.name)}
		}
		var want []byte
		if isBind(r.Value) {
			v := values[next]
			next++
			if v.Unset || v.Bytes == nil {
				return coordinator.Result{}, &coordinator.InvalidError{Pos: r.Value.Pos(),
					Err: fmt.Errorf("invalid null or unset value bound for %s of system table %s.%s", col.name, ks, tbl.name)}
			}
			want = v.Bytes
		} else {
			b, err := schema.LiteralValue(col.typ, r.Value)
			if err != nil {
				return coordinator.Result{}, &coordinator.InvalidError{Pos: r.Value.Pos(),
					Err: fmt.Errorf("restriction on %s of system table %s.%s: %w", col.name, ks, tbl.name, err)}
			}
			want = b
		}
		filters = append(filters, filter{i, want})
	}
	limit := 0
	if st.Limit != nil {
		var err error
		if limit, err = limitValue(st.Limit, values, next); err != nil {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Limit.ValuePos, Err: err}
		}
	}

	rows := tbl.rows(t.view())
	out := &coordinator.Rows{Keyspace: ks, Table: tbl.name, Columns: make([]coordinator.RowColumn, len(proj))}
	for i, c := range proj {
		out.Columns[i] = coordinator.RowColumn{Name: tbl.columns[c].name, Type: tbl.columns[c].typ}
	}
rowLoop:
	for _, row := range rows {
		for _, f := range filters {
			if string(row[f.col]) != string(f.want) || row[f.col] == nil {
				continue rowLoop
			}
		}
		vals := make([][]byte, len(proj))
		for i, c := range proj {
			vals[i] = row[c]
		}
		out.Values = append(out.Values, vals)
		if limit > 0 && len(out.Values) == limit {
			break
		}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: out}, nil
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
	for _, d := range definitions() {
		if d.keyspace == ks {
			names = append(names, d.name)
		}
	}
	return names
}
