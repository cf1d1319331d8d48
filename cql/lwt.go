package cql

// The IF clauses of lightweight transactions: INSERT ... IF NOT EXISTS,
// UPDATE and DELETE ... IF EXISTS or IF conditions.

// Conditions is the IF clause of a conditional INSERT, UPDATE or DELETE:
// exactly one of NotExists (INSERT), Exists (UPDATE, DELETE) or Cols
// (UPDATE, DELETE) is set.
type Conditions struct {
	IfPos     Pos
	NotExists bool        // IF NOT EXISTS
	Exists    bool        // IF EXISTS
	Cols      []Condition // IF col op value [AND ...]
}

// Condition is one column condition of an IF clause: col op value, or col
// IN (values) / col IN ?; on an element of a map or list (col[Element]) or
// on a field of a user type (col.Field) when one of those is set.
type Condition struct {
	Column  Ident
	Element Term   // col[Element] op value; nil for none
	Field   *Ident // col.Field op value; nil for none
	OpPos   Pos
	Op      Token  // EQ, NEQ, LT, LE, GT, GE; IDENT for IN
	Value   Term   // the value; for IN, a bind marker of the list, or nil with In
	In      []Term // the values of IN (a, b, ...)
}

// IsIn reports whether the condition is col IN ....
func (c Condition) IsIn() bool { return c.Op == IDENT }

// ConditionsOf returns the IF clause of a conditional INSERT, UPDATE or
// DELETE; nil for any other statement and for an unconditional one.
func ConditionsOf(s Statement) *Conditions {
	switch s := s.(type) {
	case *InsertStmt:
		return s.If
	case *UpdateStmt:
		return s.If
	case *DeleteStmt:
		return s.If
	}
	return nil
}

// parseConditions parses an optional IF clause after an INSERT's values
// (insert: only IF NOT EXISTS) or an UPDATE's or DELETE's WHERE clause (IF
// EXISTS or conditions); nil without one.
func (p *parser) parseConditions(insert bool) *Conditions {
	if p.tok != IF {
		return nil
	}
	c := &Conditions{IfPos: p.pos}
	p.next()
	if insert {
		p.expect(NOT)
		p.expect(EXISTS)
		c.NotExists = true
		return c
	}
	if p.tok == NOT {
		p.errorf(p.pos, "IF NOT EXISTS is only for INSERT; use IF EXISTS or conditions")
	}
	if p.got(EXISTS) {
		c.Exists = true
		return c
	}
	for {
		if !p.isIdent() {
			p.errorExpected("'EXISTS' or a condition")
		}
		cond := Condition{Column: p.parseIdent("column name")}
		switch {
		case p.got(LBRACKET):
			cond.Element = p.parseTerm()
			p.expect(RBRACKET)
		case p.got(DOT):
			f := p.parseIdent("field name")
			cond.Field = &f
		}
		cond.OpPos, cond.Op = p.pos, p.tok
		switch {
		case p.tok == EQ || p.tok == NEQ || p.tok == LT || p.tok == LE || p.tok == GT || p.tok == GE:
			p.next()
			cond.Value = p.parseTerm()
		case p.isWord("IN"):
			cond.Op = IDENT
			p.next()
			switch p.tok {
			case QUESTION, COLON:
				cond.Value = p.parseTerm()
			case LPAREN:
				p.next()
				for p.tok != RPAREN {
					cond.In = append(cond.In, p.parseTerm())
					if !p.got(COMMA) {
						break
					}
				}
				if p.tok != RPAREN {
					p.errorExpected("',' or ')'")
				}
				p.next()
			default:
				p.errorExpected("'(' or bind marker after IN")
			}
		default:
			p.errorExpected("'=', '!=', '<', '<=', '>', '>=' or 'IN'")
		}
		c.Cols = append(c.Cols, cond)
		if !p.got(AND) {
			return c
		}
	}
}

// conditions prints an IF clause.
func (p *printer) conditions(c *Conditions) {
	switch {
	case c == nil:
	case c.NotExists:
		p.WriteString(" IF NOT EXISTS")
	case c.Exists:
		p.WriteString(" IF EXISTS")
	default:
		for i, cond := range c.Cols {
			if i == 0 {
				p.WriteString(" IF ")
			} else {
				p.WriteString(" AND ")
			}
			p.ident(cond.Column)
			switch {
			case cond.Element != nil:
				p.WriteByte('[')
				p.node(cond.Element)
				p.WriteByte(']')
			case cond.Field != nil:
				p.WriteByte('.')
				p.ident(*cond.Field)
			}
			if !cond.IsIn() {
				p.WriteString(" " + cond.Op.String() + " ")
				p.node(cond.Value)
				continue
			}
			p.WriteString(" IN ")
			if cond.Value != nil {
				p.node(cond.Value)
				continue
			}
			p.WriteByte('(')
			for j, v := range cond.In {
				if j > 0 {
					p.WriteString(", ")
				}
				p.node(v)
			}
			p.WriteByte(')')
		}
	}
}

// conditionMarkers calls term with each value of an IF clause's conditions, in source order.
func conditionMarkers(c *Conditions, term func(Term)) {
	if c == nil {
		return
	}
	for _, x := range c.Cols {
		if x.Element != nil {
			term(x.Element)
		}
		if x.Value != nil {
			term(x.Value)
		}
		for _, v := range x.In {
			term(v)
		}
	}
}
