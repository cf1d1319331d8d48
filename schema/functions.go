package schema

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
)

// Cassandra 4.1's native scalar functions, as values of INSERT, UPDATE,
// DELETE and WHERE (evaluated when the statement is bound, once per call
// site) and as selectors (evaluated per row): the time functions (now(),
// currentTimestamp(), toDate(...), minTimeuuid(...) ...), uuid(),
// blobAs<type>/<type>AsBlob, token(...) and CAST.

// function is one overload of a native function.
type function struct {
	name string // as Cassandra names it, lower-case: "totimestamp"
	args []Type
	ret  Type
	call func(b *binder, args [][]byte) ([]byte, error)
}

// signature returns name(types).
func (f *function) signature() string {
	names := make([]string, len(f.args))
	for i, a := range f.args {
		names[i] = a.String()
	}
	return "system." + f.name + "(" + strings.Join(names, ", ") + ")"
}

// functions returns the overloads of the function called name (lower-cased
// unless quoted), none for a name kvnode does not know.
func functions(name string) []function {
	nullary := func(ret Type, call func(b *binder) []byte) []function {
		return []function{{name: name, ret: ret, call: func(b *binder, _ [][]byte) ([]byte, error) { return call(b), nil }}}
	}
	unary := func(arg, ret Type, call func(v []byte) []byte) function {
		return function{name: name, args: []Type{arg}, ret: ret, call: func(_ *binder, a [][]byte) ([]byte, error) {
			if len(a[0]) == 0 { // null, or an empty value: null, as Cassandra
				return nil, nil
			}
			return call(a[0]), nil
		}}
	}
	switch name {
	case "now", "currenttimeuuid":
		return nullary(TypeTimeUUID, func(b *binder) []byte { return EncodeUUID(b.timeUUID()) })
	case "uuid":
		return nullary(TypeUUID, func(*binder) []byte {
			var u UUID
			_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
			u[6], u[8] = u[6]&0x0F|0x40, u[8]&0x3F|0x80
			return EncodeUUID(u)
		})
	case "currenttimestamp":
		return nullary(TypeTimestamp, func(b *binder) []byte { return EncodeTimestamp(b.time()) })
	case "currentdate":
		return nullary(TypeDate, func(b *binder) []byte { return EncodeDate(DateOf(b.time().UTC())) })
	case "currenttime":
		return nullary(TypeTime, func(b *binder) []byte {
			t := b.time().UTC()
			v, _ := EncodeTime(t.Sub(t.Truncate(24 * time.Hour)))
			return v
		})
	case "mintimeuuid", "maxtimeuuid":
		max := name == "maxtimeuuid"
		return []function{unary(TypeTimestamp, TypeTimeUUID, func(v []byte) []byte { return boundTimeUUID(millisOf(TypeTimestamp, v), max) })}
	case "dateof":
		return []function{unary(TypeTimeUUID, TypeTimestamp, func(v []byte) []byte { return EncodeBigInt(millisOf(TypeTimeUUID, v)) })}
	case "unixtimestampof":
		return []function{unary(TypeTimeUUID, TypeBigInt, func(v []byte) []byte { return EncodeBigInt(millisOf(TypeTimeUUID, v)) })}
	case "todate":
		var fs []function
		for _, t := range []Type{TypeTimeUUID, TypeTimestamp} {
			fs = append(fs, unary(t, TypeDate, func(v []byte) []byte { return dateOfMillis(millisOf(t, v)) }))
		}
		return fs
	case "totimestamp":
		var fs []function
		for _, t := range []Type{TypeTimeUUID, TypeDate} {
			fs = append(fs, unary(t, TypeTimestamp, func(v []byte) []byte { return EncodeBigInt(millisOf(t, v)) }))
		}
		return fs
	case "tounixtimestamp":
		var fs []function
		for _, t := range []Type{TypeTimeUUID, TypeTimestamp, TypeDate} {
			fs = append(fs, unary(t, TypeBigInt, func(v []byte) []byte { return EncodeBigInt(millisOf(t, v)) }))
		}
		return fs
	}
	if typ, ok := strings.CutPrefix(name, "blobas"); ok {
		if t, err := LookupType(typ); err == nil && t != TypeBlob {
			return []function{{name: name, args: []Type{TypeBlob}, ret: t, call: func(_ *binder, a [][]byte) ([]byte, error) {
				if a[0] != nil && t.Check(a[0]) != nil {
					return nil, fmt.Errorf("in call to function system.%s, value 0x%x is not a valid binary representation for type %s", name, a[0], t)
				}
				return a[0], nil
			}}}
		}
	}
	if typ, ok := strings.CutSuffix(name, "asblob"); ok {
		if t, err := LookupType(typ); err == nil && t != TypeBlob {
			return []function{{name: name, args: []Type{t}, ret: TypeBlob, call: func(_ *binder, a [][]byte) ([]byte, error) { return a[0], nil }}}
		}
	}
	return nil
}

