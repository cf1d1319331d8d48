package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/snapshot"
)

// TestSnapshotDropRestore follows docs/operations.md's restore procedure on a 3-node cluster at
// RF 2: write rows (one of them deleted), snapshot every node, drop the table (each node takes
// its own auto snapshot first), recreate it from a snapshot's manifest, restore every node's
// snapshot through its Snapshot service, and read every row back at ALL, at its original write
// timestamp (an older write loses to it, a newer one wins), the deleted row still gone; then
// clear snapshots, and DROP KEYSPACE snapshots its tables too.
func TestSnapshotDropRestore(t *testing.T) {
	c, err := localcluster.Start(context.Background(), localcluster.Options{
		Dir: t.TempDir(),
		Adjust: func(i int, cfg *node.Config) {
			cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must := func(i int, cl client.Consistency, stmt string) *client.Result {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := c.Node(i).Client().Execute(cctx, cl, stmt)
		if err != nil {
			t.Fatalf("%s through node %d: %v", stmt, i, err)
		}
		return res
	}
	api := make([]kvnodepb.SnapshotClient, 3)
	for i := range api {
		conn, err := grpc.NewClient(c.Node(i).Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		api[i] = kvnodepb.NewSnapshotClient(conn)
	}

	const partitions = 60
	ts := time.Now().Add(-time.Hour).UnixMicro()
	must(0, client.Quorum, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	must(0, client.Quorum, "CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	for k := range partitions {
		for cc := range 2 {
			must(k%3, client.Quorum, fmt.Sprintf("INSERT INTO ks.t (k, c, v) VALUES (%d, %d, 'v%d.%d') USING TIMESTAMP %d", k, cc, k, cc, ts))
		}
	}
	must(0, client.Quorum, fmt.Sprintf("DELETE FROM ks.t USING TIMESTAMP %d WHERE k = 5 AND c = 1", ts+1))

	// 1. Snapshot every node (kvnode snapshot --tag backup ks.t on each).
	var paths []string
	for i := range api {
		info, err := api[i].Take(ctx, &kvnodepb.TakeSnapshotRequest{Tag: "backup", Keyspace: "ks", Table: "t"})
		if err != nil {
			t.Fatalf("snapshot of node %d: %v", i, err)
		}
		if info.Scope != snapshot.ScopeTable || len(info.Tables) != 1 || info.Tables[0] != "ks.t" || info.Bytes == 0 {
			t.Errorf("snapshot of node %d: %+v", i, info)
		}
		paths = append(paths, info.Path)
	}
	// Bad input: a clear error each, and no snapshot.
	for _, tc := range []struct {
		req  *kvnodepb.TakeSnapshotRequest
		code codes.Code
		want string
	}{
		{&kvnodepb.TakeSnapshotRequest{Tag: "backup"}, codes.AlreadyExists, "snapshot backup: a snapshot with this tag exists already"},
		{&kvnodepb.TakeSnapshotRequest{Tag: "x", Keyspace: "nope"}, codes.NotFound, "keyspace nope: not found"},
		{&kvnodepb.TakeSnapshotRequest{Tag: "x", Keyspace: "ks", Table: "nope"}, codes.NotFound, "table ks.nope: not found"},
		{&kvnodepb.TakeSnapshotRequest{Tag: "x", Table: "t"}, codes.InvalidArgument, "needs its keyspace"},
		{&kvnodepb.TakeSnapshotRequest{Tag: "../../x"}, codes.InvalidArgument, "path separator"},
		{&kvnodepb.TakeSnapshotRequest{Tag: ".."}, codes.InvalidArgument, "starts with '.'"},
	} {
		_, err := api[0].Take(ctx, tc.req)
		if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.want) {
			t.Errorf("Take(%v): %v; want %v with %q", tc.req, err, tc.code, tc.want)
		}
	}

	// The hook TRUNCATE calls on each replica before it deletes a table's data.
	tag, err := c.Node(0).Node().SnapshotTable(ctx, snapshot.ReasonTruncated, "", "ks", "t")
	if err != nil || !strings.HasPrefix(tag, "truncated-") || !strings.HasSuffix(tag, "-ks.t") {
		t.Errorf("SnapshotTable before a truncate: %q, %v; want truncated-<ms>-ks.t", tag, err)
	}
	if _, err := c.Node(0).Node().Snapshots().Clear(tag); err != nil {
		t.Fatal(err)
	}

	// 2. Lose the table: each node snapshots it before deleting its data.
	must(1, client.Quorum, "DROP TABLE ks.t")
	for i := range api {
		list, err := api[i].List(ctx, &kvnodepb.ListSnapshotsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, s := range list.Snapshots {
			reasons = append(reasons, s.Reason+":"+s.Tag)
		}
		if len(list.Snapshots) != 2 || list.Snapshots[0].Tag != "backup" || list.Snapshots[1].Reason != snapshot.ReasonDropped ||
			!strings.HasPrefix(list.Snapshots[1].Tag, "dropped-") || !strings.HasSuffix(list.Snapshots[1].Tag, "-ks.t") {
			t.Errorf("node %d's snapshots after DROP TABLE: %v; want backup and an auto snapshot dropped-<ms>-ks.t", i, reasons)
		}
	}
	// Restoring before the table exists again says what to create.
	_, err = api[0].Restore(ctx, &kvnodepb.RestoreSnapshotRequest{Tag: "backup"})
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "CREATE TABLE ks.t") {
		t.Fatalf("Restore before the table exists: %v", err)
	}
	_, err = api[0].Restore(ctx, &kvnodepb.RestoreSnapshotRequest{Tag: "nope"})
	if st := status.Convert(err); st.Code() != codes.NotFound {
		t.Errorf("Restore of an unknown tag: %v", err)
	}

	// 3. Recreate the schema from a manifest.
	data, err := os.ReadFile(filepath.Join(paths[0], "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man snapshot.Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	for _, tb := range man.Tables {
		must(0, client.Quorum, tb.CQL)
	}

	// 4. Restore every node's snapshot (through that node; any node would do).
	restored := uint64(0)
	for i := range api {
		resp, err := api[i].Restore(ctx, &kvnodepb.RestoreSnapshotRequest{Tag: "backup", Keyspace: "ks", Table: "t"})
		if err != nil {
			t.Fatalf("restore on node %d: %v", i, err)
		}
		if len(resp.Tables) != 1 {
			t.Fatalf("restore on node %d: %+v", i, resp)
		}
		restored += resp.Tables[0].Partitions
	}
	// Each partition is on 2 of the 3 nodes' snapshots.
	if restored != 2*partitions {
		t.Errorf("restored %d partitions over the nodes, want %d (RF 2)", restored, 2*partitions)
	}

	// 5. Every row is back at its timestamp: an older write loses to the restored one, a newer
	// one (though older than the restore) wins.
	must(2, client.All, fmt.Sprintf("INSERT INTO ks.t (k, c, v) VALUES (0, 0, 'older') USING TIMESTAMP %d", ts-1))
	must(2, client.All, fmt.Sprintf("INSERT INTO ks.t (k, c, v) VALUES (1, 0, 'newer') USING TIMESTAMP %d", ts+10))
	got := map[string]string{}
	for k := range partitions {
		for _, r := range must(k%3, client.All, fmt.Sprintf("SELECT c, v FROM ks.t WHERE k = %d", k)).Rows {
			got[fmt.Sprintf("%d.%d", k, r[0])] = fmt.Sprint(r[1])
		}
	}
	for k := range partitions {
		for cc := range 2 {
			key, want := fmt.Sprintf("%d.%d", k, cc), fmt.Sprintf("v%d.%d", k, cc)
			if k == 5 && cc == 1 {
				if v, ok := got[key]; ok {
					t.Errorf("the deleted row 5.1 is back after the restore: %q", v)
				}
				continue
			}
			if k == 1 && cc == 0 {
				want = "newer"
			}
			if got[key] != want {
				t.Errorf("row %s after the restore: %q, want %q", key, got[key], want)
			}
		}
	}
	if len(got) != 2*partitions-1 {
		t.Errorf("%d rows after the restore, want %d", len(got), 2*partitions-1)
	}

	// 6. Clear one snapshot, then all.
	if resp, err := api[0].Clear(ctx, &kvnodepb.ClearSnapshotsRequest{Tag: "backup"}); err != nil || len(resp.Cleared) != 1 {
		t.Errorf("clear backup: %v, %v", resp, err)
	}
	if _, err := api[0].Clear(ctx, &kvnodepb.ClearSnapshotsRequest{Tag: "backup"}); status.Code(err) != codes.NotFound {
		t.Errorf("clear backup twice: %v, want NotFound", err)
	}
	if resp, err := api[0].Clear(ctx, &kvnodepb.ClearSnapshotsRequest{}); err != nil || len(resp.Cleared) != 1 {
		t.Errorf("clear all: %v, %v", resp, err)
	}

	// 7. DROP KEYSPACE snapshots each of its tables on every node too.
	must(2, client.Quorum, "DROP KEYSPACE ks")
	for i, want := range []int{1, 3, 3} {
		list, err := api[i].List(ctx, &kvnodepb.ListSnapshotsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		last := list.Snapshots[len(list.Snapshots)-1]
		if len(list.Snapshots) != want || last.Reason != snapshot.ReasonDropped || len(last.Tables) != 1 || last.Tables[0] != "ks.t" {
			t.Errorf("node %d after DROP KEYSPACE: %d snapshots, the last %+v; want %d, the last of ks.t dropped", i, len(list.Snapshots), last, want)
		}
	}
}

// TestSnapshotRestoreIntoFreshCluster: a node's snapshot directory copied into a node of
// another cluster (of another size, so other token ranges) under a tag of its own is listed at
// once, and restores there into the schema recreated from its manifest.
func TestSnapshotRestoreIntoFreshCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(nodes int) *localcluster.Cluster {
		c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: nodes,
			Adjust: func(i int, cfg *node.Config) { cfg.Cluster.SchemaAgreementTimeout = schemaAgreementTimeout }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	must := func(c *localcluster.Cluster, stmt string) *client.Result {
		t.Helper()
		res, err := c.Node(0).Client().Execute(ctx, client.All, stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return res
	}
	old := start(1)
	must(old, "CREATE KEYSPACE app WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	must(old, "CREATE TABLE app.kv (k text PRIMARY KEY, v bigint)")
	const rows = 50
	for k := range rows {
		must(old, fmt.Sprintf("INSERT INTO app.kv (k, v) VALUES ('k%d', %d)", k, k))
	}
	tag, err := old.Node(0).Node().SnapshotTable(ctx, snapshot.ReasonManual, "backup", "app", "")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(old.Node(0).DataDir, "snapshots", tag)

	fresh := start(2)
	dst := filepath.Join(fresh.Node(1).DataDir, "snapshots", "backup-old1")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dst, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man snapshot.Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	for _, k := range man.Keyspaces {
		must(fresh, strings.Replace(k.CQL, "'replication_factor': 1", "'replication_factor': 2", 1))
	}
	for _, tb := range man.Tables {
		must(fresh, tb.CQL)
	}
	conn, err := grpc.NewClient(fresh.Node(1).Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := kvnodepb.NewSnapshotClient(conn)
	list, err := api.List(ctx, &kvnodepb.ListSnapshotsRequest{})
	if err != nil || len(list.Snapshots) != 1 || list.Snapshots[0].Tag != "backup-old1" {
		t.Fatalf("the fresh node's snapshots: %v, %v; want the copied backup-old1", list, err)
	}
	resp, err := api.Restore(ctx, &kvnodepb.RestoreSnapshotRequest{Tag: "backup-old1"})
	if err != nil || len(resp.Tables) != 1 || resp.Tables[0].Partitions != rows {
		t.Fatalf("restore: %v, %v; want %d partitions of app.kv", resp, err, rows)
	}
	for k := range rows {
		res := must(fresh, fmt.Sprintf("SELECT v FROM app.kv WHERE k = 'k%d'", k))
		if len(res.Rows) != 1 || res.Rows[0][0] != int64(k) {
			t.Errorf("k%d on the fresh cluster at ALL: %v, want %d", k, res.Rows, k)
		}
	}
}
