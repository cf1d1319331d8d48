package node_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// TestPreparedPagingEndToEnd runs the domain API the native protocol uses on real nodes: a
// 1,000-row partition written through prepared statements and a batch, then read back in pages
// of 100 in both orders through a node that is not one of the partition's replicas.
func TestPreparedPagingEndToEnd(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := context.Background()
	e := tc.nodes[0].Executor()
	for _, ddl := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.t (k text, c int, v text, PRIMARY KEY (k, c))",
	} {
		if _, err := e.Execute(ctx, coordinator.Statement{Text: ddl}); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	// The partition's replicas, and a node that is not one.
	token := partitioner.Token(partitioner.AppendKey(nil, [][]byte{[]byte("p")}))
	replicas := tc.nodes[0].Cluster().Ring().Replicas(token, 2)
	other := -1
	for i, nd := range tc.nodes {
		if !slices.Contains(replicas, cluster.NodeID(nd.ID())) {
			other = i
		}
	}
	if other < 0 {
		t.Fatalf("every node is a replica of the partition with RF 2: replicas %v", replicas)
	}
	writer := tc.nodes[(other+1)%3].Executor()
	ins, err := writer.Prepare(ctx, "INSERT INTO t (k, c, v) VALUES (?, ?, ?)", "ks")
	if err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 990; i++ {
		st := coordinator.Statement{Prepared: ins, Consistency: coordinator.Quorum, Values: []coordinator.Value{
			{Bytes: []byte("p")}, {Bytes: schema.EncodeInt(i)}, {Bytes: []byte(fmt.Sprint("v", i))}}}
		if _, err := writer.Execute(ctx, st); err != nil {
			t.Fatalf("INSERT %d: %v", i, err)
		}
	}
	var children []coordinator.BatchChild
	for i := int32(990); i < 1000; i++ {
		children = append(children, coordinator.BatchChild{Prepared: ins, Values: []coordinator.Value{
			{Bytes: []byte("p")}, {Bytes: schema.EncodeInt(i)}, {Bytes: []byte(fmt.Sprint("v", i))}}})
	}
	if _, err := writer.ExecuteBatch(ctx, coordinator.BatchStatement{Type: coordinator.BatchLogged, Keyspace: "ks", Consistency: coordinator.Quorum, Children: children}); err != nil {
		t.Fatalf("BATCH of the last 10 rows: %v", err)
	}

	reader := tc.nodes[other].Executor()
	for _, order := range []string{"ASC", "DESC"} {
		sel, err := reader.Prepare(ctx, "SELECT c, v FROM t WHERE k = ? ORDER BY c "+order, "ks")
		if err != nil {
			t.Fatal(err)
		}
		st := coordinator.Statement{Prepared: sel, Consistency: coordinator.Quorum, PageSize: 100, Values: []coordinator.Value{{Bytes: []byte("p")}}}
		var got []int32
		pages := 0
		for {
			res, err := reader.Execute(ctx, st)
			if err != nil {
				t.Fatalf("%s page %d: %v", order, pages+1, err)
			}
			pages++
			if n := len(res.Rows.Values); n != 100 {
				t.Fatalf("%s page %d has %d rows, want 100", order, pages, n)
			}
			for _, r := range res.Rows.Values {
				c := int32(binary.BigEndian.Uint32(r[0]))
				if string(r[1]) != fmt.Sprint("v", c) {
					t.Fatalf("row %d has v = %q", c, r[1])
				}
				got = append(got, c)
			}
			if res.PagingState == nil {
				break
			}
			if pages > 10 {
				t.Fatalf("%s: more than 10 pages of 100 rows", order)
			}
			st.PagingState = res.PagingState
		}
		if pages != 10 || len(got) != 1000 {
			t.Fatalf("%s: %d pages, %d rows; want 10 pages of 100", order, pages, len(got))
		}
		for i, c := range got {
			want := int32(i)
			if order == "DESC" {
				want = int32(999 - i)
			}
			if c != want {
				t.Fatalf("%s: row %d is c = %d, want %d", order, i, c, want)
			}
		}
	}
}
