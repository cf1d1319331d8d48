// Package grpcapi is the gRPC front end of a node: the client API (kvnodepb.KVNode) as an adapter
// over the coordinator's domain API. It owns everything about that API's wire form and nothing
// else:
//
//   - the translation of kvnodepb requests into coordinator.Statement and of coordinator.Result
//     into kvnodepb responses (typed values decoded from the canonical bytes of result rows);
//   - the mapping of the coordinator's typed errors to gRPC statuses with details
//     (kvnodepb.RateLimitDetail with google.rpc.RetryInfo, UnavailableDetail, TimeoutDetail,
//     FailureDetail), each carrying every field of its error (ErrorStatus);
//   - the TopPartitions RPC: validating the request and converting the cluster's hot partitions
//     (gathered by the node behind the small TopSource interface, merged by
//     coordinator.MergeTopPartitions) to kvnodepb;
//   - the check that a result fits the node's message limit.
//
// It may import coordinator, schema, the generated kvnodepb and gRPC. Nothing below the front
// ends imports kvnodepb: coordinator, replica, cluster and the leaf packages speak domain types
// (schema.Op, coordinator.Consistency, coordinator.Result and the typed errors). The native
// protocol front end is this package's sibling under frontend/; package node wires both.
package grpcapi
