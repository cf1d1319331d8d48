package cql

import "strings"

// The statements of service levels (ScyllaDB's, extended with rates and client addresses) and of
// roles granted to roles (Cassandra's):
//
//	CREATE SERVICE LEVEL [IF NOT EXISTS] sl [WITH option = value [AND ...]]
//	ALTER SERVICE LEVEL sl WITH option = value [AND ...]
//	DROP SERVICE LEVEL [IF EXISTS] sl
//	ATTACH SERVICE LEVEL sl TO (role | ADDRESS 'address or CIDR block')
//	DETACH SERVICE LEVEL FROM (role | ADDRESS 'address or CIDR block')
//	LIST SERVICE LEVEL sl
//	LIST ALL SERVICE LEVELS
//	LIST ATTACHED SERVICE LEVEL OF (role | ADDRESS 'address or CIDR block')
//	LIST ALL ATTACHED SERVICE LEVELS
//	LIST EFFECTIVE SERVICE LEVEL OF role
//	GRANT role TO role
//	REVOKE role FROM role
//
// SERVICE LEVEL may be written SERVICE_LEVEL and SERVICE LEVELS SERVICE_LEVELS, as ScyllaDB
// accepts. A service level's name is an identifier or a string literal, like a role's. The words
// SERVICE, LEVEL, ATTACH, DETACH and ADDRESS are not keywords. The options' values are terms (a
// duration such as 500ms too); the schema checks them.

// CreateServiceLevelStmt is CREATE SERVICE LEVEL [IF NOT EXISTS] sl [WITH options].
type CreateServiceLevelStmt struct {
	Start       Pos
	IfNotExists bool
	Name        Ident
	Options     []Option
}

// AlterServiceLevelStmt is ALTER SERVICE LEVEL sl WITH options.
type AlterServiceLevelStmt struct {
	Start   Pos
	Name    Ident
	Options []Option
}

// DropServiceLevelStmt is DROP SERVICE LEVEL [IF EXISTS] sl.
type DropServiceLevelStmt struct {
	Start    Pos
	IfExists bool
	Name     Ident
}

// LevelTarget is what a service level is attached to: a role, or (Address set) a client address
// or CIDR block, as written (the schema parses it).
type LevelTarget struct {
	Role Ident
	// Address is the text of ADDRESS 'text' at AddressPos; "" for a role.
	Address    string
	AddressPos Pos
	IsAddress  bool
}

// Pos returns the position of the target's name or address.
func (t LevelTarget) Pos() Pos {
	if t.IsAddress {
		return t.AddressPos
	}
	return t.Role.Pos()
}

// AttachServiceLevelStmt is ATTACH SERVICE LEVEL sl TO target.
type AttachServiceLevelStmt struct {
	Start  Pos
	Level  Ident
	Target LevelTarget
}

// DetachServiceLevelStmt is DETACH SERVICE LEVEL FROM target.
type DetachServiceLevelStmt struct {
	Start  Pos
	Target LevelTarget
}

// ListLevelsKind says which LIST of service levels a ListServiceLevelsStmt is.
type ListLevelsKind uint8

// The kinds of LIST statements of service levels.
const (
	// ListLevel is LIST SERVICE LEVEL sl.
	ListLevel ListLevelsKind = iota + 1
	// ListAllLevels is LIST ALL SERVICE LEVELS.
	ListAllLevels
	// ListAttached is LIST ATTACHED SERVICE LEVEL OF target.
	ListAttached
	// ListAllAttached is LIST ALL ATTACHED SERVICE LEVELS.
	ListAllAttached
	// ListEffective is LIST EFFECTIVE SERVICE LEVEL OF role.
	ListEffective
)

// ListServiceLevelsStmt is one of the LIST statements of service levels: Level is set for
// ListLevel, Target for ListAttached and ListEffective (a role).
type ListServiceLevelsStmt struct {
	Start  Pos
	Kind   ListLevelsKind
	Level  Ident
	Target LevelTarget
}

// GrantRoleStmt is GRANT role TO grantee, or with Revoke REVOKE role FROM grantee.
type GrantRoleStmt struct {
	Start   Pos
	Revoke  bool
	Role    Ident
	Grantee Ident
}

func (*CreateServiceLevelStmt) statementNode() {}
func (*AlterServiceLevelStmt) statementNode()  {}
func (*DropServiceLevelStmt) statementNode()   {}
func (*AttachServiceLevelStmt) statementNode() {}
func (*DetachServiceLevelStmt) statementNode() {}
func (*ListServiceLevelsStmt) statementNode()  {}
func (*GrantRoleStmt) statementNode()          {}

