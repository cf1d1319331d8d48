// Package replica is the replica side of kvnode: a node's storage (Store, on
// pebble) and the replica RPC handler (Service), which applies mutations and
// serves reads after consulting the per-partition rate limiter.
//
// # Storage
//
// One pebble database per node holds every table. Keys sort by (table id,
// token, partition key, clustering key) under an order-preserving encoding
// (documented in key.go), so a partition is one contiguous key range and its
// rows come out in clustering order. Each cell, row marker, row tombstone and
// partition tombstone is its own key whose value carries the write
// timestamp. Every write is a pebble Merge, and a merge operator reconciles
// the versions of a key with the last-write-wins rule of package cell, so a
// write never reads and replicas converge whatever order writes arrive in.
// A mutation is one pebble batch (atomic for its partition) committed with
// pebble.Sync unless Options.NoSync: acknowledged writes survive a crash.
//
// Deletes are tombstones (Cassandra's model): a cell tombstone (a DELETE of
// a column, or a write of null), a row tombstone, a range tombstone (a
// DELETE of a clustering prefix or range; stored under its partition, see
// rangetomb.go) and a partition tombstone each shadow what was written at or
// before their timestamp. Reads apply them and return, alongside live data,
// the tombstones a coordinator needs to reconcile replicas.
//
// Reads are paged: a read stops after its limit of live rows or once its
// answer passes the request's page size, and says after which row, so that
// the coordinator can continue from there. A read that scans more tombstones
// than Options.TombstoneFailureThreshold (Cassandra's
// tombstone_failure_threshold, 100,000; counted over all the pages of a
// read) fails with ErrTooManyTombstones rather than exhaust memory. A row exists while it has a live row marker or a
// live cell; INSERT writes a marker and UPDATE does not, so a row created by
// UPDATE disappears when its last cell is deleted.
//
// Tombstones are purged (purge.go) once older than their table's
// gc_grace_seconds and than the last repair of all the table's ranges, with
// the data they shadow; data shadowed by tombstones still kept is dropped
// by the same pass.
//
// # Storage failures and free space
//
// The store never serves with broken storage (failure.go). A write or sync the disk refuses
// (EIO, ENOSPC on the log), a corrupt file found by a read or a compaction (pebble's
// DataCorruption event), a flush or compaction that meets EIO or corruption, and pebble's own
// fatal errors (its Logger's Fatalf, which must not return) fail the store: it records the first
// failure and logs it once at ERROR, answers every later call with it (ErrStorageFailed), tells
// Options.OnFailure (the node's disk failure policy, Options.DiskFailurePolicy: stop or die),
// and never closes pebble afterwards. Fatalf blocks its goroutine for good; it never panics, and
// a panic that carries a storage failure in a replica call is handed to the policy too, so no
// recovery above takes it for one request's failure.
//
// Before a disk fills, the store watches its free space (diskspace.go): every
// Options.DiskCheckInterval, when pebble reports low space, and at once when a write meets
// ENOSPC (vfs.OnDiskFull). Under the reserve (the smaller of Options.MinFreeSpace and
// MinFreeSpacePercent of the filesystem) it refuses data writes (ErrLowDiskSpace, naming the
// directory and the free space) but still drops tables, deletes, purges and compacts; under half
// of it the batchlog refuses entries too (and the node its hints: ReserveError). It lets writes
// in again by itself once free space is back above the reserve and a tenth.
//
// A write-ahead log pebble finds corrupt at Open (corruptlog.go: damage followed by data synced
// after it) makes Open fail with a *CorruptLogError naming the log and the offset, unless
// Options.StartDespiteCorruptLog: the log is then moved into the quarantine directory and the
// store is marked unrepaired (Unrepaired, persisted) until SetRepaired.
//
// # The handler
//
// Service's methods are the node's internode handlers of the replica's
// requests, called in process too (through the same internode.Mux) by a
// coordinator that is itself a replica. Each request carries a limiter
// mode: NONE (exempt), ACCOUNT_ONLY, or ACCOUNT_AND_ENFORCE with the
// coordinator's draw. The service counts the operation in a
// partitionlimit.Table keyed by (token, label), where a label interns (table
// id, op), and rejects with STATUS_RATE_LIMITED when the table's Apply (the
// pure per-mode decision test/sim drives too) says so, before touching
// storage. Requests that are malformed or do not
// match the table get STATUS_ERROR with a message naming what was wrong, and
// change nothing.
//
// # The batchlog
//
// The store also holds the node's batchlog (batchlog.go): LOGGED batches a
// coordinator stored on this node (StoreBatch, synced) before applying them,
// under table id 0, a key space no table can reach. Their coordinator removes
// them once applied (RemoveBatch); ReplayBatchlog re-applies, through the
// node's coordinator, the entries older than the replay age and removes them.
//
// # Observability
//
// Service.Collector and Store.Collector export the node's limiter, replica
// request and storage metrics to Prometheus (docs/operations.md lists them).
// Per operation the service only adds to atomic counters it already holds: the
// (table id, op) interning that gives the limiter its label also holds the
// pair's counters, so a rejection costs one atomic add. The collectors turn
// them into metrics at scrape time, along with the gauges that need a scan
// (tracked partitions) and pebble's metrics.
//
// Operations whose counter ends above twice the limit, the only ones the
// limiter can reject, also update the pair's hot set (one in HotSample of
// them, weighted accordingly): the HotK partitions with the largest counters,
// with their rejections and keys (see hotSet).
// TopPartitions lists them; a node merges every node's list for
// `kvnode toppartitions`.
package replica
