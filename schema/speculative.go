package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
)

// OptionSpeculativeRetry is the name of the table option that says when a read asks a replica
// beyond the ones its consistency level needs.
const OptionSpeculativeRetry = "speculative_retry"

// SpeculativeKind is the kind of a table's speculative_retry.
type SpeculativeKind uint8

// The kinds, in the order their encoding numbers them (from 1).
const (
	// SpeculatePercentile: speculate once the read has waited longer than the given
	// percentile of the table's recent replica read latencies ('99p', '99PERCENTILE').
	SpeculatePercentile SpeculativeKind = iota + 1
	// SpeculateFixed: speculate once the read has waited a fixed time ('50ms').
	SpeculateFixed
	// SpeculateAlways: read from one more replica than the consistency level needs, from
	// the start ('ALWAYS').
	SpeculateAlways
	// SpeculateNone: never speculate; only a replica's failure sends the read elsewhere
	// ('NONE').
	SpeculateNone
	// SpeculateMin and SpeculateMax: speculate after the shorter (MIN) or the longer (MAX) of
	// a percentile's delay and a fixed delay ('MIN(99p,50ms)', Cassandra 4's hybrids).
	SpeculateMin
	SpeculateMax
)

// SpeculativeRetry is a table's speculative_retry option: when a read at ONE or QUORUM (and
// their LOCAL_ aliases) asks a spare replica while the replicas it asked have not answered.
// Writes and reads at ALL never speculate. The zero value is not a valid option; a table
// without the option has DefaultSpeculativeRetry().
type SpeculativeRetry struct {
	Kind SpeculativeKind
	// Percentile is the percentile of SpeculatePercentile, SpeculateMin and SpeculateMax,
	// above 0 and below 100.
	Percentile float64
	// Delay is the wait of SpeculateFixed, SpeculateMin and SpeculateMax: whole milliseconds,
	// 0 to MaxSpeculativeDelay.
	Delay time.Duration
}

// DefaultSpeculativePercentile is the percentile of a table's speculative_retry when no
// statement set it: '99p', as in Cassandra.
const DefaultSpeculativePercentile = 99

// DefaultSpeculativeRetry returns a table's speculative_retry when no statement set it: '99p'.
func DefaultSpeculativeRetry() SpeculativeRetry {
	return SpeculativeRetry{Kind: SpeculatePercentile, Percentile: DefaultSpeculativePercentile}
}

// MaxSpeculativeDelay is the longest fixed speculative_retry delay accepted: 2^31-1
// milliseconds, the largest Cassandra stores.
const MaxSpeculativeDelay = (1<<31 - 1) * time.Millisecond

// String returns the option as Cassandra 4.1 writes it, which ParseSpeculativeRetry reads
// back: '99p' (the percentile in the shortest decimal form: '99.9p'), '50ms', 'ALWAYS' or
// 'NONE', without the quotes.
func (r SpeculativeRetry) String() string {
	switch r.Kind {
	case SpeculatePercentile:
		return strconv.FormatFloat(r.Percentile, 'f', -1, 64) + "p"
	case SpeculateFixed:
		return strconv.FormatInt(r.Delay.Milliseconds(), 10) + "ms"
	case SpeculateAlways:
		return "ALWAYS"
	case SpeculateNone:
		return "NONE"
	case SpeculateMin, SpeculateMax:
		fn := "MIN"
		if r.Kind == SpeculateMax {
			fn = "MAX"
		}
		return fn + "(" + strconv.FormatFloat(r.Percentile, 'f', -1, 64) + "p," + strconv.FormatInt(r.Delay.Milliseconds(), 10) + "ms)"
	}
	return fmt.Sprintf("SpeculativeRetry(%d)", uint8(r.Kind))
}

