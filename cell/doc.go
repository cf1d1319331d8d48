// Package cell holds kvnode's last-write-wins rule: how two versions of a
// cell, a row or a deletion reconcile. Replica storage uses it to merge the
// versions it holds, and the coordinator uses it to reconcile the answers of
// several replicas and to work out which of them need repair, so both agree
// by construction. The package is pure: no clock, no I/O, no project imports.
//
// The rules are Cassandra's:
//
//   - A cell with the higher write timestamp wins.
//   - On equal timestamps a tombstone wins over a value, and between two
//     values the bytewise greater value wins, so every replica picks the same
//     winner whatever order the versions arrive in.
//   - Expiring cells (written with a TTL) carry their expiry, an absolute
//     time in seconds. At equal timestamps a tombstone or an expiring cell
//     beats a live one, a tombstone beats an expiring cell, and of two
//     expiring cells the later expiry wins (Cassandra 4.1's
//     Cells.reconcile). The rule does not read the current time, so every
//     replica picks the same winner whenever it merges; only liveness
//     (Cell.Live, Row.Live) takes now. An expired cell thus beats every
//     older version, as a tombstone at its timestamp would.
//   - A row or partition deletion at timestamp D shadows every cell and row
//     marker written at a timestamp ≤ D.
//   - A row exists while it has a live row marker (written by INSERT, with
//     the INSERT's TTL) or a live cell. UPDATE writes no marker, so a row created by UPDATE vanishes
//     when its last cell is deleted; a row created by INSERT does not.
//   - A non-frozen collection column is a cell per element (Column.Path),
//     each reconciled by itself, and a collection tombstone
//     (ColumnDeletion) that shadows the column's elements written at or
//     before it, as Cassandra's complex column data.
//   - A counter cell (Cell.Counter) holds shards, one per replica that led
//     updates: (counter id, logical clock, total). Two versions merge by
//     keeping the higher clock of each shard, and a read sums the shards
//     (MergeCounters, SumShards). A deletion wins over live shards whatever
//     their timestamps, as in Cassandra.
//
// Timestamps are microseconds since the Unix epoch, assigned by the
// coordinator. [NoTimestamp] marks an absent marker or deletion.
//
// It imports nothing of kvnode (the standard library only), so storage and the coordinator can both
// depend on it.
package cell