// Pos returns the position of the statement's first keyword.
func (s *CreateServiceLevelStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *AlterServiceLevelStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DropServiceLevelStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *AttachServiceLevelStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DetachServiceLevelStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *ListServiceLevelsStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *GrantRoleStmt) Pos() Pos { return s.Start }

// gotServiceLevel consumes SERVICE LEVEL or SERVICE_LEVEL (plural: SERVICE LEVELS or
// SERVICE_LEVELS) and reports whether it did; it consumes nothing when the current word is not
// SERVICE or SERVICE_LEVEL(S).
func (p *parser) gotServiceLevel(plural bool) bool {
	one, word := "SERVICE_LEVEL", "LEVEL"
	if plural {
		one, word = "SERVICE_LEVELS", "LEVELS"
	}
	switch {
	case p.isWord(one):
		p.next()
		return true
	case p.isWord("SERVICE"):
		p.next()
		p.expectWord(word)
		return true
	}
	return false
}

// parseLevelName reads a service level's name: an identifier or a non-empty string literal.
func (p *parser) parseLevelName() Ident {
	if p.tok == STRING {
		x := Ident{NamePos: p.pos, Name: p.lit}
		if x.Name == "" {
			p.errorf(p.pos, "a service level name must not be empty")
		}
		p.next()
		return x
	}
	return p.parseIdent("service level name")
}

// parseLevelTarget reads a role name or ADDRESS 'text'.
func (p *parser) parseLevelTarget() LevelTarget {
	if p.isWord("ADDRESS") {
		p.next()
		if p.tok != STRING {
			p.errorExpected("a client address or CIDR block as a string, such as '10.0.0.7' or '10.0.0.0/24'")
		}
		t := LevelTarget{Address: p.lit, AddressPos: p.pos, IsAddress: true}
		p.next()
		return t
	}
	return LevelTarget{Role: p.parseRoleName()}
}

// parseLevelOptions parses WITH name = value [AND ...], where a value may be a duration.
func (p *parser) parseLevelOptions() []Option {
	p.expect(WITH)
	var opts []Option
	for {
		name := p.parseIdent("service level option")
		p.expect(EQ)
		var v Term
		if p.tok == DURATION {
			v = &Literal{ValuePos: p.pos, Kind: LitDuration, Value: strings.ToLower(p.lit)}
			p.next()
		} else {
			v = p.parseTerm()
		}
		opts = append(opts, Option{Name: name, Value: v})
		if !p.got(AND) {
			return opts
		}
	}
}

// parseServiceLevelAfter parses the rest of CREATE, ALTER or DROP SERVICE LEVEL (verb) when
// the current word starts SERVICE LEVEL; nil otherwise.
func (p *parser) parseServiceLevelAfter(start Pos, verb Token) Statement {
	if !p.gotServiceLevel(false) {
		return nil
	}
	switch verb {
	case CREATE:
		s := &CreateServiceLevelStmt{Start: start}
		s.IfNotExists = p.parseIfNotExists()
		s.Name = p.parseLevelName()
		if p.tok == WITH {
			s.Options = p.parseLevelOptions()
		}
		return s
	case ALTER:
		s := &AlterServiceLevelStmt{Start: start, Name: p.parseLevelName()}
		if p.tok != WITH {
			p.errorExpected("'WITH'")
		}
		s.Options = p.parseLevelOptions()
		return s
	}
	s := &DropServiceLevelStmt{Start: start}
	s.IfExists = p.parseIfExists()
	s.Name = p.parseLevelName()
	return s
}

// parseLevelStatement parses ATTACH and DETACH SERVICE LEVEL; nil when the current word is
// neither ATTACH nor DETACH.
func (p *parser) parseLevelStatement(start Pos) Statement {
	switch {
	case p.isWord("ATTACH"):
		p.next()
		if !p.gotServiceLevel(false) {
			p.errorExpected("'SERVICE LEVEL'")
		}
		s := &AttachServiceLevelStmt{Start: start, Level: p.parseLevelName()}
		p.expectWord("TO")
		s.Target = p.parseLevelTarget()
		return s
	case p.isWord("DETACH"):
		p.next()
		if !p.gotServiceLevel(false) {
			p.errorExpected("'SERVICE LEVEL'")
		}
		p.expect(FROM)
		return &DetachServiceLevelStmt{Start: start, Target: p.parseLevelTarget()}
	}
	return nil
}

