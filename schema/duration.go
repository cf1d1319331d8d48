package schema

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Duration is a value of the duration type: months, days and nanoseconds,
// kept apart as in Cassandra (a month is not a number of days, nor a day a
// number of nanoseconds across a daylight-saving change). The three are all
// of one sign: all non-negative or all non-positive.
type Duration struct {
	Months      int32
	Days        int32
	Nanoseconds int64
}

// The nanoseconds of the duration units.
const (
	nanosPerMicro  = int64(1000)
	nanosPerMilli  = 1000 * nanosPerMicro
	nanosPerSecond = 1000 * nanosPerMilli
	nanosPerMinute = 60 * nanosPerSecond
	nanosPerHour   = 60 * nanosPerMinute
)

// String returns d as Cassandra and cqlsh print it: a '-' if it is
// negative, then each non-zero unit from years down to nanoseconds, as in
// 1y2mo3d4h5m6s7ms8us9ns; the zero duration is "".
func (d Duration) String() string {
	var b strings.Builder
	if d.Months < 0 || d.Days < 0 || d.Nanoseconds < 0 {
		b.WriteByte('-')
	}
	put := func(n, unit uint64, name string) uint64 {
		if n == 0 || n < unit {
			return n
		}
		b.WriteString(strconv.FormatUint(n/unit, 10))
		b.WriteString(name)
		return n % unit
	}
	r := put(absU(int64(d.Months)), 12, "y")
	put(r, 1, "mo")
	put(absU(int64(d.Days)), 1, "d")
	if d.Nanoseconds != 0 {
		r = put(absU(d.Nanoseconds), uint64(nanosPerHour), "h")
		r = put(r, uint64(nanosPerMinute), "m")
		r = put(r, uint64(nanosPerSecond), "s")
		r = put(r, uint64(nanosPerMilli), "ms")
		r = put(r, uint64(nanosPerMicro), "us")
		put(r, 1, "ns")
	}
	return b.String()
}

func absU(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1
	}
	return uint64(n)
}

// durationBuilder adds the units of a duration literal, in Cassandra's
// order (largest first, each once), checking the totals' ranges.
type durationBuilder struct {
	months, days, nanos uint64
	last                int // index of the last unit added, -1 before the first
}

// durationUnits are the units of the standard format, largest first, with
// what one of them adds: months, days or nanoseconds.
var durationUnits = [...]struct {
	name        string
	plural      string
	months      uint64
	days        uint64
	nanoseconds uint64
}{
	{"y", "years", 12, 0, 0},
	{"mo", "months", 1, 0, 0},
	{"w", "weeks", 0, 7, 0},
	{"d", "days", 0, 1, 0},
	{"h", "hours", 0, 0, uint64(nanosPerHour)},
	{"m", "minutes", 0, 0, uint64(nanosPerMinute)},
	{"s", "seconds", 0, 0, uint64(nanosPerSecond)},
	{"ms", "milliseconds", 0, 0, uint64(nanosPerMilli)},
	{"us", "microseconds", 0, 0, uint64(nanosPerMicro)},
	{"ns", "nanoseconds", 0, 0, 1},
}

func (b *durationBuilder) add(n uint64, unit int) error {
	u := durationUnits[unit]
	if unit == b.last {
		return fmt.Errorf("the %s are specified multiple times", u.plural)
	}
	if unit < b.last {
		return fmt.Errorf("the %s should be before the %s", u.plural, durationUnits[b.last].plural)
	}
	b.last = unit
	hi, lo := bits.Mul64(n, u.months+u.days+u.nanoseconds)
	switch {
	case u.months != 0:
		b.months += lo
		if hi != 0 || lo > math.MaxInt32 || b.months > math.MaxInt32 {
			return fmt.Errorf("the total number of months must be less than or equal to %d", math.MaxInt32)
		}
	case u.days != 0:
		b.days += lo
		if hi != 0 || lo > math.MaxInt32 || b.days > math.MaxInt32 {
			return fmt.Errorf("the total number of days must be less than or equal to %d", math.MaxInt32)
		}
	default:
		b.nanos += lo
		if hi != 0 || lo > math.MaxInt64 || b.nanos > math.MaxInt64 {
			return fmt.Errorf("the total number of nanoseconds must be less than or equal to %d", int64(math.MaxInt64))
		}
	}
	return nil
}

