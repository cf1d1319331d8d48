// Package snapshot keeps a node's snapshots: point-in-time copies of its tables, taken on
// demand (`kvnode snapshot`) and before DROP TABLE, DROP KEYSPACE and TRUNCATE (auto_snapshot),
// listed, cleared and restored.
//
// A snapshot is a directory of the node's data directory, snapshots/<tag>/, holding
//
//	data/           a pebble checkpoint of the node's store (replica.Store.Checkpoint): its
//	                sstables are hard links to the store's, so taking a snapshot copies no
//	                data and costs a flush; the space it takes grows only as compactions
//	                replace the store's files
//	manifest.json   what it holds (Manifest): tag, time, node, scope, reason, and for each
//	                table its id then and the CQL that recreates it and its keyspace, as
//	                DESCRIBE prints it
//
// A snapshot is written under a hidden temporary name and renamed into place once complete, so
// a listed snapshot is always whole; a crash leaves only a temporary directory, removed at the
// next start.
//
// Restore (Manager.Restore) reads a snapshot's tables from its checkpoint, opened read-only,
// and writes every partition, as the mutation that recreates it (values, tombstones and their
// timestamps), to the partition's current replicas through a Writer the node implements: into
// the tables of the same names, which the operator created first from the manifest's CQL (their
// ids differ from the snapshot's). Because the mutations merge by last-write-wins like any
// write, a restore never overwrites newer data, can be run again, and works on a cluster of any
// size and token layout: every node's snapshot can be restored through any node.
package snapshot
