package systables

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// topSource is fakeSource with a fixed answer for system.top_partitions.
type topSource struct {
	fakeSource
	top      coordinator.TopPartitions
	err      error
	keyspace string // the last request's
	limit    int
}

func (s *topSource) TopPartitions(ctx context.Context, keyspace string, limit int) (coordinator.TopPartitions, error) {
	s.keyspace, s.limit = keyspace, limit
	return s.top, s.err
}

func newTopTables(t *testing.T) (*Tables, *topSource) {
	t.Helper()
	sch := mustSchema(t,
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.a (k text PRIMARY KEY, v int)",
		"CREATE TABLE ks.b (k text, n int, v blob, PRIMARY KEY ((k, n)))",
	)
	a, _ := sch.Table("ks", "a")
	b, _ := sch.Table("ks", "b")
	src := &topSource{fakeSource: fakeSource{sch: sch}, top: coordinator.TopPartitions{
		Tables: []coordinator.TableTopPartitions{
			{Table: a, Partitions: []coordinator.TopPartition{
				{Op: schema.OpWrite, Key: [][]byte{[]byte("hot")}, Token: -5, EstimatedOpsPerSecond: 1000, Limit: 100,
					RejectedPerSecond: 900, RejectedShare: 0.9, Nodes: 3},
				{Op: schema.OpRead, Token: 7, EstimatedOpsPerSecond: 300, Nodes: 1}, // key unknown, limit removed
			}},
			{Table: b, Partitions: []coordinator.TopPartition{
				{Op: schema.OpWrite, Key: [][]byte{[]byte("x"), {0, 0, 0, 2}}, Token: 1, EstimatedOpsPerSecond: 50, Limit: 10,
					RejectedPerSecond: 40, RejectedShare: 0.8, Nodes: 2},
			}},
		},
		Unreachable: []coordinator.NodeID{"n4", "n5"},
	}}
	tb, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	return tb, src
}

func TestTopPartitionsRows(t *testing.T) {
	tb, src := newTopTables(t)
	res, handled, err := run(t, tb, "SELECT * FROM system.top_partitions")
	if err != nil || !handled {
		t.Fatalf("SELECT * FROM system.top_partitions: handled %v, error %v", handled, err)
	}
	if src.keyspace != "" || src.limit != topPartitionsPerTable {
		t.Errorf("the source was asked for keyspace %q, limit %d; want every keyspace, limit %d", src.keyspace, src.limit, topPartitionsPerTable)
	}
	if len(res.Warnings) != 1 || res.Warnings[0] != TopPartitionsWarning+"n4, n5" {
		t.Errorf("warnings = %q, want one naming n4, n5", res.Warnings)
	}
	rows := selectRows(t, tb, "SELECT * FROM system.top_partitions")
	if got := colValues(t, rows, "table_name"); strings.Join(got, ",") != "a,a,b" {
		t.Fatalf("table_name column = %q, want a, a, b", got)
	}
	ranks := colValues(t, rows, "rank")
	for i, want := range []int32{1, 2, 1} {
		if got := int32(binary.BigEndian.Uint32([]byte(ranks[i]))); got != want {
			t.Errorf("row %d rank = %d, want %d", i, got, want)
		}
	}
	if got := colValues(t, rows, "op"); strings.Join(got, ",") != "write,read,write" {
		t.Errorf("op column = %q", got)
	}
	keys := colValues(t, rows, "partition_key")
	if keys[0] != "hot" || keys[1] != "" || keys[2] != "\x00\x01x\x00\x00\x04\x00\x00\x00\x02\x00" {
		t.Errorf("partition_key column = %q, want hot, null and the composite of (x, 2)", keys)
	}
	if got := colValues(t, rows, "partition_key_text"); got[0] != `(k="hot")` || got[1] != "" || got[2] != `(k="x", n=2)` {
		t.Errorf("partition_key_text column = %q", got)
	}
	limits := colValues(t, rows, "limit_per_second")
	if binary.BigEndian.Uint32([]byte(limits[0])) != 100 || limits[1] != "" {
		t.Errorf("limit_per_second column = %q, want 100 and null (no limit)", limits)
	}
	share := colValues(t, rows, "rejected_share")
	if got := math.Float64frombits(binary.BigEndian.Uint64([]byte(share[0]))); got != 0.9 {
		t.Errorf("rejected_share of the first row = %v, want 0.9", got)
	}
	tok := colValues(t, rows, "token")
	if got := int64(binary.BigEndian.Uint64([]byte(tok[0]))); got != -5 {
		t.Errorf("token of the first row = %d, want -5", got)
	}
	if got := colValues(t, rows, "key_types"); got[2] != string(schema.EncodeListText([]string{"text", "int"})) {
		t.Errorf("key_types of ks.b's row = %q, want [text, int]", got[2])
	}

	// A keyspace restriction reaches the source; a table restriction filters rows.
	rows = selectRows(t, tb, "SELECT table_name FROM system.top_partitions WHERE keyspace_name = 'ks' AND table_name = 'b'")
	if src.keyspace != "ks" || len(rows.Values) != 1 {
		t.Errorf("restricted to ks.b: source asked for keyspace %q, %d rows; want ks and 1 row", src.keyspace, len(rows.Values))
	}
}

func TestTopPartitionsErrorsAndPlainSources(t *testing.T) {
	tb, src := newTopTables(t)
	src.err = context.DeadlineExceeded
	if _, _, err := run(t, tb, "SELECT * FROM system.top_partitions"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a failing source gave error %v, want its error", err)
	}
	// A Source without TopSource serves the table empty.
	plain, err := New(fakeSource{sch: mustSchema(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rows := selectRows(t, plain, "SELECT * FROM system.top_partitions"); len(rows.Values) != 0 {
		t.Errorf("a plain source served %d rows, want none", len(rows.Values))
	}
	// Its columns are described to drivers like any system table's.
	stmts, _ := cql.Parse("SELECT rank, would_reject_per_second FROM system.top_partitions")
	_, cols, ok, err := plain.Prepare(stmts[0].(*cql.SelectStmt), "")
	if err != nil || !ok || len(cols) != 2 || cols[0].Type != schema.TypeInt || cols[1].Type != schema.TypeDouble {
		t.Errorf("Prepare = %v, %v, %v; want rank int and would_reject_per_second double", cols, ok, err)
	}
}
