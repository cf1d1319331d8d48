// Package cluster is a kvnode node's view of its cluster: who the members are, which of them are up,
// who owns which tokens, and whether they agree on the schema.
//
// Membership and failure detection use hashicorp/memberlist. Each node has a [NodeID], generated once
// and persisted in its data directory; it is the node's memberlist name, and the node's vnode tokens
// are derived from it ([NodeTokens]), so no token lists are gossiped. A node's metadata (id, RPC
// address, schema digest, num_tokens, state) travels in memberlist's node metadata, which memberlist caps at
// 512 bytes ([MaxMetaSize]).
//
// The [Ring] is an immutable value rebuilt and swapped atomically when the set of members or their
// states change. Liveness is kept apart from ownership: a down node keeps its ranges, known peers are
// persisted across restarts. Ownership changes only through a node's own state transitions
// ([NodeState]: a joining node's future ranges are pending until it sets itself normal, a leaving
// node owns its ranges until it is left; [Ring.AppendPending], [Transfers]) and through
// [Cluster.RemoveNode]. Removals never travel by gossip alone: the removing node announces them
// over the internode port ([RemovalPeers], mutually authenticated when TLS is on), and a node asks
// each peer it sees come up for the removals it knows, so that a node that was down catches up.
// Gossip still carries removals, but only as hints: a node receiving one asks the claimed sender
// over the internode port and applies only what that peer confirms. A confirmed removal of a node
// still seen live here applies once it is seen down.
//
// A member that answers gossip but cannot take writes (a full disk, failed storage) says so in
// its push/pull state ([Cluster.SetUnavailable], pushed to every peer at once): its peers count
// it down ([Cluster.IsLive], [Member].Live) while memberlist keeps it alive and in the ring.
//
// Schema agreement: the cluster does not know the schema's structure; it consumes a [SchemaStore]
// (digest, snapshot, commutative merge). A local DDL is announced with [Cluster.NotifySchemaChanged],
// which pushes the full snapshot to every live node over memberlist's reliable (TCP) messages. A node
// whose gossiped digest differs from ours is sent a sync request carrying our snapshot and answers with
// its own, and memberlist's periodic push/pull carries the snapshot too (anti-entropy), so a node that
// was down catches up when it rejoins. [Cluster.AwaitSchemaAgreement] waits until every live node
// gossips the local digest.
//
// Concurrency: memberlist callbacks never block; they record what happened and wake one worker
// goroutine, which merges snapshots, publishes the digest, and sends messages (each send on its own
// goroutine). A join loop goroutine retries seeds and known peers. Close stops all of them.
package cluster
