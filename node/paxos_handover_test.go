package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// TestPaxosStateMovesWithTheRange: at RF=1 a proposal accepted but not committed (its proposer
// died between the propose and the commit) lives only in its replica's Paxos state; a node that
// joins and takes the range over must get that state with the rows, so that a SERIAL read
// through the new owner finds the proposal in progress and completes it. Without the handover
// the new owner's quorum (itself) never saw the proposal, and the value a client may already
// have been told was chosen is lost.
func TestPaxosStateMovesWithTheRange(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(0)
	exec(t, c, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, c, client.Quorum, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	tbl, ok := tc.nodes[0].Schema().Table("ks", "t")
	if !ok {
		t.Fatal("table ks.t is missing from the schema")
	}
	const keys = 40
	ctx := context.Background()
	at := time.Now().UnixMicro()
	for k := range keys {
		pk := [][]byte{schema.EncodeInt(int32(k))}
		tok := partitioner.Token(partitioner.AppendKey(nil, pk))
		b := &replicapb.SchemaBallot{Counter: at, Node: "gone"}
		r, err := tc.nodes[0].Replica().PaxosPrepare(ctx, &replicapb.PaxosPrepareRequest{Ballot: b, Read: &replicapb.ReadRequest{TableId: uint64(tbl.ID), PartitionKey: pk, Token: tok}})
		if err != nil || !r.GetPromised() {
			t.Fatalf("prepare of key %d: %v, %v", k, r, err)
		}
		row := &replicapb.Row{Marker: &at, Cells: []*replicapb.Cell{{Column: "v", Value: schema.EncodeInt(int32(k)), Timestamp: at}}}
		p := &replicapb.PaxosProposal{Ballot: b, Mutation: &replicapb.Mutation{TableId: uint64(tbl.ID), PartitionKey: pk, Token: tok, Rows: []*replicapb.Row{row}}}
		if r, err := tc.nodes[0].Replica().PaxosPropose(ctx, &replicapb.PaxosProposeRequest{Proposal: p}); err != nil || !r.GetAccepted() {
			t.Fatalf("propose of key %d: %v, %v", k, r, err)
		}
	}

	jctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	i, err := tc.c.Add(jctx)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes = append(tc.nodes, tc.c.Node(i).Node())
	newOwner := tc.nodes[i].Cluster().LocalID()
	moved := 0
	cj := tc.client(i)
	for k := range keys {
		pk := partitioner.AppendKey(nil, [][]byte{schema.EncodeInt(int32(k))})
		owners := tc.nodes[i].Cluster().Ring().AppendReplicasFor(nil, partitioner.Token(pk), schema.Simple(1))
		if len(owners) != 1 || owners[0] != newOwner {
			continue
		}
		moved++
		res := exec(t, cj, client.Serial, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k))
		if len(res.Rows) != 1 {
			t.Errorf("key %d, whose proposal was accepted on its old replica, reads %v at SERIAL through its new owner: the proposal was lost in the move", k, res.Rows)
			continue
		}
		if one := exec(t, cj, client.One, fmt.Sprintf("SELECT v FROM ks.t WHERE k = %d", k)); len(one.Rows) != 1 {
			t.Errorf("key %d reads %v at ONE after the SERIAL read completed its proposal", k, one.Rows)
		}
	}
	if moved == 0 {
		t.Fatalf("the joining node took over none of the %d keys; the test proves nothing", keys)
	}
	t.Logf("%d of %d keys moved to the new owner", moved, keys)
}
