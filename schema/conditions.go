package schema

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kvnode/kvnode/cql"
)

// Condition is one bound column condition of a conditional UPDATE or DELETE (IF col op value):
// the column, the operator (cql.EQ, NEQ, LT, LE, GT, GE; cql.IDENT for IN) and the value in the
// column's canonical encoding, nil for null; In holds the values of IN.
//
// A condition on a part of the column (IF m[k] = v, IF l[i] = v, IF u.f = v) compares that part:
// Part says which, Key holds the map's key or the list's index (an int), Field the user type's
// field's position; Value and In are then of the part's type.
type Condition struct {
	Column *Column
	Op     cql.Token
	Value  []byte
	In     [][]byte
	Part   ConditionPart
	Key    []byte
	Field  int
	// part is a stand-in column of the part's type, for comparisons; nil for the whole column.
	part *Column
}

// ConditionPart is what part of its column a Condition reads.
type ConditionPart uint8

// The parts of a column a condition reads.
const (
	WholeColumn  ConditionPart = iota
	MapElement                 // m[key]
	ListElement                // l[index]
	FieldElement               // u.field
)

// Current returns the value the condition compares, of current, its column's whole value: the
// map's value at Key, the list's element at the index, the user type's field; nil when the
// column is null or has no such element or field.
func (c Condition) Current(current []byte) []byte {
	if current == nil || c.Part == WholeColumn {
		return current
	}
	if c.Part == FieldElement {
		fields := SplitFields(current)
		if c.Field >= len(fields) {
			return nil
		}
		return fields[c.Field]
	}
	keys, values, err := SplitCollection(current, c.Part == MapElement)
	if err != nil {
		return nil
	}
	if c.Part == ListElement {
		i := int32(binary.BigEndian.Uint32(c.Key))
		if i < 0 || int(i) >= len(keys) {
			return nil
		}
		return keys[i]
	}
	if j := slices.IndexFunc(keys, func(k []byte) bool { return c.Column.CompareKeys(k, c.Key) == 0 }); j >= 0 {
		return values[j]
	}
	return nil
}

// conditionPart resolves the part x names of column col: the part, a stand-in column of its type
// (col itself for the whole column), and for an element the stand-in column its key binds to.
func conditionPart(col *Column, x cql.Condition) (part ConditionPart, of, key *Column, field int, err error) {
	switch {
	case x.Element != nil:
		kind, elems := col.Type.Params()
		switch kind {
		case ParamMap:
			return MapElement, elementColumn(col, "value("+col.Name+")", elems[1]), elementColumn(col, "key("+col.Name+")", elems[0]), 0, nil
		case ParamList:
			return ListElement, elementColumn(col, "value("+col.Name+")", elems[0]), elementColumn(col, "idx("+col.Name+")", TypeInt), 0, nil
		case ParamSet:
			return 0, nil, nil, 0, fmt.Errorf("invalid element access syntax for set column %s", cql.QuoteIdent(col.Name))
		}
		return 0, nil, nil, 0, fmt.Errorf("invalid element access syntax for non-collection column %s of type %s", cql.QuoteIdent(col.Name), col.Type.CQL())
	case x.Field != nil:
		u, ok := col.Type.UserType()
		if !ok {
			return 0, nil, nil, 0, fmt.Errorf("invalid field selection: %s of type %s is not a user type", cql.QuoteIdent(col.Name), col.Type.CQL())
		}
		i := slices.Index(u.FieldNames, x.Field.Name)
		if i < 0 {
			return 0, nil, nil, 0, fmt.Errorf("user type %s has no field %s", qualified(u.Keyspace, u.Name), cql.QuoteIdent(x.Field.Name))
		}
		return FieldElement, elementColumn(col, col.Name+"."+x.Field.Name, u.FieldTypes[i]), nil, i, nil
	}
	return WholeColumn, col, nil, 0, nil
}

