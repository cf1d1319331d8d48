package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/snapshot"
)

// Snapshots (package snapshot): the node opens its Manager over the store, snapshots a table
// before its drop deletes the data (auto_snapshot), serves the Snapshot admin service (`kvnode
// snapshot`) and writes restored partitions to their replicas.

// openSnapshots opens the node's snapshots in the data directory's snapshots/.
func (n *Node) openSnapshots(nodeID string) (err error) {
	n.snapshots, err = snapshot.New(snapshot.Config{
		Options:  n.cfg.Snapshot,
		Dir:      filepath.Join(n.cfg.DataDir, "snapshots"),
		Store:    n.store,
		StoreDir: filepath.Join(n.cfg.DataDir, "data"),
		Node:     nodeID,
		Logger:   n.cfg.Logger,
	})
	return err
}

// dropTable is the catalog's drop hook: it snapshots the table first (auto_snapshot), then
// deletes its data. The hook also runs once the drop is published, when the table is no longer
// in the schema: there is nothing to snapshot then. A failed snapshot is logged and counted
// (kvnode_snapshot_auto_failures_total) and does not keep the drop, which the cluster agreed
// on, from this node.
func (n *Node) dropTable(id schema.TableID) error {
	s := n.schema.Schema()
	if t, ok := s.TableByID(id); ok {
		n.autoSnapshot(s, t, snapshot.ReasonDropped)
	}
	return n.replica.DropTable(id)
}

// autoSnapshot takes the automatic snapshot of table t of schema s before its data goes for
// reason (with auto_snapshot on). The cluster already agreed on the change, so a snapshot that
// fails is logged at ERROR (and counted) and the data goes without one.
func (n *Node) autoSnapshot(s *schema.Schema, t *schema.Table, reason string) {
	if !n.snapshots.Enabled() {
		return
	}
	if tag, err := n.snapshots.Auto(s, t, reason); err != nil {
		n.log.Error("auto_snapshot: the snapshot before the table's data goes failed; it goes without one",
			"keyspace", t.Keyspace, "table", t.Name, "reason", reason, "err", err)
	} else {
		n.log.Info("auto_snapshot: snapshot taken", "keyspace", t.Keyspace, "table", t.Name, "reason", reason, "tag", tag)
	}
}

// SnapshotTable snapshots table keyspace.table of the node's current schema (every table of
// keyspace when table is empty, of the node when both are) under tag (empty: the time in
// milliseconds) and returns the tag, once the snapshot is durable. reason is
// snapshot.ReasonManual, or snapshot.ReasonTruncated for the automatic snapshot TRUNCATE takes
// on each replica before it deletes the table's data: that one honours auto_snapshot
// (returning "" when it is off) and is named truncated-<ms>-<keyspace>.<table> when tag is
// empty.
func (n *Node) SnapshotTable(ctx context.Context, reason, tag, keyspace, table string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if reason != snapshot.ReasonManual && !n.snapshots.Enabled() {
		return "", nil
	}
	s := n.schema.Schema()
	if reason != snapshot.ReasonManual && tag == "" {
		t, ok := s.Table(keyspace, table)
		if !ok {
			return "", fmt.Errorf("node: snapshot before %s: table %s.%s: %w", reason, keyspace, table, snapshot.ErrNotFound)
		}
		tag, err := n.snapshots.Auto(s, t, reason)
		if err != nil {
			return "", fmt.Errorf("node: %w", err)
		}
		return tag, nil
	}
	man, err := n.snapshots.Take(s, snapshot.Request{Tag: tag, Keyspace: keyspace, Table: table, Reason: reason})
	if err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	return man.Tag, nil
}

// Snapshots returns the node's snapshot manager.
func (n *Node) Snapshots() *snapshot.Manager { return n.snapshots }

// snapshotServer serves the Snapshot admin service.
type snapshotServer struct {
	kvnodepb.UnimplementedSnapshotServer
	n *Node
}

