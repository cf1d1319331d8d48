package systables

import (
	"bytes"
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// column is one column of a system table.
type column struct {
	name     string
	cqlType  string // as system_schema.columns spells it
	typ      schema.Type
	kind     string // partition_key, clustering or regular
	position int    // in the partition or clustering key; -1 for a regular column
}

// table is one system table: its columns (partition key, clustering columns, then regular
// columns by name, as Cassandra orders SELECT *) and how to build its rows from a view.
type table struct {
	keyspace, name string
	columns        []column
	nkey           int // partition key and clustering columns: rows sort by them
	build          func(v *view) []map[string][]byte
}

func (t *table) column(name string) (int, bool) {
	for i, c := range t.columns {
		if c.name == name {
			return i, true
		}
	}
	return 0, false
}

// rows returns the table's rows in v, one value per column, sorted by primary key.
func (t *table) rows(v *view) [][][]byte {
	built := t.build(v)
	rows := make([][][]byte, len(built))
	for i, m := range built {
		row := make([][]byte, len(t.columns))
		for j, c := range t.columns {
			row[j] = m[c.name]
		}
		rows[i] = row
	}
	slices.SortStableFunc(rows, func(a, b [][]byte) int {
		for i := range t.nkey {
			if c := bytes.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return rows
}

// typeOf maps a system column's CQL type to its schema type; TypeInvalid for a type this package
// does not serve (a test checks every definition).
func typeOf(cqlType string) schema.Type {
	switch cqlType {
	case "text":
		return typeText
	case "int":
		return typeInt
	case "bigint":
		return schema.TypeBigInt
	case "double":
		return typeDouble
	case "boolean":
		return typeBoolean
	case "blob":
		return typeBlob
	case "timestamp":
		return typeTimestamp
	case "uuid":
		return typeUUID
	case "inet":
		return typeInet
	case "set<text>":
		return typeSetText
	case "list<text>", "frozen<list<text>>":
		return typeListText
	case "map<text, text>":
		return typeMapTextText
	case "map<text, blob>":
		return typeMapTextBlob
	}
	return schema.TypeInvalid
}

// define builds a table from its partition key, clustering columns and regular columns, each
// given as name and CQL type pairs.
func define(ks, name string, pk, ck, regular []string, build func(v *view) []map[string][]byte) *table {
	t := &table{keyspace: ks, name: name, build: build, nkey: (len(pk) + len(ck)) / 2}
	add := func(pairs []string, kind string, positioned bool) []column {
		var cols []column
		for i := 0; i+1 < len(pairs); i += 2 {
			pos := -1
			if positioned {
				pos = i / 2
			}
			cols = append(cols, column{name: pairs[i], cqlType: pairs[i+1], typ: typeOf(pairs[i+1]), kind: kind, position: pos})
		}
		return cols
	}
	t.columns = append(t.columns, add(pk, "partition_key", true)...)
	t.columns = append(t.columns, add(ck, "clustering", true)...)
	reg := add(regular, "regular", false)
	slices.SortFunc(reg, func(a, b column) int { return strings.Compare(a.name, b.name) })
	t.columns = append(t.columns, reg...)
	return t
}

func tableOptionColumns() []string {
	return []string{
		"additional_write_policy", "text",
		"bloom_filter_fp_chance", "double",
		"caching", "map<text, text>",
		"cdc", "boolean",
		"comment", "text",
		"compaction", "map<text, text>",
		"compression", "map<text, text>",
		"crc_check_chance", "double",
		"dclocal_read_repair_chance", "double",
		"default_time_to_live", "int",
		"extensions", "map<text, blob>",
		"gc_grace_seconds", "int",
		"id", "uuid",
		"max_index_interval", "int",
		"memtable", "text",
		"memtable_flush_period_in_ms", "int",
		"min_index_interval", "int",
		"read_repair", "text",
		"read_repair_chance", "double",
		"speculative_retry", "text",
	}
}

// definitions returns every system table, system's then system_schema's.
func definitions() []*table {
	ksName := []string{"keyspace_name", "text"}
	none := func(*view) []map[string][]byte { return nil }
	return []*table{
		define(KeyspaceSystem, "local", []string{"key", "text"}, nil, []string{
			"bootstrapped", "text",
			"broadcast_address", "inet",
			"cluster_name", "text",
			"cql_version", "text",
			"data_center", "text",
			"host_id", "uuid",
			"listen_address", "inet",
			"native_protocol_version", "text",
			"partitioner", "text",
			"rack", "text",
			"release_version", "text",
			"rpc_address", "inet",
			"rpc_port", "int",
			"schema_version", "uuid",
			"tokens", "set<text>",
		}, localRows),
		define(KeyspaceSystem, "peers", []string{"peer", "inet"}, nil, []string{
			"data_center", "text",
			"host_id", "uuid",
			"preferred_ip", "inet",
			"rack", "text",
			"release_version", "text",
			"rpc_address", "inet",
			"schema_version", "uuid",
			"tokens", "set<text>",
		}, peerRows),
		define(KeyspaceSystem, "peers_v2", []string{"peer", "inet"}, []string{"peer_port", "int"}, []string{
			"data_center", "text",
			"host_id", "uuid",
			"native_address", "inet",
			"native_port", "int",
			"preferred_ip", "inet",
			"preferred_port", "int",
			"rack", "text",
			"release_version", "text",
			"schema_version", "uuid",
			"tokens", "set<text>",
		}, peerRows),
		topPartitionsTable(),
		topClientsTable(),
		define(KeyspaceSystemSchema, "keyspaces", ksName, nil, []string{
			"durable_writes", "boolean",
			"replication", "map<text, text>",
		}, keyspaceRows),
		define(KeyspaceSystemSchema, "tables", ksName, []string{"table_name", "text"},
			append([]string{"flags", "set<text>"}, tableOptionColumns()...), tableRows),
		define(KeyspaceSystemSchema, "columns", ksName, []string{"table_name", "text", "column_name", "text"}, []string{
			"clustering_order", "text",
			"column_name_bytes", "blob",
			"kind", "text",
			"position", "int",
			"type", "text",
		}, columnRows),
		define(KeyspaceSystemSchema, "dropped_columns", ksName, []string{"table_name", "text", "column_name", "text"}, []string{
			"dropped_time", "timestamp",
			"type", "text",
		}, none),
		define(KeyspaceSystemSchema, "triggers", ksName, []string{"table_name", "text", "trigger_name", "text"}, []string{
			"options", "map<text, text>",
		}, none),
		define(KeyspaceSystemSchema, "views", ksName, []string{"view_name", "text"},
			append([]string{
				"base_table_id", "uuid",
				"base_table_name", "text",
				"include_all_columns", "boolean",
				"where_clause", "text",
			}, tableOptionColumns()...), none),
		define(KeyspaceSystemSchema, "types", ksName, []string{"type_name", "text"}, []string{
			"field_names", "frozen<list<text>>",
			"field_types", "frozen<list<text>>",
		}, typeRows),
		define(KeyspaceSystemSchema, "functions", ksName, []string{"function_name", "text", "argument_types", "frozen<list<text>>"}, []string{
			"argument_names", "frozen<list<text>>",
			"body", "text",
			"called_on_null_input", "boolean",
			"language", "text",
			"return_type", "text",
		}, none),
		define(KeyspaceSystemSchema, "aggregates", ksName, []string{"aggregate_name", "text", "argument_types", "frozen<list<text>>"}, []string{
			"final_func", "text",
			"initcond", "text",
			"return_type", "text",
			"state_func", "text",
			"state_type", "text",
		}, none),
		define(KeyspaceSystemSchema, "indexes", ksName, []string{"table_name", "text", "index_name", "text"}, []string{
			"kind", "text",
			"options", "map<text, text>",
		}, indexRows),
		define(KeyspaceSystemSchema, "scylla_tables", ksName, []string{"table_name", "text"}, []string{
			"cdc", "map<text, text>",
			"in_memory", "boolean",
			"partitioner", "text",
			"version", "uuid",
		}, scyllaTableRows),
	}
}

// view is one consistent look at the node for one query.
type view struct {
	clusterName string
	schema      *schema.Schema
	local       Node
	peers       []Node
	defs        []*table
	// restrict holds the query's equality restrictions by column name (the last one of a
	// column): builders skip keyspaces and tables that cannot match. The query still filters
	// every row it gets.
	restrict map[string][]byte
	// top is system.top_partitions' data, read only for it (readTop).
	top []coordinator.TableTopPartitions
	// clients is system.top_clients' data, read only for it (readTopClients).
	clients []coordinator.BudgetTopClients
	// warnings go to the client with the rows.
	warnings []string
}

// keep reports whether rows whose column col is val may match the query.
func (v *view) keep(col, val string) bool {
	w, ok := v.restrict[col]
	return !ok || string(w) == val
}

// view reads the node for a query on tbl with the given restrictions. Only what tbl's rows need is
// read.
func (t *Tables) view(ctx context.Context, tbl *table, restrict map[string][]byte) (*view, error) {
	v := &view{defs: t.defs, restrict: restrict}
	switch tbl.keyspace {
	case KeyspaceSystem:
		v.clusterName = t.src.ClusterName()
		switch tbl.name {
		case "local":
			v.local = t.src.Local()
		case TableTopPartitions:
			if err := t.readTop(ctx, v); err != nil {
				return nil, err
			}
		case TableTopClients:
			if err := t.readTopClients(ctx, v); err != nil {
				return nil, err
			}
		default:
			v.peers = t.src.Peers()
		}
	case KeyspaceSystemSchema:
		v.schema = t.src.Schema()
	}
	return v, nil
}

func tokenStrings(tokens []int64) []string {
	s := make([]string, len(tokens))
	for i, t := range tokens {
		s[i] = strconv.FormatInt(t, 10)
	}
	return s
}

func nativeOf(n Node) (netip.Addr, int) {
	addr, port := n.NativeAddr, n.NativePort
	if !addr.IsValid() || addr.IsUnspecified() {
		addr = n.Address
	}
	if port == 0 {
		port = DefaultNativePort
	}
	return addr, port
}

func schemaVersionValue(digest string) []byte {
	if u, ok := SchemaVersion(digest); ok {
		return encUUID(u)
	}
	return nil
}

func localRows(v *view) []map[string][]byte {
	n := v.local
	addr, port := nativeOf(n)
	return []map[string][]byte{{
		"key":                     encText("local"),
		"bootstrapped":            encText("COMPLETED"),
		"broadcast_address":       encInet(n.Address),
		"cluster_name":            encText(v.clusterName),
		"cql_version":             encText(CQLVersion),
		"data_center":             encText(n.DataCenter),
		"host_id":                 encUUID(HostID(n.ID)),
		"listen_address":          encInet(n.Address),
		"native_protocol_version": encText(NativeProtocolVersion),
		"partitioner":             encText(Partitioner),
		"rack":                    encText(n.Rack),
		"release_version":         encText(ReleaseVersion),
		"rpc_address":             encInet(addr),
		"rpc_port":                encInt(int32(port)),
		"schema_version":          schemaVersionValue(n.SchemaDigest),
		"tokens":                  encTextSet(tokenStrings(n.Tokens)),
	}}
}

// peerRows serves both system.peers and system.peers_v2 (each takes its own columns).
func peerRows(v *view) []map[string][]byte {
	rows := make([]map[string][]byte, 0, len(v.peers))
	for _, n := range v.peers {
		addr, port := nativeOf(n)
		rows = append(rows, map[string][]byte{
			"peer":            encInet(n.Address),
			"peer_port":       encInt(int32(n.Port)),
			"data_center":     encText(n.DataCenter),
			"host_id":         encUUID(HostID(n.ID)),
			"native_address":  encInet(addr),
			"native_port":     encInt(int32(port)),
			"rack":            encText(n.Rack),
			"release_version": encText(ReleaseVersion),
			"rpc_address":     encInet(addr),
			"schema_version":  schemaVersionValue(n.SchemaDigest),
			"tokens":          encTextSet(tokenStrings(n.Tokens)),
		})
	}
	return rows
}

const (
	simpleStrategy = "org.apache.cassandra.locator.SimpleStrategy"
	ntsStrategy    = "org.apache.cassandra.locator.NetworkTopologyStrategy"
	localStrategy  = "org.apache.cassandra.locator.LocalStrategy"
)

func keyspaceRows(v *view) []map[string][]byte {
	var rows []map[string][]byte
	for _, ks := range []string{KeyspaceSystem, KeyspaceSystemSchema} {
		if !v.keep("keyspace_name", ks) {
			continue
		}
		rows = append(rows, map[string][]byte{
			"keyspace_name":  encText(ks),
			"durable_writes": encBool(true),
			"replication":    encMap(kv{"class", localStrategy}),
		})
	}
	for _, ks := range v.schema.Keyspaces() {
		if !v.keep("keyspace_name", ks.Name) {
			continue
		}
		rows = append(rows, map[string][]byte{
			"keyspace_name":  encText(ks.Name),
			"durable_writes": encBool(true),
			"replication":    encMap(replicationMap(ks)...),
		})
	}
	return rows
}

// tableOptions are the nominal table options every table reports (Cassandra 3.0's defaults, which
// drivers expect, and the compatibility options' defaults), plus the per-table ones.
func tableOptions(ks, name string, id uint64, rl schema.RateLimit) map[string][]byte {
	ext := []kv{}
	if !rl.IsZero() {
		ext = append(ext, kv{schema.OptionRateLimit, rl.String()})
	}
	row := map[string][]byte{
		"keyspace_name":        encText(ks),
		"table_name":           encText(name),
		"default_time_to_live": encInt(0),
		"extensions":           encMap(ext...),
		"flags":                encTextSet([]string{"compound"}),
		"gc_grace_seconds":     encInt(864000),
		"id":                   encUUID(tableUUID(ks, name, id)),
		"speculative_retry":    encText(schema.DefaultSpeculativeRetry().String()),
	}
	for _, n := range schema.CompatOptionNames() {
		v, _ := schema.DefaultOption(n)
		row[n] = encOption(v)
	}
	return row
}

func tableRows(v *view) []map[string][]byte {
	var rows []map[string][]byte
	for _, d := range v.defs {
		if !v.keep("keyspace_name", d.keyspace) || !v.keep("table_name", d.name) {
			continue
		}
		rows = append(rows, tableOptions(d.keyspace, d.name, 0, schema.RateLimit{}))
	}
	for _, ks := range v.schema.Keyspaces() {
		if !v.keep("keyspace_name", ks.Name) {
			continue
		}
		for _, t := range v.schema.Tables(ks.Name) {
			if !v.keep("table_name", t.Name) {
				continue
			}
			row := tableOptions(t.Keyspace, t.Name, uint64(t.ID), t.RateLimit)
			row["gc_grace_seconds"] = encInt(int32(t.GCGraceSeconds())) // at most 2^31-1
			row["speculative_retry"] = encText(t.SpeculativeRetry().String())
			row["default_time_to_live"] = encInt(t.DefaultTTL())
			for _, name := range schema.CompatOptionNames() {
				v, _ := t.Option(name)
				row[name] = encOption(v)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func columnRow(ks, tbl, name, cqlType, kind string, position int, order string) map[string][]byte {
	return map[string][]byte{
		"keyspace_name":     encText(ks),
		"table_name":        encText(tbl),
		"column_name":       encText(name),
		"clustering_order":  encText(order),
		"column_name_bytes": []byte(name),
		"kind":              encText(kind),
		"position":          encInt(int32(position)),
		"type":              encText(cqlType),
	}
}

func columnRows(v *view) []map[string][]byte {
	var rows []map[string][]byte
	for _, d := range v.defs {
		if !v.keep("keyspace_name", d.keyspace) || !v.keep("table_name", d.name) {
			continue
		}
		for _, c := range d.columns {
			order := "none"
			if c.kind == "clustering" {
				order = "asc"
			}
			rows = append(rows, columnRow(d.keyspace, d.name, c.name, c.cqlType, c.kind, c.position, order))
		}
	}
	for _, ks := range v.schema.Keyspaces() {
		if !v.keep("keyspace_name", ks.Name) {
			continue
		}
		for _, t := range v.schema.Tables(ks.Name) {
			if !v.keep("table_name", t.Name) {
				continue
			}
			for i, c := range t.PartitionKey {
				rows = append(rows, columnRow(t.Keyspace, t.Name, c.Name, c.Type.CQL(), "partition_key", i, "none"))
			}
			for i, c := range t.Clustering {
				order := "asc"
				if c.Descending {
					order = "desc"
				}
				rows = append(rows, columnRow(t.Keyspace, t.Name, c.Name, c.Type.CQL(), "clustering", i, order))
			}
			for _, c := range t.Regular {
				rows = append(rows, columnRow(t.Keyspace, t.Name, c.Name, c.Type.CQL(), regularKind(c), -1, "none"))
			}
		}
	}
	return rows
}

// typeRows are the user-defined types: their fields' names and types (as Cassandra prints them,
// a user type as frozen<name>), in order.
func typeRows(v *view) []map[string][]byte {
	var rows []map[string][]byte
	for _, ks := range v.schema.Keyspaces() {
		if !v.keep("keyspace_name", ks.Name) {
			continue
		}
		for _, u := range ks.UserTypes() {
			if !v.keep("type_name", u.Name) {
				continue
			}
			types := make([]string, len(u.FieldTypes))
			for i, t := range u.FieldTypes {
				types[i] = t.CQL()
			}
			rows = append(rows, map[string][]byte{
				"keyspace_name": encText(ks.Name),
				"type_name":     encText(u.Name),
				"field_names":   encTextList(u.FieldNames),
				"field_types":   encTextList(types),
			})
		}
	}
	return rows
}

// indexRows are system_schema.indexes: Cassandra 4.1's native indexes are of kind COMPOSITES,
// with their target as the one option.
func indexRows(v *view) []map[string][]byte {
	var rows []map[string][]byte
	for _, t := range v.schema.Tables("") {
		if !v.keep("keyspace_name", t.Keyspace) || !v.keep("table_name", t.Name) {
			continue
		}
		for _, ix := range t.Indexes() {
			rows = append(rows, map[string][]byte{
				"keyspace_name": encText(t.Keyspace),
				"table_name":    encText(t.Name),
				"index_name":    encText(ix.Name),
				"kind":          encText("COMPOSITES"),
				"options":       encMap(kv{"target", ix.TargetCQL()}),
			})
		}
	}
	return rows
}

func scyllaTableRow(ks, name string, version UUID) map[string][]byte {
	return map[string][]byte{
		"keyspace_name": encText(ks),
		"table_name":    encText(name),
		"in_memory":     encBool(false),
		"version":       encUUID(version),
	}
}

func scyllaTableRows(v *view) []map[string][]byte {
	var rows []map[string][]byte
	for _, d := range v.defs {
		if !v.keep("keyspace_name", d.keyspace) || !v.keep("table_name", d.name) {
			continue
		}
		rows = append(rows, scyllaTableRow(d.keyspace, d.name, tableUUID(d.keyspace, d.name, 0)))
	}
	for _, ks := range v.schema.Keyspaces() {
		if !v.keep("keyspace_name", ks.Name) {
			continue
		}
		for _, t := range v.schema.Tables(ks.Name) {
			if !v.keep("table_name", t.Name) {
				continue
			}
			// version changes with every ALTER of the table, as ScyllaDB's does.
			rows = append(rows, scyllaTableRow(t.Keyspace, t.Name, nameUUID(nsTableID, []byte(t.QualifiedName()+"\x00"+t.Version.String()))))
		}
	}
	return rows
}

// encOption encodes a table's compatibility option as system_schema.tables' column of its
// kind (text, double, int, boolean or map<text, text>) holds it.
func encOption(v schema.OptionValue) []byte {
	switch v.Kind {
	case schema.OptionText:
		return encText(v.Text)
	case schema.OptionDouble:
		return encDouble(v.Num)
	case schema.OptionInt:
		return encInt(int32(v.Num)) // at most 2^31-1
	case schema.OptionBool:
		return encBool(v.Bool)
	case schema.OptionMap:
		es := make([]kv, len(v.Map))
		for i, e := range v.Map {
			es[i] = kv{e[0], e[1]}
		}
		return encMap(es...)
	}
	return nil
}

// createStatement is the CREATE TABLE statement of t's columns and primary key, as DESCRIBE
// shows it.
func (t *table) createStatement() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE " + cql.QuoteIdent(t.keyspace) + "." + cql.QuoteIdent(t.name) + " (\n")
	var pk, ck []string
	for _, c := range t.columns {
		b.WriteString("    " + cql.QuoteIdent(c.name) + " " + c.cqlType + ",\n")
		switch c.kind {
		case "partition_key":
			pk = append(pk, cql.QuoteIdent(c.name))
		case "clustering":
			ck = append(ck, cql.QuoteIdent(c.name))
		}
	}
	key := strings.Join(pk, ", ")
	if len(pk) > 1 {
		key = "(" + key + ")"
	}
	b.WriteString("    PRIMARY KEY (" + strings.Join(append([]string{key}, ck...), ", ") + ")\n);")
	return b.String()
}

// replicationMap is a keyspace's replication in system_schema.keyspaces, as Cassandra gives it:
// the class's full name, and the replication factor, or each data center's, as strings.
func replicationMap(ks *schema.Keyspace) []kv {
	if len(ks.DataCenters) == 0 {
		return []kv{{"class", simpleStrategy}, {"replication_factor", strconv.Itoa(ks.ReplicationFactor)}}
	}
	m := []kv{{"class", ntsStrategy}}
	for _, f := range ks.DataCenters {
		m = append(m, kv{f.DC, strconv.Itoa(f.RF)})
	}
	return m
}

// regularKind returns system_schema.columns' kind of regular column c: "static" or "regular".
func regularKind(c schema.Column) string {
	if c.Static {
		return "static"
	}
	return "regular"
}
