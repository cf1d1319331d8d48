// Package fault injects faults into a cluster of real kvnode processes and checks that no
// acknowledged write is lost, no deleted row comes back and no QUORUM read is stale.
//
// # Topology
//
// Each `kvnode serve` process (started by test/proc) runs in a network namespace of its own,
// kvfault-PID-TAG-nI, at 10.77.0.1I/24 on its end of a veth pair; the other end is a port of a
// bridge in the switch namespace kvfault-PID-TAG-sw, which holds 10.77.0.1. These addresses
// exist only inside those namespaces: nothing routes to or from any other namespace, so no
// packet of a test leaves them. Every node listens on the same fixed ports (CQL 9042, gRPC 9043,
// internode 7000, gossip 7946, metrics 9180) in its own namespace. The test process stays in its
// own namespace and reaches the nodes through the switch: its sockets (gocql's, test/proc's
// gRPC client and metrics scrapes, the delay proxy's) are created on an OS thread that has
// entered the switch namespace with setns(2), and a socket belongs to the namespace it was made
// in for its whole life.
//
// # Nemeses
//
// Each Nemesis has Start and an idempotent Heal, and RunScenario registers every heal with
// t.Cleanup: partition (nft rules in one node's namespace drop its traffic with the other
// nodes; clients still reach it), bridge (two nodes cut from each other, both reaching the
// third), pause (SIGSTOP, SIGCONT), kill -9 and restart on the same data directory, clock offset
// (a restart with serve's hidden --testing-clock-offset), bandwidth (tc tbf on both ends of a
// node's veth pair), packet loss (nft numgen: this kernel has no netem), TCP delay (a proxy in
// the switch namespace that every internode connection goes through, by nft DNAT rules set
// before the nodes start), gossip delay (a restart with serve's hidden --testing-gossip-delay, a
// memberlist Transport wrapper), full disk (a tmpfs data directory filled by a file) and
// corruption of the newest write-ahead log or sstable of a killed node before its restart.
//
// # Data centers
//
// Options.Places puts each node in a data center and rack (serve's --dc and --rack), and
// Options.WANDelay delays the internode links between data centers in the proxy, and
// Options.WANGossipDelay the gossip sent across them (serve's hidden --testing-gossip-delay-to
// limits the gossip delay to the remote nodes' addresses). DCLink drops a
// share of the packets between two data centers, or all (a cut): nft rules in each node's
// namespace match the other side's addresses, and, for connections through the proxy (DNAT to
// the switch), conntrack's original destination on the side that opened them. DCDelay changes
// the WAN delay. A Local kind runs through the coordinators of one data center on tables of its
// own, so that its reads at LOCAL_* levels are judged against its own writes alone.
// TestDataCenterCut and TestModelAcrossDataCenterCut (under -fault.long) cut two data centers
// of two nodes each while both run their workload at LOCAL_* levels;
// TestDataCenterFailureDetection measures the wan profile's failure detection across a blip
// and a long cut.
//
// # Workload and checker
//
// The workload runs Kinds of operations from several workers, each operation through a random
// coordinator (one gocql session per node, each with that node as its only host): unique
// inserts, last-write-wins registers (UPDATE ... USING TIMESTAMP, with timestamps that grow in
// the order the workload makes them), deletes and expiring registers (half their writes USING
// TTL 2: an expired value, or an older one from under it, must never be read), non-frozen
// collections (a set, a map and a list per row: elements added without reading, taken out of
// the set and the map, checked element by element and the list in order; collections.go) and
// counters (non-negative increments; a read lies between the sum of the increments acknowledged
// before it began and the sum of all begun before it ended), all at QUORUM. After each fault heals (the
// workload still running) and once more at the end, every kind's rows are read back at ALL and
// at QUORUM through every node. Each kind's Check counts
// rows lost (an acknowledged write missing after the heal), resurrected (a row read after its
// delete was acknowledged) and stale (a read older than a write acknowledged before it began),
// and the report gives each coordinator's share of failed operations during each fault. A new
// data feature (TTL, collections, counters, lightweight transactions) adds a Kind.
//
// Under -fault.long two kinds of lightweight transactions join them (lwt.go): CASRegisters,
// SERIAL reads and CAS operations on a few registers whose histories porcupine checks for
// linearizability, and Unique, 16 attempts of INSERT ... IF NOT EXISTS raced on each key
// (at most one applied; the SERIAL read-back shows exactly one attempt's row, the applied one
// or one that failed).
//
// The same kinds run at ONE while the checker still judges them as QUORUM operations: that is
// the bug of a coordinator acknowledging QUORUM after one replica, and the tests check that
// the checker reports it under a partition and kill -9, while the QUORUM kinds stay clean.
//
// # Running
//
// `go test ./test/fault` runs the short form (a partition and a kill -9 on one cluster, about
// 30 s). `go test ./test/fault -run TestFaults -fault.long -v -timeout 30m` runs every nemesis
// on a cluster of its own for longer (docs/operations.md, "Fault tests"); a damaged log or
// sstable makes the node refuse to start, and since the scenario cannot bring it back yet, those
// two log what happened and skip with the reason. TestNetworkNemeses and TestDelayProxy check the network nemeses on the
// namespaces alone, with echo servers in place of kvnode. The tests need root
// (namespaces, nft, tc, mounts) and install Debian's nftables when nft is missing; they skip
// with the reason where they cannot. Everything is named with the prefix kvfault-PID-: a run
// removes the namespaces and tmpfs mounts that a crashed earlier run left behind.
package fault