func (b *durationBuilder) duration(negative bool) Duration {
	d := Duration{Months: int32(b.months), Days: int32(b.days), Nanoseconds: int64(b.nanos)}
	if negative {
		d = Duration{-d.Months, -d.Days, -d.Nanoseconds}
	}
	return d
}

// ParseDuration parses a duration literal as Cassandra does, with an
// optional leading '-' (which negates every part):
//
//	1y2mo3w4d5h6m7s8ms9us10ns   numbers with units (case-insensitive; µs is us),
//	                            largest first, each unit at most once
//	P1Y2M3DT4H5M6S              ISO 8601 with designators (any part may be left out)
//	P3W                         ISO 8601 weeks
//	P0001-02-03T04:05:06        ISO 8601 alternative format
func ParseDuration(s string) (Duration, error) {
	d, err := parseDurationValue(s)
	if err != nil {
		return Duration{}, fmt.Errorf("invalid duration %q: %w", s, err)
	}
	return d, nil
}

var errDurationFormat = errors.New("not a duration (examples: 1h30m, 2d, P1DT2H, -3mo)")

func parseDurationValue(s string) (Duration, error) {
	src, negative := strings.CutPrefix(s, "-")
	if src == "" {
		return Duration{}, errDurationFormat
	}
	b := durationBuilder{last: -1}
	if src[0] == 'P' || src[0] == 'p' {
		if err := b.iso(strings.ToUpper(src[1:])); err != nil {
			return Duration{}, err
		}
		return b.duration(negative), nil
	}
	for src != "" {
		n, rest, ok := leadingNumber(src)
		if !ok {
			return Duration{}, errDurationFormat
		}
		i := 0
		for i < len(rest) && (rest[i] >= 'a' && rest[i] <= 'z' || rest[i] >= 'A' && rest[i] <= 'Z' || rest[i] == 0xC2 || rest[i] == 0xB5) {
			i++
		}
		unit := strings.ToLower(rest[:i])
		if unit == "µs" {
			unit = "us"
		}
		k := -1
		for j, u := range durationUnits {
			if u.name == unit {
				k = j
			}
		}
		if k < 0 {
			return Duration{}, errDurationFormat
		}
		if err := b.add(n, k); err != nil {
			return Duration{}, err
		}
		src = rest[i:]
	}
	return b.duration(negative), nil
}

// leadingNumber parses the decimal digits at the start of s.
func leadingNumber(s string) (uint64, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		n = math.MaxUint64 // too large for any unit: add reports the range
	}
	return n, s[i:], true
}

// iso parses what follows the P of an ISO 8601 duration, upper-cased.
func (b *durationBuilder) iso(s string) error {
	if strings.HasSuffix(s, "W") {
		n, rest, ok := leadingNumber(s)
		if !ok || rest != "W" {
			return errDurationFormat
		}
		return b.add(n, 2)
	}
	if strings.Contains(s, "-") {
		return b.isoAlternative(s)
	}
	date, tm, hasT := strings.Cut(s, "T")
	if hasT && tm == "" {
		return errDurationFormat
	}
	parts := func(s string, designators string, units []int) error {
		for s != "" {
			n, rest, ok := leadingNumber(s)
			if !ok || rest == "" {
				return errDurationFormat
			}
			i := strings.IndexByte(designators, rest[0])
			if i < 0 {
				return errDurationFormat
			}
			designators = designators[i+1:]
			if err := b.add(n, units[i]); err != nil {
				return err
			}
			units = units[i+1:]
			s = rest[1:]
		}
		return nil
	}
	if date == "" && !hasT {
		return errDurationFormat
	}
	if err := parts(date, "YMD", []int{0, 1, 3}); err != nil {
		return err
	}
	return parts(tm, "HMS", []int{4, 5, 6})
}

