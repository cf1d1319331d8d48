package schema

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// UUID is a decoded uuid or timeuuid: its 16 bytes in RFC 4122 order.
type UUID [16]byte

// String returns the canonical form, lower-case
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// Version returns the uuid's version (the high nibble of byte 6).
func (u UUID) Version() int { return int(u[6] >> 4) }

// Time returns the time a version 1 uuid carries (100 ns resolution).
func (u UUID) Time() time.Time {
	ts := int64(UUIDTimestampBits(u[:]) & (1<<60 - 1))
	return time.Unix(0, 0).UTC().Add(time.Duration(ts-uuidEpochOffset) * 100)
}

// uuidEpochOffset is the Unix epoch in 100 ns intervals since the
// Gregorian calendar's start (1582-10-15), the origin of version 1 uuids.
const uuidEpochOffset = 0x01B21DD213814000

// MakeTimeUUID returns the version 1 uuid (RFC 4122 variant) of time t with
// the given 14-bit clock sequence and 48-bit node.
func MakeTimeUUID(t time.Time, clockSeq uint16, node uint64) UUID {
	ts := uint64(t.Unix())*1e7 + uint64(t.Nanosecond()/100) + uuidEpochOffset
	var u UUID
	u[0], u[1], u[2], u[3] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
	u[4], u[5] = byte(ts>>40), byte(ts>>32)
	u[6], u[7] = byte(ts>>56)&0x0F|0x10, byte(ts>>48)
	u[8], u[9] = byte(clockSeq>>8)&0x3F|0x80, byte(clockSeq)
	for i := range 6 {
		u[10+i] = byte(node >> (40 - 8*i))
	}
	return u
}

// ParseUUID parses the canonical 36-character form (hex digits in either
// case, dashes at 8, 13, 18 and 23).
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("%q is not a uuid: want 32 hex digits as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i--
			continue
		}
		if _, err := hex.Decode(u[j:j+1], []byte(s[i:i+2])); err != nil {
			return UUID{}, fmt.Errorf("%q is not a uuid: %q at offset %d is not a hex digit", s, s[i:i+2], i)
		}
		j++
	}
	return u, nil
}

// Date is a decoded date: days since the Unix epoch (1970-01-01 is 0) in
// the proleptic Gregorian calendar, from -2^31 to 2^31-1 as the encoding
// allows (years about -5877641 to 5881580).
type Date int64

// dateEpoch is the encoded value of 1970-01-01.
const dateEpoch = 1 << 31

// Date bounds.
const (
	MinDate Date = -dateEpoch
	MaxDate Date = dateEpoch - 1
)

// DateOf returns the date of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Time returns midnight UTC of d.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String returns yyyy-mm-dd (years beyond 9999 or before 0 as they are,
// with a sign for negative years).
func (d Date) String() string {
	y, m, day := d.Time().Date()
	if y < 0 {
		return fmt.Sprintf("-%04d-%02d-%02d", -y, m, day)
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, day)
}

// ParseDate parses yyyy-mm-dd (the year may have a sign and more digits).
func ParseDate(s string) (Date, error) {
	bad := func(why string) (Date, error) {
		return 0, fmt.Errorf("%q is not a date: %s; write 'yyyy-mm-dd' or days with 2^31 the Unix epoch", s, why)
	}
	body, neg := s, false
	if strings.HasPrefix(body, "-") || strings.HasPrefix(body, "+") {
		neg, body = body[0] == '-', body[1:]
	}
	parts := strings.Split(body, "-")
	if len(parts) != 3 || len(parts[0]) < 4 || len(parts[0]) > 7 || len(parts[1]) != 2 || len(parts[2]) != 2 {
		return bad("want yyyy-mm-dd")
	}
	var n [3]int
	for i, p := range parts {
		for _, c := range p {
			if c < '0' || c > '9' {
				return bad("not all digits")
			}
		}
		n[i], _ = strconv.Atoi(p)
	}
	if neg {
		n[0] = -n[0]
	}
	if n[1] < 1 || n[1] > 12 {
		return bad("month out of range")
	}
	t := time.Date(n[0], time.Month(n[1]), n[2], 0, 0, 0, 0, time.UTC)
	if t.Day() != n[2] {
		return bad("day out of range for the month")
	}
	d := Date(t.Unix() / 86400)
	if d < MinDate || d > MaxDate {
		return bad("outside the date range")
	}
	return d, nil
}

// FormatTimeOfDay renders a time value as hh:mm:ss.fffffffff (all nine
// digits of the fraction, as cqlsh does).
func FormatTimeOfDay(d time.Duration) string {
	ns := int64(d)
	return fmt.Sprintf("%02d:%02d:%02d.%09d", ns/3600e9, ns/60e9%60, ns/1e9%60, ns%1e9)
}

// ParseTimeOfDay parses hh:mm:ss[.f...] with up to nine fraction digits (as
// Cassandra's TimeSerializer does; hh and mm may have one digit).
func ParseTimeOfDay(s string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("%q is not a time: %s; write 'hh:mm:ss[.fffffffff]' or nanoseconds since midnight", s, why)
	}
	clock, frac, hasFrac := strings.Cut(s, ".")
	parts := strings.Split(clock, ":")
	if len(parts) != 3 {
		return bad("want hh:mm:ss")
	}
	limits := [3]int64{24, 60, 60}
	var ns int64
	for i, p := range parts {
		if len(p) < 1 || len(p) > 2 || (i == 2 && len(p) != 2) {
			return bad("want hh:mm:ss")
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 || p[0] == '+' || p[0] == '-' {
			return bad("not all digits")
		}
		if n >= limits[i] {
			return bad([3]string{"hour", "minute", "second"}[i] + " out of range")
		}
		ns = ns*60 + n
	}
	ns *= 1e9
	if hasFrac {
		if len(frac) < 1 || len(frac) > 9 {
			return bad("the fraction has 1 to 9 digits")
		}
		f := int64(0)
		for _, c := range frac {
			if c < '0' || c > '9' {
				return bad("the fraction is not all digits")
			}
			f = f*10 + int64(c-'0')
		}
		for range 9 - len(frac) {
			f *= 10
		}
		ns += f
	}
	return time.Duration(ns), nil
}

