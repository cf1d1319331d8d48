package cql

import "strings"

// The refusals of valid Cassandra 4.1 CQL that kvnode does not execute.
//
// Every statement and clause of Cassandra's CQL is recognised by its leading
// words, so that a valid statement kvnode does not run is refused with an
// error naming the feature ("materialized views are not supported",
// Error.Unsupported), which front ends answer as Invalid, never as a syntax
// error: a user can tell a missing feature from a typo. The words are
// recognised where the grammar expects them and are not keywords, so that
// columns named index, type or json keep working.

// missingObjects are the kinds of schema object kvnode does not have, by the
// word that names them after CREATE, DROP or ALTER, and the refusal's text.
var missingObjects = []struct{ word, msg string }{
	{"MATERIALIZED", "materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX ON ks.t (col)), or keep a second table written beside it"},
	{"CUSTOM", "custom (SASI and storage-attached) indexes are not supported"},
	{"FUNCTION", "user-defined functions are not supported"},
	{"AGGREGATE", "user-defined aggregates are not supported"},
	{"TRIGGER", "triggers are not supported"},
}

// refuseObject refuses the statement when the current word, which follows
// verb, names one of missingObjects that verb applies to (CREATE: every one;
// DROP: not CUSTOM; ALTER: materialized views and types). It returns when the
// word is none of them.
func (p *parser) refuseObject(verb string) {
	for _, o := range missingObjects {
		switch {
		case !p.isWord(o.word):
			continue
		case verb == "DROP" && o.word == "CUSTOM",
			verb == "ALTER" && o.word != "MATERIALIZED" && o.word != "TYPE":
			return
		}
		p.unsupported(p.pos, "%s", o.msg)
	}
}

// refuseCreate refuses CREATE of an object kvnode does not have, and CREATE
// OR REPLACE of a function or aggregate; the current word follows CREATE. It
// returns when the word is none of them.
func (p *parser) refuseCreate() {
	pos := p.pos
	p.refuseObject("CREATE")
	if !p.isWord("OR") {
		return
	}
	p.next()
	if !p.isWord("REPLACE") {
		p.errorExpected("'REPLACE'")
	}
	p.next()
	if p.isWord("AGGREGATE") {
		p.unsupported(pos, "user-defined aggregates are not supported")
	}
	p.unsupported(pos, "user-defined functions are not supported")
}

// refuseDrop refuses DROP of an object kvnode does not have; the current
// word follows DROP.
func (p *parser) refuseDrop() { p.refuseObject("DROP") }

// refuseAlter refuses ALTER of what kvnode cannot alter; the current token
// follows ALTER.
func (p *parser) refuseAlter() { p.refuseObject("ALTER") }

// parseOtherStatement parses a statement that starts with a word that is not
// a keyword (TRUNCATE, GRANT, REVOKE, LIST); nil when the word starts none.
func (p *parser) parseOtherStatement(start Pos) Statement {
	if p.isWord("TRUNCATE") {
		p.next()
		return p.parseTruncate(start)
	}
	if s := p.parseLevelStatement(start); s != nil {
		return s
	}
	return p.parseAuthStatement(start)
}

// parseSelectModifier reads the words after SELECT when they are JSON or
// DISTINCT (or JSON DISTINCT), setting s.JSON and s.Distinct. Such a word
// may also be a column's name (SELECT json FROM t, SELECT distinct, v FROM
// t): then it returns that column, with ok set.
func (p *parser) parseSelectModifier(s *SelectStmt) (col Ident, ok bool) {
	for p.isWord("JSON") && !s.JSON && !s.Distinct || p.isWord("DISTINCT") && !s.Distinct {
		pos, word := p.pos, p.lit
		p.next()
		if p.tok == FROM || p.tok == COMMA || p.isWord("AS") {
			return Ident{NamePos: pos, Name: strings.ToLower(word)}, true
		}
		if strings.EqualFold(word, "JSON") {
			s.JSON = true
		} else {
			s.Distinct = true
		}
	}
	return Ident{}, false
}

// refuseSelectorTail refuses what may follow a selector besides ',' and FROM:
// a collection element or field selection, arithmetic, an alias (AS).
func (p *parser) refuseSelectorTail() {
	switch p.tok {
	case LBRACKET, DOT:
		p.unsupported(p.pos, "selecting collection elements or fields is not supported")
	case PLUS, MINUS, STAR, SLASH, PERCENT:
		p.unsupported(p.pos, "arithmetic operators are not supported")
	}
}

// refuseCall refuses a call of a function kvnode does not run: aggregates inside other calls,
// MAXWRITETIME, the native functions it lacks (floor),
// user-defined and unknown functions. name is lit lower-cased unless quoted.
func (p *parser) refuseCall(pos Pos, quoted bool, lit, name string) {
	switch name {
	case "count", "min", "max", "sum", "avg":
		p.unsupported(pos, "aggregate functions (%s) are only supported as selectors of their own, not inside other functions", strings.ToUpper(name))
	case "maxwritetime":
		p.unsupported(pos, "MAXWRITETIME is not supported")
	}
	if nativeFunction(name) {
		return
	}
	if !quoted && name == "floor" {
		p.unsupported(pos, "function %s is not supported", lit)
	}
	p.unsupported(pos, "unknown function %s: kvnode runs Cassandra's native scalar functions, and user-defined functions are not supported", lit)
}