// isoAlternative parses YYYY-MM-DDThh:mm:ss.
func (b *durationBuilder) isoAlternative(s string) error {
	if len(s) != len("0000-00-00T00:00:00") || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return errDurationFormat
	}
	for i, unit := range []int{0, 1, 3, 4, 5, 6} {
		start := []int{0, 5, 8, 11, 14, 17}[i]
		end := start + 2
		if i == 0 {
			end = 4
		}
		n, rest, ok := leadingNumber(s[start:end])
		if !ok || rest != "" {
			return errDurationFormat
		}
		if n == 0 {
			continue
		}
		if err := b.add(n, unit); err != nil {
			return err
		}
	}
	return nil
}

// EncodeDuration returns the canonical encoding of a duration: its months,
// days and nanoseconds as three signed vints, as Cassandra's native
// protocol encodes them (see appendVint).
func EncodeDuration(d Duration) []byte {
	b := appendVint(nil, int64(d.Months))
	b = appendVint(b, int64(d.Days))
	return appendVint(b, d.Nanoseconds)
}

// appendVint appends n in Cassandra's signed vint: zigzag-encoded, then as
// an unsigned vint whose first byte's leading one bits count the bytes that
// follow (0 to 8), the value's bits filling the rest big-endian.
func appendVint(dst []byte, n int64) []byte {
	u := uint64(n<<1) ^ uint64(n>>63)
	size := 9
	for k := 1; k <= 8; k++ {
		if u < 1<<(7*k) {
			size = k
			break
		}
	}
	extra := size - 1
	var buf [9]byte
	for i := size - 1; i >= 1; i-- {
		buf[i] = byte(u)
		u >>= 8
	}
	if size == 9 {
		buf[0] = 0xFF
	} else {
		buf[0] = byte(0xFF<<(8-extra)) | byte(u)
	}
	return append(dst, buf[:size]...)
}

// readVint reads a signed vint from the start of v, refusing one not in its
// fewest bytes (so every duration has one encoding).
func readVint(v []byte) (int64, []byte, error) {
	if len(v) == 0 {
		return 0, nil, errors.New("truncated vint")
	}
	extra := bits.LeadingZeros8(^v[0])
	if len(v) < 1+extra {
		return 0, nil, fmt.Errorf("truncated vint: %d bytes, want %d", len(v), 1+extra)
	}
	var u uint64
	if extra < 8 {
		u = uint64(v[0] & (0xFF >> extra))
	}
	for _, c := range v[1 : 1+extra] {
		u = u<<8 | uint64(c)
	}
	n := int64(u>>1) ^ -int64(u&1)
	if len(appendVint(nil, n)) != 1+extra {
		return 0, nil, errors.New("vint not in its fewest bytes")
	}
	return n, v[1+extra:], nil
}

// decodeDuration decodes and checks a duration value.
func decodeDuration(v []byte) (Duration, error) {
	m, rest, err := readVint(v)
	if err != nil {
		return Duration{}, fmt.Errorf("months: %w", err)
	}
	d, rest, err := readVint(rest)
	if err != nil {
		return Duration{}, fmt.Errorf("days: %w", err)
	}
	ns, rest, err := readVint(rest)
	if err != nil {
		return Duration{}, fmt.Errorf("nanoseconds: %w", err)
	}
	switch {
	case len(rest) != 0:
		return Duration{}, fmt.Errorf("%d bytes after the nanoseconds", len(rest))
	case m != int64(int32(m)):
		return Duration{}, fmt.Errorf("%d months is outside int range", m)
	case d != int64(int32(d)):
		return Duration{}, fmt.Errorf("%d days is outside int range", d)
	case (m < 0 || d < 0 || ns < 0) && (m > 0 || d > 0 || ns > 0):
		return Duration{}, fmt.Errorf("months %d, days %d and nanoseconds %d are not all of the same sign", m, d, ns)
	}
	return Duration{Months: int32(m), Days: int32(d), Nanoseconds: ns}, nil
}