// parseListLevels parses the rest of the LIST statements of service levels after LIST; nil,
// consuming nothing, when the current word starts none of them.
func (p *parser) parseListLevels(start Pos) Statement {
	switch {
	case p.isWord("SERVICE") || p.isWord("SERVICE_LEVEL"):
		p.gotServiceLevel(false)
		return &ListServiceLevelsStmt{Start: start, Kind: ListLevel, Level: p.parseLevelName()}
	case p.isWord("ATTACHED"):
		p.next()
		if !p.gotServiceLevel(false) {
			p.errorExpected("'SERVICE LEVEL'")
		}
		p.expectWord("OF")
		return &ListServiceLevelsStmt{Start: start, Kind: ListAttached, Target: p.parseLevelTarget()}
	case p.isWord("EFFECTIVE"):
		p.next()
		if !p.gotServiceLevel(false) {
			p.errorExpected("'SERVICE LEVEL'")
		}
		p.expectWord("OF")
		return &ListServiceLevelsStmt{Start: start, Kind: ListEffective, Target: LevelTarget{Role: p.parseRoleName()}}
	}
	return nil
}

// parseListAllLevels parses the rest of LIST ALL SERVICE LEVELS and LIST ALL ATTACHED SERVICE
// LEVELS after LIST ALL; nil, consuming nothing, when the current word starts neither.
func (p *parser) parseListAllLevels(start Pos) Statement {
	switch {
	case p.isWord("SERVICE") || p.isWord("SERVICE_LEVELS"):
		p.gotServiceLevel(true)
		return &ListServiceLevelsStmt{Start: start, Kind: ListAllLevels}
	case p.isWord("ATTACHED"):
		p.next()
		if !p.gotServiceLevel(true) {
			p.errorExpected("'SERVICE LEVELS'")
		}
		return &ListServiceLevelsStmt{Start: start, Kind: ListAllAttached}
	}
	return nil
}

// parseGrantRole parses the rest of GRANT role TO role or REVOKE role FROM role, the current
// token being the first role's name (an identifier that is not a permission, or a string).
func (p *parser) parseGrantRole(start Pos, revoke bool) Statement {
	pos, tok, lit := p.pos, p.tok, p.lit
	s := &GrantRoleStmt{Start: start, Revoke: revoke, Role: p.parseRoleName()}
	if p.isWord("ON") {
		// GRANT word ON ...: word was meant as a permission.
		p.errorf(pos, "expected permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS), found %s", describe(tok, lit))
	}
	if revoke {
		p.expect(FROM)
	} else {
		p.expectWord("TO")
	}
	s.Grantee = p.parseRoleName()
	return s
}

// levelStatement formats the statements of this file; false for any other node.
func (p *printer) levelStatement(n Node) bool {
	switch n := n.(type) {
	case *CreateServiceLevelStmt:
		p.WriteString("CREATE SERVICE LEVEL ")
		if n.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		p.ident(n.Name)
		p.options(n.Options)
	case *AlterServiceLevelStmt:
		p.WriteString("ALTER SERVICE LEVEL ")
		p.ident(n.Name)
		p.options(n.Options)
	case *DropServiceLevelStmt:
		p.WriteString("DROP SERVICE LEVEL ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.ident(n.Name)
	case *AttachServiceLevelStmt:
		p.WriteString("ATTACH SERVICE LEVEL ")
		p.ident(n.Level)
		p.WriteString(" TO ")
		p.levelTarget(n.Target)
	case *DetachServiceLevelStmt:
		p.WriteString("DETACH SERVICE LEVEL FROM ")
		p.levelTarget(n.Target)
	case *ListServiceLevelsStmt:
		switch n.Kind {
		case ListLevel:
			p.WriteString("LIST SERVICE LEVEL ")
			p.ident(n.Level)
		case ListAllLevels:
			p.WriteString("LIST ALL SERVICE LEVELS")
		case ListAttached:
			p.WriteString("LIST ATTACHED SERVICE LEVEL OF ")
			p.levelTarget(n.Target)
		case ListAllAttached:
			p.WriteString("LIST ALL ATTACHED SERVICE LEVELS")
		case ListEffective:
			p.WriteString("LIST EFFECTIVE SERVICE LEVEL OF ")
			p.levelTarget(n.Target)
		}
	case *GrantRoleStmt:
		if n.Revoke {
			p.WriteString("REVOKE ")
		} else {
			p.WriteString("GRANT ")
		}
		p.ident(n.Role)
		if n.Revoke {
			p.WriteString(" FROM ")
		} else {
			p.WriteString(" TO ")
		}
		p.ident(n.Grantee)
	default:
		return false
	}
	return true
}

func (p *printer) levelTarget(t LevelTarget) {
	if t.IsAddress {
		p.WriteString("ADDRESS " + QuoteString(t.Address))
		return
	}
	p.ident(t.Role)
}