// refuseOperator refuses a WHERE relation's operator kvnode does not
// execute, or what is on its left besides a column: a function call
// other than token(k), a collection's element or a field; the current token
// follows col, the relation's first name.
func (p *parser) refuseOperator(col Ident) {
	pos := p.pos
	switch {
	case p.tok == LPAREN:
		p.unsupported(col.NamePos, "function calls in restrictions are not supported")
	case p.tok == LBRACKET || p.tok == DOT:
		p.unsupported(pos, "restrictions on collection elements or fields are not supported")
	case p.isWord("LIKE"):
		p.unsupported(pos, "LIKE restrictions are not supported")
	case p.tok == NEQ:
		p.unsupported(pos, "!= restrictions are not supported")
	case p.isWord("IS"):
		p.unsupported(pos, "IS NOT NULL restrictions are only for materialized views, which are not supported")
	}
}

// refuseTypeHint refuses a type hint, (type) value, at the '(' that starts a term: a name
// followed by ')' or '<' (a tuple literal's first element is a value, never a bare name).
func (p *parser) refuseTypeHint() {
	pos := p.pos
	save := *p
	p.next()
	if p.tok == IDENT && !IsISODuration(p.lit) || p.tok == SET || p.tok.IsKeyword() && !p.tok.IsReserved() {
		p.next()
		if p.tok == RPAREN || p.tok == LT {
			*p = save
			p.unsupported(pos, "type hints ((type) value) are not supported")
		}
	}
	*p = save
}

// refuseOperation refuses arithmetic after a term (c = 1 + c, x - 2d).
func (p *parser) refuseOperation() {
	switch p.tok {
	case PLUS, MINUS, STAR, SLASH, PERCENT:
		p.unsupported(p.pos, "arithmetic operators and counter or collection updates are not supported")
	}
}

// refuseColumnOption refuses what may follow a column's type in CREATE TABLE
// besides STATIC and PRIMARY KEY: 5.0's MASKED WITH.
func (p *parser) refuseColumnOption() {
	switch {
	case p.isWord("MASKED"):
		p.unsupported(p.pos, "column masks are not supported")
	}
}

// refuseTableOption refuses the items of a WITH clause that are not name =
// value: CREATE TABLE's COMPACT STORAGE, CREATE ROLE's HASHED PASSWORD and
// ACCESS TO DATACENTERS. name is the item's first word, already read.
func (p *parser) refuseTableOption(name Ident) {
	if name.Name == "compact" && p.isWord("STORAGE") {
		p.unsupported(name.NamePos, "COMPACT STORAGE is not supported")
	}
	if name.Name == "hashed" && p.isWord("PASSWORD") {
		p.unsupported(name.NamePos, "HASHED PASSWORD is not supported: set the password itself")
	}
	if name.Name == "access" && p.isWord("TO") {
		p.unsupported(name.NamePos, "ACCESS TO DATACENTERS is not supported")
	}
}

// refuseRoleGrant refuses GRANT role TO role and REVOKE role FROM role: the
// current token, where a permission was expected, is a role's name. It
// returns, without consuming anything, when the token is not a name followed
// by TO or FROM.
func (p *parser) refuseRoleGrant() {
	if p.tok != IDENT && p.tok != QIDENT && p.tok != STRING {
		return
	}
	pos, tok, lit := p.pos, p.tok, p.lit
	p.next()
	if p.isWord("TO") || p.tok == FROM {
		p.unsupported(pos, "granting roles to roles is not supported")
	}
	if tok == IDENT {
		p.errorf(pos, "expected permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS), found %s", describe(tok, lit))
	}
	p.errorf(pos, "expected permission, found %s", describe(tok, lit))
}

// refuseDescribe refuses the DESCRIBE forms kvnode does not answer; the
// current token follows DESCRIBE and is none of the kinds it answers.
func (p *parser) refuseDescribe() {
	pos := p.pos
	switch {
	case p.isWord("ONLY"):
		p.unsupported(pos, "DESCRIBE ONLY KEYSPACE is not supported: DESCRIBE KEYSPACE gives the keyspace and its tables")
	case p.isWord("FUNCTION") || p.isWord("FUNCTIONS"):
		p.unsupported(pos, "user-defined functions are not supported")
	case p.isWord("AGGREGATE") || p.isWord("AGGREGATES"):
		p.unsupported(pos, "user-defined aggregates are not supported")
	case p.isWord("INDEX"):
		p.unsupported(pos, "DESCRIBE INDEX is not supported: DESCRIBE TABLE gives the table and its indexes")
	case p.isWord("MATERIALIZED"):
		p.unsupported(pos, "materialized views are not supported: to query a table by a regular column, create a secondary index on it (CREATE INDEX)")
	case p.isIdent():
		p.unsupported(pos, "DESCRIBE of a name without its kind is not supported: write DESCRIBE KEYSPACE %s or DESCRIBE TABLE %s", p.lit, p.lit)
	}
}

// refuseNoRecursive refuses NORECURSIVE at the end of LIST ROLES and LIST PERMISSIONS.
func (p *parser) refuseNoRecursive() {
	if p.isWord("NORECURSIVE") {
		p.unsupported(p.pos, "NORECURSIVE is not supported")
	}
}
