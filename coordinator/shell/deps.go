package shell

import (
	"context"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The shell's view of the rest of the node. The coordinator declares what it consumes and never
// imports the replica or cluster packages; package node adapts them to these interfaces.

// Ring tells the shell who replicates a token and who is live.
type Ring interface {
	// AppendReplicas appends to dst the distinct nodes replicating token under placement rf,
	// in ring order (fewer if the ring has fewer nodes), and returns the extended slice.
	AppendReplicas(dst []coordinator.NodeID, token int64, rf schema.Replication) []coordinator.NodeID
	// IsLive reports whether the failure detector currently considers id up.
	IsLive(id coordinator.NodeID) bool
	// DataCenter returns the data center of node id ("" when the ring does not know it).
	DataCenter(id coordinator.NodeID) string
}

// Transport sends replica requests. A request addressed to the local node must be served in
// process (no network hop), with the same semantics as a remote one.
type Transport interface {
	Mutate(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest) (*replicapb.MutateResponse, error)
	Read(ctx context.Context, to coordinator.NodeID, req *replicapb.ReadRequest) (*replicapb.ReadResponse, error)
}

// AsyncMutator is what a Transport may also do: send a mutation to a replica without a goroutine
// waiting for its answer. MutateAsync reports false, having sent nothing, when it cannot (the
// local node, a peer it reaches only by Mutate): the executor then calls Mutate. Otherwise done
// gets the answer or the error exactly once (ctx's error once ctx ends first), possibly before
// MutateAsync returns, and must not block. A Transport without it is called by Mutate.
type AsyncMutator interface {
	MutateAsync(ctx context.Context, to coordinator.NodeID, req *replicapb.MutateRequest, done func(*replicapb.MutateResponse, error)) bool
}

// LocalLimiter accounts and decides on the local node's counters without touching storage: the
// first step when the coordinator is itself a replica of the token (docs/architecture.md, the limiter). A table without a
// limit for op is admitted without being counted.
type LocalLimiter interface {
	Check(id schema.TableID, token int64, op coordinator.Op, draw float64, now time.Time) (partitionlimit.Decision, error)
}

// SchemaManager owns the node's schema.
type SchemaManager interface {
	// Schema returns the current schema (an immutable value; never nil).
	Schema() *schema.Schema
	// ApplyDDL applies a schema statement (CREATE/DROP KEYSPACE, CREATE/ALTER/DROP TABLE) cluster
	// wide: validated and applied locally, persisted, pushed to live peers, then it waits for schema
	// agreement. changed is false when IF [NOT] EXISTS made the statement a no-op. warnings name the
	// nodes that had not agreed when the bounded wait ended. A statement that does not fit the
	// schema is an *InvalidError (errors wrapping schema.ErrUnknownKeyspace, schema.ErrUnknownTable
	// or schema.ErrExists are taken as invalid too); other errors are internal unless they carry
	// their own gRPC status.
	ApplyDDL(ctx context.Context, stmt cql.Statement, keyspace string) (changed bool, warnings []string, err error)
}

// ClusterDescriber renders DESCRIBE CLUSTER: the cluster name, partitioner, and each member's id,
// address, state and token count.
type ClusterDescriber interface {
	DescribeCluster() string
}
