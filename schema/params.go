package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// The parametric types: frozen collections and tuples. A frozen value is one cell holding the
// whole value in the native protocol's encoding:
//
//	frozen<list<T>>, frozen<set<T>>
//	           4-byte big-endian count n, then n elements, each a 4-byte big-endian length and
//	           the element's encoding; a set's elements distinct and ascending in T's order
//	frozen<map<K, V>>
//	           4-byte count n, then n (key, value) pairs, each a 4-byte length and the bytes;
//	           keys distinct and ascending in K's order
//	frozen<tuple<T1, ..., Tn>>
//	           n components, each a 4-byte length and the bytes, or length -1 for null
//
// Nulls are refused inside collections (as in Cassandra) and allowed as tuple components. A
// tuple value has exactly as many components as its type (Cassandra accepts fewer, meaning
// nulls; kvnode pads literals and refuses short bound values so that every value has one
// encoding). Inside a frozen value every collection is frozen, as in Cassandra.

// ParamKind is the kind of a parametric type.
type ParamKind uint8

// The parametric kinds. NotParametric is the scalar types'.
const (
	NotParametric ParamKind = iota
	ParamList
	ParamSet
	ParamMap
	ParamTuple
	ParamUDT // a frozen user-defined type (see udt.go)
)

// typeNode is a parsed type: a scalar, or a parametric kind with its element types.
type typeNode struct {
	kind   ParamKind
	scalar Type
	elems  []*typeNode
	// udt is a user-defined type's keyspace, name and field names (ParamUDT; elems are the
	// fields' types).
	udt *udtName
	// multiCell is set on a non-frozen collection (a column's top-level type only).
	multiCell bool
}

// canonical returns n's name in canonical form (see Type).
func (n *typeNode) canonical() string {
	if n.kind == NotParametric {
		return string(n.scalar)
	}
	if n.kind == ParamUDT {
		return n.udtCanonical()
	}
	var b strings.Builder
	if !n.multiCell {
		b.WriteString("frozen<")
	}
	b.WriteString([...]string{ParamList: "list", ParamSet: "set", ParamMap: "map", ParamTuple: "tuple"}[n.kind])
	b.WriteByte('<')
	for i, e := range n.elems {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.canonical())
	}
	b.WriteByte('>')
	if !n.multiCell {
		b.WriteByte('>')
	}
	return b.String()
}

func (n *typeNode) typ() Type { return Type(n.canonical()) }

// maxParamDepth bounds the nesting of parametric types.
const maxParamDepth = 8

// parseParametric parses a parametric type name, in any case and spacing, frozen or not at the
// top (tuples are frozen whatever is written; a top-level collection must be frozen), into its
// canonical Type.
func parseParametric(name string) (Type, error) {
	n, err := parseTypeName(name)
	if err != nil {
		return TypeInvalid, err
	}
	if n.kind == NotParametric {
		return TypeInvalid, fmt.Errorf("%q is not a parametric type", name)
	}
	return n.typ(), nil
}

// parseTypeName parses a type name: a scalar, frozen<...>, tuple<...>, or (inside frozen)
// list, set and map.
func parseTypeName(name string) (*typeNode, error) {
	return parseTypeWith(name, nil)
}

// parseTypeWith is parseTypeName with resolve, which gives a user-defined type by the name
// written (nil: a canonical name, whose user-defined types are written out in full as
// udt<ks.name, field type, ...>).
func parseTypeWith(name string, resolve func(name string) (*typeNode, error)) (*typeNode, error) {
	p := typeParser{src: name, resolve: resolve}
	n, err := p.parse(0, false)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.pos != len(p.src) {
		return nil, fmt.Errorf("unexpected %q after the type in %q", p.src[p.pos:], name)
	}
	return n, nil
}

type typeParser struct {
	src     string
	pos     int
	resolve func(name string) (*typeNode, error)
}

