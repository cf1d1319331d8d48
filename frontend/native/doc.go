// Package native is the CQL native protocol (v4) front end of a node: the client port (9042)
// Cassandra and ScyllaDB drivers connect to, as an adapter over the coordinator's domain API
// (coordinator.Statement in, coordinator.Result or a typed error out). It is the sibling of
// frontend/grpcapi and, like it, the only place that knows its wire form; the frames and
// message bodies themselves are package cqlwire's.
//
// It owns:
//
//   - connections: one reader and one writer goroutine each, requests multiplexed by stream id
//     and answered out of order, the writer batching queued frames into one write; limits on
//     connections per node, requests in flight per connection (a connection at its limit is
//     not read: backpressure), frame size, and the time a new connection may take to send
//     STARTUP; before a connection is started (READY or AUTH_SUCCESS), tighter bounds on its
//     frames (64 KiB) and on the connections of one host (16); lz4 and snappy compression as
//     negotiated in STARTUP;
//   - the login (SASL PLAIN), through the node's login guard (frontend/loginguard), which
//     counts, logs and slows down failed logins;
//   - the messages drivers use: OPTIONS, STARTUP, REGISTER, QUERY, PREPARE, EXECUTE, BATCH,
//     with paging, USE (a per-connection keyspace), response warnings, and the node-wide cache
//     of prepared statements that EXECUTE looks ids up in;
//   - events pushed on stream -1 to connections that registered for them: schema changes
//     made on any node (the schema source) and nodes joining, leaving, going up and down (the
//     topology source);
//   - the mapping of the coordinator's typed errors to protocol error codes (errorMessage),
//     including ScyllaDB's rate-limit error for clients that opt in to it;
//   - its metrics, on the node's registry (Server.Collector).
//
// docs/cql-protocol.md describes the behaviour a client sees. Package node wires the server.
package native