// valid reports whether r is an option ParseSpeculativeRetry could have returned.
func (r SpeculativeRetry) valid() bool {
	switch r.Kind {
	case SpeculatePercentile:
		return r.Percentile > 0 && r.Percentile < 100 && r.Delay == 0
	case SpeculateFixed:
		return r.Percentile == 0 && r.Delay >= 0 && r.Delay <= MaxSpeculativeDelay && r.Delay%time.Millisecond == 0
	case SpeculateAlways, SpeculateNone:
		return r == SpeculativeRetry{Kind: r.Kind}
	case SpeculateMin, SpeculateMax:
		return r.Percentile > 0 && r.Percentile < 100 && r.Delay >= 0 && r.Delay <= MaxSpeculativeDelay && r.Delay%time.Millisecond == 0
	}
	return false
}

// SpeculativeRetry returns the table's speculative_retry option.
func (t *Table) SpeculativeRetry() SpeculativeRetry {
	if !t.specRetrySet {
		return DefaultSpeculativeRetry()
	}
	return t.specRetry
}

// setSpeculativeRetry sets the table's speculative_retry, keeping the default unset so that a
// table encodes alike however its default was reached.
func (t *Table) setSpeculativeRetry(r SpeculativeRetry) {
	t.specRetry, t.specRetrySet = r, r != DefaultSpeculativeRetry()
	if !t.specRetrySet {
		t.specRetry = SpeculativeRetry{}
	}
}

// speculativeRetryOption applies the speculative_retry option among opts, if any
// (tableOptions checks the other options and repeated ones). ALTER TABLE without it keeps the
// table's value.
func (t *Table) speculativeRetryOption(opts []cql.Option) error {
	for _, o := range opts {
		if o.Name.Name != OptionSpeculativeRetry {
			continue
		}
		r, err := ParseSpeculativeRetry(o.Value)
		if err != nil {
			return err
		}
		t.setSpeculativeRetry(r)
	}
	return nil
}

// speculativeForms lists the values speculative_retry accepts, for error messages.
const speculativeForms = "want a percentile such as '99p' or '99PERCENTILE' (above 0, below 100), " +
	"a whole number of milliseconds such as '50ms', 'ALWAYS', 'NONE', or MIN or MAX of a percentile and a delay such as 'MIN(99p,50ms)'"

// ParseSpeculativeRetry interprets the value of the speculative_retry option: a string, read
// case-insensitively as Cassandra 4.1 reads it,
//
//   - 'Np' or 'NPERCENTILE' with 0 < N < 100, N a decimal number ('99p', '95PERCENTILE',
//     '99.9p');
//   - 'Nms' with N a whole number of milliseconds from 0 to 2147483647 ('50ms', '50MS');
//   - 'ALWAYS', or 'NONE' (3.x's spelling; 4.x's 'NEVER' reads as NONE).
//
// Anything else is an error that names the option and the value: a value that is not a
// string, an empty one, a percentile of 0, 100 or more, a fractional or too large number of
// milliseconds (Cassandra truncates '12.5ms' to 12 ms; kvnode refuses it), a number with
// another unit, and Cassandra's MIN(...) and MAX(...) combinations, which kvnode does not
// support.
func ParseSpeculativeRetry(v cql.Term) (SpeculativeRetry, error) {
	lit, ok := v.(*cql.Literal)
	if !ok || lit.Kind != cql.LitString {
		if ok && lit.Kind == cql.LitBind {
			return SpeculativeRetry{}, fmt.Errorf("%s = %s: bind markers cannot be used in schema statements", OptionSpeculativeRetry, describeValue(v))
		}
		return SpeculativeRetry{}, fmt.Errorf("%s = %s is not a string; %s", OptionSpeculativeRetry, describeValue(v), speculativeForms)
	}
	r, err := parseSpeculativeRetry(lit.Value)
	if err != nil {
		return SpeculativeRetry{}, fmt.Errorf("%s = %s: %w", OptionSpeculativeRetry, describeValue(v), err)
	}
	return r, nil
}

