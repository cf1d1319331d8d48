// Package node wires one kvnode node together and owns its life: Start opens and locks the data
// directory, storage (replica.Store on pebble), the limiter table, the replica service, cluster
// membership (cluster), the coordinator's shell (coordinator/shell), the gRPC server carrying the
// client API front end (frontend/grpcapi), the internode listener serving every exchange between
// nodes (package internode), and the Prometheus endpoint; Shutdown(ctx) stops them in the
// reverse order, draining in-flight requests until ctx ends.
//
// It owns:
//
//   - Config (config.go): every knob of a node, grouped by the package that owns it (cluster,
//     replica, coordinator/shell, frontend/native, ...: each group is that package's Options,
//     with its defaults and checks), with YAML tags, EnsureDefaults and Validate that delegate to
//     the groups; the knobs that only tests may turn live apart in Config.Testing.
//   - The wiring of the internode transport (transport.go, listeners.go): one internode.Mux with
//     a handler for every request kind the node answers (handleInternode), and one
//     internode.Sender reaching peers at the addresses gossip publishes, with the message
//     limits derived from Config.Coordinator.MaxMutationSize, and the node itself in process.
//     No other part of the node dials a peer.
//   - The adapter of the catalog (catalog.go): the agreed schema and its consensus live in
//     package catalog; the node opens it, gives it the cluster (the voters of schema consensus
//     and the Sender to reach them, the schema's gossip), the drop hooks that delete a dropped
//     table's data and state on every node, and runs its tombstone collection loop.
//   - The coordinator and cluster metrics (metrics.go) on the node's own registry, and the
//     cluster-wide gathering of hot partitions (top.go) that the gRPC TopPartitions and
//     system.top_partitions serve, merged by coordinator.MergeTopPartitions (the shell gathers
//     system.top_clients itself; scopes.go serves its top_clients kind).
//   - The data directory lock (lock.go): one node process per directory.
//   - The wiring of hinted handoff and repair: the hint store (package hints) in hints/ of the
//     data directory as the shell's HintSink, its replayer over the transport (hints.go); the
//     node as repair.Host, and the Repair admin service over package repair (repair.go).
//
// Its background loops (batchlog and hint replay, tombstone purge, reloads, the authentication
// setup, and the availability loop that tells peers when the store refuses writes for a full
// disk: diskfull.go) run on internal/loop.
//
// It may import every package below it (frontend/*, coordinator, coordinator/shell, catalog,
// hints, repair, replica, cluster, internode, partitionlimit, schema, cql, partitioner, cell,
// proto/replicapb, internal/*) and is imported only by cmd/kvnode and by test and tool support
// (node/localcluster, tool/demo, benchmarks). It knows no client wire format itself: the front ends do.
package node
