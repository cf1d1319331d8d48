package systables

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// fakeSource is a fixed node view: these tests are about the query engine and the rows, not
// about where the node's facts come from (node's tests cover that on a real cluster).
type fakeSource struct {
	sch   *schema.Schema
	local Node
	peers []Node
}

func (f fakeSource) ClusterName() string    { return "test-cluster" }
func (f fakeSource) Schema() *schema.Schema { return f.sch }
func (f fakeSource) Local() Node            { return f.local }
func (f fakeSource) Peers() []Node          { return f.peers }

func mustSchema(t *testing.T, stmts ...string) *schema.Schema {
	t.Helper()
	s := schema.New()
	for i, text := range stmts {
		parsed, err := cql.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if s, err = s.Apply(parsed[0], "", schema.Change{Version: schema.Version{Timestamp: int64(i + 1), Node: "n1"}}); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	return s
}

func newTestTables(t *testing.T) *Tables {
	t.Helper()
	src := fakeSource{
		sch: mustSchema(t,
			"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
			"CREATE TABLE ks.a (k text PRIMARY KEY, v int)",
			"CREATE TABLE ks.b (k text, c int, v blob, PRIMARY KEY (k, c))",
			"CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
			"CREATE TABLE other.a (k int PRIMARY KEY)",
		),
		local: Node{ID: "4f0c2b8e-1d3a-4c5b-9e6f-7a8b9c0d1e2f", Address: netip.MustParseAddr("10.0.0.1"),
			DataCenter: "dc1", Rack: "r1", SchemaDigest: "d1", Tokens: []int64{5, -7}},
		peers: []Node{
			{ID: "node-b", Address: netip.MustParseAddr("10.0.0.2"), Port: 7000, NativeAddr: netip.MustParseAddr("10.1.0.2"), NativePort: 19042,
				DataCenter: "dc1", Rack: "r2", SchemaDigest: "d1", Tokens: []int64{100}},
			{ID: "node-c", Address: netip.MustParseAddr("10.0.0.3"), DataCenter: "dc2", Rack: "r3", Tokens: []int64{-100, 200}},
		},
	}
	tb, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func run(t *testing.T, tb *Tables, text string, values ...[]byte) (coordinator.Result, bool, error) {
	t.Helper()
	return runIn(t, tb, "", text, values...)
}

func runIn(t *testing.T, tb *Tables, keyspace, text string, values ...[]byte) (coordinator.Result, bool, error) {
	t.Helper()
	stmts, err := cql.Parse(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	st, ok := stmts[0].(*cql.SelectStmt)
	if !ok {
		t.Fatalf("%s is not a SELECT", text)
	}
	var vals []coordinator.Value
	for _, v := range values {
		vals = append(vals, coordinator.Value{Bytes: v})
	}
	return tb.Select(context.Background(), st, keyspace, vals)
}

func selectRows(t *testing.T, tb *Tables, text string, values ...[]byte) *coordinator.Rows {
	t.Helper()
	res, handled, err := run(t, tb, text, values...)
	if err != nil || !handled || res.Kind != coordinator.ResultRows {
		t.Fatalf("%s: handled %v, kind %v, error %v; want rows", text, handled, res.Kind, err)
	}
	for _, row := range res.Rows.Values {
		if len(row) != len(res.Rows.Columns) {
			t.Fatalf("%s: a row of %d values for %d columns", text, len(row), len(res.Rows.Columns))
		}
		for i, v := range row {
			if v != nil {
				if err := res.Rows.Columns[i].Type.Check(v); err != nil {
					t.Errorf("%s: column %s value %x does not check as %v: %v", text, res.Rows.Columns[i].Name, v, res.Rows.Columns[i].Type, err)
				}
			}
		}
	}
	return res.Rows
}

func colValues(t *testing.T, rows *coordinator.Rows, name string) []string {
	t.Helper()
	i := slices.IndexFunc(rows.Columns, func(c coordinator.RowColumn) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no column %s in %v", name, rows.Columns)
	}
	var out []string
	for _, r := range rows.Values {
		out = append(out, string(r[i]))
	}
	return out
}

func TestEveryDefinitionHasServedTypesAndAUniqueName(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range definitions() {
		key := d.keyspace + "." + d.name
		if seen[key] {
			t.Errorf("table %s defined twice", key)
		}
		seen[key] = true
		cols := map[string]bool{}
		for _, c := range d.columns {
			if c.typ == schema.TypeInvalid {
				t.Errorf("%s.%s has CQL type %q, which maps to no schema type", key, c.name, c.cqlType)
			}
			if cols[c.name] {
				t.Errorf("%s has column %s twice", key, c.name)
			}
			cols[c.name] = true
		}
		if d.nkey < 1 || d.columns[0].kind != "partition_key" {
			t.Errorf("%s has no partition key", key)
		}
	}
}

func TestProjectionFilterAndLimit(t *testing.T) {
	tb := newTestTables(t)
	rows := selectRows(t, tb, "SELECT table_name, keyspace_name FROM system_schema.tables WHERE keyspace_name = 'ks'")
	if got := []string{rows.Columns[0].Name, rows.Columns[1].Name}; !slices.Equal(got, []string{"table_name", "keyspace_name"}) {
		t.Errorf("projection columns = %v, want [table_name keyspace_name] in the order selected", got)
	}
	if got := colValues(t, rows, "table_name"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("tables of ks = %v, want [a b]", got)
	}
	rows = selectRows(t, tb, "SELECT * FROM system_schema.tables WHERE table_name = ? AND keyspace_name = ?", []byte("a"), []byte("other"))
	if got := colValues(t, rows, "keyspace_name"); !slices.Equal(got, []string{"other"}) {
		t.Errorf("bound filter keyspace other, table a: %v, want [other]", got)
	}
	rows = selectRows(t, tb, "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'b' LIMIT 2")
	if got := colValues(t, rows, "column_name"); !slices.Equal(got, []string{"c", "k"}) {
		t.Errorf("columns of ks.b with LIMIT 2 = %v, want [c k]", got)
	}
	rows = selectRows(t, tb, "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'ks' LIMIT ?", binary.BigEndian.AppendUint32(nil, 1))
	if len(rows.Values) != 1 {
		t.Errorf("LIMIT ? bound to 1 gave %d rows", len(rows.Values))
	}
	rows = selectRows(t, tb, "SELECT keyspace_name FROM system_schema.tables WHERE keyspace_name = 'nope'")
	if len(rows.Values) != 0 {
		t.Errorf("filter on an unknown keyspace gave %d rows, want none", len(rows.Values))
	}
	rows = selectRows(t, tb, "SELECT position FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'b' AND column_name = 'v'")
	if got := colValues(t, rows, "position"); len(got) != 1 || int32(binary.BigEndian.Uint32([]byte(got[0]))) != -1 {
		t.Errorf("position of regular column ks.b.v = %x, want -1", got)
	}
}

func TestLocalAndPeersRows(t *testing.T) {
	tb := newTestTables(t)
	rows := selectRows(t, tb, "SELECT * FROM system.local WHERE key = 'local'")
	if len(rows.Values) != 1 {
		t.Fatalf("system.local: %d rows", len(rows.Values))
	}
	id, _ := schema.ParseUUID("4f0c2b8e-1d3a-4c5b-9e6f-7a8b9c0d1e2f")
	if got := colValues(t, rows, "host_id")[0]; got != string(id[:]) {
		t.Errorf("host_id of a uuid node id = %x, want the id itself", got)
	}
	if got := colValues(t, rows, "tokens")[0]; got != string(encTextList([]string{"-7", "5"})) {
		t.Errorf("tokens = %x, want the set {'-7', '5'}", got)
	}
	if got := colValues(t, rows, "rpc_port")[0]; got != string(encInt(DefaultNativePort)) {
		t.Errorf("rpc_port without a gossiped native port = %x, want %d", got, DefaultNativePort)
	}
	if rows := selectRows(t, tb, "SELECT key FROM system.local WHERE key = 'other'"); len(rows.Values) != 0 {
		t.Errorf("system.local WHERE key = 'other' gave %d rows", len(rows.Values))
	}

	v2 := selectRows(t, tb, "SELECT peer, native_address, native_port, host_id, schema_version, peer_port FROM system.peers_v2")
	if len(v2.Values) != 2 {
		t.Fatalf("system.peers_v2: %d rows, want 2", len(v2.Values))
	}
	// Rows sort by peer: 10.0.0.2 (node-b) first.
	if got := v2.Values[0][1]; string(got) != string(netip.MustParseAddr("10.1.0.2").AsSlice()) {
		t.Errorf("native_address of node-b = %v, want its gossiped 10.1.0.2", got)
	}
	if got := v2.Values[0][5]; string(got) != string(encInt(7000)) {
		t.Errorf("peer_port of node-b = %x, want its internode port 7000", got)
	}
	if got := v2.Values[0][2]; string(got) != string(encInt(19042)) {
		t.Errorf("native_port of node-b = %x, want 19042", got)
	}
	if got := v2.Values[1][1]; string(got) != string(netip.MustParseAddr("10.0.0.3").AsSlice()) {
		t.Errorf("native_address of node-c (none gossiped) = %v, want its address 10.0.0.3", got)
	}
	if got, want := v2.Values[0][3], HostID("node-b"); string(got) != string(want[:]) {
		t.Errorf("host_id of node-b = %x, want %v", got, want)
	}
	if v2.Values[1][4] != nil {
		t.Errorf("schema_version of node-c (digest unknown) = %x, want null", v2.Values[1][4])
	}
	sv, _ := SchemaVersion("d1")
	if got := v2.Values[0][4]; string(got) != string(sv[:]) {
		t.Errorf("schema_version of node-b = %x, want %v", got, sv)
	}
	peers := selectRows(t, tb, "SELECT peer, rpc_address FROM system.peers WHERE peer = ?", netip.MustParseAddr("10.0.0.3").AsSlice())
	if len(peers.Values) != 1 || string(peers.Values[0][1]) != string(netip.MustParseAddr("10.0.0.3").AsSlice()) {
		t.Errorf("system.peers WHERE peer = 10.0.0.3: %v", peers.Values)
	}
}

func TestDerivedIdentities(t *testing.T) {
	a, b := HostID("node-a"), HostID("node-a")
	if a != b || a == HostID("node-b") {
		t.Errorf("HostID is not a stable function of the id: %v %v %v", a, b, HostID("node-b"))
	}
	if a[6]>>4 != 5 || a[8]>>6 != 2 {
		t.Errorf("HostID(node-a) = %v, want an RFC 4122 version 5 uuid", a)
	}
	u := "0F8E1C2D-3B4A-4C5D-8E6F-7A8B9C0D1E2F"
	if got := HostID(u); !strings.EqualFold(got.String(), u) {
		t.Errorf("HostID(%s) = %v, want the id itself", u, got)
	}
	if _, ok := SchemaVersion(""); ok {
		t.Error("SchemaVersion of an empty digest is ok, want not")
	}
	v1, _ := SchemaVersion("abc")
	v2, _ := SchemaVersion("abd")
	if v1 == v2 {
		t.Errorf("SchemaVersion(abc) = SchemaVersion(abd) = %v", v1)
	}
	for _, bad := range []string{"", "0f8e1c2d-3b4a-4c5d-8e6f-7a8b9c0d1e2", "0f8e1c2d+3b4a-4c5d-8e6f-7a8b9c0d1e2f", "zf8e1c2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f"} {
		if v := HostID(bad).Version(); v != 5 {
			t.Errorf("HostID(%q) is a version %d uuid, want a name-based one (5): the id is not a uuid", bad, v)
		}
	}
}

func TestOtherKeyspacesAreNotHandled(t *testing.T) {
	tb := newTestTables(t)
	for _, text := range []string{
		"SELECT * FROM ks.a WHERE k = 'x'",
		"SELECT * FROM system_traces.sessions",
		"SELECT * FROM \"System\".local",
	} {
		if _, handled, err := run(t, tb, text); handled || err != nil {
			t.Errorf("%s: handled %v, error %v; want it left to the executor", text, handled, err)
		}
	}
	if _, handled, _ := runIn(t, tb, "system", "SELECT * FROM ks.a"); handled {
		t.Error("SELECT * FROM ks.a in keyspace system was handled, want it left to the executor")
	}
	res, handled, err := runIn(t, tb, "system", "SELECT cluster_name FROM local")
	if !handled || err != nil || len(res.Rows.Values) != 1 || string(res.Rows.Values[0][0]) != "test-cluster" {
		t.Errorf("SELECT cluster_name FROM local in keyspace system = %+v, %v, %v", res.Rows, handled, err)
	}
}

// TestFunctionsOfNoColumn: SELECT now() FROM system.local, the query drivers and tools send to
// check a connection, answers one row with a timeuuid named as Cassandra names it; functions
// of no column go beside the table's columns.
func TestFunctionsOfNoColumn(t *testing.T) {
	tb := newTestTables(t)
	res, handled, err := run(t, tb, "SELECT now(), cluster_name, intAsBlob(7) FROM system.local")
	if !handled || err != nil {
		t.Fatalf("handled %v, error %v", handled, err)
	}
	cols := res.Rows.Columns
	if len(cols) != 3 || cols[0].Name != "system.now()" || cols[0].Type != schema.TypeTimeUUID || cols[1].Name != "cluster_name" ||
		cols[2].Name != "system.intasblob(7)" || cols[2].Type != schema.TypeBlob {
		t.Fatalf("columns %+v, want system.now() (timeuuid), cluster_name, system.intasblob(7) (blob)", cols)
	}
	if len(res.Rows.Values) != 1 {
		t.Fatalf("%d rows, want 1", len(res.Rows.Values))
	}
	row := res.Rows.Values[0]
	if len(row[0]) != 16 || row[0][6]>>4 != 1 || string(row[1]) != "test-cluster" || string(row[2]) != "\x00\x00\x00\x07" {
		t.Errorf("row %x, want a version-1 uuid, the cluster name and 00000007", row)
	}
}

func TestBadQueriesAreInvalidRequests(t *testing.T) {
	tb := newTestTables(t)
	for _, tt := range []struct {
		text   string
		values [][]byte
		want   string
	}{
		{"SELECT * FROM system.nope", nil, "unknown table system.nope (the system keyspace has local, peers, peers_v2, top_partitions, top_clients)"},
		{"SELECT nope FROM system.local", nil, "undefined column name nope in system table system.local"},
		{"SELECT toDate(cluster_name) FROM system.local", nil, "system table system.local: "},
		{"SELECT blobAsInt(?) FROM system.local", [][]byte{{0, 0, 0, 1}}, "bind markers in the selectors of system table system.local are not supported"},
		{"SELECT * FROM system.local WHERE nope = 'x'", nil, "undefined column name nope"},
		{"SELECT * FROM system_schema.columns WHERE position > 1", nil, "supports only '=' restrictions, found '>' on position"},
		{"SELECT * FROM system_schema.tables WHERE keyspace_name = ?", nil, "1 bind markers but 0 values"},
		{"SELECT * FROM system_schema.tables", [][]byte{[]byte("x")}, "0 bind markers but 1 values"},
		{"SELECT * FROM system_schema.tables WHERE keyspace_name = ?", [][]byte{nil}, "invalid null or unset value bound for keyspace_name"},
		{"SELECT * FROM system_schema.columns WHERE position = 'x'", nil, "restriction on position of system table system_schema.columns"},
		{"SELECT * FROM system.local LIMIT 0", nil, "LIMIT must be strictly positive, found 0"},
		{"SELECT * FROM system.local LIMIT ?", [][]byte{{1}}, "LIMIT must be bound to a 4-byte int, got 1 bytes"},
		{"SELECT * FROM system.local ORDER BY key", nil, "ORDER BY is not supported on system table system.local"},
	} {
		_, handled, err := run(t, tb, tt.text, tt.values...)
		var inv *coordinator.InvalidError
		if !handled || !errors.As(err, &inv) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: handled %v, error %v; want an invalid request containing %q", tt.text, handled, err, tt.want)
		}
	}
}

func TestPrepareDescribesMarkersAndColumns(t *testing.T) {
	tb := newTestTables(t)
	prep := func(text string) ([]coordinator.Variable, []coordinator.RowColumn, bool, error) {
		stmts, err := cql.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return tb.Prepare(stmts[0].(*cql.SelectStmt), "")
	}
	vars, cols, handled, err := prep("SELECT table_name, position FROM system_schema.columns WHERE keyspace_name = ? AND table_name = 'b' AND column_name = ? LIMIT ?")
	if !handled || err != nil {
		t.Fatalf("Prepare: handled %v, error %v", handled, err)
	}
	var got []string
	for _, v := range vars {
		got = append(got, v.Keyspace+"."+v.Table+"."+v.Name+":"+v.Type.String())
	}
	want := []string{"system_schema.columns.keyspace_name:text", "system_schema.columns.column_name:text", "system_schema.columns.[limit]:int"}
	if !slices.Equal(got, want) {
		t.Errorf("Prepare variables = %v, want %v", got, want)
	}
	if len(cols) != 2 || cols[0].Name != "table_name" || cols[1].Name != "position" || cols[1].Type != schema.TypeInt {
		t.Errorf("Prepare columns = %v, want table_name text, position int", cols)
	}
	if _, _, handled, err := prep("SELECT * FROM ks.a WHERE k = ?"); handled || err != nil {
		t.Errorf("Prepare on a user table: handled %v, error %v; want it left to the executor", handled, err)
	}
	if _, _, handled, err := prep("SELECT nope FROM system.local"); !handled || err == nil {
		t.Errorf("Prepare with an unknown column: handled %v, error %v; want an error", handled, err)
	}
}

// TestEveryTableAnswersSelectStar reads every system table whole: every value checks as its
// column's type (selectRows checks), and the tables with rows have them.
func TestEveryTableAnswersSelectStar(t *testing.T) {
	tb := newTestTables(t)
	for _, d := range definitions() {
		rows := selectRows(t, tb, "SELECT * FROM "+d.keyspace+"."+d.name)
		if len(rows.Columns) != len(d.columns) {
			t.Errorf("%s.%s: %d columns, want %d", d.keyspace, d.name, len(rows.Columns), len(d.columns))
		}
		switch d.keyspace + "." + d.name {
		case "system.local", "system.peers", "system.peers_v2", "system_schema.keyspaces", "system_schema.tables", "system_schema.columns", "system_schema.scylla_tables":
			if len(rows.Values) == 0 {
				t.Errorf("%s.%s has no rows", d.keyspace, d.name)
			}
		}
	}
}

// TestDescribeSystemKeyspaces holds Describe to Cassandra's answer for its local keyspaces: the
// keyspace (LocalStrategy), then every table as a CREATE TABLE that parses and names the
// table's columns and key; user keyspaces and unknown tables are not its to answer.
func TestDescribeSystemKeyspaces(t *testing.T) {
	tb := newTestTables(t)
	els, ok := tb.Describe("system", "")
	if !ok || len(els) < 3 {
		t.Fatalf("Describe(system) = %d elements, %v; want the keyspace and its tables", len(els), ok)
	}
	if els[0].Type != "keyspace" || els[0].CreateStatement != "CREATE KEYSPACE system WITH replication = {'class': 'org.apache.cassandra.locator.LocalStrategy'} AND durable_writes = true;" {
		t.Errorf("Describe(system) starts with %+v, want the keyspace with LocalStrategy", els[0])
	}
	var names []string
	for _, el := range els[1:] {
		names = append(names, el.Name)
		st, err := cql.ParseStatement(el.CreateStatement)
		if err != nil {
			t.Errorf("Describe(system) %s: %v\n%s", el.Name, err, el.CreateStatement)
			continue
		}
		ct, ok := st.(*cql.CreateTableStmt)
		if !ok || ct.Table.Keyspace.Name != "system" || ct.Table.Name.Name != el.Name {
			t.Errorf("Describe(system) %s: %T %+v, want CREATE TABLE system.%s", el.Name, st, st, el.Name)
		}
	}
	if !slices.Contains(names, "local") || !slices.Contains(names, "peers") {
		t.Errorf("Describe(system) tables %v, want local and peers among them", names)
	}
	peers, ok := tb.Describe("system", "peers_v2")
	if !ok || len(peers) != 1 || !strings.Contains(peers[0].CreateStatement, "    tokens set<text>,\n    PRIMARY KEY (peer, peer_port)\n);") {
		t.Errorf("Describe(system, peers_v2) = %+v, %v; want its CREATE TABLE keyed (peer, peer_port)", peers, ok)
	}
	cols, ok := tb.Describe("system_schema", "columns")
	if !ok || !strings.Contains(cols[0].CreateStatement, "PRIMARY KEY (keyspace_name, table_name, column_name)") {
		t.Errorf("Describe(system_schema, columns) = %+v, %v; want keyed (keyspace_name, table_name, column_name)", cols, ok)
	}
	for _, c := range [][2]string{{"ks", ""}, {"system", "nope"}} {
		if els, ok := tb.Describe(c[0], c[1]); ok {
			t.Errorf("Describe(%q, %q) = %+v, true; want false", c[0], c[1], els)
		}
	}
}

func TestSystemTablesRefuseSelectShapes(t *testing.T) {
	tb := newTestTables(t)
	for _, src := range []string{
		"SELECT count(*) FROM system.local",
		"SELECT DISTINCT key FROM system.local",
		"SELECT JSON * FROM system.local",
		"SELECT key AS k FROM system.local",
		"SELECT * FROM system.local PER PARTITION LIMIT 1",
	} {
		_, ok, err := run(t, tb, src)
		if !ok || err == nil || !strings.Contains(err.Error(), "is not supported on system table system.local") {
			t.Errorf("%s: ok %v, %v; want a refusal", src, ok, err)
		}
	}
}