// BindConditions binds the column conditions of a conditional UPDATE or DELETE on table t with
// the statement's values (as BindWrite takes them); nil for IF EXISTS, IF NOT EXISTS or no IF.
// Checked: each column is a regular column of t and each value fits its type; an ordering
// operator refuses null; an unset value is refused.
func (s *Schema) BindConditions(stmt cql.Statement, t *Table, values []BindValue) ([]Condition, error) {
	c := cql.ConditionsOf(stmt)
	if c == nil || len(c.Cols) == 0 {
		return nil, nil
	}
	b := binder{values: values, table: t}
	out := make([]Condition, 0, len(c.Cols))
	for _, x := range c.Cols {
		col, err := column(t, x.Column)
		if err != nil {
			return nil, err
		}
		if col.Kind != RegularColumn {
			return nil, fmt.Errorf("%s column %s cannot have IF conditions", col.Kind, cql.QuoteIdent(col.Name))
		}
		part, of, keyCol, field, err := conditionPart(col, x)
		if err != nil {
			return nil, err
		}
		cond := Condition{Column: col, Op: x.Op, Part: part, Field: field}
		if part != WholeColumn {
			cond.part = of
		}
		if keyCol != nil {
			k, ok, err := b.term(keyCol, x.Element)
			switch {
			case err != nil:
				return nil, err
			case !ok || k == nil:
				return nil, fmt.Errorf("invalid null or unset %s in the IF condition on %s", keyCol.Name, cql.QuoteIdent(col.Name))
			}
			cond.Key = k
		}
		col = of // the values are of the part's type
		switch {
		case !x.IsIn():
			v, ok, err := b.term(col, x.Value)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("invalid unset value for IF condition on column %s", cql.QuoteIdent(col.Name))
			}
			if v == nil && x.Op != cql.EQ && x.Op != cql.NEQ {
				return nil, fmt.Errorf("invalid comparison with null for operator %q", x.Op.String())
			}
			cond.Value = v
		case x.Value != nil: // IN ?: a list
			lit, _ := x.Value.(*cql.Literal)
			v, ok, err := b.value(lit, col, "")
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("invalid unset value for IF condition on column %s", cql.QuoteIdent(col.Name))
			}
			if cond.In, err = checkedListElements(col, v); err != nil {
				return nil, fmt.Errorf("bind marker %d (IN list of column %s): %w", lit.Index, cql.QuoteIdent(col.Name), err)
			}
		default:
			for _, e := range x.In {
				v, ok, err := b.term(col, e)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, fmt.Errorf("invalid unset value for IF condition on column %s", cql.QuoteIdent(col.Name))
				}
				cond.In = append(cond.In, v)
			}
		}
		out = append(out, cond)
	}
	return out, nil
}

// checkedListElements decodes v, a list<c's type> in the native protocol's encoding, into its
// elements (listElements), each checked against c's type; nil (a null list) has none.
func checkedListElements(c *Column, v []byte) ([][]byte, error) {
	if v == nil {
		return nil, nil
	}
	out, err := listElements(v)
	if err != nil {
		return nil, err
	}
	for _, e := range out {
		if e != nil {
			if err := c.Check(e); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Applies reports whether the condition holds for current, the column's current whole value (nil
// when the row or the cell does not exist; the condition takes its part, Current), as Cassandra
// 4.1 evaluates it: = and != compare
// with null like values (null = null holds), an ordering operator is false against null, and IN
// holds when any of its values equals current.
func (c Condition) Applies(current []byte) bool {
	col := c.Column
	if c.part != nil {
		col = c.part
	}
	current = c.Current(current)
	eq := func(a, b []byte) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return col.Compare(a, b) == 0
	}
	switch c.Op {
	case cql.EQ:
		return eq(current, c.Value)
	case cql.NEQ:
		return !eq(current, c.Value)
	case cql.IDENT:
		for _, v := range c.In {
			if eq(current, v) {
				return true
			}
		}
		return false
	}
	if current == nil {
		return false
	}
	r := col.Compare(current, c.Value)
	switch c.Op {
	case cql.LT:
		return r < 0
	case cql.LE:
		return r <= 0
	case cql.GT:
		return r > 0
	case cql.GE:
		return r >= 0
	}
	return false
}

// conditionVariables sets, in vars, the variables of the bind markers of stmt's IF clause
// against table t: a condition's marker has its column's type, IN ?'s a list of it.
func conditionVariables(stmt cql.Statement, t *Table, vars []Variable) {
	c := cql.ConditionsOf(stmt)
	if c == nil || t == nil {
		return
	}
	set := func(lit *cql.Literal, name string, typ Type) {
		if lit == nil || lit.Kind != cql.LitBind || lit.Index < 0 || lit.Index >= len(vars) {
			return
		}
		if n := lit.BindName(); n != "" {
			name = n
		}
		vars[lit.Index] = Variable{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: typ}
	}
	for _, x := range c.Cols {
		whole, ok := t.Column(x.Column.Name)
		if !ok {
			continue
		}
		_, col, keyCol, _, err := conditionPart(whole, x)
		if err != nil {
			continue
		}
		if keyCol != nil {
			lit, _ := x.Element.(*cql.Literal)
			set(lit, keyCol.Name, keyCol.Type)
		}
		switch {
		case !x.IsIn():
			lit, _ := x.Value.(*cql.Literal)
			set(lit, col.Name, col.Type)
		case x.Value != nil:
			lit, _ := x.Value.(*cql.Literal)
			// A frozen list, as SELECT's IN markers (the protocol's list either way).
			lt, err := parseParametric("frozen<list<" + string(col.Type) + ">>")
			if err != nil {
				lt = col.Type
			}
			set(lit, "in("+col.Name+")", lt)
		default:
			for _, e := range x.In {
				lit, _ := e.(*cql.Literal)
				set(lit, col.Name, col.Type)
			}
		}
	}
}
