package client

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// UUID is a uuid or timeuuid value: its 16 bytes in RFC 4122 order.
type UUID [16]byte

// String returns the canonical lower-case form, xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (u UUID) String() string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ParseUUID parses the canonical 36-character form (either case).
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("%q is not a uuid (want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return UUID{}, fmt.Errorf("%q is not a uuid: %w", s, err)
	}
	return u, nil
}

// Date is a date value: days since the Unix epoch (1970-01-01 is 0), negative before it.
type Date int32

// Time returns midnight UTC of d.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String returns yyyy-mm-dd.
func (d Date) String() string {
	y, m, day := d.Time().Date()
	if y < 0 {
		return fmt.Sprintf("-%04d-%02d-%02d", -y, m, day)
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, day)
}

// Decimal is a decimal value, exactly: Unscaled × 10^-Scale (1.50 is {150, 2}).
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// Rat returns d as a rational number.
func (d Decimal) Rat() *big.Rat {
	r := new(big.Rat).SetInt(d.Unscaled)
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(math.Abs(float64(d.Scale)))), nil)
	if d.Scale >= 0 {
		return r.Quo(r, new(big.Rat).SetInt(p))
	}
	return r.Mul(r, new(big.Rat).SetInt(p))
}

// String renders d as the server does (Java's BigDecimal.toString): 1.50, 1.2E+10.
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
		switch n := len(digits) - int(d.Scale); {
		case d.Scale == 0:
			return sign + digits
		case n > 0:
			return sign + digits[:n] + "." + digits[n:]
		default:
			return sign + "0." + strings.Repeat("0", -n) + digits
		}
	}
	mant := digits[:1]
	if len(digits) > 1 {
		mant += "." + digits[1:]
	}
	return fmt.Sprintf("%s%sE%+d", sign, mant, adjusted)
}

// ParseDecimal parses a decimal number exactly (1.50, -0.001, 1.2E+10), keeping its scale.
func ParseDecimal(s string) (Decimal, error) {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			return Decimal{}, fmt.Errorf("%q is not a decimal: bad exponent", s)
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	u, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return Decimal{}, fmt.Errorf("%q is not a decimal", s)
	}
	scale := int64(len(frac)) - exp
	if scale < math.MinInt32 || scale > math.MaxInt32 {
		return Decimal{}, fmt.Errorf("%q is not a decimal: scale out of range", s)
	}
	return Decimal{Unscaled: u, Scale: int32(scale)}, nil
}

// decodeValue returns the Go value of a client API value (see Result.Rows).
func decodeValue(v *kvnodepb.Value) (any, error) {
	switch k := v.GetKind().(type) {
	case *kvnodepb.Value_Text:
		return k.Text, nil
	case *kvnodepb.Value_Ascii:
		return k.Ascii, nil
	case *kvnodepb.Value_Int:
		return k.Int, nil
	case *kvnodepb.Value_Bigint:
		return k.Bigint, nil
	case *kvnodepb.Value_Smallint:
		if k.Smallint < math.MinInt16 || k.Smallint > math.MaxInt16 {
			return nil, fmt.Errorf("smallint %d is out of range", k.Smallint)
		}
		return int16(k.Smallint), nil
	case *kvnodepb.Value_Tinyint:
		if k.Tinyint < math.MinInt8 || k.Tinyint > math.MaxInt8 {
			return nil, fmt.Errorf("tinyint %d is out of range", k.Tinyint)
		}
		return int8(k.Tinyint), nil
	case *kvnodepb.Value_Double:
		return k.Double, nil
	case *kvnodepb.Value_Float:
		return k.Float, nil
	case *kvnodepb.Value_Boolean:
		return k.Boolean, nil
	case *kvnodepb.Value_Blob:
		return k.Blob, nil
	case *kvnodepb.Value_Timestamp:
		return time.UnixMilli(k.Timestamp).UTC(), nil
	case *kvnodepb.Value_Uuid:
		return ParseUUID(k.Uuid)
	case *kvnodepb.Value_Timeuuid:
		return ParseUUID(k.Timeuuid)
	case *kvnodepb.Value_Inet:
		a, err := netip.ParseAddr(k.Inet)
		if err != nil {
			return nil, fmt.Errorf("inet: %w", err)
		}
		return a, nil
	case *kvnodepb.Value_Date:
		return Date(k.Date), nil
	case *kvnodepb.Value_Time:
		if k.Time < 0 || k.Time >= int64(24*time.Hour) {
			return nil, fmt.Errorf("time %d ns is outside a day", k.Time)
		}
		return time.Duration(k.Time), nil
	case *kvnodepb.Value_Decimal:
		return ParseDecimal(k.Decimal)
	case *kvnodepb.Value_Varint:
		n, ok := new(big.Int).SetString(k.Varint, 10)
		if !ok {
			return nil, fmt.Errorf("varint %q is not a base-10 integer", k.Varint)
		}
		return n, nil
	case *kvnodepb.Value_SetText:
		return append([]string{}, k.SetText.GetValues()...), nil
	case *kvnodepb.Value_ListText:
		return append([]string{}, k.ListText.GetValues()...), nil
	case *kvnodepb.Value_MapTextText:
		m := make(map[string]string, len(k.MapTextText.GetEntries()))
		for key, val := range k.MapTextText.GetEntries() {
			m[key] = val
		}
		return m, nil
	case *kvnodepb.Value_MapTextBlob:
		m := make(map[string][]byte, len(k.MapTextBlob.GetEntries()))
		for key, val := range k.MapTextBlob.GetEntries() {
			m[key] = val
		}
		return m, nil
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("value of unknown kind %T", k)
	}
}
