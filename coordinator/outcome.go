package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Outcome is how a request ended: one of Success, RateLimited, Unavailable, Timeout or Failed.
// Tell them apart with a type switch; Success holds a slice, so outcomes must not be compared
// with ==.
type Outcome interface {
	// Err returns the error to give the client, naming keyspace and table where the error
	// mentions them, or nil for Success.
	Err(keyspace, table string) error
	outcome()
}

// Success: the consistency level was reached.
type Success struct {
	Op Op
	// Acks is how many replicas succeeded when the request finished (the required number;
	// later answers are not counted).
	Acks int
	// Responses are, for a read, the OK responses in arrival order, each with its replica and
	// payload. The shell reconciles them (last-write-wins per cell) and sends read repairs to
	// the replicas that returned stale data. Nil for a write.
	Responses []Response
	// WouldReject is set when the table's limit is in shadow mode (schema.Shadow) and the
	// limiter decided against the operation (the coordinator's local check, or a replica
	// that counted the operation in account-and-enforce mode and answered before the
	// consistency level was reached): enforce mode would have rejected it. Limit is then
	// Params.Limit. Warning words it for the client.
	WouldReject bool
	Limit       uint32
}

// Warning returns, for a Success the limiter would have rejected in enforce mode (WouldReject),
// the warning the client gets, naming the table, the op and the limit; "" otherwise.
func (o Success) Warning(keyspace, table string) string {
	if !o.WouldReject {
		return ""
	}
	return fmt.Sprintf("per_partition_rate_limit in shadow mode: this %s on %s.%s would have been rejected (limit %d %ss per second per partition); it was not, since the limit is not enforced",
		o.Op, keyspace, table, o.Limit, o.Op)
}

// RateLimited: the partition's rate limit rejected the operation.
type RateLimited struct {
	Op         Op
	RejectedBy Rejecter
	// Limit is Params.Limit.
	Limit uint32
	// Count is the rejecting counter after the increment: the coordinator's, or the largest among
	// the rejecting replicas.
	Count uint32
	// RetryAfter is the retry hint: the coordinator's, or the largest among the rejecting
	// replicas, since the operation needs the consistency level's worth of them to admit it.
	RetryAfter time.Duration
	// MayBeApplied is set for a write rejected by replicas when some contacted replica did not
	// reject it: replicas decide on their own counters (which disagree under clock skew), and one
	// that admitted the write stored it although the consistency level was not reached.
	MayBeApplied bool
}

// Unavailable: fewer replicas were live than the consistency level requires; nothing was sent.
type Unavailable struct {
	Consistency    Consistency
	Live, Required int
	// InDC says one data center had too few live replicas for EACH_QUORUM: DC is that data
	// center as the request numbers them (Replica.DC), and Live and Required are its own, as
	// Cassandra reports them. DataCenter is its name, which the driver sets (the core knows
	// only numbers) for the error to name it.
	InDC       bool
	DC         uint8
	DataCenter string
}

// Timeout: the deadline passed before the consistency level was reached. Received counts the
// replicas that succeeded (acks for a write, responses for a read).
type Timeout struct {
	Op                 Op
	Consistency        Consistency
	Received, Required int
}

// Failed: replica failures, possibly together with rate-limit rejections too few to decide on
// their own, made the consistency level unreachable.
type Failed struct {
	Op                 Op
	Consistency        Consistency
	Received, Required int
	// Failures is how many replicas failed, Rejected how many rejected; Cause is the first
	// failure's error.
	Failures, Rejected int
	Cause              error
}

func (Success) outcome()     {}
func (RateLimited) outcome() {}
func (Unavailable) outcome() {}
func (Timeout) outcome()     {}
func (Failed) outcome()      {}

// Err returns nil.
func (Success) Err(keyspace, table string) error { return nil }

// Err returns a *RateLimitError.
func (o RateLimited) Err(keyspace, table string) error {
	return &RateLimitError{
		Keyspace:     keyspace,
		Table:        table,
		Op:           o.Op,
		RejectedBy:   o.RejectedBy,
		Limit:        o.Limit,
		Count:        o.Count,
		RetryAfter:   o.RetryAfter,
		MayBeApplied: o.MayBeApplied,
	}
}

// Err returns an *UnavailableError.
func (o Unavailable) Err(keyspace, table string) error {
	return &UnavailableError{Consistency: o.Consistency, Live: o.Live, Required: o.Required, DataCenter: o.DataCenter}
}

// Err returns a *TimeoutError.
func (o Timeout) Err(keyspace, table string) error {
	return &TimeoutError{Op: o.Op, Consistency: o.Consistency, Received: o.Received, Required: o.Required}
}

// Err returns a *FailureError.
func (o Failed) Err(keyspace, table string) error {
	return &FailureError{
		Op:          o.Op,
		Consistency: o.Consistency,
		Received:    o.Received,
		Required:    o.Required,
		Failures:    o.Failures,
		Rejected:    o.Rejected,
		Err:         o.Cause,
	}
}

