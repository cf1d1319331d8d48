package cql

import (
	"strings"
)

// The statements of roles and permissions, as Cassandra's CQL has them:
//
//	CREATE ROLE [IF NOT EXISTS] role [WITH PASSWORD = 'p' [AND LOGIN = true] [AND SUPERUSER = false]]
//	ALTER ROLE role WITH PASSWORD = 'p' [AND ...]
//	DROP ROLE [IF EXISTS] role
//	GRANT permission ON resource TO role
//	REVOKE permission ON resource FROM role
//	LIST ROLES [OF role]
//	LIST (ALL [PERMISSIONS] | permission [PERMISSION] | PERMISSIONS) [ON resource] [OF role]
//
// permission is SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL [PERMISSIONS]; resource is
// ALL KEYSPACES, KEYSPACE ks, [TABLE] ks.t or ALL SERVICE LEVELS (servicelevel.go). A role is an identifier or a string literal ('Bob'
// keeps its case). The words ROLE, GRANT, LIST, PERMISSIONS and the like are not keywords: they
// are recognised where the grammar expects them, so that columns named role or password keep
// working.

// RoleOption is an option of CREATE ROLE and ALTER ROLE: PASSWORD, LOGIN or SUPERUSER.
type RoleOption = Option

// CreateRoleStmt is CREATE ROLE [IF NOT EXISTS] role [WITH options]. CREATE USER is not
// supported (Cassandra deprecated it).
type CreateRoleStmt struct {
	Start       Pos
	IfNotExists bool
	Role        Ident
	Options     []RoleOption
}

// AlterRoleStmt is ALTER ROLE role WITH options.
type AlterRoleStmt struct {
	Start   Pos
	Role    Ident
	Options []RoleOption
}

// DropRoleStmt is DROP ROLE [IF EXISTS] role.
type DropRoleStmt struct {
	Start    Pos
	IfExists bool
	Role     Ident
}

// ResourceKind is what a permission is granted on.
type ResourceKind uint8

// The resource kinds.
const (
	ResourceAllKeyspaces ResourceKind = iota + 1
	ResourceKeyspace
	ResourceTable
	// ResourceAllServiceLevels is ALL SERVICE LEVELS (or ALL SERVICE_LEVELS), as ScyllaDB names
	// the resource of its service-level permissions.
	ResourceAllServiceLevels
)

// ResourceName is ALL KEYSPACES, KEYSPACE ks, TABLE ks.t or ALL SERVICE LEVELS (Table's keyspace may be left out:
// the current keyspace).
type ResourceName struct {
	Start    Pos
	Kind     ResourceKind
	Keyspace Ident     // ResourceKeyspace
	Table    TableName // ResourceTable
}

// Pos returns the position of the resource's first word.
func (r ResourceName) Pos() Pos { return r.Start }

// GrantStmt is GRANT permission ON resource TO role, or with Revoke REVOKE permission ON
// resource FROM role.
type GrantStmt struct {
	Start  Pos
	Revoke bool
	// Permission is the permission's name in upper case ("SELECT", "MODIFY", ...), or "ALL".
	Permission string
	Resource   ResourceName
	Role       Ident
}

// ListRolesStmt is LIST ROLES [OF role].
type ListRolesStmt struct {
	Start Pos
	Of    *Ident
}

// ListPermissionsStmt is LIST permission [PERMISSION] | ALL [PERMISSIONS] | PERMISSIONS
// [ON resource] [OF role].
type ListPermissionsStmt struct {
	Start Pos
	// Permission is the permission listed ("SELECT", ...), or "ALL" for every permission.
	Permission string
	Resource   *ResourceName
	Of         *Ident
}

func (*CreateRoleStmt) statementNode()      {}
func (*AlterRoleStmt) statementNode()       {}
func (*DropRoleStmt) statementNode()        {}
func (*GrantStmt) statementNode()           {}
func (*ListRolesStmt) statementNode()       {}
func (*ListPermissionsStmt) statementNode() {}

// Pos returns the position of the statement's first keyword.
func (s *CreateRoleStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *AlterRoleStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DropRoleStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *GrantStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *ListRolesStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *ListPermissionsStmt) Pos() Pos { return s.Start }

// isWord reports whether the current token is the unreserved word w (an identifier, not quoted),
// case-insensitively.
func (p *parser) isWord(w string) bool {
	return p.tok == IDENT && strings.EqualFold(p.lit, w)
}

// expectWord consumes the word w or reports an error.
func (p *parser) expectWord(w string) {
	if !p.isWord(w) {
		p.errorExpected("'" + w + "'")
	}
	p.next()
}

// parseRoleName reads a role name: an identifier or a string literal.
func (p *parser) parseRoleName() Ident {
	if p.tok == STRING {
		x := Ident{NamePos: p.pos, Name: p.lit}
		if x.Name == "" {
			p.errorf(p.pos, "a role name must not be empty")
		}
		p.next()
		return x
	}
	return p.parseIdent("role name")
}

