package schema

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// Aggregate is one aggregate of a SELECT list, COUNT(*), count(x), min(x), max(x), sum(x)
// or avg(x), as Cassandra 4.1 computes them: count gives a bigint, the others x's type; sum
// and avg of integers wrap around on overflow as Java's arithmetic does (avg accumulates in
// 64 bits, as 4.1's AvgFunctionForInt32 and others do), of float and double use compensated
// (Kahan) summation, of decimal and varint are exact; sum and avg of no rows are 0, min and
// max of no rows null. Null values are skipped.
type Aggregate struct {
	Name string // count, min, max, sum or avg
	Star bool   // COUNT(*)
	Type Type   // the result's type
	arg  *expr  // nil for COUNT(*)
}

// aggregateResultType returns the type of aggregate name over arg's type, or an error
// naming the mismatch as Cassandra's signature check does.
func aggregateResultType(name string, arg Type) (Type, error) {
	switch name {
	case "count":
		return TypeBigInt, nil
	case "min", "max":
		return arg, nil
	}
	switch arg {
	case TypeInt, TypeBigInt, TypeSmallInt, TypeTinyInt, TypeFloat, TypeDouble, TypeDecimal, TypeVarint:
		return arg, nil
	}
	return TypeInvalid, fmt.Errorf("invalid call to function %s: its argument is of type %s; %s takes tinyint, smallint, int, bigint, float, double, decimal or varint", name, arg, name)
}

// Accumulator folds the values of one aggregate over a group of rows.
type Accumulator struct {
	a     *Aggregate
	count int64
	best  []byte   // min, max
	i     int64    // integer sum (wraps as Java's does)
	f, c  float64  // Kahan sum and compensation
	big   *big.Int // varint sum, decimal unscaled sum
	scale int32    // decimal sum's scale
}

// NewAccumulator returns an empty accumulator of a.
func (a *Aggregate) NewAccumulator() *Accumulator { return &Accumulator{a: a} }

// Add folds in one row's value of the aggregate's argument (nil for null; ignored by
// COUNT(*), which counts the row).
func (x *Accumulator) Add(v []byte) error {
	a := x.a
	if a.Star {
		x.count++
		return nil
	}
	if v == nil {
		return nil
	}
	x.count++
	switch a.Name {
	case "count":
		return nil
	case "min", "max":
		if x.best == nil {
			x.best = v
			return nil
		}
		c := a.Type.Compare(v, x.best)
		if a.Name == "min" && c < 0 || a.Name == "max" && c > 0 {
			x.best = v
		}
		return nil
	}
	switch a.Type {
	case TypeInt:
		x.i += int64(int32(binary.BigEndian.Uint32(v)))
	case TypeBigInt:
		x.i += int64(binary.BigEndian.Uint64(v))
	case TypeSmallInt:
		x.i += int64(int16(binary.BigEndian.Uint16(v)))
	case TypeTinyInt:
		x.i += int64(int8(v[0]))
	case TypeFloat:
		x.kahan(float64(math.Float32frombits(binary.BigEndian.Uint32(v))))
	case TypeDouble:
		x.kahan(math.Float64frombits(binary.BigEndian.Uint64(v)))
	case TypeVarint, TypeDecimal:
		d, err := a.Type.Decode(v)
		if err != nil {
			return err
		}
		if x.big == nil {
			x.big = new(big.Int)
		}
		if a.Type == TypeVarint {
			x.big.Add(x.big, d.(*big.Int))
			return nil
		}
		dec := d.(Decimal)
		u := new(big.Int).Set(dec.Unscaled)
		switch {
		case dec.Scale > x.scale:
			x.big.Mul(x.big, pow10(int64(dec.Scale-x.scale)))
			x.scale = dec.Scale
		case dec.Scale < x.scale:
			u.Mul(u, pow10(int64(x.scale-dec.Scale)))
		}
		x.big.Add(x.big, u)
	}
	return nil
}

// kahan adds f to the compensated sum.
func (x *Accumulator) kahan(f float64) {
	y := f - x.c
	t := x.f + y
	x.c = (t - x.f) - y
	x.f = t
}

// Result returns the aggregate's value over what was added.
func (x *Accumulator) Result() []byte {
	a := x.a
	switch a.Name {
	case "count":
		return EncodeBigInt(x.count)
	case "min", "max":
		return x.best
	}
	avg := a.Name == "avg"
	n := x.count
	switch a.Type {
	case TypeInt, TypeBigInt, TypeSmallInt, TypeTinyInt:
		s := x.i
		if avg && n > 0 {
			s /= n
		}
		switch a.Type {
		case TypeInt:
			return EncodeInt(int32(s))
		case TypeBigInt:
			return EncodeBigInt(s)
		case TypeSmallInt:
			return EncodeSmallInt(int16(s))
		}
		return EncodeTinyInt(int8(s))
	case TypeFloat, TypeDouble:
		s := x.f
		if avg && n > 0 {
			s /= float64(n)
		}
		if a.Type == TypeFloat {
			return EncodeFloat(float32(s))
		}
		return EncodeDouble(s)
	case TypeVarint:
		s := new(big.Int)
		if x.big != nil {
			s.Set(x.big)
		}
		if avg && n > 0 {
			s.Quo(s, big.NewInt(n))
		}
		return EncodeVarint(s)
	case TypeDecimal:
		s := new(big.Int)
		if x.big != nil {
			s.Set(x.big)
		}
		if avg && n > 0 {
			s = quoHalfEven(s, big.NewInt(n))
		}
		return EncodeDecimal(Decimal{Unscaled: s, Scale: x.scale})
	}
	return nil
}

// quoHalfEven returns a/b rounded half to even, as BigDecimal.divide(b, HALF_EVEN) keeps
// the dividend's scale.
func quoHalfEven(a, b *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	if r.Sign() == 0 {
		return q
	}
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	switch c := twice.Cmp(new(big.Int).Abs(b)); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		if (a.Sign() < 0) != (b.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}
