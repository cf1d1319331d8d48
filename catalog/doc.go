// Package catalog keeps the schema the cluster agreed on: it holds the node's copy, agrees on
// every change with the other members by consensus, and collects the tombstones of dropped
// objects once every member has them.
//
// It owns:
//
//   - The Holder (holder.go): the node's current schema, read without locks through an atomic
//     pointer and persisted (schema.bin) before it is published; merges of peers' schemas by
//     last-writer-wins per object; the digest the cluster gossips; the hooks that free a dropped
//     table's data and state (OnDrop); and ApplyDDL, which runs a statement through consensus.
//   - Schema consensus (paxos.go): the Acceptor, which the node serves to its peers and which
//     persists its promises (schema-paxos.bin) before answering, and the proposer that runs
//     the rounds of the node's own DDL.
//   - The tombstone collection (gc.go): Holder.CollectTombstones decides what may be purged
//     when; the node runs it in a background loop.
//
// # Schema consensus
//
// Every schema change is a compare-and-set round of Paxos (CASPaxos, Rystsov 2018) on a register
// per keyspace name, among every known member of the ring. The register holds the keyspace's
// part of the schema (schema.Schema.Restrict). One round:
//
//  1. The proposer picks a ballot above every ballot it has seen and sends Prepare to the
//     members. An acceptor promises the ballot unless it already promised or accepted a higher
//     one, and answers with the value it last accepted (and its ballot).
//  2. With promises from a majority, the proposer takes the value with the highest ballot
//     among them as the keyspace's current state and applies the statement to it. A statement
//     that does not fit (CREATE of an existing table, DROP of a missing one) leaves the state
//     as it is, and the round writes that state back.
//  3. It sends Accept with the new value under the same ballot. An acceptor accepts unless it
//     promised a higher ballot meanwhile. With a majority of accepts the value is chosen; the
//     proposer merges it into its schema, which then spreads by the schema push and pull.
//
// Why two concurrent CREATE TABLE ks.t cannot both succeed: each needs a majority to accept its
// value, under ballots b1 < b2 say. Any two majorities share a member m. If m accepted b1's
// value before promising b2, its promise to b2 carries that value (or a later one, which was
// built on it), and the highest accepted ballot among b2's promises is at least b1's: the b2
// proposer applies its CREATE to a state holding the b1 table and fails with "already
// exists". If m promised b2 first, it refuses b1's Accept, and b1's proposer retries with a
// higher ballot, from a state holding the b2 table. Either way one of them sees the other's
// table. The same holds for every pair of changes to one keyspace: they are linearised.
//
// Liveness needs a majority of the known members to answer: with fewer, DDL fails with an
// error wrapping ErrUnavailable that names the members that did not. Members on the minority
// side of a partition cannot change the schema; the majority side can, and the minority learns
// the changes when the partition heals.
//
// # Tombstones
//
// A drop leaves a tombstone in the schema, so that a node that missed the drop cannot bring the
// object back by merging. A tombstone goes once it is older than Options.TombstoneGrace and
// every member of the ring, down ones included, gossips this node's digest; the purge raises
// the schema's GC horizon, which travels with the schema, so the other nodes drop the same
// tombstones as they merge it.
//
// # What it depends on
//
// The catalog declares what it consumes of the cluster, and the node implements it: Peers (the
// voters, and sending Prepare and Accept to one of them) and Gossip (publishing the schema,
// waiting for agreement, and the digest each member gossips). It imports neither node, cluster
// nor replica; its tests wire holders together in process.
package catalog