// time returns the time of the statement's execution.
func (b *binder) time() time.Time {
	if b.now.IsZero() {
		b.now = time.Now()
	}
	return b.now
}

// timeUUID returns a new timeuuid of the statement's time: random clock
// sequence and node bits (the node's multicast bit set, as RFC 4122 asks
// of random nodes) make each call's distinct.
func (b *binder) timeUUID() UUID {
	var r [8]byte
	_, _ = rand.Read(r[:])
	node := binary.BigEndian.Uint64(r[:])
	return MakeTimeUUID(b.time(), uint16(node>>48), node&(1<<48-1)|1<<40)
}

// millisOf returns the milliseconds since the Unix epoch of a timeuuid,
// timestamp or date value (non-empty and valid).
func millisOf(t Type, v []byte) int64 {
	switch t {
	case TypeTimeUUID:
		ts := int64(UUIDTimestampBits(v)&(1<<60-1)) - uuidEpochOffset
		return floorDiv(ts, 10_000)
	case TypeDate:
		return (int64(binary.BigEndian.Uint32(v)) - dateEpoch) * 86_400_000
	}
	return int64(binary.BigEndian.Uint64(v))
}

// dateOfMillis returns the date of a time in milliseconds since the epoch,
// clamped to the dates the encoding holds.
func dateOfMillis(ms int64) []byte {
	return EncodeDate(Date(max(min(floorDiv(ms, 86_400_000), int64(MaxDate)), int64(MinDate))))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// boundTimeUUID returns the smallest (max false) or largest timeuuid of the
// millisecond ms, as Cassandra's minTimeuuid and maxTimeuuid.
func boundTimeUUID(ms int64, max bool) []byte {
	ts := uint64(ms*10_000 + uuidEpochOffset)
	low := uint64(0x8080_8080_8080_8080)
	if max {
		ts += 9_999
		low = 0x7f7f_7f7f_7f7f_7f7f
	}
	var u [16]byte
	msb := ts<<32 | (ts>>32&0xFFFF)<<16 | 0x1000 | ts>>48&0x0FFF
	binary.BigEndian.PutUint64(u[:8], msb)
	binary.BigEndian.PutUint64(u[8:], low)
	return u[:]
}

// expr is a compiled value: a function call, CAST, column, literal or
// marker, its type, and the name Cassandra gives it as a selector.
type expr struct {
	typ  Type
	name string
	// One of:
	value   []byte  // a literal, or a bound marker (known: its value is known)
	known   bool    // value is set
	col     *Column // a column's value, or its WRITETIME or TTL (kind)
	kind    cql.SelectKind
	isToken bool // token(k...)
	f       *function
	args    []*expr
	cast    func([]byte) ([]byte, error)
}

// compiler compiles the function calls of one statement on table t.
type compiler struct {
	t        *Table
	b        *binder
	selector bool // a SELECT list: columns may be arguments
}

// compile compiles term x; want is the type its place asks for, or
// TypeInvalid when any will do (a function's argument of several overloads).
func (c *compiler) compile(x cql.Term, want Type) (*expr, error) {
	switch x := x.(type) {
	case *cql.FuncCall:
		return c.call(x, want)
	case *cql.Cast:
		return c.castExpr(x)
	case *cql.ColumnRef:
		col, err := column(c.t, x.Column)
		if err != nil {
			return nil, &PosError{Pos: x.Pos(), Err: err}
		}
		return &expr{typ: col.Type, name: col.Name, col: col}, nil
	case *cql.Literal:
		e := &expr{typ: want, name: cql.Format(x)}
		if x.Kind == cql.LitBind {
			v, ok, err := c.b.value(x, nil, "function argument")
			if err != nil {
				return nil, err
			}
			if ok && v != nil {
				if err := want.Check(v); err != nil {
					return nil, posErrorf(x.Pos(), "bind marker %d (%s): %w", x.Index, want, err)
				}
			}
			e.value, e.known = v, ok
			return e, nil
		}
		v, err := LiteralValue(want, x)
		if err != nil {
			return nil, &PosError{Pos: x.Pos(), Err: err}
		}
		e.value, e.known = v, true
		return e, nil
	}
	return nil, posErrorf(x.Pos(), "%s cannot be a function's argument", describeTerm(x))
}

// call compiles a function call: it picks the overload whose argument
// types the arguments have (a literal or marker fits any type it can be).
func (c *compiler) call(x *cql.FuncCall, want Type) (*expr, error) {
	display := x.Name
	if x.System {
		display = "system." + x.Name
	}
	switch x.Name {
	case "token":
		return c.tokenExpr(x)
	case "writetime", "ttl":
		if !x.System && c.selector && len(x.Args) == 1 {
			if ref, ok := x.Args[0].(*cql.ColumnRef); ok {
				col, err := column(c.t, ref.Column)
				if err != nil {
					return nil, &PosError{Pos: ref.Pos(), Err: err}
				}
				kind, typ := cql.SelectWritetime, TypeBigInt
				if x.Name == "ttl" {
					kind, typ = cql.SelectTTL, TypeInt
				}
				if col.Kind != RegularColumn {
					return nil, posErrorf(x.Pos(), "cannot use %s on %s column %s: primary key columns have no write time or TTL of their own", selectFuncName(kind), col.Kind, cql.QuoteIdent(col.Name))
				}
				if col.Type == TypeCounter { // Cassandra's words
					return nil, posErrorf(x.Pos(), "Cannot use selection function %s on counter column %s", x.Name, col.Name)
				}
				return &expr{typ: typ, name: x.Name + "(" + col.Name + ")", col: col, kind: kind}, nil
			}
		}
		return nil, posErrorf(x.Pos(), "%s(column) is only a selector", strings.ToUpper(x.Name))
	case "tojson", "fromjson":
		return c.jsonCall(x, want, display)
	}
	fs := functions(x.Name)
	if len(fs) == 0 {
		return nil, posErrorf(x.Pos(), "unknown function %s", display)
	}
	// Compile the arguments that have a type of their own.
	args := make([]*expr, len(x.Args))
	for i, a := range x.Args {
		if _, typeless := a.(*cql.Literal); typeless {
			continue
		}
		e, err := c.compile(a, TypeInvalid)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	// The overloads the arguments fit exactly, else those whose argument types take the
	// arguments' values (Cassandra's WEAKLY_ASSIGNABLE: a timestamp for a bigint).
	var fits []*function
	for _, exact := range []bool{true, false} {
		for i := range fs {
			f := &fs[i]
			if len(f.args) != len(x.Args) {
				continue
			}
			ok := true
			for j, a := range x.Args {
				if args[j] != nil {
					ok = ok && (args[j].typ == f.args[j] || !exact && assignable(f.args[j], args[j].typ))
				} else if lit := a.(*cql.Literal); lit.Kind != cql.LitBind {
					_, mismatch, err := literalValue(f.args[j], lit)
					ok = ok && !mismatch && err == nil
				}
			}
			if ok {
				fits = append(fits, f)
			}
		}
		if len(fits) > 0 {
			break
		}
	}
	if len(fits) != 1 {
		sigs := make([]string, len(fs))
		for i := range fs {
			sigs[i] = fs[i].signature()
		}
		if len(fits) > 1 {
			return nil, posErrorf(x.Pos(), "ambiguous call to function %s: its arguments fit %s; give an argument of one type (a column or a function's value)", display, strings.Join(sigs, " and "))
		}
		if len(fs) == 1 && len(fs[0].args) != len(x.Args) {
			return nil, posErrorf(x.Pos(), "function %s takes %d arguments, not %d: %s", display, len(fs[0].args), len(x.Args), sigs[0])
		}
		return nil, posErrorf(x.Pos(), "invalid arguments to function %s(%s): it is %s", display, c.argTypes(x, args), strings.Join(sigs, " or "))
	}
	f := fits[0]
	names := make([]string, len(args))
	for j, a := range x.Args {
		if args[j] == nil {
			e, err := c.compile(a, f.args[j])
			if err != nil {
				return nil, err
			}
			args[j] = e
			if lit := a.(*cql.Literal); lit.Kind == cql.LitBind && c.b.check {
				c.b.argVar(lit, c.t, fmt.Sprintf("arg%d(system.%s)", j, f.name), f.args[j])
			}
		}
		names[j] = args[j].name
	}
	if want != TypeInvalid && !assignable(want, f.ret) {
		return nil, posErrorf(x.Pos(), "function %s returns %s, which cannot be assigned to %s", display, f.ret, want)
	}
	return &expr{typ: f.ret, name: "system." + f.name + "(" + strings.Join(names, ", ") + ")", f: f, args: args}, nil
}

// argTypes describes the arguments of a call for an error.
func (c *compiler) argTypes(x *cql.FuncCall, args []*expr) string {
	s := make([]string, len(x.Args))
	for i, a := range x.Args {
		if args[i] != nil {
			s[i] = args[i].typ.String()
		} else {
			s[i] = describeTerm(a)
		}
	}
	return strings.Join(s, ", ")
}

// assignable reports whether a value of type got can be stored where want
// is expected, as Cassandra's isValueCompatibleWith allows.
func assignable(want, got Type) bool {
	switch {
	case want == got, want == TypeBlob:
		return true
	case want == TypeUUID:
		return got == TypeTimeUUID
	case want == TypeText:
		return got == TypeASCII
	case want == TypeBigInt:
		return got == TypeTimestamp
	case want == TypeTimestamp:
		return got == TypeBigInt
	}
	return false
}

// tokenExpr compiles token(k1, ...), a selector of the partition's token.
func (c *compiler) tokenExpr(x *cql.FuncCall) (*expr, error) {
	if !c.selector {
		return nil, posErrorf(x.Pos(), "token() is only a selector: token() restrictions and values are not supported")
	}
	names := make([]string, len(c.t.PartitionKey))
	for i, k := range c.t.PartitionKey {
		names[i] = k.Name
	}
	ok := len(x.Args) == len(c.t.PartitionKey)
	for i, a := range x.Args {
		ref, isRef := a.(*cql.ColumnRef)
		ok = ok && isRef && ref.Column.Name == names[i]
	}
	if !ok {
		return nil, posErrorf(x.Pos(), "token() takes the partition key columns of table %s in order: token(%s)", c.t.QualifiedName(), columnList(c.t.PartitionKey))
	}
	return &expr{typ: TypeBigInt, name: "system.token(" + strings.Join(names, ", ") + ")", isToken: true}, nil
}

// castExpr compiles CAST(x AS type) with Cassandra 4.1's conversions.
func (c *compiler) castExpr(x *cql.Cast) (*expr, error) {
	to, err := LookupType(x.Type.Name)
	if err != nil {
		return nil, &PosError{Pos: x.Type.Pos(), Err: err}
	}
	var arg *expr
	if lit, ok := x.Arg.(*cql.Literal); ok {
		if lit.Kind == cql.LitBind {
			return nil, posErrorf(lit.Pos(), "CAST of a bind marker is not supported: its type would be unknown")
		}
		if arg, err = c.compile(x.Arg, to); err != nil {
			return nil, err
		}
	} else if arg, err = c.compile(x.Arg, TypeInvalid); err != nil {
		return nil, err
	}
	conv := castFunc(arg.typ, to)
	if conv == nil {
		return nil, posErrorf(x.Pos(), "cannot CAST %s from %s to %s", arg.name, arg.typ, to)
	}
	return &expr{typ: to, name: "cast(" + arg.name + " as " + to.String() + ")", args: []*expr{arg}, cast: conv}, nil
}

// eval computes e; cell gives a column's value, WRITETIME or TTL in the
// current row (nil outside a SELECT list), token the read's partition token.
func (e *expr) eval(b *binder, cell func(*Column, cql.SelectKind) []byte, token func() int64) ([]byte, error) {
	switch {
	case e.known:
		return e.value, nil
	case e.col != nil:
		return cell(e.col, e.kind), nil
	case e.isToken:
		return EncodeBigInt(token()), nil
	case e.f == nil && e.cast == nil: // an unset marker
		return nil, nil
	}
	args := make([][]byte, len(e.args))
	for i, a := range e.args {
		v, err := a.eval(b, cell, token)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	if e.cast != nil {
		if args[0] == nil {
			return nil, nil
		}
		return e.cast(args[0])
	}
	return e.f.call(b, args)
}

// hasUnknown reports whether e depends on a marker without a value (only
// when the binder checks) or on a row.
func (e *expr) hasUnknown() bool {
	if e.f == nil && e.cast == nil {
		return !e.known
	}
	for _, a := range e.args {
		if a.hasUnknown() {
			return true
		}
	}
	return false
}

// funcTerm returns the value of function call x for column col, as
// binder.term does for literals.
func (b *binder) funcTerm(t *Table, col *Column, x cql.Term) ([]byte, bool, error) {
	c := &compiler{t: t, b: b}
	e, err := c.compile(x, col.Type)
	if pe, ok := err.(*PosError); ok {
		return nil, false, &PosError{Pos: pe.Pos, Err: fmt.Errorf("column %s: %w", cql.QuoteIdent(col.Name), pe.Err)}
	}
	if err != nil {
		return nil, false, fmt.Errorf("column %s: %w", cql.QuoteIdent(col.Name), err)
	}
	if b.check || e.hasUnknown() {
		return nil, false, nil
	}
	v, err := e.eval(b, nil, nil)
	if err != nil {
		return nil, false, &PosError{Pos: x.Pos(), Err: err}
	}
	if v != nil {
		if err := col.Check(v); err != nil {
			return nil, false, posErrorf(x.Pos(), "column %s %s: %w", cql.QuoteIdent(col.Name), col.Type, err)
		}
	}
	return v, true, nil
}

// castFunc returns the conversion CAST(x AS to) applies to a non-null value
// of type from, nil when 4.1 has none.
func castFunc(from, to Type) func([]byte) ([]byte, error) {
	if from == to {
		return func(v []byte) ([]byte, error) { return v, nil }
	}
	if to == TypeText || to == TypeASCII {
		switch from {
		case TypeBlob, TypeText:
			return nil
		}
		return func(v []byte) ([]byte, error) { return []byte(castText(from, v)), nil }
	}
	switch {
	case isNumeric(from) && isNumeric(to):
		return func(v []byte) ([]byte, error) { return castNumber(from, to, v), nil }
	case to == TypeDate && (from == TypeTimeUUID || from == TypeTimestamp):
		return func(v []byte) ([]byte, error) { return dateOfMillis(millisOf(from, v)), nil }
	case to == TypeTimestamp && (from == TypeTimeUUID || from == TypeDate):
		return func(v []byte) ([]byte, error) { return EncodeBigInt(millisOf(from, v)), nil }
	}
	return nil
}

func isNumeric(t Type) bool {
	switch t {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeFloat, TypeDouble, TypeDecimal, TypeVarint:
		return true
	}
	return false
}

// castText renders v as Cassandra's toCQLLiteral does for CAST(x AS text).
func castText(from Type, v []byte) string {
	d, _ := from.Decode(v)
	switch x := d.(type) {
	case float64:
		return javaDouble(x, 64)
	case float32:
		return javaDouble(float64(x), 32)
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000Z")
	case time.Duration:
		return fmt.Sprintf("%02d:%02d:%02d.%09d", x/time.Hour, x%time.Hour/time.Minute, x%time.Minute/time.Second, x%time.Second)
	case netip.Addr:
		return x.String()
	}
	return fmt.Sprint(d)
}

// javaDouble formats f as Java's Double.toString (bits 64) or
// Float.toString (bits 32): 1.0, 0.001, 1.0E7, 1.5E-4.
func javaDouble(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// castNumber converts between numeric types as Java's Number.xxxValue
// conversions do: integers wrap, floating point saturates then wraps to
// the narrow integers, decimal comes from the double's decimal form.
func castNumber(from, to Type, v []byte) []byte {
	d, _ := from.Decode(v)
	var i int64     // the value as a Java long (for the integer targets)
	var i32 int64   // as a Java int, for byte, short and int
	var f float64   // as a double
	var bi *big.Int // exactly, for varint and decimal sources
	switch x := d.(type) {
	case int8:
		i, f = int64(x), float64(x)
	case int16:
		i, f = int64(x), float64(x)
	case int32:
		i, f = int64(x), float64(x)
	case int64:
		i, f = x, float64(x)
	case float32:
		f = float64(x)
		i, i32 = saturate(f, math.MinInt64, math.MaxInt64), saturate(f, math.MinInt32, math.MaxInt32)
	case float64:
		f = x
		i, i32 = saturate(f, math.MinInt64, math.MaxInt64), saturate(f, math.MinInt32, math.MaxInt32)
	case *big.Int:
		bi = x
		f, _ = new(big.Float).SetInt(x).Float64()
	case Decimal:
		r := x.Rat()
		bi = new(big.Int).Quo(r.Num(), r.Denom())
		f, _ = r.Float64()
	}
	if bi != nil {
		i = int64(new(big.Int).And(bi, new(big.Int).SetUint64(math.MaxUint64)).Uint64())
	}
	switch from {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeVarint, TypeDecimal:
		i32 = i
	}
	switch to {
	case TypeTinyInt:
		return EncodeTinyInt(int8(i32))
	case TypeSmallInt:
		return EncodeSmallInt(int16(i32))
	case TypeInt:
		return EncodeInt(int32(i32))
	case TypeBigInt:
		return EncodeBigInt(i)
	case TypeFloat:
		return EncodeFloat(float32(f))
	case TypeDouble:
		return EncodeDouble(f)
	case TypeVarint:
		return EncodeVarint(big.NewInt(i))
	}
	// decimal: BigDecimal.valueOf(double), the double's shortest decimal form
	dec, err := ParseDecimal(strings.Replace(javaDouble(f, 64), "E", "e", 1))
	if err != nil { // NaN or Infinity, which BigDecimal refuses: Cassandra fails the cast
		return nil
	}
	return EncodeDecimal(dec)
}

func saturate(f float64, lo, hi int64) int64 {
	switch {
	case f != f:
		return 0
	case f <= float64(lo):
		return lo
	case f >= float64(hi):
		return hi
	}
	return int64(f)
}

// argVar records the variable of a marker that is a function's argument.
func (b *binder) argVar(lit *cql.Literal, t *Table, name string, typ Type) {
	if b.args == nil {
		b.args = make(map[int]Variable)
	}
	b.args[lit.Index] = Variable{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: typ}
}

// tokenOf returns the Murmur3 token of a partition key.
func tokenOf(pk [][]byte) int64 {
	return partitioner.Token(partitioner.AppendKey(nil, pk))
}

// Eval returns the value of the SELECT list's item i, a function call or
// CAST (Funcs[i] cql.SelectExpr), in one row: cell gives the value of a
// column in the row (kind cql.SelectColumn), or its WRITETIME or TTL
// (bigint and int encodings), nil for null.
func (r *Read) Eval(i int, cell func(c *Column, kind cql.SelectKind) []byte) ([]byte, error) {
	v, err := r.exprs[i].eval(r.binder, cell, func() int64 { return tokenOf(r.PartitionKey) })
	if err == nil && v != nil {
		err = r.exprs[i].typ.Check(v)
	}
	if err != nil {
		return nil, fmt.Errorf("selector %s: %w", r.exprs[i].name, err)
	}
	return v, nil
}

// SystemSelector compiles and evaluates, at now, a function call or CAST of a SELECT list over
// system table keyspace.table, whose rows schema does not hold: one whose arguments are literals
// and other such calls, no column and no bind marker, as in `SELECT now() FROM system.local`,
// the query drivers and tools send to check a connection. It returns the result column, named
// as Cassandra names it, and the value, the same in every row.
func SystemSelector(keyspace, table string, x cql.Term, now time.Time) (ResultColumn, []byte, error) {
	t := &Table{Keyspace: keyspace, Name: table}
	b := &binder{now: now, table: t}
	c := &compiler{t: t, b: b, selector: true}
	e, err := c.compile(x, TypeInvalid)
	if err != nil {
		return ResultColumn{}, nil, err
	}
	v, err := e.eval(b, func(*Column, cql.SelectKind) []byte { return nil }, func() int64 { return 0 })
	if err == nil && v != nil {
		err = e.typ.Check(v)
	}
	if err != nil {
		return ResultColumn{}, nil, fmt.Errorf("selector %s: %w", e.name, err)
	}
	return ResultColumn{Name: e.name, Type: e.typ}, v, nil
}

// jsonCall compiles toJson(x), a selector whose value is x's JSON (Type.JSON), and
// fromJson(s), a value whose type is the one wanted where it stands (FromJSON).
func (c *compiler) jsonCall(x *cql.FuncCall, want Type, display string) (*expr, error) {
	if len(x.Args) != 1 {
		return nil, posErrorf(x.Pos(), "function %s takes 1 argument, not %d", display, len(x.Args))
	}
	if x.Name == "tojson" {
		if !c.selector {
			return nil, posErrorf(x.Pos(), "toJson() may only be used within the selection clause of SELECT statements")
		}
		arg, err := c.compile(x.Args[0], TypeInvalid)
		if err != nil {
			return nil, err
		}
		if arg.typ == TypeInvalid {
			return nil, posErrorf(x.Pos(), "toJson(%s): the type of its argument is unknown; give a column, a function's value or a CAST", cql.Format(x.Args[0]))
		}
		typ := arg.typ
		f := &function{name: "tojson", args: []Type{typ}, ret: TypeText, call: func(_ *binder, args [][]byte) ([]byte, error) {
			return typ.JSON(args[0])
		}}
		return &expr{typ: TypeText, name: "system.tojson(" + arg.name + ")", f: f, args: []*expr{arg}}, nil
	}
	if c.selector {
		return nil, posErrorf(x.Pos(), "fromJson() cannot be used in the selection clause of a SELECT statement")
	}
	if want == TypeInvalid {
		return nil, posErrorf(x.Pos(), "fromJson() needs the type of the column it gives a value for")
	}
	arg, err := c.compile(x.Args[0], TypeText)
	if err != nil {
		return nil, err
	}
	if lit, ok := x.Args[0].(*cql.Literal); ok && lit.Kind == cql.LitBind && c.b.check {
		c.b.argVar(lit, c.t, "arg0(system.fromjson)", TypeText)
	}
	if arg.typ != TypeText && arg.typ != TypeASCII {
		return nil, posErrorf(x.Pos(), "fromJson() takes a text argument, not %s", arg.typ)
	}
	f := &function{name: "fromjson", args: []Type{TypeText}, ret: want, call: func(_ *binder, args [][]byte) ([]byte, error) {
		if args[0] == nil {
			return nil, nil
		}
		return FromJSON(want, string(args[0]))
	}}
	return &expr{typ: want, name: "system.fromjson(" + arg.name + ")", f: f, args: []*expr{arg}}, nil
}
