// Package node wires one kvnode node together and owns its life: Start opens and locks the data
// directory, storage (replica.Store on pebble), the limiter table, the replica service, cluster
// membership (cluster), the coordinator's shell (coordinator/shell), the gRPC server carrying the
// client API front end (frontend/grpcapi), the internode Replica and SchemaPaxos services, and
// the Prometheus endpoint; Shutdown(ctx) stops them in the reverse order, draining in-flight
// requests until ctx ends.
//
// It owns:
//
//   - Config (config.go): every knob of a node, with YAML tags, EnsureDefaults and Validate; the
//     knobs that only tests may turn live apart in Config.Testing.
//   - The internode transport (transport.go): gRPC connections to peers at the addresses gossip
//     publishes, with the message limits derived from Config.MaxMutationSize, and the local
//     replica served in process.
//   - The schema holder (schema.go) and schema consensus (paxos.go, ddl.go): DDL is agreed per
//     keyspace by CASPaxos among the cluster's members before any node's schema holds it, then
//     pushed and pulled by the cluster package; DROP deletes the table's data on every node.
//   - The coordinator and cluster metrics (metrics.go) on the node's own registry, and the
//     cluster-wide TopPartitions gathering (top.go) that the gRPC front end serves.
//   - The data directory lock (lock.go): one node process per directory.
//   - The wiring of hinted handoff and repair: the hint store (package hints) in hints/ of the
//     data directory as the shell's HintSink, its replayer over the transport (hints.go); the
//     node as repair.Host, and the Repair admin service over package repair (repair.go).
//
// Its background loops (batchlog and hint replay, tombstone purge, reloads, the authentication
// setup) run on internal/loop.
//
// It may import every package below it (frontend/*, coordinator, coordinator/shell, replica,
// cluster, hints, repair, partitionlimit, schema, cql, partitioner, cell, proto/replicapb,
// internal/*) and is imported only by cmd/kvnode and by test and tool support
// (node/localcluster, tool/demo, benchmarks). It knows no client wire format itself: the front ends do.
package node