// parseAuthStatement parses a statement that starts with the word GRANT, REVOKE or LIST; nil
// when the current word starts none of them.
func (p *parser) parseAuthStatement(start Pos) Statement {
	switch {
	case p.isWord("GRANT"):
		p.next()
		return p.parseGrant(start, false)
	case p.isWord("REVOKE"):
		p.next()
		return p.parseGrant(start, true)
	case p.isWord("LIST"):
		p.next()
		return p.parseList(start)
	}
	return nil
}

// parseRoleAfter parses the rest of CREATE ROLE, ALTER ROLE or DROP ROLE (verb is CREATE, ALTER
// or DROP) when the current word is ROLE (or USER, which is refused); nil otherwise.
func (p *parser) parseRoleAfter(start Pos, verb Token) Statement {
	if p.isWord("USER") {
		p.unsupported(p.pos, "%s USER is not supported: use %s ROLE", verb, verb)
	}
	if !p.isWord("ROLE") {
		return nil
	}
	p.next()
	switch verb {
	case CREATE:
		return p.parseCreateRole(start)
	case ALTER:
		return p.parseAlterRole(start)
	}
	return p.parseDropRole(start)
}

// parseCreateRole parses the rest of CREATE ROLE.
func (p *parser) parseCreateRole(start Pos) Statement {
	s := &CreateRoleStmt{Start: start}
	s.IfNotExists = p.parseIfNotExists()
	s.Role = p.parseRoleName()
	if p.tok == WITH {
		s.Options = p.parseOptions()
	}
	return s
}

// parseAlterRole parses the rest of ALTER ROLE.
func (p *parser) parseAlterRole(start Pos) Statement {
	s := &AlterRoleStmt{Start: start, Role: p.parseRoleName()}
	if p.tok != WITH {
		p.errorExpected("'WITH'")
	}
	s.Options = p.parseOptions()
	return s
}

// parseDropRole parses the rest of DROP ROLE.
func (p *parser) parseDropRole(start Pos) Statement {
	s := &DropRoleStmt{Start: start}
	s.IfExists = p.parseIfExists()
	s.Role = p.parseRoleName()
	return s
}

// permissionWords are the permissions' names; ALL is handled apart.
var permissionWords = [...]string{"SELECT", "MODIFY", "ALTER", "CREATE", "DROP", "AUTHORIZE"}

// parsePermission reads a permission: one of permissionWords or ALL [PERMISSIONS], returned in
// upper case ("ALL" for ALL).
func (p *parser) parsePermission() string {
	if p.isWord("ALL") {
		p.next()
		if p.isWord("PERMISSIONS") {
			p.next()
		}
		return "ALL"
	}
	for _, w := range permissionWords {
		if strings.EqualFold(p.lit, w) && (p.tok == IDENT || p.tok.IsKeyword()) {
			p.next()
			return w
		}
	}
	if p.isWord("DESCRIBE") || p.tok == DESCRIBE || p.isWord("EXECUTE") || p.isWord("UNMASK") || p.isWord("SELECT_MASKED") {
		p.unsupported(p.pos, "permission %s is not supported (valid: SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE, ALL PERMISSIONS)", strings.ToUpper(p.lit))
	}
	p.refuseRoleGrant()
	p.errorExpected("permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS)")
	return ""
}

// parseResource reads ALL KEYSPACES, KEYSPACE ks or [TABLE] [ks.]t.
func (p *parser) parseResource() ResourceName {
	r := ResourceName{Start: p.pos}
	switch {
	case p.isWord("ALL"):
		p.next()
		if p.gotServiceLevel(true) {
			r.Kind = ResourceAllServiceLevels
			return r
		}
		if p.tok != KEYSPACES {
			if p.isWord("ROLES") || p.isWord("FUNCTIONS") || p.isWord("MBEANS") {
				p.unsupported(p.pos, "resource ALL %s is not supported: permissions are granted on ALL KEYSPACES, KEYSPACE ks or TABLE ks.t", strings.ToUpper(p.lit))
			}
			p.errorExpected("'KEYSPACES'")
		}
		p.next()
		r.Kind = ResourceAllKeyspaces
	case p.tok == KEYSPACE:
		p.next()
		r.Kind, r.Keyspace = ResourceKeyspace, p.parseIdent("keyspace name")
	case p.tok == TABLE:
		p.next()
		r.Kind, r.Table = ResourceTable, p.parseTableName()
	case p.isWord("ROLE") || p.isWord("FUNCTION") || p.isWord("MBEAN"):
		p.unsupported(p.pos, "resource %s is not supported: permissions are granted on ALL KEYSPACES, KEYSPACE ks or TABLE ks.t", strings.ToUpper(p.lit))
	default:
		if !p.isIdent() {
			p.errorExpected("resource (ALL KEYSPACES, KEYSPACE ks or TABLE ks.t)")
		}
		r.Kind, r.Table = ResourceTable, p.parseTableName()
	}
	return r
}

