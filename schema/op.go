package schema

import "fmt"

// Op is the kind of a user operation: a read or a write. The rate limiter keeps separate counters
// and limits per op (a table's per_partition_rate_limit has one per op). The zero Op is invalid.
// It is the one op type of the domain: the coordinator, the replica and the front ends use it, and
// only the wire edges (the client API, the internode protocol) convert it to their enums.
type Op uint8

// The ops.
const (
	OpRead Op = iota + 1
	OpWrite
)

// String returns "read" or "write".
func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Valid reports whether o is OpRead or OpWrite.
func (o Op) Valid() bool { return o == OpRead || o == OpWrite }

// Limit returns t's per-partition limit for op in operations per second, 0 for none (and for an
// invalid op).
func (t *Table) Limit(op Op) uint32 {
	switch op {
	case OpRead:
		return t.RateLimit.MaxReadsPerSecond
	case OpWrite:
		return t.RateLimit.MaxWritesPerSecond
	}
	return 0
}