// Rejecter says who rejected a rate-limited operation.
type Rejecter uint8

// The rejecters.
const (
	// RejectedByCoordinator: the coordinator rejected on its own counter before contacting any
	// replica: as a replica of the partition, or on the copy of the replicas' counter it
	// learned from their earlier rejections (Params.Learned).
	RejectedByCoordinator Rejecter = iota + 1
	// RejectedByReplicas: the replicas' rejections made the consistency level unreachable.
	RejectedByReplicas
)

// String returns "coordinator" or "replicas".
func (r Rejecter) String() string {
	switch r {
	case RejectedByCoordinator:
		return "coordinator"
	case RejectedByReplicas:
		return "replicas"
	}
	return fmt.Sprintf("Rejecter(%d)", uint8(r))
}

// Scope says which limit rejected a rate-limited operation: the partition's (the table's
// per_partition_rate_limit, the zero value), or a budget held cluster-wide, a service level's
// or a keyspace's rate_limit.
type Scope uint8

// The scopes.
const (
	// ScopePartition: the table's per-partition rate limit.
	ScopePartition Scope = iota
	// ScopeServiceLevel: a service level's rate, shared by every role (or client address)
	// attached to it across the cluster.
	ScopeServiceLevel
	// ScopeKeyspace: the keyspace's rate_limit, across the cluster.
	ScopeKeyspace
)

// String returns "partition", "service_level" or "keyspace".
func (s Scope) String() string {
	switch s {
	case ScopePartition:
		return "partition"
	case ScopeServiceLevel:
		return "service_level"
	case ScopeKeyspace:
		return "keyspace"
	}
	return fmt.Sprintf("Scope(%d)", uint8(s))
}

// RateLimitError reports that a partition is over its table's per-partition rate limit, or a
// request over a service level's or a keyspace's rate (Scope). Clients must not retry it
// automatically.
type RateLimitError struct {
	Keyspace, Table string
	Op              Op
	RejectedBy      Rejecter
	// Scope is the limit that rejected the operation; ScopeName names the service level or
	// the keyspace when it is not ScopePartition.
	Scope     Scope
	ScopeName string
	// Limit is the rejecting limit for Op, in operations per second: per partition for
	// ScopePartition, cluster-wide for a service level or a keyspace.
	Limit uint32
	// Count is the rejecting counter after the increment: the coordinator's, or the largest
	// among the rejecting replicas (RateLimited.Count); zero if unknown.
	Count uint32
	// RetryAfter is when the partition's counter will have decayed back under twice the limit if
	// no more operations arrive; zero if unknown.
	RetryAfter time.Duration
	// MayBeApplied says a write rejected by replicas may still have been stored by replicas that
	// admitted it (see RateLimited.MayBeApplied), as after a write timeout.
	MayBeApplied bool
	// Partition names the rejected partition, as "(k) = (1)", when one statement read
	// several (IN); empty otherwise.
	Partition string
}

// Error reads like "rate limit exceeded for writes on ks.tbl (limit 50/s), rejected by
// coordinator; retry after 1.2s" for a partition, "rate limit exceeded for writes of service
// level gold (limit 100/s across the cluster), rejected by coordinator; retry after 1.2s" for a
// service level, and "... for writes of keyspace ks (limit ...)" for a keyspace.
func (e *RateLimitError) Error() string {
	// A hot partition's rejections are the most frequent errors a node answers: the message is
	// built in one allocation, without fmt's reflection.
	var buf [192]byte
	msg := e.AppendMessage(buf[:0])
	var b strings.Builder
	b.Grow(len(msg))
	b.Write(msg)
	return b.String()
}

// AppendMessage appends the text Error returns to dst: a front end that writes the rejection
// on the wire appends it where it goes, without a string in between.
func (e *RateLimitError) AppendMessage(dst []byte) []byte {
	dst = append(dst, "rate limit exceeded for "...)
	dst = append(dst, e.Op.String()...)
	switch e.Scope {
	case ScopeServiceLevel, ScopeKeyspace:
		if e.Scope == ScopeServiceLevel {
			dst = append(dst, "s of service level "...)
		} else {
			dst = append(dst, "s of keyspace "...)
		}
		dst = append(dst, e.ScopeName...)
		dst = append(dst, " (limit "...)
		dst = strconv.AppendUint(dst, uint64(e.Limit), 10)
		dst = append(dst, "/s across the cluster), rejected by "...)
	default:
		dst = append(dst, "s on "...)
		if e.Keyspace != "" {
			dst = append(dst, e.Keyspace...)
			dst = append(dst, '.')
		}
		dst = append(dst, e.Table...)
		dst = append(dst, " (limit "...)
		dst = strconv.AppendUint(dst, uint64(e.Limit), 10)
		dst = append(dst, "/s), rejected by "...)
	}
	dst = append(dst, e.RejectedBy.String()...)
	if e.Partition != "" {
		dst = append(dst, " for partition "...)
		dst = append(dst, e.Partition...)
	}
	if e.RetryAfter > 0 {
		dst = append(dst, "; retry after "...)
		dst = appendDuration(dst, e.RetryAfter.Round(time.Millisecond))
	}
	if e.MayBeApplied {
		dst = append(dst, "; replicas that admitted the write may have applied it"...)
	}
	return dst
}

