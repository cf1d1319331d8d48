// Package bench is kvnode bench, a load generator over the CQL native protocol (through gocql,
// the driver applications use) or kvnode's gRPC API (Config.Protocol): kvnode's own tool for
// showing a hot partition held to its per_partition_rate_limit while the cold ones keep going.
//
// Run is the command (flags in, summary out); Execute runs a Config in process and returns the
// Summary, for tests and programs that read the numbers.
//
// # Workload
//
// The target table's partition key must be one text or bigint column. Execute learns the table
// with DESCRIBE TABLE. Each operation goes to the single hot partition (key 'hot', or 0 for a
// bigint key) with probability Config.Hot, else to one of Config.Partitions cold partitions
// ('cold-<i>', or i+1) chosen uniformly. It is a write with probability Config.Writes: an INSERT
// of every column, clustering columns taking one of RowsPerPartition row keys and the other
// columns random values of their types; else a read of the whole partition (SELECT * ... WHERE
// key = ...). Over the native protocol these are two prepared statements with bound values
// (gocql prepares them once per node); over gRPC, CQL text with literals.
//
// All randomness is seeded: worker i draws from math/rand/v2's PCG seeded with (Config.Seed, i),
// so a closed-loop worker's sequence of operations is the same on every run.
//
// # Load
//
// Closed loop (Rate 0): Concurrency workers each issue the next operation as soon as the
// previous one returns; latency is the operation's own time. Open loop (Rate > 0): a scheduler
// sets operation n's start at n/Rate seconds and the workers take operations in order; an
// operation that waits for a free worker waits in a bounded queue (MaxQueue, ErrorDropped when
// full) and its latency counts from its intended start, so a slow server cannot hide its
// slowness by slowing the load down (no coordinated omission).
//
// Coordinators, native protocol: one gocql session whose contact points are the addresses and
// which discovers the other nodes; TokenAware (the default, what drivers do) is gocql's
// TokenAwareHostPolicy over RoundRobinHostPolicy, RoundRobin is RoundRobinHostPolicy, Fixed
// sends everything to the first address with host discovery off. The driver never retries: an
// offered operation is one request. gRPC: one client per address; RoundRobin rotates every
// operation over the addresses, Fixed sends everything to the first.
//
// # Outcomes
//
// Success is accepted; a rate-limit rejection (*gocql.RequestErrRateLimitReached, or
// *client.RateLimitError over gRPC) is rejected, by coordinator or by replicas; any
// other error counts under its kind in Summary.Errors. Latency percentiles come from a
// log-linear histogram (within 0.8%), not from kept samples. When Duration ends, operations in
// flight get DrainTimeout to finish and are then cancelled.
package bench
