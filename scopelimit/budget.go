package scopelimit

import (
	"hash/fnv"

	"github.com/kvnode/kvnode/schema"
)

// Kind says what a Budget belongs to.
type Kind uint8

// The kinds of budget, in the order a request meets them after node admission.
const (
	// KindLevel is a service level's budget: shared by every session of every role (or
	// client address) attached to it, cluster-wide.
	KindLevel Kind = iota + 1
	// KindKeyspace is a keyspace's rate_limit: every request on the keyspace's tables.
	KindKeyspace
)

// String returns the kind as error messages and metrics name it: "service level" or
// "keyspace".
func (k Kind) String() string {
	switch k {
	case KindLevel:
		return "service level"
	case KindKeyspace:
		return "keyspace"
	}
	return "unknown"
}

// Budget is one named budget a request is held by: a service level's or a keyspace's rates,
// cluster-wide. A request's budgets are listed most specific first (its client's level, the
// shared levels up its role graph, its keyspace); Scopes turns them into Decide's chain.
type Budget struct {
	Kind Kind
	// Name is the level's or keyspace's name, as error messages and metrics show it.
	Name string
	// ID is the budget's counter id on every coordinator: BudgetID(Kind, Name).
	ID int64
	// Reads and Writes are the limits in operations per second, cluster-wide; 0 is no limit
	// for that op.
	Reads, Writes uint32
	// Shadow is mode = 'shadow': counted and decided, never rejected (would-rejects are
	// counted and warned about instead).
	Shadow bool
}

// Limit returns the budget's limit for op, 0 for none.
func (b Budget) Limit(op schema.Op) uint32 {
	if op == schema.OpWrite {
		return b.Writes
	}
	return b.Reads
}

// BudgetID returns the counter id of the budget of kind named name, the same on every
// coordinator: FNV-1a of the kind and the name.
func BudgetID(k Kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte{byte(k)})
	h.Write([]byte(name))
	return int64(h.Sum64())
}
