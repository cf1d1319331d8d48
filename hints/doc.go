// Package hints keeps the writes a replica missed and replays them to it once it is up again
// (hinted handoff).
//
// A coordinator keeps, for each replica that missed a write it applied somewhere (the replica
// was down, failed, or did not answer in time), a hint: the write's mutation, stored in a Store
// (its own pebble database, hints/ in the node's data directory) until the replica is up again,
// then replayed to it by a Replayer, exempt from the rate limiter, throttled, a window of
// them in flight at once (one WAN round trip carries many), and deleted once the replica
// acknowledged it and every one before it. The coordinator's shell decides which replicas get a hint
// (shell.HintSink, which Store implements); this package keeps and replays them.
//
// Hints are bounded three ways, as Cassandra's are: no hints are stored for a replica down
// longer than the max hint window (Options.Window; it must be repaired instead), at most
// Options.MaxBytes bytes are kept per replica, and a hint older than its table's
// gc_grace_seconds is dropped rather than replayed (the replica may have purged the tombstones
// that shadow it, and a late write must not bring deleted data back). Hints are written
// without a sync: a crash may lose the last ones, which repair recovers. The hints a
// coordinator decides on a replica's answer (on an internode pipe's reader, which must not wait
// for the disk) reach the Store through the coordinator's bounded hint queue; those a full
// queue drops are counted here too (Store.DroppedHints, reason "queue").
//
// The package consumes the cluster through small interfaces it declares (Membership, Sender,
// Tables); the node wires them to its membership, internode transport and schema.
package hints
