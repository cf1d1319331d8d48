package cql

import "strings"

// The user-defined type statements (Cassandra 4.1's createTypeStatement, alterTypeStatement and
// dropTypeStatement):
//
//	CREATE TYPE [IF NOT EXISTS] [ks.]name (field type, ...)
//	ALTER TYPE [ks.]name ADD field type
//	ALTER TYPE [ks.]name RENAME field TO field [AND field TO field ...]
//	DROP TYPE [IF EXISTS] [ks.]name
//
// TYPE is a word, not a keyword, so columns named type keep working.

// CreateTypeStmt is CREATE TYPE [IF NOT EXISTS] name (field type, ...).
type CreateTypeStmt struct {
	Start       Pos
	IfNotExists bool
	Name        TableName // the keyspace and the type's name
	Fields      []ColumnDef
}

// AlterTypeStmt is ALTER TYPE name ADD field type, or ALTER TYPE name RENAME a TO b [AND ...].
type AlterTypeStmt struct {
	Start   Pos
	Name    TableName
	Add     *ColumnDef // the field ADD adds; nil for RENAME
	Renames []Rename   // RENAME's pairs
}

// DropTypeStmt is DROP TYPE [IF EXISTS] name.
type DropTypeStmt struct {
	Start    Pos
	IfExists bool
	Name     TableName
}

// Pos returns the position of the statement's first keyword.
func (s *CreateTypeStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *AlterTypeStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DropTypeStmt) Pos() Pos { return s.Start }

func (*CreateTypeStmt) statementNode() {}
func (*AlterTypeStmt) statementNode()  {}
func (*DropTypeStmt) statementNode()   {}

// parseTypeStatement parses the rest of a CREATE, ALTER or DROP TYPE statement when the current
// word is TYPE; nil otherwise.
func (p *parser) parseTypeStatement(start Pos, verb Token) Statement {
	if !p.isWord("TYPE") {
		return nil
	}
	p.next()
	switch verb {
	case CREATE:
		s := &CreateTypeStmt{Start: start}
		s.IfNotExists = p.parseIfNotExists()
		s.Name = p.parseTypeName()
		p.expect(LPAREN)
		for {
			f := ColumnDef{Name: p.parseIdent("field name")}
			f.Type = p.parseType()
			s.Fields = append(s.Fields, f)
			if !p.got(COMMA) || p.tok == RPAREN {
				break
			}
		}
		if p.tok != RPAREN {
			p.errorExpected("',' or ')'")
		}
		p.next()
		return s
	case DROP:
		s := &DropTypeStmt{Start: start}
		s.IfExists = p.parseIfExists()
		s.Name = p.parseTypeName()
		return s
	}
	s := &AlterTypeStmt{Start: start, Name: p.parseTypeName()}
	switch {
	case p.gotWord("ADD"):
		f := ColumnDef{Name: p.parseIdent("field name")}
		f.Type = p.parseType()
		s.Add = &f
	case p.gotWord("RENAME"):
		for {
			r := Rename{From: p.parseIdent("field name")}
			if !p.gotWord("TO") {
				p.errorExpected("'TO'")
			}
			r.To = p.parseIdent("field name")
			s.Renames = append(s.Renames, r)
			if p.tok != AND {
				break
			}
			p.next()
		}
	case p.tok == ALTER:
		p.unsupported(p.pos, "ALTER TYPE ... ALTER is not supported (nor in Cassandra 4.1): a field's type cannot change")
	default:
		p.errorExpected("'ADD' or 'RENAME'")
	}
	return s
}

func (p *parser) parseTypeName() TableName {
	first := p.parseIdent("type name")
	if !p.got(DOT) {
		return TableName{Name: first}
	}
	return TableName{Keyspace: first, Name: p.parseIdent("type name")}
}

// typeStatement prints a type statement; parsing its text gives it back.
func (p *printer) typeStatement(n Node) {
	switch n := n.(type) {
	case *CreateTypeStmt:
		p.WriteString("CREATE TYPE ")
		if n.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		p.table(n.Name)
		p.WriteString(" (")
		for i, f := range n.Fields {
			if i > 0 {
				p.WriteString(", ")
			}
			p.ident(f.Name)
			p.WriteByte(' ')
			p.WriteString(f.Type.Name)
		}
		p.WriteByte(')')
	case *AlterTypeStmt:
		p.WriteString("ALTER TYPE ")
		p.table(n.Name)
		if n.Add != nil {
			p.WriteString(" ADD ")
			p.ident(n.Add.Name)
			p.WriteByte(' ')
			p.WriteString(n.Add.Type.Name)
			return
		}
		p.WriteString(" RENAME ")
		for i, r := range n.Renames {
			if i > 0 {
				p.WriteString(" AND ")
			}
			p.ident(r.From)
			p.WriteString(" TO ")
			p.ident(r.To)
		}
	case *DropTypeStmt:
		p.WriteString("DROP TYPE ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.table(n.Name)
	}
}

// UDTLiteral is a user-defined type's literal, {field: value, ...}.
type UDTLiteral struct {
	Lbrace Pos
	Fields []UDTField
}

// UDTField is one field: value of a UDTLiteral.
type UDTField struct {
	Name  Ident
	Value Term
}

// Pos returns the position of the opening brace.
func (x *UDTLiteral) Pos() Pos { return x.Lbrace }

func (*UDTLiteral) termNode() {}

// udtLiteral parses the rest of {field: value, ...} once the first field's name (tok, lit at
// pos) has been read and the current token is its colon.
func (p *parser) udtLiteral(lbrace, pos Pos, tok Token, lit string, depth int) Term {
	u := &UDTLiteral{Lbrace: lbrace}
	name := Ident{NamePos: pos, Name: lit}
	if tok != QIDENT {
		name.Name = strings.ToLower(lit)
	}
	for {
		p.expect(COLON)
		u.Fields = append(u.Fields, UDTField{Name: name, Value: p.term(depth + 1)})
		if !p.got(COMMA) {
			break
		}
		name = p.parseIdent("field name")
	}
	if p.tok != RBRACE {
		p.errorExpected("',' or '}'")
	}
	p.next()
	return u
}