// Decimal is a decoded decimal: Unscaled × 10^-Scale. 1.50 is {150, 2};
// 1.5 is {15, 1}, an equal value (Cmp is 0) with another encoding.
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// Cmp compares two decimals numerically (non-nil Unscaled).
func (d Decimal) Cmp(e Decimal) int {
	if s1, s2 := d.Unscaled.Sign(), e.Unscaled.Sign(); s1 != s2 || s1 == 0 {
		return cmpInt(s1, s2)
	}
	// Align the scales. Compare magnitudes first by digit count to avoid
	// multiplying by 10^(2^32) for wildly different scales.
	da, db := d.adjustedExponent(), e.adjustedExponent()
	if da != db {
		if (da < db) == (d.Unscaled.Sign() > 0) {
			return -1
		}
		return 1
	}
	a, b := d.Unscaled, e.Unscaled
	switch diff := int64(d.Scale) - int64(e.Scale); {
	case diff > 0:
		b = new(big.Int).Mul(b, pow10(diff))
	case diff < 0:
		a = new(big.Int).Mul(a, pow10(-diff))
	}
	return a.Cmp(b)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// adjustedExponent is the exponent of the leading digit: digits-1-scale.
// With equal adjusted exponents, the scale difference is at most the
// longer digit count, so aligning them stays cheap.
func (d Decimal) adjustedExponent() int64 {
	return int64(digitCount(d.Unscaled)) - 1 - int64(d.Scale)
}

// digitCount returns the number of decimal digits of |v| (1 for 0).
func digitCount(v *big.Int) int {
	if v.Sign() == 0 {
		return 1
	}
	// Estimate from the bit length, then correct by one comparison.
	n := int(float64(v.BitLen()-1)*0.30102999566398120) + 1
	abs := new(big.Int).Abs(v)
	switch {
	case abs.Cmp(pow10(int64(n))) >= 0:
		n++
	case n > 1 && abs.Cmp(pow10(int64(n-1))) < 0: // float rounding, for huge values
		n--
	}
	return n
}

func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// Rat returns d as a rational number (non-nil Unscaled).
func (d Decimal) Rat() *big.Rat {
	r := new(big.Rat).SetInt(d.Unscaled)
	if d.Scale < 0 {
		return r.Mul(r, new(big.Rat).SetInt(pow10(-int64(d.Scale))))
	}
	return r.Quo(r, new(big.Rat).SetInt(pow10(int64(d.Scale))))
}

// String renders d exactly, as Java's BigDecimal.toString: plain digits
// with Scale digits after the point, or, when the scale is negative or the
// value is very small, scientific notation (1.5E+3).
func (d Decimal) String() string {
	if d.Unscaled == nil {
		return "<nil>"
	}
	digits := new(big.Int).Abs(d.Unscaled).String()
	sign := ""
	if d.Unscaled.Sign() < 0 {
		sign = "-"
	}
	adjusted := int64(len(digits)) - 1 - int64(d.Scale)
	if d.Scale >= 0 && adjusted >= -6 {
		if d.Scale == 0 {
			return sign + digits
		}
		if n := len(digits) - int(d.Scale); n > 0 {
			return sign + digits[:n] + "." + digits[n:]
		}
		return sign + "0." + strings.Repeat("0", int(d.Scale)-len(digits)) + digits
	}
	mant := digits[:1]
	if len(digits) > 1 {
		mant += "." + digits[1:]
	}
	exp := strconv.FormatInt(adjusted, 10)
	if adjusted >= 0 {
		exp = "+" + exp
	}
	return sign + mant + "E" + exp
}

// ParseDecimal parses a decimal number exactly: an optional sign, digits
// with an optional point, an optional exponent (1.5, -0.001, 12e-3, 1.2E+9).
// The scale is the digit count after the point minus the exponent, as
// Java's BigDecimal(String) computes it: "1.50" is {150, 2}.
func ParseDecimal(s string) (Decimal, error) {
	bad := func(why string) (Decimal, error) {
		return Decimal{}, fmt.Errorf("%q is not a decimal number: %s", s, why)
	}
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil || s[i+1:] == "" {
			return bad("bad exponent")
		}
		if e > 1<<32 || e < -(1<<32) {
			return bad("exponent out of range")
		}
		exp = e
	}
	neg := false
	if mant != "" && (mant[0] == '-' || mant[0] == '+') {
		neg, mant = mant[0] == '-', mant[1:]
	}
	intPart, fracPart, _ := strings.Cut(mant, ".")
	digits := intPart + fracPart
	if digits == "" {
		return bad("no digits")
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return bad("not a number")
		}
	}
	scale := int64(len(fracPart)) - exp
	if scale < -1<<31 || scale > 1<<31-1 {
		return bad("scale out of range (the exponent must keep the scale within a 32-bit integer)")
	}
	u, _ := new(big.Int).SetString(digits, 10)
	if neg {
		u.Neg(u)
	}
	return Decimal{Unscaled: u, Scale: int32(scale)}, nil
}
