package systables

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
)

// benchTables is a node of a 6-node cluster (16 tokens each) with 200 tables of 6 columns.
func benchTables(b *testing.B) *Tables {
	stmts := []string{"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}"}
	for i := range 200 {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE ks.t%03d (k text, c int, a text, b bigint, d double, e blob, PRIMARY KEY (k, c))", i))
	}
	t := &testing.T{}
	src := fakeSource{sch: mustSchema(t, stmts...)}
	toks := func(n int) []int64 {
		var ts []int64
		for i := range 16 {
			ts = append(ts, int64(n*1000+i))
		}
		return ts
	}
	src.local = Node{ID: "local", Address: netip.MustParseAddr("10.0.0.1"), DataCenter: "dc1", Rack: "r1", SchemaDigest: "d", Tokens: toks(0)}
	for i := 1; i < 6; i++ {
		src.peers = append(src.peers, Node{ID: fmt.Sprint("peer", i), Address: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}),
			DataCenter: "dc1", Rack: "r1", SchemaDigest: "d", Tokens: toks(i)})
	}
	tb, err := New(src)
	if err != nil {
		b.Fatal(err)
	}
	return tb
}

func benchQuery(b *testing.B, text string, values ...string) {
	tb := benchTables(b)
	stmts, err := cql.Parse(text)
	if err != nil {
		b.Fatal(err)
	}
	st := stmts[0].(*cql.SelectStmt)
	ctx := context.Background()
	var vals []coordinator.Value
	for _, v := range values {
		vals = append(vals, coordinator.Value{Bytes: []byte(v)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := tb.Select(ctx, st, "", vals); err != nil {
			b.Fatal(err)
		}
	}
}

// The queries drivers send on connect and per schema refresh.
func BenchmarkSystemLocal(b *testing.B) {
	benchQuery(b, "SELECT * FROM system.local WHERE key='local'")
}
func BenchmarkSystemPeers(b *testing.B) { benchQuery(b, "SELECT * FROM system.peers") }
func BenchmarkColumnsOfOneTable(b *testing.B) {
	benchQuery(b, "SELECT * FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?", "ks", "t100")
}
func BenchmarkAllColumns(b *testing.B) { benchQuery(b, "SELECT * FROM system_schema.columns") }