// parseSpeculativeRetry reads the text of a speculative_retry value.
func parseSpeculativeRetry(s string) (SpeculativeRetry, error) {
	u := strings.ToUpper(s)
	switch {
	case u == "ALWAYS":
		return SpeculativeRetry{Kind: SpeculateAlways}, nil
	case u == "NONE" || u == "NEVER": // 4.x writes NEVER, 3.x NONE
		return SpeculativeRetry{Kind: SpeculateNone}, nil
	case strings.HasPrefix(u, "MIN(") || strings.HasPrefix(u, "MAX("):
		return parseHybrid(u)
	}
	num, unit := u, ""
	if i := strings.IndexFunc(u, func(c rune) bool { return c != '.' && (c < '0' || c > '9') }); i >= 0 {
		num, unit = u[:i], u[i:]
	}
	switch {
	case u == "":
		return SpeculativeRetry{}, fmt.Errorf("the value is empty; %s", speculativeForms)
	case num == "" || strings.Count(num, ".") > 1 || strings.Trim(num, ".") == "":
		return SpeculativeRetry{}, fmt.Errorf("not a number followed by P, PERCENTILE or MS; %s", speculativeForms)
	}
	switch unit {
	case "P", "PERCENTILE":
		p, err := strconv.ParseFloat(num, 64)
		if err != nil || !(p > 0 && p < 100) {
			return SpeculativeRetry{}, fmt.Errorf("the percentile must be above 0 and below 100; %s", speculativeForms)
		}
		return SpeculativeRetry{Kind: SpeculatePercentile, Percentile: p}, nil
	case "MS":
		if strings.Contains(num, ".") {
			return SpeculativeRetry{}, fmt.Errorf("the delay must be a whole number of milliseconds; %s", speculativeForms)
		}
		ms, err := strconv.ParseInt(num, 10, 64)
		if err != nil || ms > int64(MaxSpeculativeDelay/time.Millisecond) {
			return SpeculativeRetry{}, fmt.Errorf("the delay must be at most %d milliseconds; %s", int64(math.MaxInt32), speculativeForms)
		}
		return SpeculativeRetry{Kind: SpeculateFixed, Delay: time.Duration(ms) * time.Millisecond}, nil
	}
	return SpeculativeRetry{}, fmt.Errorf("unknown unit %q; %s", strings.ToLower(unit), speculativeForms)
}

// parseHybrid reads Cassandra 4's MIN(a,b) and MAX(a,b) (upper case, u): a percentile and a
// fixed delay, in either order.
func parseHybrid(u string) (SpeculativeRetry, error) {
	const form = "MIN(...) and MAX(...) combine a percentile and a fixed delay, such as 'MIN(99p,50ms)'"
	inner, ok := strings.CutSuffix(u[4:], ")")
	a, b, two := strings.Cut(inner, ",")
	if !ok || !two {
		return SpeculativeRetry{}, fmt.Errorf("%s", form)
	}
	ra, err := parseSpeculativeRetry(strings.TrimSpace(a))
	if err != nil {
		return SpeculativeRetry{}, fmt.Errorf("%s: %w", form, err)
	}
	rb, err := parseSpeculativeRetry(strings.TrimSpace(b))
	if err != nil {
		return SpeculativeRetry{}, fmt.Errorf("%s: %w", form, err)
	}
	if ra.Kind == SpeculateFixed && rb.Kind == SpeculatePercentile {
		ra, rb = rb, ra
	}
	if ra.Kind != SpeculatePercentile || rb.Kind != SpeculateFixed {
		return SpeculativeRetry{}, fmt.Errorf("%s", form)
	}
	r := SpeculativeRetry{Kind: SpeculateMin, Percentile: ra.Percentile, Delay: rb.Delay}
	if strings.HasPrefix(u, "MAX(") {
		r.Kind = SpeculateMax
	}
	return r, nil
}
