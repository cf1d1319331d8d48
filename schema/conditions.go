package schema

import (
	"fmt"

	"github.com/kvnode/kvnode/cql"
)

// Condition is one bound column condition of a conditional UPDATE or DELETE (IF col op value):
// the column, the operator (cql.EQ, NEQ, LT, LE, GT, GE; cql.IDENT for IN) and the value in the
// column's canonical encoding, nil for null; In holds the values of IN.
type Condition struct {
	Column *Column
	Op     cql.Token
	Value  []byte
	In     [][]byte
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
		cond := Condition{Column: col, Op: x.Op}
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

// Applies reports whether the condition holds for current, the column's current value (nil
// when the row or the cell does not exist), as Cassandra 4.1 evaluates it: = and != compare
// with null like values (null = null holds), an ordering operator is false against null, and IN
// holds when any of its values equals current.
func (c Condition) Applies(current []byte) bool {
	eq := func(a, b []byte) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return c.Column.Compare(a, b) == 0
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
	r := c.Column.Compare(current, c.Value)
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
		col, ok := t.Column(x.Column.Name)
		if !ok {
			continue
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
