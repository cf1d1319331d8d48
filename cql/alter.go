package cql

// ALTER TABLE and TRUNCATE, as Cassandra 4.1's grammar has them (Parser.g,
// alterTableStatement and truncateStatement). ADD, DROP, RENAME, TO and
// TRUNCATE are read as words rather than keywords, so they stay usable as
// identifiers elsewhere.

// gotWord consumes the unquoted word w when it is the current token.
func (p *parser) gotWord(w string) bool {
	if p.isWord(w) {
		p.next()
		return true
	}
	return false
}

// parseAlterTable parses the rest of ALTER TABLE [IF EXISTS] name, then one
// of WITH options; ADD [IF NOT EXISTS] col type | ADD [IF NOT EXISTS]
// (col type, ...); DROP [IF EXISTS] col | DROP [IF EXISTS] (col, ...)
// [USING TIMESTAMP n]; RENAME [IF EXISTS] col TO name [AND col TO name ...].
func (p *parser) parseAlterTable(start Pos) Statement {
	s := &AlterTableStmt{Start: start}
	s.IfExists = p.parseIfExists()
	s.Table = p.parseTableName()
	switch {
	case p.tok == WITH:
		s.Action = AlterOptions
		s.Options = p.parseOptions()
	case p.gotWord("add"):
		s.Action = AlterAdd
		s.IfColumn = p.parseIfNotExists()
		if p.got(LPAREN) {
			s.Parens = true
			for {
				s.Add = append(s.Add, p.parseAddColumn())
				if !p.got(COMMA) {
					break
				}
			}
			if p.tok != RPAREN {
				p.errorExpected("',' or ')'")
			}
			p.next()
		} else {
			s.Add = []ColumnDef{p.parseAddColumn()}
			if p.tok == COMMA {
				p.errorf(p.pos, "expected ';' or end of input, found ','; to add several columns write ADD (%s %s, ...)",
					QuoteIdent(s.Add[0].Name.Name), s.Add[0].Type.Name)
			}
		}
	case p.tok == DROP:
		p.next()
		s.Action = AlterDrop
		if p.isWord("compact") {
			p.unsupported(p.pos, "DROP COMPACT STORAGE is not supported: kvnode has no COMPACT STORAGE tables")
		}
		s.IfColumn = p.parseIfExists()
		if p.got(LPAREN) {
			s.Parens = true
			s.Drop = p.parseIdentList("column name")
			if p.tok != RPAREN {
				p.errorExpected("',' or ')'")
			}
			p.next()
		} else {
			s.Drop = []Ident{p.parseIdent("column name or '('")}
			if p.tok == COMMA {
				p.errorf(p.pos, "expected ';', USING or end of input, found ','; to drop several columns write DROP (%s, ...)",
					QuoteIdent(s.Drop[0].Name))
			}
		}
		if p.got(USING) {
			p.expect(TIMESTAMP)
			if p.tok != INT {
				p.errorExpected("integer timestamp")
			}
			s.Timestamp = &Literal{ValuePos: p.pos, Kind: LitInteger, Value: p.lit}
			p.next()
		}
	case p.gotWord("rename"):
		s.Action = AlterRename
		s.IfColumn = p.parseIfExists()
		for {
			r := Rename{From: p.parseIdent("column name")}
			p.expectWord("TO")
			r.To = p.parseIdent("new column name")
			s.Rename = append(s.Rename, r)
			if !p.got(AND) {
				break
			}
		}
	case p.tok == ALTER:
		p.unsupported(p.pos, "ALTER TABLE ... ALTER column TYPE is not supported: column types cannot be changed (as in Cassandra 4.1)")
	default:
		p.errorExpected("'WITH', 'ADD', 'DROP' or 'RENAME'")
	}
	return s
}

// parseAddColumn reads one column definition of ALTER TABLE ADD: name type
// [STATIC].
func (p *parser) parseAddColumn() ColumnDef {
	c := ColumnDef{Name: p.parseIdent("column name")}
	c.Type = p.parseType()
	if p.isWord("static") {
		p.next()
		c.Static = true
	}
	if p.tok == PRIMARY {
		p.errorf(p.pos, "ALTER TABLE ADD cannot add a PRIMARY KEY column: the primary key of a table cannot be changed")
	}
	return c
}

// parseTruncate parses the rest of TRUNCATE [TABLE] name.
func (p *parser) parseTruncate(start Pos) Statement {
	s := &TruncateStmt{Start: start}
	p.got(TABLE)
	s.Table = p.parseTableName()
	return s
}

// alterTable prints an ALTER TABLE statement; parsing its text gives n back.
func (p *printer) alterTable(n *AlterTableStmt) {
	p.WriteString("ALTER TABLE ")
	if n.IfExists {
		p.WriteString("IF EXISTS ")
	}
	p.table(n.Table)
	switch n.Action {
	case AlterOptions:
		p.options(n.Options)
	case AlterAdd:
		p.WriteString(" ADD ")
		if n.IfColumn {
			p.WriteString("IF NOT EXISTS ")
		}
		parens := n.Parens || len(n.Add) > 1
		if parens {
			p.WriteByte('(')
		}
		for i, c := range n.Add {
			if i > 0 {
				p.WriteString(", ")
			}
			p.ident(c.Name)
			p.WriteByte(' ')
			p.WriteString(c.Type.Name)
			if c.Static {
				p.WriteString(" STATIC")
			}
		}
		if parens {
			p.WriteByte(')')
		}
	case AlterDrop:
		p.WriteString(" DROP ")
		if n.IfColumn {
			p.WriteString("IF EXISTS ")
		}
		if n.Parens || len(n.Drop) > 1 {
			p.WriteByte('(')
			p.idents(n.Drop)
			p.WriteByte(')')
		} else {
			p.idents(n.Drop)
		}
		if n.Timestamp != nil {
			p.WriteString(" USING TIMESTAMP " + n.Timestamp.Value)
		}
	case AlterRename:
		p.WriteString(" RENAME ")
		if n.IfColumn {
			p.WriteString("IF EXISTS ")
		}
		for i, r := range n.Rename {
			if i > 0 {
				p.WriteString(" AND ")
			}
			p.ident(r.From)
			p.WriteString(" TO ")
			p.ident(r.To)
		}
	}
}