// parseGrant parses the rest of GRANT (revoke false) or REVOKE (revoke true).
func (p *parser) parseGrant(start Pos, revoke bool) Statement {
	if p.tok == STRING || p.tok == QIDENT || (p.tok == IDENT && !isPermissionWord(p.lit)) {
		return p.parseGrantRole(start, revoke)
	}
	s := &GrantStmt{Start: start, Revoke: revoke}
	s.Permission = p.parsePermission()
	p.expectWord("ON")
	s.Resource = p.parseResource()
	if revoke {
		p.expect(FROM)
	} else {
		p.expectWord("TO")
	}
	s.Role = p.parseRoleName()
	return s
}

// isPermissionWord reports whether w names a permission, supported or not, or is ALL: GRANT w
// is then a grant of permissions, not of a role.
func isPermissionWord(w string) bool {
	for _, pw := range permissionWords {
		if strings.EqualFold(w, pw) {
			return true
		}
	}
	for _, pw := range [...]string{"ALL", "DESCRIBE", "EXECUTE", "UNMASK", "SELECT_MASKED"} {
		if strings.EqualFold(w, pw) {
			return true
		}
	}
	return false
}

// parseList parses the rest of LIST ROLES, LIST ... PERMISSIONS or a LIST of service levels.
func (p *parser) parseList(start Pos) Statement {
	if s := p.parseListLevels(start); s != nil {
		return s
	}
	all := false
	if p.isWord("ALL") {
		p.next()
		if s := p.parseListAllLevels(start); s != nil {
			return s
		}
		all = true
	}
	if !all && p.isWord("ROLES") {
		p.next()
		s := &ListRolesStmt{Start: start}
		if p.isWord("OF") {
			p.next()
			r := p.parseRoleName()
			s.Of = &r
		}
		p.refuseNoRecursive()
		return s
	}
	if p.isWord("USERS") {
		p.unsupported(start, "LIST USERS is not supported: use LIST ROLES")
	}
	s := &ListPermissionsStmt{Start: start}
	if all {
		s.Permission = "ALL"
		if p.isWord("PERMISSIONS") {
			p.next()
		}
	} else if p.isWord("PERMISSIONS") {
		p.next()
		s.Permission = "ALL"
	} else {
		s.Permission = p.parsePermission()
		if s.Permission != "ALL" && p.isWord("PERMISSION") {
			p.next()
		}
	}
	if p.isWord("ON") {
		p.next()
		r := p.parseResource()
		s.Resource = &r
	}
	if p.isWord("OF") {
		p.next()
		r := p.parseRoleName()
		s.Of = &r
	}
	p.refuseNoRecursive()
	return s
}

// authStatement formats the statements of this file; false for any other node.
func (p *printer) authStatement(n Node) bool {
	switch n := n.(type) {
	case *CreateRoleStmt:
		p.WriteString("CREATE ROLE ")
		if n.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		p.ident(n.Role)
		p.options(n.Options)
	case *AlterRoleStmt:
		p.WriteString("ALTER ROLE ")
		p.ident(n.Role)
		p.options(n.Options)
	case *DropRoleStmt:
		p.WriteString("DROP ROLE ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.ident(n.Role)
	case *GrantStmt:
		if n.Revoke {
			p.WriteString("REVOKE ")
		} else {
			p.WriteString("GRANT ")
		}
		p.permission(n.Permission)
		p.WriteString(" ON ")
		p.resource(n.Resource)
		if n.Revoke {
			p.WriteString(" FROM ")
		} else {
			p.WriteString(" TO ")
		}
		p.ident(n.Role)
	case *ListRolesStmt:
		p.WriteString("LIST ROLES")
		if n.Of != nil {
			p.WriteString(" OF ")
			p.ident(*n.Of)
		}
	case *ListPermissionsStmt:
		p.WriteString("LIST ")
		p.permission(n.Permission)
		if n.Permission != "ALL" {
			p.WriteString(" PERMISSION")
		}
		if n.Resource != nil {
			p.WriteString(" ON ")
			p.resource(*n.Resource)
		}
		if n.Of != nil {
			p.WriteString(" OF ")
			p.ident(*n.Of)
		}
	default:
		return false
	}
	return true
}

func (p *printer) permission(name string) {
	if name == "ALL" {
		p.WriteString("ALL PERMISSIONS")
		return
	}
	p.WriteString(name)
}

func (p *printer) resource(r ResourceName) {
	switch r.Kind {
	case ResourceAllKeyspaces:
		p.WriteString("ALL KEYSPACES")
	case ResourceKeyspace:
		p.WriteString("KEYSPACE ")
		p.ident(r.Keyspace)
	case ResourceTable:
		p.WriteString("TABLE ")
		p.table(r.Table)
	case ResourceAllServiceLevels:
		p.WriteString("ALL SERVICE LEVELS")
	}
}