func (p *typeParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

func (p *typeParser) word() string {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '<' || c == '>' || c == ',' || c == ' ' || c == '\t' || c == '\n' {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *typeParser) peek() byte {
	p.skipSpace()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

// parse reads one type; frozen says whether it is inside frozen<...> (or a tuple, whose
// components are frozen too).
func (p *typeParser) parse(depth int, frozen bool) (*typeNode, error) {
	if depth > maxParamDepth {
		return nil, fmt.Errorf("type %q is nested too deeply (at most %d levels)", p.src, maxParamDepth)
	}
	raw := p.word()
	w := strings.ToLower(raw)
	if p.peek() != '<' {
		switch w {
		case "list", "set", "map", "tuple", "frozen":
			return nil, fmt.Errorf("%s needs type parameters, as in %s<int>", w, w)
		case "varchar":
			return &typeNode{scalar: TypeText}, nil
		case "":
			return nil, fmt.Errorf("a type name is missing in %q", p.src)
		}
		for _, t := range typeCodes[1:] {
			if string(t) == w && !t.IsCollection() {
				return &typeNode{scalar: t}, nil
			}
		}
		if p.resolve == nil {
			return nil, fmt.Errorf("unsupported type %q", w)
		}
		n, err := p.resolve(raw)
		if err != nil {
			return nil, err
		}
		if !frozen {
			if depth > 0 { // Cassandra's refusal
				return nil, fmt.Errorf("non-frozen user-defined types are not allowed inside collections (use frozen<%s>)", raw)
			}
			nf := *n
			nf.multiCell = true // a non-frozen user type column: a cell per field
			return &nf, nil
		}
		return n, nil
	}
	if w == "udt" && p.resolve == nil {
		n, err := p.parseUDT(depth)
		if err == nil && !frozen && depth == 0 {
			n.multiCell = true
		}
		return n, err
	}
	p.pos++ // '<'
	var args []*typeNode
	inner := frozen || w == "frozen" || w == "tuple"
	for {
		a, err := p.parse(depth+1, inner)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.peek() != ',' {
			break
		}
		p.pos++
	}
	if p.peek() != '>' {
		return nil, fmt.Errorf("expected ',' or '>' in %q", p.src)
	}
	p.pos++
	if err := noCounters(w, args); err != nil {
		return nil, err
	}
	var n *typeNode
	switch w {
	case "frozen":
		if len(args) != 1 {
			return nil, fmt.Errorf("frozen takes one type, not %d", len(args))
		}
		if args[0].kind == NotParametric {
			return nil, fmt.Errorf("frozen<> is only allowed on collections, tuples and user-defined types, not on %s", args[0].scalar)
		}
		return args[0], nil
	case "list", "set":
		if len(args) != 1 {
			return nil, fmt.Errorf("%s takes one type, not %d", w, len(args))
		}
		n = &typeNode{kind: ParamList, elems: args}
		if w == "set" {
			n.kind = ParamSet
			if args[0].scalar == TypeDuration {
				return nil, fmt.Errorf("durations are not allowed inside sets: %s", n.canonical())
			}
		}
	case "map":
		if len(args) != 2 {
			return nil, fmt.Errorf("map takes two types, not %d", len(args))
		}
		n = &typeNode{kind: ParamMap, elems: args}
		if args[0].scalar == TypeDuration {
			return nil, fmt.Errorf("durations are not allowed as map keys: %s", n.canonical())
		}
	case "tuple":
		return &typeNode{kind: ParamTuple, elems: args}, nil
	default:
		return nil, fmt.Errorf("type %q takes no parameters", w)
	}
	if !frozen {
		if depth > 0 {
			return nil, fmt.Errorf("%w: %q", errNestedNonFrozen, p.src)
		}
		n.multiCell = true // a non-frozen collection column (see collection.go)
	}
	return n, nil
}

// errNestedNonFrozen is Cassandra's refusal of a non-frozen collection inside another.
var errNestedNonFrozen = errors.New("non-frozen collections are not allowed inside collections (use frozen<...>)")

// node returns t parsed; nil for a scalar type (or an invalid one). A non-frozen collection's
// node is its value's, the frozen collection of the same elements.
func (t Type) node() *typeNode {
	if t.MultiCell() {
		t = "frozen<" + t + ">"
	}
	if !strings.HasPrefix(string(t), "frozen<") { // every canonical parametric name does
		return nil
	}
	n, err := parseTypeName(string(t))
	if err != nil || n.kind == NotParametric {
		return nil
	}
	return n
}

// Params returns the kind of a parametric type and its element types: the element type of a
// list or set, the key and value types of a map, the component types of a tuple. A scalar type
// gives NotParametric and nil.
func (t Type) Params() (ParamKind, []Type) {
	n := t.node()
	if n == nil {
		return NotParametric, nil
	}
	elems := make([]Type, len(n.elems))
	for i, e := range n.elems {
		elems[i] = e.typ()
	}
	return n.kind, elems
}

// IsParametric reports whether t is a frozen collection or a tuple.
func (t Type) IsParametric() bool { return t.node() != nil }

// paramElement reads one [int length][bytes] element; length -1 is null (nil), and other
// negative lengths, which mean null too in the protocol, are refused so that null has one
// encoding.
func paramElement(v []byte) (elem, rest []byte, err error) {
	if len(v) < 4 {
		return nil, nil, errors.New("truncated length")
	}
	n := int32(binary.BigEndian.Uint32(v))
	switch {
	case n == -1:
		return nil, v[4:], nil
	case n < 0:
		return nil, nil, fmt.Errorf("length %d (null is -1)", n)
	case int64(n) > int64(len(v)-4):
		return nil, nil, fmt.Errorf("length %d overruns the value (%d bytes left)", n, len(v)-4)
	}
	return v[4 : 4+n : 4+n], v[4+n:], nil
}

// checkParam checks v, non-null, as a value of n.
func (n *typeNode) check(v []byte) error {
	if n.kind == NotParametric {
		if v == nil {
			return nil
		}
		return n.scalar.Check(v)
	}
	if n.kind == ParamUDT {
		return n.checkUDT(v)
	}
	if n.kind == ParamTuple {
		rest := v
		for i, e := range n.elems {
			var c []byte
			var err error
			if c, rest, err = paramElement(rest); err != nil {
				return fmt.Errorf("component %d: %w", i, err)
			}
			if c == nil {
				continue
			}
			if err := e.check(c); err != nil {
				return fmt.Errorf("component %d: %w", i, err)
			}
		}
		if len(rest) != 0 {
			return fmt.Errorf("%d bytes after the last of %d components", len(rest), len(n.elems))
		}
		return nil
	}
	count, rest, err := collectionCount(v)
	if err != nil {
		return err
	}
	var prev []byte
	for i := range count {
		var e []byte
		if e, rest, err = paramElement(rest); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		if e == nil {
			return fmt.Errorf("element %d is null: null is not allowed inside a collection", i)
		}
		if err := n.elems[0].check(e); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		if n.kind != ParamList {
			if i > 0 && n.elems[0].compare(prev, e) >= 0 {
				what := "elements"
				if n.kind == ParamMap {
					what = "keys"
				}
				return fmt.Errorf("element %d is not above element %d (%s must be distinct and ascending)", i, i-1, what)
			}
			prev = e
		}
		if n.kind == ParamMap {
			var val []byte
			if val, rest, err = paramElement(rest); err != nil {
				return fmt.Errorf("value %d: %w", i, err)
			}
			if val == nil {
				return fmt.Errorf("value %d is null: null is not allowed inside a collection", i)
			}
			if err := n.elems[1].check(val); err != nil {
				return fmt.Errorf("value %d: %w", i, err)
			}
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes after the last element", len(rest))
	}
	return nil
}

// compare orders two well-formed values of n as Cassandra does: collections element by element
// (a map's entries by key, then value), then by count; tuples component by component, a null
// component before any value.
func (n *typeNode) compare(a, b []byte) int {
	if n.kind == NotParametric {
		return n.scalar.Compare(a, b)
	}
	if n.kind == ParamTuple || n.kind == ParamUDT { // a UDT's missing trailing fields are nulls
		for _, e := range n.elems {
			var x, y []byte
			if len(a) > 0 {
				x, a, _ = paramElement(a)
			}
			if len(b) > 0 {
				y, b, _ = paramElement(b)
			}
			switch {
			case x == nil && y == nil:
				continue
			case x == nil:
				return -1
			case y == nil:
				return 1
			}
			if c := e.compare(x, y); c != 0 {
				return c
			}
		}
		return 0
	}
	na, ra, _ := collectionCount(a)
	nb, rb, _ := collectionCount(b)
	for range min(na, nb) {
		var x, y []byte
		x, ra, _ = paramElement(ra)
		y, rb, _ = paramElement(rb)
		if c := n.elems[0].compare(x, y); c != 0 {
			return c
		}
		if n.kind == ParamMap {
			x, ra, _ = paramElement(ra)
			y, rb, _ = paramElement(rb)
			if c := n.elems[1].compare(x, y); c != 0 {
				return c
			}
		}
	}
	switch {
	case na < nb:
		return -1
	case na > nb:
		return 1
	}
	return 0
}

// The Go values Decode returns for the parametric types: the elements' and components' Go
// values as Decode returns them for their own types (nil for a null tuple component).
type (
	// List is a frozen list's value.
	List []any
	// Set is a frozen set's value, in ascending order.
	Set []any
	// Map is a frozen map's value, by ascending key.
	Map []MapPair
	// Tuple is a tuple's value.
	Tuple []any
)

// MapPair is one entry of a Map.
type MapPair struct{ Key, Value any }

func (n *typeNode) decode(v []byte) any {
	if v == nil {
		return nil
	}
	if n.kind == NotParametric {
		x, _ := n.scalar.Decode(v)
		return x
	}
	if n.kind == ParamUDT {
		return n.decodeUDT(v)
	}
	if n.kind == ParamTuple {
		out := make(Tuple, len(n.elems))
		for i, e := range n.elems {
			var c []byte
			c, v, _ = paramElement(v)
			out[i] = e.decode(c)
		}
		return out
	}
	count, rest, _ := collectionCount(v)
	elems := make([]any, count)
	var m Map
	if n.kind == ParamMap {
		m = make(Map, count)
	}
	for i := range count {
		var e []byte
		e, rest, _ = paramElement(rest)
		if n.kind == ParamMap {
			var val []byte
			val, rest, _ = paramElement(rest)
			m[i] = MapPair{n.elems[0].decode(e), n.elems[1].decode(val)}
			continue
		}
		elems[i] = n.elems[0].decode(e)
	}
	switch n.kind {
	case ParamMap:
		return m
	case ParamSet:
		return Set(elems)
	}
	return List(elems)
}

// paramLiteral converts v to a value of n, a parametric type: a list literal for a list, a set
// literal (or {}) for a set, a map literal for a map and a tuple literal for a tuple, their
// elements converted for the element types. Sets come out sorted and without duplicates, maps
// sorted by key with the last of duplicate keys kept, and a tuple literal with fewer elements
// than the type padded with nulls, as Cassandra stores them. mismatch reports a term of the
// wrong kind.
//
// bind gives the values of bind markers inside the literal (nil: markers are refused); ok false
// is an unset marker, which an element cannot be.
func (n *typeNode) literal(v cql.Term, bind func(*cql.Literal) (v []byte, ok bool, err error)) (b []byte, mismatch bool, err error) {
	if n.kind == NotParametric {
		return literalValue(n.scalar, v)
	}
	if u, ok := v.(*cql.UDTLiteral); ok {
		if n.kind != ParamUDT {
			return nil, true, nil
		}
		return n.literalUDT(u, bind)
	}
	if lit, ok := v.(*cql.Literal); ok {
		switch lit.Kind {
		case cql.LitNull:
			return nil, false, nil
		case cql.LitBind:
			return nil, false, errBind
		}
		return nil, true, nil
	}
	elem := func(et *typeNode, x cql.Term, what string) ([]byte, error) {
		if lit, ok := x.(*cql.Literal); ok && lit.Kind == cql.LitBind {
			if bind == nil {
				return nil, fmt.Errorf("bind marker %s has no value", lit.Value)
			}
			v, ok, err := bind(lit)
			switch {
			case err != nil:
				return nil, err
			case !ok:
				return nil, fmt.Errorf("bind marker %d inside a %s literal is unset", lit.Index, what)
			case v != nil:
				if v, err = et.typ().Normalize(v); err != nil {
					return nil, fmt.Errorf("bind marker %d: %w", lit.Index, err)
				}
			}
			return v, nil
		}
		b, mismatch, err := et.literal(x, bind)
		switch {
		case mismatch:
			return nil, fmt.Errorf("cannot use %s as %s inside a %s", describeTerm(x), et.typ(), what)
		case err != nil:
			return nil, err
		}
		return b, nil
	}
	switch n.kind {
	case ParamTuple:
		c, ok := v.(*cql.CollectionLiteral)
		if !ok || c.Kind != cql.TupleLiteral {
			return nil, true, nil
		}
		if len(c.Elements) > len(n.elems) {
			return nil, false, fmt.Errorf("invalid tuple literal: too many elements: type %s expects %d but got %d", n.typ(), len(n.elems), len(c.Elements))
		}
		var out []byte
		for i, et := range n.elems {
			var e []byte
			if i < len(c.Elements) {
				if e, err = elem(et, c.Elements[i], "tuple"); err != nil {
					return nil, false, fmt.Errorf("component %d: %w", i, err)
				}
			}
			out = appendParamElem(out, e)
		}
		return out, false, nil
	case ParamList, ParamSet:
		var elems []cql.Term
		switch c := v.(type) {
		case *cql.CollectionLiteral:
			if c.Kind == cql.TupleLiteral || (c.Kind == cql.SetLiteral) != (n.kind == ParamSet) {
				return nil, true, nil
			}
			elems = c.Elements
		case *cql.MapLiteral:
			if n.kind != ParamSet || len(c.Entries) > 0 {
				return nil, true, nil
			}
		default:
			return nil, true, nil
		}
		what := "list"
		if n.kind == ParamSet {
			what = "set"
		}
		vals := make([][]byte, 0, len(elems))
		for i, x := range elems {
			e, err := elem(n.elems[0], x, what)
			if err != nil {
				return nil, false, fmt.Errorf("element %d: %w", i, err)
			}
			if e == nil {
				return nil, false, fmt.Errorf("element %d: null is not supported inside collections", i)
			}
			vals = append(vals, e)
		}
		if n.kind == ParamSet {
			vals = sortUnique(vals, n.elems[0].compare, false)
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(len(vals)))
		for _, e := range vals {
			out = appendParamElem(out, e)
		}
		return out, false, nil
	case ParamMap:
		m, ok := v.(*cql.MapLiteral)
		if !ok {
			return nil, true, nil
		}
		keys := make([][]byte, 0, len(m.Entries))
		vals := make(map[string][]byte, len(m.Entries))
		for i, e := range m.Entries {
			k, err := elem(n.elems[0], e.Key, "map")
			if err != nil {
				return nil, false, fmt.Errorf("key %d: %w", i, err)
			}
			val, err := elem(n.elems[1], e.Value, "map")
			if err != nil {
				return nil, false, fmt.Errorf("value %d: %w", i, err)
			}
			if k == nil || val == nil {
				return nil, false, fmt.Errorf("entry %d: null is not supported inside collections", i)
			}
			keys = append(keys, k)
			vals[string(k)] = val // the last of equal keys wins
		}
		keys = sortUnique(keys, n.elems[0].compare, true)
		out := binary.BigEndian.AppendUint32(nil, uint32(len(keys)))
		for _, k := range keys {
			out = appendParamElem(appendParamElem(out, k), vals[string(k)])
		}
		return out, false, nil
	}
	return nil, true, nil
}

// sortUnique sorts vs by cmp and keeps one of each run of equal values: the first, or with
// last the last (whose bytes then key the map's value).
func sortUnique(vs [][]byte, cmp func(a, b []byte) int, last bool) [][]byte {
	slices.SortStableFunc(vs, cmp)
	out := vs[:0]
	for i, v := range vs {
		switch {
		case i > 0 && cmp(out[len(out)-1], v) == 0 && last:
			out[len(out)-1] = v
		case i > 0 && cmp(out[len(out)-1], v) == 0:
		default:
			out = append(out, v)
		}
	}
	return out
}

// appendParamElem appends e as [int length][bytes], nil as null (-1).
func appendParamElem(b, e []byte) []byte {
	if e == nil {
		return binary.BigEndian.AppendUint32(b, ^uint32(0))
	}
	return append(binary.BigEndian.AppendUint32(b, uint32(len(e))), e...)
}

// boundValue converts a collection or tuple literal holding bind markers to a value of c's
// parametric type, the markers' values given by bind.
func (c *Column) boundValue(v cql.Term, bind func(*cql.Literal) ([]byte, bool, error)) ([]byte, error) {
	n := c.Type.node()
	if n == nil {
		return c.Value(v)
	}
	b, mismatch, err := n.literal(v, bind)
	return c.assigned(v, b, mismatch, err)
}

// nestedMarkers calls f for each bind marker inside v, a literal of the parametric type t, with
// the type its value must have and its name as Cassandra names it: value(c) for a list's or
// set's element and a map's value, key(c) for a map's key, c[i] for a tuple's component i.
func nestedMarkers(t Type, col string, v cql.Term, f func(lit *cql.Literal, name string, typ Type)) {
	n := t.node()
	if n == nil {
		return
	}
	visit := func(x cql.Term, et *typeNode, name string) {
		if lit, ok := x.(*cql.Literal); ok && lit.Kind == cql.LitBind {
			f(lit, name, et.typ())
			return
		}
		nestedMarkers(et.typ(), col, x, f)
	}
	switch x := v.(type) {
	case *cql.CollectionLiteral:
		for i, e := range x.Elements {
			switch {
			case n.kind == ParamTuple && i < len(n.elems):
				visit(e, n.elems[i], fmt.Sprintf("%s[%d]", col, i))
			case n.kind == ParamList || n.kind == ParamSet:
				visit(e, n.elems[0], "value("+col+")")
			}
		}
	case *cql.UDTLiteral:
		if n.kind == ParamUDT {
			for _, f := range x.Fields {
				if i := slices.Index(n.udt.fields, f.Name.Name); i >= 0 {
					visit(f.Value, n.elems[i], col+"."+f.Name.Name)
				}
			}
		}
	case *cql.MapLiteral:
		if n.kind == ParamMap {
			for _, e := range x.Entries {
				visit(e.Key, n.elems[0], "key("+col+")")
				visit(e.Value, n.elems[1], "value("+col+")")
			}
		}
	}
}

// Normalize checks v as a value of t, as Check does, except that a set's elements and a map's
// keys (nested ones included) may come in any order and repeated, as drivers send them: it
// returns the canonical value, sorted and duplicate-free (for a map the last of equal keys
// kept), as Cassandra stores a bound collection. For a scalar type it is Check and v.
func (t Type) Normalize(v []byte) ([]byte, error) {
	n := t.node()
	if n == nil || v == nil {
		return v, t.Check(v)
	}
	out, err := n.normalize(v)
	if err != nil {
		return nil, fmt.Errorf("invalid %s value: %w", t, err)
	}
	return out, nil
}

func (n *typeNode) normalize(v []byte) ([]byte, error) {
	if n.kind == NotParametric {
		return v, n.scalar.Check(v)
	}
	if n.kind == ParamUDT {
		return n.normalizeUDT(v)
	}
	if n.kind == ParamTuple {
		rest := v
		var out []byte
		for i, e := range n.elems {
			c, r, err := paramElement(rest)
			if err != nil {
				return nil, fmt.Errorf("component %d: %w", i, err)
			}
			rest = r
			if c != nil {
				if c, err = e.normalize(c); err != nil {
					return nil, fmt.Errorf("component %d: %w", i, err)
				}
			}
			out = appendParamElem(out, c)
		}
		if len(rest) != 0 {
			return nil, fmt.Errorf("%d bytes after the last of %d components", len(rest), len(n.elems))
		}
		return out, nil
	}
	count, rest, err := collectionCount(v)
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, 0, count)
	vals := make(map[string][]byte)
	for i := range count {
		var e []byte
		if e, rest, err = paramElement(rest); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		if e == nil {
			return nil, fmt.Errorf("element %d is null: null is not allowed inside a collection", i)
		}
		if e, err = n.elems[0].normalize(e); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		keys = append(keys, e)
		if n.kind == ParamMap {
			var val []byte
			if val, rest, err = paramElement(rest); err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			if val == nil {
				return nil, fmt.Errorf("value %d is null: null is not allowed inside a collection", i)
			}
			if val, err = n.elems[1].normalize(val); err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			vals[string(e)] = val
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the last element", len(rest))
	}
	if n.kind != ParamList {
		keys = sortUnique(keys, n.elems[0].compare, n.kind == ParamMap)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		out = appendParamElem(out, k)
		if n.kind == ParamMap {
			out = appendParamElem(out, vals[string(k)])
		}
	}
	return out, nil
}

// Check is c.Type.Check(v), without parsing a parametric type again: a Column of a Table keeps
// its type parsed (see Column), so that checking a frozen or tuple value allocates nothing.
func (c *Column) Check(v []byte) error {
	if c.parsed == nil || v == nil {
		return c.Type.Check(v)
	}
	if err := c.parsed.check(v); err != nil {
		return fmt.Errorf("invalid %s value: %w", c.Type, err)
	}
	return nil
}

// Compare is c.Type.Compare(a, b), without parsing a parametric type again (see Check).
func (c *Column) Compare(a, b []byte) int {
	if c.parsed == nil {
		return c.Type.Compare(a, b)
	}
	return c.parsed.compare(a, b)
}