// appendDuration appends d, a whole number of milliseconds, as time.Duration's String writes it
// ("750ms", "1.2s"), without allocating below a minute.
func appendDuration(dst []byte, d time.Duration) []byte {
	switch {
	case d < time.Second:
		return append(strconv.AppendInt(dst, d.Milliseconds(), 10), "ms"...)
	case d >= time.Minute:
		return append(dst, d.String()...)
	}
	dst = strconv.AppendInt(dst, int64(d/time.Second), 10)
	if ms := int64(d%time.Second) / 1e6; ms > 0 {
		dst = append(dst, '.')
		for div := int64(100); ms > 0; div /= 10 {
			dst = append(dst, byte('0'+ms/div))
			ms %= div
		}
	}
	return append(dst, 's')
}

func qualified(keyspace, table string) string {
	if keyspace == "" {
		return table
	}
	return keyspace + "." + table
}

// UnavailableError reports that fewer replicas were live than the consistency level requires.
// The operation was not attempted.
type UnavailableError struct {
	Consistency    Consistency
	Live, Required int
	// DataCenter names the data center that had too few live replicas for EACH_QUORUM (Live
	// and Required are then its own); empty otherwise.
	DataCenter string
}

// Error reads like "cannot achieve consistency level QUORUM: 1 replica live, 2 required", or
// for EACH_QUORUM "cannot achieve consistency level EACH_QUORUM in DC dc2: 0 replicas live, 2
// required", naming the data center as Cassandra does.
func (e *UnavailableError) Error() string {
	var in string
	if e.DataCenter != "" {
		in = " in DC " + e.DataCenter
	}
	return fmt.Sprintf("cannot achieve consistency level %v%s: %d %s live, %d required",
		e.Consistency, in, e.Live, plural(e.Live, "replica", "replicas"), e.Required)
}

// TimeoutError reports that replicas did not answer in time. A write that timed out may still
// have been applied by some replicas.
type TimeoutError struct {
	Op                 Op
	Consistency        Consistency
	Received, Required int
	// BatchLog says the write was a LOGGED batch's batchlog write (the native protocol's
	// BATCH_LOG write type): Received and Required count batchlog nodes, and no partition of
	// the batch was written.
	BatchLog bool
	// CAS says the write was a lightweight transaction's Paxos round (the native protocol's CAS
	// write type): it may or may not have been applied; a SERIAL read tells.
	CAS bool
	// Counter says the write was a counter update (the native protocol's COUNTER write type):
	// its leader may or may not have applied it, and it must not be retried blindly.
	Counter bool
}

// Error reads like "write timed out at QUORUM: 1 of 2 required acks received", or for a
// batchlog write "batchlog write timed out at QUORUM: 1 of 2 required acks received".
func (e *TimeoutError) Error() string {
	prefix := ""
	switch {
	case e.BatchLog:
		prefix = "batchlog "
	case e.CAS:
		prefix = "lightweight transaction "
	}
	return fmt.Sprintf("%s%v timed out at %v: %d of %d required %s received",
		prefix, e.Op, e.Consistency, e.Received, e.Required, answers(e.Op))
}

// FailureError reports that replica failures made the consistency level unreachable. Err is the
// first failure; errors.Is and errors.As see it. The operation may have been applied by some
// replicas.
type FailureError struct {
	Op                 Op
	Consistency        Consistency
	Received, Required int
	// Failures is how many replicas failed, Rejected how many rejected on their rate limit.
	Failures, Rejected int
	Err                error
	// BatchLog says the write was a LOGGED batch's batchlog write (see TimeoutError.BatchLog).
	BatchLog bool
}

// Error reads like "write failed at QUORUM: 2 replicas failed, 1 of 2 required acks received:
// disk full", and names the rejections when there were some: "1 replica failed and 1 rejected
// (rate limit), 0 of 2 required acks received: disk full".
func (e *FailureError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v failed at %v: %d %s failed", e.Op, e.Consistency, e.Failures, plural(e.Failures, "replica", "replicas"))
	if e.Rejected > 0 {
		fmt.Fprintf(&b, " and %d rejected (rate limit)", e.Rejected)
	}
	fmt.Fprintf(&b, ", %d of %d required %s received: %v", e.Received, e.Required, answers(e.Op), e.Err)
	return b.String()
}

// Unwrap returns the first failure.
func (e *FailureError) Unwrap() error { return e.Err }

func answers(op Op) string {
	if op == OpRead {
		return "responses"
	}
	return "acks"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
