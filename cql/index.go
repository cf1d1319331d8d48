package cql

import "strings"

// The secondary index statements (Cassandra 4.1's createIndexStatement and dropIndexStatement):
//
//	CREATE INDEX [IF NOT EXISTS] [[ks.]name] ON [ks.]table (target)
//	DROP INDEX [IF EXISTS] [ks.]name
//
// where target is a column, or keys(c), values(c), entries(c) or full(c) of a collection column.
// INDEX, ON, KEYS, ENTRIES and FULL are words, not keywords, so columns so named keep working.
// CREATE CUSTOM INDEX (SASI, storage-attached indexes) stays refused (unsupported.go).

// CreateIndexStmt is CREATE INDEX [IF NOT EXISTS] [name] ON table (target).
type CreateIndexStmt struct {
	Start       Pos
	IfNotExists bool
	// Name is the index's name, with its keyspace when given; Name.Name.Name is "" when the
	// statement leaves it out (the schema names it table_column_idx, as Cassandra does).
	Name   TableName
	Table  TableName
	Column Ident
	// Target is "" for the column's values, else keys, values, entries or full (lower case).
	Target string
}

// DropIndexStmt is DROP INDEX [IF EXISTS] name.
type DropIndexStmt struct {
	Start    Pos
	IfExists bool
	Name     TableName // the keyspace and the index's name
	// Table is the table the index belongs to, which the statement does not say: the
	// coordinator resolves it from its schema before the change is agreed (the catalog agrees
	// on a table's entry). Table.Name.Name is "" until then.
	Table TableName
}

// Pos returns the position of the statement's first keyword.
func (s *CreateIndexStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DropIndexStmt) Pos() Pos { return s.Start }

func (*CreateIndexStmt) statementNode() {}
func (*DropIndexStmt) statementNode()   {}

// indexTargets are the functions an index target may name, besides the plain column.
var indexTargets = []string{"keys", "values", "entries", "full"}

// parseIndexStatement parses the rest of CREATE or DROP INDEX when the current word is INDEX;
// nil otherwise.
func (p *parser) parseIndexStatement(start Pos, verb Token) Statement {
	if !p.isWord("INDEX") {
		return nil
	}
	p.next()
	if verb == DROP {
		s := &DropIndexStmt{Start: start}
		s.IfExists = p.parseIfExists()
		s.Name = p.parseIndexName()
		return s
	}
	s := &CreateIndexStmt{Start: start}
	s.IfNotExists = p.parseIfNotExists()
	if !p.isWord("ON") {
		s.Name = p.parseIndexName()
	}
	p.expectWord("ON")
	s.Table = p.parseTableName()
	p.expect(LPAREN)
	if p.tok == RPAREN {
		p.unsupported(p.pos, "only CUSTOM indexes can be created without specifying a target column, and custom indexes are not supported")
	}
	// keys(c), values(c), entries(c), full(c); VALUES is a keyword, the others words.
	target := ""
	if p.tok == VALUES {
		target = "values"
	} else if p.tok == IDENT {
		for _, w := range indexTargets {
			if strings.EqualFold(p.lit, w) {
				target = w
			}
		}
	}
	if target != "" {
		pos, tok, lit := p.pos, p.tok, p.lit
		p.next()
		if p.tok != LPAREN {
			if tok == VALUES {
				p.errorExpected("column name")
			}
			// A column named keys, entries or full.
			s.Column = Ident{NamePos: pos, Name: strings.ToLower(lit)}
			target = ""
		} else {
			p.next()
			s.Column = p.parseIdent("column name")
			p.expect(RPAREN)
		}
	} else {
		s.Column = p.parseIdent("column name")
	}
	s.Target = target
	if p.tok == COMMA {
		p.unsupported(p.pos, "only CUSTOM indexes support multiple columns, and custom indexes are not supported")
	}
	p.expect(RPAREN)
	if p.tok == USING || p.tok == WITH {
		p.unsupported(p.pos, "index options (USING, WITH) are only for CUSTOM indexes, which are not supported")
	}
	return s
}

func (p *parser) parseIndexName() TableName {
	first := p.parseIdent("index name")
	if !p.got(DOT) {
		return TableName{Name: first}
	}
	return TableName{Keyspace: first, Name: p.parseIdent("index name")}
}

// indexStatement prints an index statement; parsing its text gives it back.
func (p *printer) indexStatement(n Node) {
	switch n := n.(type) {
	case *CreateIndexStmt:
		p.WriteString("CREATE INDEX ")
		if n.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		if n.Name.Name.Name != "" {
			p.table(n.Name)
			p.WriteByte(' ')
		}
		p.WriteString("ON ")
		p.table(n.Table)
		p.WriteString(" (")
		if n.Target != "" {
			p.WriteString(n.Target + "(")
		}
		p.ident(n.Column)
		if n.Target != "" {
			p.WriteByte(')')
		}
		p.WriteByte(')')
	case *DropIndexStmt:
		p.WriteString("DROP INDEX ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.table(n.Name)
	}
}
