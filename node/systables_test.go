package node_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
)

// sysQuery runs a statement through nd's executor (the domain API both front ends adapt).
func sysQuery(t *testing.T, nd *node.Node, stmt string, values ...[]byte) (coordinator.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := coordinator.Statement{Text: stmt}
	for _, v := range values {
		req.Values = append(req.Values, coordinator.Value{Bytes: v})
	}
	return nd.Executor().Execute(ctx, req)
}

// sysRows runs a SELECT and returns its rows as maps from column name to value.
func sysRows(t *testing.T, nd *node.Node, stmt string, values ...[]byte) []map[string][]byte {
	t.Helper()
	res, err := sysQuery(t, nd, stmt, values...)
	if err != nil {
		t.Fatalf("%s on node %s: %v", stmt, nd.ID(), err)
	}
	if res.Kind != coordinator.ResultRows {
		t.Fatalf("%s on node %s: result kind %v, want rows", stmt, nd.ID(), res.Kind)
	}
	var rows []map[string][]byte
	for _, vals := range res.Rows.Values {
		m := map[string][]byte{}
		for i, c := range res.Rows.Columns {
			m[c.Name] = vals[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// decodeTextCollection decodes a set<text> or list<text> value (native protocol v4 encoding).
func decodeTextCollection(t *testing.T, b []byte) []string {
	t.Helper()
	if len(b) < 4 {
		t.Fatalf("collection value of %d bytes", len(b))
	}
	n := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	var out []string
	for range n {
		l := int(binary.BigEndian.Uint32(b))
		out = append(out, string(b[4:4+l]))
		b = b[4+l:]
	}
	if len(b) != 0 {
		t.Fatalf("%d trailing bytes after a collection of %d", len(b), n)
	}
	return out
}

// decodeTextMap decodes a map<text, text>.
func decodeTextMap(t *testing.T, b []byte) map[string]string {
	t.Helper()
	flat := decodeTextCollection(t, append(binary.BigEndian.AppendUint32(nil, 2*binary.BigEndian.Uint32(b)), b[4:]...))
	m := map[string]string{}
	for i := 0; i < len(flat); i += 2 {
		m[flat[i]] = flat[i+1]
	}
	return m
}

func int32Of(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

func tokensOf(t *testing.T, b []byte) []int64 {
	t.Helper()
	var toks []int64
	for _, s := range decodeTextCollection(t, b) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("token %q: %v", s, err)
		}
		toks = append(toks, v)
	}
	slices.Sort(toks)
	return toks
}

func ringTokens(nd *node.Node, id string) []int64 {
	toks := slices.Clone(nd.Cluster().Ring().Tokens(cluster.NodeID(id)))
	slices.Sort(toks)
	return toks
}

func uuidBytes(u systables.UUID) []byte { return u[:] }

// TestSystemLocalAndPeersDescribeTheCluster checks, on every node of a 3-node cluster with its own
// data center and racks, what drivers read on connect: system.local about the node itself and
// system.peers / system.peers_v2 about the others, with tokens equal to the ring's.
func TestSystemLocalAndPeersDescribeTheCluster(t *testing.T) {
	racks := map[string]string{} // node id → rack, filled as the nodes start
	tc := startClusterWith(t, 3, func(cfg *node.Config) {
		cfg.Cluster.DataCenter = "dc-east"
		cfg.Cluster.Rack = "r-" + strings.TrimPrefix(cfg.DataDir[strings.LastIndex(cfg.DataDir, "/")+1:], "n")
	})
	for i, nd := range tc.nodes {
		racks[nd.ID()] = "r-" + strconv.Itoa(i+1)
	}
	loopback := netip.MustParseAddr("127.0.0.1")
	for _, nd := range tc.nodes {
		rows := sysRows(t, nd, "SELECT * FROM system.local WHERE key = 'local'")
		if len(rows) != 1 {
			t.Fatalf("node %s: system.local has %d rows, want 1", nd.ID(), len(rows))
		}
		r := rows[0]
		want := map[string][]byte{
			"key":                     []byte("local"),
			"bootstrapped":            []byte("COMPLETED"),
			"cluster_name":            []byte("kvnode-localcluster"),
			"data_center":             []byte("dc-east"),
			"rack":                    []byte(racks[nd.ID()]),
			"host_id":                 uuidBytes(systables.HostID(nd.ID())),
			"partitioner":             []byte("org.apache.cassandra.dht.Murmur3Partitioner"),
			"release_version":         []byte("3.0.8"),
			"native_protocol_version": []byte("4"),
			"broadcast_address":       loopback.AsSlice(),
			"listen_address":          loopback.AsSlice(),
			"rpc_address":             loopback.AsSlice(),
		}
		for col, w := range want {
			if string(r[col]) != string(w) {
				t.Errorf("node %s: system.local %s = %q, want %q", nd.ID(), col, r[col], w)
			}
		}
		if got, want := tokensOf(t, r["tokens"]), ringTokens(nd, nd.ID()); !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("node %s: system.local tokens = %v, want the ring's %v", nd.ID(), got, want)
		}
		if want := nd.CQLAddr()[strings.LastIndex(nd.CQLAddr(), ":")+1:]; strconv.Itoa(int(int32Of(r["rpc_port"]))) != want {
			t.Errorf("node %s: system.local rpc_port = %d, want its native protocol port %s", nd.ID(), int32Of(r["rpc_port"]), want)
		}
		sv, _ := systables.SchemaVersion(nd.SchemaDigest())
		if string(r["schema_version"]) != string(sv[:]) {
			t.Errorf("node %s: system.local schema_version = %x, want %v (from digest %s)", nd.ID(), r["schema_version"], sv, nd.SchemaDigest())
		}

		for _, table := range []string{"peers", "peers_v2"} {
			peers := sysRows(t, nd, "SELECT * FROM system."+table)
			if len(peers) != 2 {
				t.Fatalf("node %s: system.%s has %d rows, want 2 (the other nodes)", nd.ID(), table, len(peers))
			}
			seen := map[string]bool{}
			for _, p := range peers {
				var id string
				for _, other := range tc.nodes {
					if string(p["host_id"]) == string(uuidBytes(systables.HostID(other.ID()))) {
						id = other.ID()
					}
				}
				if id == "" || id == nd.ID() || seen[id] {
					t.Errorf("node %s: system.%s row with host_id %x is not another node's (or repeated)", nd.ID(), table, p["host_id"])
					continue
				}
				seen[id] = true
				if got, want := tokensOf(t, p["tokens"]), ringTokens(nd, id); !slices.Equal(got, want) {
					t.Errorf("node %s: system.%s tokens of %s = %v, want the ring's %v", nd.ID(), table, id, got, want)
				}
				if string(p["data_center"]) != "dc-east" || string(p["rack"]) != racks[id] {
					t.Errorf("node %s: system.%s places %s in %q/%q, want dc-east/%s", nd.ID(), table, id, p["data_center"], p["rack"], racks[id])
				}
				if string(p["peer"]) != string(loopback.AsSlice()) {
					t.Errorf("node %s: system.%s peer of %s = %v, want 127.0.0.1", nd.ID(), table, id, p["peer"])
				}
				addrCol := "rpc_address"
				if table == "peers_v2" {
					var other *node.Node
					for _, o := range tc.nodes {
						if o.ID() == id {
							other = o
						}
					}
					if want := other.InternodeAddr()[strings.LastIndex(other.InternodeAddr(), ":")+1:]; strconv.Itoa(int(int32Of(p["peer_port"]))) != want {
						t.Errorf("node %s: system.peers_v2 peer_port of %s = %d, want its internode port %s", nd.ID(), id, int32Of(p["peer_port"]), want)
					}
					addrCol = "native_address"
					if want := other.CQLAddr()[strings.LastIndex(other.CQLAddr(), ":")+1:]; strconv.Itoa(int(int32Of(p["native_port"]))) != want {
						t.Errorf("node %s: system.peers_v2 native_port of %s = %d, want its native protocol port %s", nd.ID(), id, int32Of(p["native_port"]), want)
					}
				}
				if string(p[addrCol]) != string(loopback.AsSlice()) {
					t.Errorf("node %s: system.%s %s of %s = %v, want 127.0.0.1", nd.ID(), table, addrCol, id, p[addrCol])
				}
				if string(p["release_version"]) != "3.0.8" {
					t.Errorf("node %s: system.%s release_version of %s = %q", nd.ID(), table, id, p["release_version"])
				}
			}
		}
	}
}

// schemaVersions returns each node's view: its own schema_version and those it reports for peers.
func schemaVersions(t *testing.T, nodes []*node.Node) (local []string, peers []string) {
	for _, nd := range nodes {
		local = append(local, fmt.Sprintf("%x", sysRows(t, nd, "SELECT schema_version FROM system.local WHERE key='local'")[0]["schema_version"]))
		for _, p := range sysRows(t, nd, "SELECT host_id, data_center, rack, schema_version, rpc_address FROM system.peers") {
			peers = append(peers, fmt.Sprintf("%x", p["schema_version"]))
		}
	}
	return local, peers
}

// agreed reports whether every version in every list is the same non-empty one, and returns it.
func agreed(lists ...[]string) (string, bool) {
	var v string
	for _, l := range lists {
		for _, s := range l {
			if s == "" || (v != "" && s != v) {
				return "", false
			}
			v = s
		}
	}
	return v, v != ""
}

// TestSchemaVersionAgreesAndChangesWithDDL checks the schema agreement drivers wait for after DDL:
// every node reports the same schema_version for itself and for its peers, and a schema change
// moves all of them to a new one.
func TestSchemaVersionAgreesAndChangesWithDDL(t *testing.T) {
	tc := startCluster(t, 3)
	var before string
	poll.Must(t, 30*time.Second, "every node reports one schema_version", func() error {
		l, p := schemaVersions(t, tc.nodes)
		v, ok := agreed(l, p)
		if !ok {
			return fmt.Errorf("local %v, peers %v", l, p)
		}
		before = v
		return nil
	})
	for _, stmt := range []string{
		"CREATE KEYSPACE sv WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE sv.t (k text PRIMARY KEY, v int)",
		"ALTER TABLE sv.t WITH per_partition_rate_limit = {'max_writes_per_second': 5}",
	} {
		if _, err := sysQuery(t, tc.nodes[1], stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		poll.Must(t, 30*time.Second, "every node reports one new schema_version after "+stmt, func() error {
			l, p := schemaVersions(t, tc.nodes)
			v, ok := agreed(l, p)
			if !ok || v == before {
				return fmt.Errorf("before %s; local %v, peers %v", before, l, p)
			}
			before = v
			return nil
		})
	}
}

// TestSystemSchemaDescribesKeyspacesTablesAndColumns checks the rows the drivers' schema parsers
// read, on a node other than the one that ran the DDL, with the filters they send.
func TestSystemSchemaDescribesKeyspacesTablesAndColumns(t *testing.T) {
	tc := startCluster(t, 2)
	for _, stmt := range []string{
		"CREATE KEYSPACE shop WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE shop.orders (customer text, day int, seq bigint, total double, note text, PRIMARY KEY ((customer, day), seq)) WITH CLUSTERING ORDER BY (seq DESC) AND per_partition_rate_limit = {'max_reads_per_second': 100}",
	} {
		if _, err := sysQuery(t, tc.nodes[0], stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	nd := tc.nodes[1]
	poll.Must(t, 30*time.Second, "node 2 knows shop.orders", poll.Bool(func() bool {
		_, ok := nd.Schema().Table("shop", "orders")
		return ok
	}))

	ks := sysRows(t, nd, "SELECT * FROM system_schema.keyspaces WHERE keyspace_name = ?", []byte("shop"))
	if len(ks) != 1 {
		t.Fatalf("system_schema.keyspaces for shop: %d rows, want 1", len(ks))
	}
	if got := decodeTextMap(t, ks[0]["replication"]); got["class"] != "org.apache.cassandra.locator.SimpleStrategy" || got["replication_factor"] != "2" || len(got) != 2 {
		t.Errorf("shop replication = %v, want SimpleStrategy with replication_factor 2", got)
	}
	if string(ks[0]["durable_writes"]) != "\x01" {
		t.Errorf("shop durable_writes = %x, want true", ks[0]["durable_writes"])
	}
	var names []string
	for _, r := range sysRows(t, nd, "SELECT keyspace_name FROM system_schema.keyspaces") {
		names = append(names, string(r["keyspace_name"]))
	}
	if !slices.Equal(names, []string{"shop", "system", "system_schema"}) {
		t.Errorf("system_schema.keyspaces lists %v, want [shop system system_schema]", names)
	}

	tables := sysRows(t, nd, "SELECT * FROM system_schema.tables WHERE keyspace_name = 'shop' AND table_name = 'orders' ALLOW FILTERING")
	if len(tables) != 1 {
		t.Fatalf("system_schema.tables for shop.orders: %d rows, want 1", len(tables))
	}
	tr := tables[0]
	if got := decodeTextCollection(t, tr["flags"]); !slices.Equal(got, []string{"compound"}) {
		t.Errorf("shop.orders flags = %v, want [compound] (drivers take a table without it for COMPACT STORAGE)", got)
	}
	if got := decodeTextMap(t, tr["compaction"]); got["class"] == "" {
		t.Errorf("shop.orders compaction = %v, want a class", got)
	}
	if len(tr["id"]) != 16 {
		t.Errorf("shop.orders id = %x, want a 16-byte uuid", tr["id"])
	}
	if ext := decodeTextMap(t, tr["extensions"]); ext["per_partition_rate_limit"] != "{'max_reads_per_second': 100}" {
		t.Errorf("shop.orders extensions = %v, want the per_partition_rate_limit", ext)
	}
	if other := sysRows(t, tc.nodes[0], "SELECT id FROM system_schema.tables WHERE keyspace_name = 'shop' AND table_name = 'orders'"); string(other[0]["id"]) != string(tr["id"]) {
		t.Errorf("shop.orders id differs between nodes: %x and %x", other[0]["id"], tr["id"])
	}

	type col struct {
		kind, order, typ string
		pos              int32
	}
	want := map[string]col{
		"customer": {"partition_key", "none", "text", 0},
		"day":      {"partition_key", "none", "int", 1},
		"seq":      {"clustering", "desc", "bigint", 0},
		"note":     {"regular", "none", "text", -1},
		"total":    {"regular", "none", "double", -1},
	}
	cols := sysRows(t, nd, "SELECT table_name, column_name, clustering_order, type, kind, position FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ? USING TIMEOUT 5000ms", []byte("shop"), []byte("orders"))
	got := map[string]col{}
	for _, r := range cols {
		got[string(r["column_name"])] = col{string(r["kind"]), string(r["clustering_order"]), string(r["type"]), int32Of(r["position"])}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("system_schema.columns of shop.orders =\n%v\nwant\n%v", got, want)
	}
	for _, empty := range []string{"types", "functions", "aggregates", "triggers", "indexes", "views"} {
		if rows := sysRows(t, nd, "SELECT * FROM system_schema."+empty+" WHERE keyspace_name = 'shop'"); len(rows) != 0 {
			t.Errorf("system_schema.%s has %d rows for shop, want none", empty, len(rows))
		}
	}
	if rows := sysRows(t, nd, "SELECT * FROM system_schema.scylla_tables WHERE keyspace_name = 'shop'"); len(rows) != 1 || len(rows[0]["version"]) != 16 {
		t.Errorf("system_schema.scylla_tables for shop = %v, want one row with a version uuid", rows)
	}
}

// TestSystemKeyspacesAreReadOnly checks that writes and schema changes naming the system
// keyspaces are refused as invalid requests that say why.
func TestSystemKeyspacesAreReadOnly(t *testing.T) {
	tc := startCluster(t, 1)
	for _, stmt := range []string{
		"INSERT INTO system.local (key, cluster_name) VALUES ('local', 'x')",
		"UPDATE system.peers SET rack = 'x' WHERE peer = 'y'",
		"DELETE FROM system_schema.tables WHERE keyspace_name = 'x'",
		"CREATE TABLE system.mine (k text PRIMARY KEY)",
		"DROP TABLE system_schema.columns",
		"ALTER TABLE system.local WITH per_partition_rate_limit = {}",
		"DROP KEYSPACE system",
		"CREATE KEYSPACE system_schema WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
	} {
		_, err := sysQuery(t, tc.nodes[0], stmt)
		var inv *coordinator.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), "system") {
			t.Errorf("%s: error %v, want an invalid request naming the system keyspace", stmt, err)
		}
	}
}

// TestUseSystemKeyspace: USE accepts the system keyspaces (cqlsh users type USE system; drivers
// may), and unqualified names then read their tables; an unknown keyspace is still refused.
func TestUseSystemKeyspace(t *testing.T) {
	tc := startCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ks := range []string{"system", "system_schema"} {
		res, err := tc.nodes[0].Executor().Execute(ctx, coordinator.Statement{Text: "USE " + ks})
		if err != nil || res.Kind != coordinator.ResultSetKeyspace || res.Keyspace != ks {
			t.Fatalf("USE %s: %+v, %v; want set_keyspace %s", ks, res, err, ks)
		}
	}
	res, err := tc.nodes[0].Executor().Execute(ctx, coordinator.Statement{Text: "SELECT key FROM local", Keyspace: "system"})
	if err != nil || res.Kind != coordinator.ResultRows || len(res.Rows.Values) != 1 || string(res.Rows.Values[0][0]) != "local" {
		t.Fatalf("SELECT key FROM local in keyspace system: %+v, %v; want the one row 'local'", res, err)
	}
	if _, err := tc.nodes[0].Executor().Execute(ctx, coordinator.Statement{Text: "USE system_nope"}); err == nil || !strings.Contains(err.Error(), "system_nope") {
		t.Fatalf("USE system_nope: %v, want an unknown-keyspace error naming it", err)
	}
}

// TestNativeAddressReachesPeers checks that the native protocol address a node publishes once its
// listener is bound (Cluster.SetNativeAddr) is what the other nodes report in system.peers_v2, and
// what the node reports for itself.
func TestNativeAddressReachesPeers(t *testing.T) {
	tc := startCluster(t, 2)
	if err := tc.nodes[0].Cluster().SetNativeAddr("127.0.0.1:19042"); err != nil {
		t.Fatal(err)
	}
	if got := int32Of(sysRows(t, tc.nodes[0], "SELECT rpc_port FROM system.local")[0]["rpc_port"]); got != 19042 {
		t.Errorf("node 1's system.local rpc_port = %d, want 19042", got)
	}
	hostID := systables.HostID(tc.nodes[0].ID())
	poll.Must(t, 30*time.Second, "node 2 reports node 1's native port 19042", func() error {
		rows := sysRows(t, tc.nodes[1], "SELECT native_port FROM system.peers_v2 WHERE host_id = "+hostID.String()+" ALLOW FILTERING")
		if len(rows) != 1 {
			return fmt.Errorf("%d rows for node 1", len(rows))
		}
		if p := int32Of(rows[0]["native_port"]); p != 19042 {
			return fmt.Errorf("native_port %d", p)
		}
		return nil
	})
	if err := tc.nodes[0].Cluster().SetNativeAddr(strings.Repeat("x", cluster.MaxMetaSize)); !errors.Is(err, cluster.ErrMetaTooLarge) {
		t.Errorf("SetNativeAddr with a %d-byte address: %v, want ErrMetaTooLarge", cluster.MaxMetaSize, err)
	}
	if got := int32Of(sysRows(t, tc.nodes[0], "SELECT rpc_port FROM system.local")[0]["rpc_port"]); got != 19042 {
		t.Errorf("after a refused SetNativeAddr, rpc_port = %d, want 19042 still", got)
	}
}
