// Package scopelimit holds a budget shared by many coordinators (a service level's or a
// keyspace's rate) to its limit on each coordinator, from decaying counters that every
// coordinator keeps for the whole cluster's load.
//
// # Counting the cluster's load on every coordinator
//
// A scope is one budget: a service level or a keyspace, for reads or for writes, named by the
// caller with a 64-bit id and a 32-bit label. Each coordinator keeps one counter per scope in a
// partitionlimit.Table, the same halving counter as a partition's, with the same admission rule
// (partitionlimit.Admit) and the same onset bound: scopelimit adds no counting or admission
// arithmetic of its own. The counter counts two things:
//
//   - the coordinator's own requests for the scope, when Limiter.Decide judges them; and
//   - every other coordinator's, which Limiter.Drain hands out as coalesced deltas (one per
//     scope) for the caller to send to its peers every propagation interval (20 ms, as the
//     partitions' account propagation), and which a peer adds with Limiter.Learn on its own
//     clock.
//
// So every coordinator's counter for a scope holds the whole cluster's offered load for it,
// less what its peers counted in the last interval and the network delay, and each coordinator
// admits its own requests with probability min(1, L/(x·ln2)) on that count. Over one halving
// period the cluster's admitted rate is Σ_i f_i·V·∫P(x(t))dt/V = L for any split f_i of the
// load: how the requests spread over coordinators does not matter, nor does moving them.
//
// # The error of propagation
//
// A coordinator's count misses the operations its peers counted in the last d seconds (d is
// the propagation interval's average wait, half of it, plus the network delay: about 11 ms at
// 20 ms). At offered rate V, of which a fraction f arrives elsewhere, the count runs f·V·d
// below the cluster's, and over one period the rule admits
//
//	(L/ln2)·ln((2V − fVd)/(V − fVd)) = (L/ln2)·(ln2 + ln(1 − fd/2) − ln(1 − fd)) ≈ L·(1 + f·d/(2·ln2))
//
// that is L·(1 + 0.0079·f) at d = 11 ms: under 1 % over the limit for any number of
// coordinators. Deltas are added on the receiver's clock, so an operation a peer counted just
// before a second boundary arrives after the receiver's halving and counts in full, an excess of
// at most V·d/2 per second in the count, which lowers the admitted rate by the same order: the
// two effects are each under 1 %.
//
// # Coordinators that die, join, and disagree on the time
//
// A coordinator that dies takes with it at most its last interval's deltas (V·f·0.02 of a count
// of V to 2V); what it counted before is in its peers' counters and decays there, so the
// drivers that move its requests to the others find the budget already counted. A coordinator
// that joins starts with empty counters: its first requests are judged under the onset bound
// (at most 2L of its own share in its first second), and the caller fills its counters before
// it serves limited requests by learning a peer's counts (Limiter.Learn with a peer's Peek), so
// a join costs nothing but that first message. Clock skew between coordinators moves each
// counter's halvings to that coordinator's own second boundaries; since the rule admits L over
// any whole halving period whatever its phase, coordinators need not halve together (unlike a
// partition's replicas, which decide the same operation and must agree). A delta is therefore
// counted at the receiver's clock, never at the sender's stamp.
//
// # One draw per scope
//
// A request is judged by a chain of scopes, the most specific first (its client's level, the
// shared levels up its role graph, the keyspace), and stops at the first that rejects it: it is
// counted by the scopes up to and including that one and by none after, so a request rejected
// at its client's level consumes nothing of its organization's. Each scope makes its own draw,
// derived from the request's one random seed by a mixing function (Draw). A single draw shared by
// the chain would not do: a request that passed scope 1 with probability P1 has a draw below
// P1, and passes scope 2 (P2 < P1) with probability P2/P1 rather than P2, so scope 2 admits its
// offered load times min(1, P2/P1) and over-admits by the factor 1/P1.
//
// # Purity
//
// The package never reads the clock (every method takes now), draws no randomness of its own
// (the request's seed is a parameter), starts no goroutines, keeps no package-level state and
// does no I/O. After New and once each scope has been seen, Decide does not allocate.
package scopelimit