// snapshotStatus is the gRPC status of a snapshot error.
func snapshotStatus(err error) error {
	switch {
	case errors.Is(err, snapshot.ErrBadTag):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, snapshot.ErrExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, snapshot.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, snapshot.ErrNoTarget):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// snapshotInfo converts a listed snapshot.
func (s snapshotServer) snapshotInfo(i snapshot.Info) *kvnodepb.SnapshotInfo {
	pb := &kvnodepb.SnapshotInfo{Tag: i.Tag, Scope: i.Scope, Keyspace: i.Keyspace, Table: i.Manifest.Table, Reason: i.Reason,
		CreatedUnixNanos: i.Created.UnixNano(), Bytes: i.Bytes, TrueBytes: i.TrueBytes,
		Path: filepath.Join(s.n.cfg.DataDir, "snapshots", i.Tag)}
	for _, t := range i.Tables {
		pb.Tables = append(pb.Tables, t.Keyspace+"."+t.Name)
	}
	return pb
}

// Take implements kvnodepb.SnapshotServer.
func (s snapshotServer) Take(ctx context.Context, req *kvnodepb.TakeSnapshotRequest) (*kvnodepb.SnapshotInfo, error) {
	if err := s.n.allowTopologyChange(ctx, "snapshot"); err != nil {
		return nil, err
	}
	if req.GetTable() != "" && req.GetKeyspace() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "table %q needs its keyspace", req.GetTable())
	}
	tag, err := s.n.SnapshotTable(ctx, snapshot.ReasonManual, req.GetTag(), req.GetKeyspace(), req.GetTable())
	if err != nil {
		return nil, snapshotStatus(err)
	}
	info, err := s.n.snapshots.Info(tag)
	if err != nil {
		return nil, snapshotStatus(err)
	}
	return s.snapshotInfo(info), nil
}

// List implements kvnodepb.SnapshotServer.
func (s snapshotServer) List(context.Context, *kvnodepb.ListSnapshotsRequest) (*kvnodepb.ListSnapshotsResponse, error) {
	list, err := s.n.snapshots.List()
	if err != nil {
		return nil, snapshotStatus(err)
	}
	resp := &kvnodepb.ListSnapshotsResponse{}
	for _, i := range list {
		resp.Snapshots = append(resp.Snapshots, s.snapshotInfo(i))
	}
	return resp, nil
}

// Clear implements kvnodepb.SnapshotServer.
func (s snapshotServer) Clear(ctx context.Context, req *kvnodepb.ClearSnapshotsRequest) (*kvnodepb.ClearSnapshotsResponse, error) {
	if err := s.n.allowTopologyChange(ctx, "snapshot"); err != nil {
		return nil, err
	}
	done, err := s.n.snapshots.Clear(req.GetTag())
	if err != nil {
		return nil, snapshotStatus(err)
	}
	return &kvnodepb.ClearSnapshotsResponse{Cleared: done}, nil
}

// Restore implements kvnodepb.SnapshotServer.
func (s snapshotServer) Restore(ctx context.Context, req *kvnodepb.RestoreSnapshotRequest) (*kvnodepb.RestoreSnapshotResponse, error) {
	if err := s.n.allowTopologyChange(ctx, "snapshot"); err != nil {
		return nil, err
	}
	if req.GetTable() != "" && req.GetKeyspace() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "table %q needs its keyspace", req.GetTable())
	}
	done, err := s.n.snapshots.Restore(ctx, s.n.schema.Schema(), req.GetTag(), req.GetKeyspace(), req.GetTable(), restoreWriter{s.n})
	resp := &kvnodepb.RestoreSnapshotResponse{}
	for _, r := range done {
		resp.Tables = append(resp.Tables, &kvnodepb.RestoredTable{Keyspace: r.Keyspace, Table: r.Table, Partitions: r.Partitions, Bytes: r.Bytes})
	}
	if err != nil {
		return nil, snapshotStatus(err)
	}
	return resp, nil
}

// restoreWriter writes restored partitions to every current replica of their token (pending
// ones included), exempt from the rate limiter, at the node's write timeout.
type restoreWriter struct{ n *Node }

func (w restoreWriter) WritePartition(ctx context.Context, t *schema.Table, m *replicapb.Mutation) error {
	ks, ok := w.n.schema.Schema().Keyspace(t.Keyspace)
	if !ok {
		return fmt.Errorf("keyspace %s was dropped during the restore", t.Keyspace)
	}
	ring := w.n.cluster.Ring()
	ids := ring.AppendPending(ring.AppendReplicasFor(nil, m.Token, ks.Replication()), m.Token, ks.Replication())
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, w.n.cfg.Coordinator.WriteTimeout)
			defer cancel()
			resp, err := w.n.trans.Mutate(cctx, coordinator.NodeID(id), &replicapb.MutateRequest{Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_NONE}, Mutation: m})
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("replica %s: %w", id, err)
			case resp.GetStatus() != replicapb.Status_STATUS_OK:
				errs[i] = fmt.Errorf("replica %s: %v: %s", id, resp.GetError().GetCode(), resp.GetError().GetMessage())
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
