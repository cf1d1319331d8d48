// Package repair brings a node's replicas of each token range into agreement (anti-entropy
// repair), and purges the tombstones a complete repair lets go.
//
// For each table asked for and each token range the node replicates (a vnode range of the
// ring, (previous token, token], with the replicas of its token), a Service:
//
//  1. asks every replica for the hashes of the range's leaves (Leaves equal token
//     sub-ranges; replica.Store.RangeHashes);
//  2. for the leaves whose hashes differ, asks every replica for the hash of each partition;
//  3. for each partition whose hashes differ, fetches each version from a replica holding it
//     and writes it to the replicas whose version differs (a Mutate exempt from the limiter),
//     where last-write-wins merges it, tombstones included.
//
// Only differing partitions travel. Ranges are repaired one after another and their partitions
// one at a time, which bounds what repair takes from client traffic; the writes share the
// node's stream throttle. A range with a replica down or failing fails (the others go on), with
// a *RangeError naming it; once every range of a table was repaired, the Service records the
// repair's start time for the table in the local store, which lets its tombstones older than
// gc_grace_seconds and than that time be purged (replica/purge.go): at once, and by the
// periodic purge the Service runs once started.
//
// The package reaches its node through Host, which it declares: the ring, the replicas'
// anti-entropy services, the internode write, the stream throttle and the local store. The
// node adapts the client-facing admin RPC (kvnode repair) to Service.Repair.
package repair
