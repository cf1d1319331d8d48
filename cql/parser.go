package cql

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is an error at a position of the source text: a syntax error, or
// (Unsupported) a valid CQL statement or clause that kvnode does not
// execute.
type Error struct {
	Pos Pos
	Msg string
	// Unsupported marks the refusal of valid Cassandra CQL that kvnode does
	// not execute; Msg names the feature ("materialized views are not
	// supported"). Front ends answer it as Invalid, not as a syntax error.
	Unsupported bool
}

// Error returns "line:col: msg".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is the list of syntax errors of one Parse call, in source order.
type ErrorList []*Error

// Error returns the first error, followed by how many more there are.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	case 2:
		return l[0].Error() + " (and 1 more error)"
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0], len(l)-1)
}

// Unwrap returns the errors of the list, for errors.As and errors.Is.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Unsupported reports whether l holds errors and every one of them is a
// refusal of valid CQL that kvnode does not execute (Error.Unsupported),
// not a syntax error.
func (l ErrorList) Unsupported() bool {
	for _, e := range l {
		if !e.Unsupported {
			return false
		}
	}
	return len(l) > 0
}

// MaxErrors is how many errors Parse reports before it stops.
const MaxErrors = 10

// Parse parses src, a sequence of statements separated by semicolons (a
// trailing semicolon and empty statements are allowed). It returns the
// statements, or a non-nil ErrorList and no statements. After an error in a
// statement the parser skips to the next semicolon and goes on, so one call
// reports up to MaxErrors errors.
func Parse(src string) ([]Statement, error) {
	var p parser
	p.init(src)
	stmts := p.parseStatements()
	if len(p.errors) > 0 {
		return nil, p.errors
	}
	return stmts, nil
}

// ParseStatement parses src, which must hold exactly one statement,
// optionally followed by a semicolon.
func ParseStatement(src string) (Statement, error) {
	stmts, err := Parse(src)
	if err != nil {
		return nil, err
	}
	switch len(stmts) {
	case 0:
		return nil, ErrorList{{Pos: endPos(src), Msg: "expected statement, found end of input"}}
	case 1:
		return stmts[0], nil
	}
	return nil, ErrorList{{Pos: stmts[1].Pos(), Msg: "expected one statement, found several"}}
}

func endPos(src string) Pos {
	var s Scanner
	s.Init(src)
	for {
		pos, tok, _ := s.Scan()
		if tok == EOF {
			return pos
		}
	}
}

// bailout is the panic value with which the parser abandons a statement
// after its first error; parseStatements recovers it.
type bailout struct{}

type parser struct {
	scanner Scanner
	errors  ErrorList

	pos Pos    // position of the current token
	tok Token  // the current token (one token of lookahead)
	lit string // its literal

	markers int  // the bind markers of the current statement so far
	inBatch bool // parsing the statements of a BATCH
}

func (p *parser) init(src string) {
	p.scanner.Init(src)
	p.next()
}

func (p *parser) next() {
	p.pos, p.tok, p.lit = p.scanner.Scan()
}

// errorf records an error at pos and abandons the current statement.
func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.errors = append(p.errors, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
	panic(bailout{})
}

// unsupported records the refusal of valid CQL that kvnode does not
// execute, at pos, and abandons the current statement. The message names
// the feature: "materialized views are not supported".
func (p *parser) unsupported(pos Pos, format string, args ...any) {
	p.errors = append(p.errors, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Unsupported: true})
	panic(bailout{})
}

// errorExpected reports that the current token is not what was expected;
// an ILLEGAL token reports the scanner's message instead.
func (p *parser) errorExpected(what string) {
	if p.tok == ILLEGAL {
		p.errorf(p.pos, "%s", p.lit)
	}
	p.errorf(p.pos, "expected %s, found %s", what, describe(p.tok, p.lit))
}

// expect consumes tok or reports an error.
func (p *parser) expect(tok Token) Pos {
	pos := p.pos
	if p.tok != tok {
		p.errorExpected("'" + tok.String() + "'")
	}
	p.next()
	return pos
}

// got consumes tok when it is the current token.
func (p *parser) got(tok Token) bool {
	if p.tok == tok {
		p.next()
		return true
	}
	return false
}

func (p *parser) parseStatements() (stmts []Statement) {
	for {
		for p.tok == SEMICOLON {
			p.next()
		}
		if p.tok == EOF || len(p.errors) >= MaxErrors {
			return stmts
		}
		if s := p.parseOne(); s != nil {
			stmts = append(stmts, s)
		}
	}
}

// parseOne parses a statement and its terminator. After an error it skips
// to the next semicolon and returns nil.
func (p *parser) parseOne() (s Statement) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				// A bug in the parser must not take the server down with it;
				// report it as an error at the statement.
				p.errors = append(p.errors, &Error{Pos: p.pos, Msg: fmt.Sprintf("internal parser error: %v", r)})
			}
			p.skipStatement()
			s = nil
		}
	}()
	p.markers, p.inBatch = 0, false
	s = p.parseStatement()
	if p.tok != SEMICOLON && p.tok != EOF {
		p.errorExpected("';' or end of input")
	}
	return s
}

// skipStatement skips to the end of a statement after an error: to the
// next semicolon, or inside a BATCH past its APPLY BATCH (so that the rest
// of the batch does not read as statements of its own).
func (p *parser) skipStatement() {
	if p.inBatch {
		for p.tok != EOF {
			if p.tok == APPLY {
				p.next()
				if p.tok == BATCH {
					p.next()
					return
				}
				continue
			}
			p.next()
		}
		return
	}
	for p.tok != SEMICOLON && p.tok != EOF {
		p.next()
	}
}

func (p *parser) parseStatement() Statement {
	start := p.pos
	switch p.tok {
	case CREATE:
		p.next()
		switch p.tok {
		case KEYSPACE:
			p.next()
			return p.parseCreateKeyspace(start)
		case TABLE:
			p.next()
			return p.parseCreateTable(start)
		}
		if s := p.parseServiceLevelAfter(start, CREATE); s != nil {
			return s
		}
		if s := p.parseTypeStatement(start, CREATE); s != nil {
			return s
		}
		if s := p.parseIndexStatement(start, CREATE); s != nil {
			return s
		}
		p.refuseCreate()
		if s := p.parseRoleAfter(start, CREATE); s != nil {
			return s
		}
		p.errorExpected("'KEYSPACE', 'TABLE' or 'ROLE'")
	case DROP:
		p.next()
		switch p.tok {
		case KEYSPACE:
			p.next()
			s := &DropKeyspaceStmt{Start: start}
			s.IfExists = p.parseIfExists()
			s.Name = p.parseIdent("keyspace name")
			return s
		case TABLE:
			p.next()
			s := &DropTableStmt{Start: start}
			s.IfExists = p.parseIfExists()
			s.Table = p.parseTableName()
			return s
		}
		if s := p.parseServiceLevelAfter(start, DROP); s != nil {
			return s
		}
		if s := p.parseTypeStatement(start, DROP); s != nil {
			return s
		}
		if s := p.parseIndexStatement(start, DROP); s != nil {
			return s
		}
		p.refuseDrop()
		if s := p.parseRoleAfter(start, DROP); s != nil {
			return s
		}
		p.errorExpected("'KEYSPACE', 'TABLE' or 'ROLE'")
	case ALTER:
		p.next()
		if p.tok == KEYSPACE {
			p.next()
			return p.parseAlterKeyspace(start)
		}
		if s := p.parseServiceLevelAfter(start, ALTER); s != nil {
			return s
		}
		if s := p.parseTypeStatement(start, ALTER); s != nil {
			return s
		}
		if s := p.parseRoleAfter(start, ALTER); s != nil {
			return s
		}
		p.refuseAlter()
		if p.tok != TABLE {
			p.errorExpected("'KEYSPACE', 'TABLE' or 'ROLE'")
		}
		p.next()
		return p.parseAlterTable(start)
	case USE:
		p.next()
		return &UseStmt{Start: start, Keyspace: p.parseIdent("keyspace name")}
	case INSERT:
		p.next()
		return p.parseInsert(start)
	case UPDATE:
		p.next()
		return p.parseUpdate(start)
	case DELETE:
		p.next()
		return p.parseDelete(start)
	case SELECT:
		p.next()
		return p.parseSelect(start)
	case DESCRIBE, DESC:
		p.next()
		return p.parseDescribe(start)
	case BEGIN:
		p.next()
		return p.parseBatch(start)
	case IDENT:
		if s := p.parseOtherStatement(start); s != nil {
			return s
		}
	}
	p.errorExpected("statement")
	return nil
}

// parseBatch parses the rest of BEGIN [UNLOGGED | LOGGED] BATCH [USING ...]
// statement [;] ... APPLY BATCH.
func (p *parser) parseBatch(start Pos) Statement {
	s := &BatchStmt{Start: start}
	switch p.tok {
	case UNLOGGED:
		s.Unlogged = true
		p.next()
	case LOGGED:
		p.next()
	case IDENT:
		if strings.EqualFold(p.lit, "counter") {
			s.Counter = true
			p.next()
		}
	}
	if p.tok != BATCH {
		p.errorExpected("'BATCH', 'UNLOGGED' or 'LOGGED'")
	}
	p.next()
	p.inBatch = true
	u := p.parseUsing(true)
	s.Timestamp, s.Timeout = u.ts, u.timeout
	if u.ttl != nil {
		p.errorf(u.ttlPos, "a TTL for the whole BATCH is not supported: give USING TTL on each statement in it")
	}
	for {
		pos := p.pos
		switch p.tok {
		case INSERT:
			p.next()
			s.Statements = append(s.Statements, p.parseInsert(pos))
		case UPDATE:
			p.next()
			s.Statements = append(s.Statements, p.parseUpdate(pos))
		case DELETE:
			p.next()
			s.Statements = append(s.Statements, p.parseDelete(pos))
		case APPLY:
			if len(s.Statements) == 0 {
				p.errorExpected("INSERT, UPDATE or DELETE")
			}
			p.next()
			p.expect(BATCH)
			p.inBatch = false
			return s
		default:
			if len(s.Statements) == 0 {
				p.errorExpected("INSERT, UPDATE or DELETE")
			}
			p.errorExpected("INSERT, UPDATE, DELETE or 'APPLY BATCH'")
		}
		p.got(SEMICOLON)
	}
}

func (p *parser) parseIfExists() bool {
	if p.got(IF) {
		p.expect(EXISTS)
		return true
	}
	return false
}

func (p *parser) parseIfNotExists() bool {
	if p.got(IF) {
		p.expect(NOT)
		p.expect(EXISTS)
		return true
	}
	return false
}

// isIdent reports whether the current token can be read as an identifier.
func (p *parser) isIdent() bool {
	return p.tok == IDENT || p.tok == QIDENT || (p.tok.IsKeyword() && !p.tok.IsReserved())
}

// parseIdent reads an identifier: unquoted ones (and unreserved keywords)
// are lower-cased, quoted ones are taken as they are.
func (p *parser) parseIdent(what string) Ident {
	if !p.isIdent() {
		p.errorExpected(what)
	}
	x := Ident{NamePos: p.pos, Name: p.lit}
	if p.tok != QIDENT {
		x.Name = strings.ToLower(p.lit)
	}
	p.next()
	return x
}

func (p *parser) parseTableName() TableName {
	first := p.parseIdent("table name")
	if !p.got(DOT) {
		return TableName{Name: first}
	}
	return TableName{Keyspace: first, Name: p.parseIdent("table name")}
}

func (p *parser) parseIdentList(what string) []Ident {
	list := []Ident{p.parseIdent(what)}
	for p.got(COMMA) {
		list = append(list, p.parseIdent(what))
	}
	return list
}

// parseOptions parses WITH name = value [AND name = value ...].
func (p *parser) parseOptions() []Option { return p.parseWith(nil) }

// parseWith parses WITH name = value [AND ...]. With ct set (CREATE TABLE)
// an item may also be CLUSTERING ORDER BY (...), which goes to
// ct.ClusteringOrder; elsewhere that clause is an error.
func (p *parser) parseWith(ct *CreateTableStmt) []Option {
	p.expect(WITH)
	var opts []Option
	for {
		pos, isClustering := p.pos, p.tok == CLUSTERING
		name := p.parseIdent("option name")
		if isClustering && p.tok == ORDER {
			if ct == nil {
				p.errorf(pos, "CLUSTERING ORDER BY is only allowed in CREATE TABLE: the clustering order of a table cannot be changed")
			}
			if ct.ClusteringOrder != nil {
				p.errorf(pos, "CLUSTERING ORDER BY is given twice")
			}
			p.next()
			p.expect(BY)
			p.expect(LPAREN)
			ct.ClusteringOrder = p.parseOrderings("CLUSTERING ORDER BY", true)
			if p.tok != RPAREN {
				p.errorExpected("',' or ')'")
			}
			p.checkClusteringOrder(ct, pos, p.pos)
			p.next()
		} else {
			p.refuseTableOption(name)
			p.expect(EQ)
			opts = append(opts, Option{Name: name, Value: p.parseTerm()})
		}
		if !p.got(AND) {
			return opts
		}
	}
}

// parseOrderings parses column [ASC | DESC] [, ...], the list of ORDER BY
// (the direction may be left out: ASC) or of CLUSTERING ORDER BY
// (dirRequired). A column named twice is an error.
func (p *parser) parseOrderings(clause string, dirRequired bool) []Ordering {
	var list []Ordering
	seen := make(map[string]bool)
	for {
		o := Ordering{Column: p.parseIdent("column name")}
		if seen[o.Column.Name] {
			p.errorf(o.Column.NamePos, "column %s appears twice in %s", QuoteIdent(o.Column.Name), clause)
		}
		seen[o.Column.Name] = true
		switch p.tok {
		case ASC:
			p.next()
		case DESC:
			o.Descending = true
			p.next()
		default:
			if dirRequired {
				p.errorExpected("'ASC' or 'DESC'")
			}
			if p.tok != COMMA && p.tok != LIMIT && p.tok != ALLOW && p.tok != USING && p.tok != SEMICOLON && p.tok != EOF && !p.isWord("PER") {
				p.errorExpected("'ASC', 'DESC', ',', 'LIMIT' or end of input")
			}
		}
		list = append(list, o)
		if !p.got(COMMA) {
			return list
		}
	}
}

// checkClusteringOrder checks CLUSTERING ORDER BY against the PRIMARY KEY
// clause, as Cassandra does: it must name every clustering column, in
// primary key order. start is the position of CLUSTERING, end that of the
// closing parenthesis. Without a PRIMARY KEY clause the key is inline (no
// clustering columns) or missing, which the schema reports.
func (p *parser) checkClusteringOrder(ct *CreateTableStmt, start, end Pos) {
	var clustering []Ident
	if ct.PrimaryKey != nil {
		clustering = ct.PrimaryKey.Clustering
	}
	if len(clustering) == 0 {
		p.errorf(start, "CLUSTERING ORDER BY is only allowed on a table with clustering columns; this PRIMARY KEY has none")
	}
	list := identNames(clustering)
	for i, o := range ct.ClusteringOrder {
		switch {
		case i < len(clustering) && o.Column.Name == clustering[i].Name:
			continue
		case !containsIdent(clustering, o.Column.Name):
			p.errorf(o.Column.NamePos, "column %s in CLUSTERING ORDER BY is not a clustering column (the clustering columns are %s)", QuoteIdent(o.Column.Name), list)
		default:
			p.errorf(o.Column.NamePos, "CLUSTERING ORDER BY must list the clustering columns in PRIMARY KEY order (%s): expected %s, found %s",
				list, QuoteIdent(clustering[i].Name), QuoteIdent(o.Column.Name))
		}
	}
	if n := len(ct.ClusteringOrder); n < len(clustering) {
		p.errorf(end, "CLUSTERING ORDER BY must list every clustering column in PRIMARY KEY order (%s): %s is missing", list, QuoteIdent(clustering[n].Name))
	}
}

func containsIdent(xs []Ident, name string) bool {
	for _, x := range xs {
		if x.Name == name {
			return true
		}
	}
	return false
}

func identNames(xs []Ident) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteIdent(x.Name))
	}
	return b.String()
}

func (p *parser) parseCreateKeyspace(start Pos) Statement {
	s := &CreateKeyspaceStmt{Start: start}
	s.IfNotExists = p.parseIfNotExists()
	s.Name = p.parseIdent("keyspace name")
	if p.tok != WITH {
		p.errorExpected("'WITH'")
	}
	s.Options = p.parseOptions()
	return s
}

// parseAlterKeyspace parses the rest of ALTER KEYSPACE [IF EXISTS] name WITH
// options, as Cassandra 4.1's alterKeyspaceStatement.
func (p *parser) parseAlterKeyspace(start Pos) Statement {
	s := &AlterKeyspaceStmt{Start: start}
	s.IfExists = p.parseIfExists()
	s.Name = p.parseIdent("keyspace name")
	if p.tok != WITH {
		p.errorExpected("'WITH'")
	}
	s.Options = p.parseOptions()
	return s
}

func (p *parser) parseCreateTable(start Pos) Statement {
	s := &CreateTableStmt{Start: start}
	s.IfNotExists = p.parseIfNotExists()
	s.Table = p.parseTableName()
	p.expect(LPAREN)
	for {
		if p.tok == PRIMARY {
			pos := p.pos
			if s.PrimaryKey != nil {
				p.errorf(pos, "PRIMARY KEY is declared twice")
			}
			p.next()
			p.expect(KEY)
			s.PrimaryKey = p.parsePrimaryKey(pos)
		} else {
			s.Columns = append(s.Columns, p.parseColumnDef())
		}
		if !p.got(COMMA) {
			break
		}
		if p.tok == RPAREN { // a trailing comma, as CQL allows
			break
		}
	}
	if p.tok != RPAREN {
		p.errorExpected("',' or ')'")
	}
	p.next()
	if p.tok == WITH {
		s.Options = p.parseWith(s)
	}
	return s
}

func (p *parser) parseColumnDef() ColumnDef {
	c := ColumnDef{Name: p.parseIdent("column name or PRIMARY KEY")}
	c.Type = p.parseType()
	if p.isWord("STATIC") {
		p.next()
		c.Static = true
	}
	p.refuseColumnOption()
	if p.got(PRIMARY) {
		p.expect(KEY)
		c.PrimaryKey = true
	}
	return c
}

// maxTypeDepth bounds the nesting of type parameters, map<text, list<...>>.
const maxTypeDepth = 8

// parseType reads a type name, with any <parameters>, into canonical
// lower-case text. The schema decides which types exist; this accepts the
// shape of any CQL type so the error can name it.
func (p *parser) parseType() Ident {
	pos := p.pos
	var b strings.Builder
	p.typeText(&b, 0)
	return Ident{NamePos: pos, Name: b.String()}
}

func (p *parser) typeText(b *strings.Builder, depth int) {
	// SET is reserved (UPDATE ... SET) but names the set<T> collection type, as in Cassandra's
	// grammar; anywhere else it is no type.
	set := p.tok == SET
	if p.tok != IDENT && p.tok != QIDENT && !set && !(p.tok.IsKeyword() && !p.tok.IsReserved()) {
		p.errorExpected("type name")
	}
	if p.tok == QIDENT {
		b.WriteString(QuoteIdent(p.lit))
	} else {
		b.WriteString(strings.ToLower(p.lit))
	}
	p.next()
	if p.tok == DOT { // a user-defined type's keyspace, then its name
		p.next()
		if !p.isIdent() {
			p.errorExpected("type name")
		}
		b.WriteByte('.')
		if p.tok == QIDENT {
			b.WriteString(QuoteIdent(p.lit))
		} else {
			b.WriteString(strings.ToLower(p.lit))
		}
		p.next()
		return
	}
	if set && p.tok != LT {
		p.errorExpected("'<' after set")
	}
	if p.tok != LT {
		return
	}
	if depth == maxTypeDepth {
		p.errorf(p.pos, "type parameters are nested too deeply")
	}
	p.next()
	b.WriteByte('<')
	for {
		p.typeText(b, depth+1)
		if !p.got(COMMA) {
			break
		}
		b.WriteString(", ")
	}
	if p.tok != GT {
		p.errorExpected("',' or '>'")
	}
	p.next()
	b.WriteByte('>')
}

// parsePrimaryKey parses the ( ... ) after PRIMARY KEY: (a), (a, c),
// ((a, b), c).
func (p *parser) parsePrimaryKey(start Pos) *PrimaryKey {
	pk := &PrimaryKey{Start: start}
	p.expect(LPAREN)
	if p.got(LPAREN) {
		pk.PartitionKey = p.parseIdentList("partition key column")
		p.expect(RPAREN)
	} else {
		pk.PartitionKey = []Ident{p.parseIdent("primary key column")}
	}
	for p.got(COMMA) {
		pk.Clustering = append(pk.Clustering, p.parseIdent("clustering column"))
	}
	if p.tok != RPAREN {
		p.errorExpected("',' or ')'")
	}
	p.next()
	return pk
}

func (p *parser) parseInsert(start Pos) Statement {
	p.expect(INTO)
	s := &InsertStmt{Start: start, Table: p.parseTableName()}
	if p.isWord("JSON") {
		p.next()
		switch p.tok {
		case STRING:
			s.JSON = p.parseLiteral()
		case QUESTION, COLON:
			s.JSON = p.parseIntOrBind("JSON string")
		default:
			p.errorExpected("JSON string or bind marker")
		}
		if p.isWord("DEFAULT") {
			p.next()
			switch {
			case p.tok == NULL:
				p.next()
			case p.isWord("UNSET"):
				s.DefaultUnset = true
				p.next()
			default:
				p.errorExpected("'NULL' or 'UNSET'")
			}
		}
		s.If = p.parseConditions(true)
		u := p.parseUsing(true)
		s.Timestamp, s.TTL, s.Timeout = u.ts, u.ttl, u.timeout
		return s
	}
	p.expect(LPAREN)
	s.Columns = p.parseIdentList("column name")
	if p.tok != RPAREN {
		p.errorExpected("',' or ')'")
	}
	p.next()
	p.expect(VALUES)
	p.expect(LPAREN)
	for {
		s.Values = append(s.Values, p.parseTerm())
		if !p.got(COMMA) {
			break
		}
	}
	if p.tok != RPAREN {
		p.errorExpected("',' or ')'")
	}
	p.next()
	s.If = p.parseConditions(true)
	u := p.parseUsing(true)
	s.Timestamp, s.TTL, s.Timeout = u.ts, u.ttl, u.timeout
	return s
}

// parseUsing parses an optional USING clause: USING TIMESTAMP n, USING
// TTL n, USING TIMEOUT d, joined by AND in any order; with timestamp false
// (SELECT) only USING TIMEOUT d. A TTL literal outside [0, MaxTTL] is an
// error at its position; TTL is parsed where it is not allowed (DELETE,
// BATCH) for its caller to refuse by name.
func (p *parser) parseUsing(timestamp bool) (u using) {
	if !p.got(USING) {
		return u
	}
	for {
		pos := p.pos
		switch {
		case p.tok == TIMESTAMP && timestamp:
			if u.ts != nil {
				p.errorf(pos, "USING TIMESTAMP is given twice")
			}
			p.next()
			u.ts = p.parseIntOrBind("integer timestamp")
		case p.tok == IDENT && strings.EqualFold(p.lit, "ttl") && timestamp:
			if u.ttl != nil {
				p.errorf(pos, "USING TTL is given twice")
			}
			u.ttlPos = pos
			p.next()
			u.ttl = p.parseIntOrBind("integer TTL in seconds")
			if u.ttl.Kind == LitInteger {
				if n, err := strconv.ParseInt(u.ttl.Value, 10, 64); err != nil || n < 0 || n > MaxTTL {
					p.errorf(u.ttl.ValuePos, "TTL %s is out of range: want 0 (none) to %d seconds (20 years)", u.ttl.Value, MaxTTL)
				}
			}
		case p.tok == TIMEOUT:
			if u.timeout != nil {
				p.errorf(pos, "USING TIMEOUT is given twice")
			}
			p.next()
			if p.tok != DURATION {
				p.errorExpected("duration (such as 500ms or 1m30s)")
			}
			u.timeout = &Literal{ValuePos: p.pos, Kind: LitDuration, Value: strings.ToLower(p.lit)}
			p.next()
		case timestamp:
			p.errorExpected("'TIMESTAMP', 'TTL' or 'TIMEOUT'")
		default:
			p.errorExpected("'TIMEOUT'")
		}
		if !p.got(AND) {
			return u
		}
	}
}

// using is a parsed USING clause; nil for what it does not give.
type using struct {
	ts, ttl, timeout *Literal
	ttlPos           Pos // of the TTL keyword
}

// MaxTTL is the largest TTL in seconds USING TTL accepts: 20 years, as in Cassandra.
const MaxTTL = 20 * 365 * 24 * 60 * 60

// bind returns a new bind marker at the current token, numbered.
func (p *parser) bind() *Literal {
	lit := &Literal{ValuePos: p.pos, Kind: LitBind, Value: "?", Index: p.markers}
	p.markers++
	return lit
}

// namedBind returns a new named bind marker, :name, numbered like ?. It
// leaves the name as the current token, as bind leaves the '?'.
func (p *parser) namedBind() *Literal {
	pos := p.pos
	p.next()
	if !p.isIdent() {
		p.errorExpected("bind marker name after ':'")
	}
	name := p.lit
	if p.tok != QIDENT {
		name = strings.ToLower(name)
	}
	lit := p.bind()
	lit.ValuePos, lit.Value = pos, ":"+QuoteIdent(name)
	return lit
}

func (p *parser) parseIntOrBind(what string) *Literal {
	lit := &Literal{ValuePos: p.pos, Value: p.lit}
	switch p.tok {
	case INT:
		lit.Kind = LitInteger
	case QUESTION:
		lit = p.bind()
	case COLON:
		lit = p.namedBind()
	default:
		p.errorExpected(what)
	}
	p.next()
	return lit
}

func (p *parser) parseUpdate(start Pos) Statement {
	s := &UpdateStmt{Start: start, Table: p.parseTableName()}
	u := p.parseUsing(true)
	s.Timestamp, s.TTL, s.Timeout = u.ts, u.ttl, u.timeout
	if p.tok != SET {
		if s.Timestamp == nil && s.TTL == nil && s.Timeout == nil {
			p.errorExpected("'USING' or 'SET'")
		}
		p.errorExpected("'SET'")
	}
	p.next()
	for {
		s.Set = append(s.Set, p.parseAssignment())
		if !p.got(COMMA) {
			break
		}
	}
	if p.tok != WHERE {
		p.errorExpected("',' or 'WHERE'")
	}
	s.Where = p.parseWhere()
	s.If = p.parseConditions(false)
	return s
}

func (p *parser) parseDelete(start Pos) Statement {
	s := &DeleteStmt{Start: start}
	if p.tok != FROM {
		for {
			s.Columns = append(s.Columns, p.parseIdent("column name or 'FROM'"))
			if p.tok == LBRACKET {
				if s.Elements == nil {
					s.Elements = make([]Term, len(s.Columns)-1, len(s.Columns))
				}
				p.next()
				s.Elements = append(s.Elements, p.term(0))
				p.expect(RBRACKET)
			} else if s.Elements != nil {
				s.Elements = append(s.Elements, nil)
			}
			if p.tok == DOT {
				if s.Fields == nil {
					s.Fields = make([]Ident, len(s.Columns)-1, len(s.Columns))
				}
				p.next()
				s.Fields = append(s.Fields, p.parseIdent("field name"))
			} else if s.Fields != nil {
				s.Fields = append(s.Fields, Ident{})
			}
			if !p.got(COMMA) {
				break
			}
		}
		if p.tok != FROM {
			p.errorExpected("',' or 'FROM'")
		}
	}
	p.next()
	s.Table = p.parseTableName()
	u := p.parseUsing(true)
	s.Timestamp, s.Timeout = u.ts, u.timeout
	if u.ttl != nil {
		p.errorf(u.ttlPos, "USING TTL is not allowed on DELETE")
	}
	if p.tok != WHERE {
		if s.Timestamp == nil && s.Timeout == nil {
			p.errorExpected("'USING' or 'WHERE'")
		}
		p.errorExpected("'WHERE'")
	}
	s.Where = p.parseWhere()
	s.If = p.parseConditions(false)
	return s
}

func (p *parser) parseSelect(start Pos) Statement {
	s := &SelectStmt{Start: start}
	col, isCol := p.parseSelectModifier(s)
	switch {
	case isCol:
		s.Columns = []Ident{col}
		p.parseAlias(s)
	case p.got(STAR):
		s.Star = true
	default:
		p.parseSelector(s, "'*' or column name")
	}
	if !s.Star {
		for p.got(COMMA) {
			p.parseSelector(s, "column name")
		}
	}
	if p.tok != FROM {
		if s.Star {
			p.errorExpected("'FROM'")
		}
		p.errorExpected("',' or 'FROM'")
	}
	p.next()
	s.Table = p.parseTableName()
	if p.tok == WHERE {
		s.Where = p.parseWhere()
	}
	if p.isWord("GROUP") {
		p.next()
		p.expect(BY)
		s.GroupBy = append(s.GroupBy, p.parseIdent("column name"))
		for p.got(COMMA) {
			s.GroupBy = append(s.GroupBy, p.parseIdent("column name"))
		}
	}
	if p.got(ORDER) {
		p.expect(BY)
		s.OrderBy = p.parseOrderings("ORDER BY", false)
	}
	if p.isWord("PER") {
		p.next()
		p.expectWord("PARTITION")
		p.expect(LIMIT)
		s.PerPartitionLimit = p.parseIntOrBind("integer limit")
	}
	if p.got(LIMIT) {
		s.Limit = p.parseIntOrBind("integer limit")
	}
	if p.got(ALLOW) {
		p.expect(FILTERING)
		s.AllowFiltering = true
	}
	s.Timeout = p.parseUsing(false).timeout
	return s
}

// parseAlias parses the AS alias that may follow the last item of s's SELECT list.
func (p *parser) parseAlias(s *SelectStmt) {
	if !p.isWord("AS") {
		if s.Aliases != nil {
			s.Aliases = append(s.Aliases, Ident{})
		}
		return
	}
	p.next()
	a := p.parseIdent("alias")
	if s.Aliases == nil {
		s.Aliases = make([]Ident, len(s.Columns)-1, len(s.Columns))
	}
	s.Aliases = append(s.Aliases, a)
}

// aggregateName returns the aggregate a selector's call names (count, min,
// max, sum or avg), or "" for another function.
func aggregateName(tok Token, lit string) string {
	if tok != IDENT {
		return ""
	}
	switch name := strings.ToLower(lit); name {
	case "count", "min", "max", "sum", "avg":
		return name
	}
	return ""
}

// parseAggregate parses an aggregate call, name(arg) or COUNT(*), the
// current token being its name, and appends it to s.
func (p *parser) parseAggregate(s *SelectStmt, name string) {
	pos := p.pos
	p.next()
	p.expect(LPAREN)
	f := SelectFunc{Kind: SelectAggregate, Pos: pos, Aggregate: name}
	switch {
	case name == "count" && p.tok == STAR:
		p.next()
	case name == "count" && p.tok == INT && p.lit == "1":
		p.next()
	default:
		f.Expr = p.parseSelectorArg(1)
	}
	p.expect(RPAREN)
	p.refuseSelectorTail()
	if s.Funcs == nil {
		s.Funcs = make([]SelectFunc, len(s.Columns), len(s.Columns)+1)
	}
	s.Funcs = append(s.Funcs, f)
	s.Columns = append(s.Columns, Ident{NamePos: pos})
	p.parseAlias(s)
}

// parseSelector parses one item of a SELECT list: a column name,
// WRITETIME(column) or TTL(column), a function call or CAST (kind
// SelectExpr), or an aggregate (kind SelectAggregate), with its alias, and
// appends it to s. Collection and field selections and arithmetic are
// refused as not supported (callName, refuseSelectorTail).
func (p *parser) parseSelector(s *SelectStmt, what string) {
	if p.tok == LPAREN || p.tok == MINUS || p.tok.IsLiteral() && p.tok != IDENT && p.tok != QIDENT {
		p.unsupported(p.pos, "selectors other than column names and function calls are not supported")
	}
	if p.isIdent() {
		save := *p
		p.next()
		call := p.tok == LPAREN
		if call {
			if name := aggregateName(save.tok, save.lit); name != "" {
				*p = save
				p.parseAggregate(s, name)
				return
			}
		}
		if p.tok == DOT { // ks.f(...), else a field selection, refused below
			p.next()
			if p.isIdent() {
				p.next()
				call = p.tok == LPAREN
			}
		}
		*p = save
		if call {
			pos := p.pos
			e := p.parseSelectorExpr(0)
			p.refuseSelectorTail()
			if s.Funcs == nil {
				s.Funcs = make([]SelectFunc, len(s.Columns), len(s.Columns)+1)
			}
			f, ok := e.(*FuncCall)
			switch {
			case ok && !f.System && (f.Name == "writetime" || f.Name == "ttl"):
				kind := SelectWritetime
				if f.Name == "ttl" {
					kind = SelectTTL
				}
				s.Funcs = append(s.Funcs, SelectFunc{Kind: kind, Pos: pos})
				s.Columns = append(s.Columns, f.Args[0].(*ColumnRef).Column)
			default:
				s.Funcs = append(s.Funcs, SelectFunc{Kind: SelectExpr, Pos: pos, Expr: e})
				s.Columns = append(s.Columns, Ident{NamePos: pos})
			}
			p.parseAlias(s)
			return
		}
	}
	x := p.parseIdent(what)
	if p.tok == LBRACKET {
		p.parseElementSelection(s, x)
		p.parseAlias(s)
		return
	}
	if s.Funcs != nil {
		s.Funcs = append(s.Funcs, SelectFunc{})
	}
	p.refuseSelectorTail()
	s.Columns = append(s.Columns, x)
	p.parseAlias(s)
}

// parseElementSelection parses the rest of column[key] or column[from..to] (either end may be
// left out) in a SELECT list, at the '[', and appends it to s.
func (p *parser) parseElementSelection(s *SelectStmt, x Ident) {
	pos := p.pos
	p.next()
	e := &ElementSelection{}
	if p.tok != RANGE {
		e.Key = p.term(0)
	}
	if p.got(RANGE) {
		e.Slice, e.From, e.Key = true, e.Key, nil
		if p.tok != RBRACKET {
			e.To = p.term(0)
		}
	}
	p.expect(RBRACKET)
	p.refuseSelectorTail()
	if s.Funcs == nil {
		s.Funcs = make([]SelectFunc, len(s.Columns), len(s.Columns)+1)
	}
	s.Funcs = append(s.Funcs, SelectFunc{Kind: SelectElement, Pos: pos, Element: e})
	s.Columns = append(s.Columns, x)
}

// parseWhere parses WHERE relation [AND relation ...]: column op term,
// column IN (term, ...) or IN ?, and the same on a tuple of columns,
// (a, b) op tuple, (a, b) IN (tuple, ...) or IN ?.
func (p *parser) parseWhere() []Relation {
	p.expect(WHERE)
	var rs []Relation
	for {
		var r Relation
		if p.tok == LPAREN {
			p.next()
			r.Columns = append(r.Columns, p.parseIdent("column name"))
			for p.got(COMMA) {
				r.Columns = append(r.Columns, p.parseIdent("column name"))
			}
			p.expect(RPAREN)
			r.Column = r.Columns[0]
		} else {
			quoted := p.tok == QIDENT
			r.Column = p.parseIdent("column name")
			if !quoted && r.Column.Name == "token" && p.tok == LPAREN { // token(k) > ?
				p.next()
				r.Token = p.parseIdentList("partition key column name")
				p.expect(RPAREN)
			}
			if p.tok == LBRACKET && r.Token == nil { // m[key] = value
				p.next()
				r.Element = p.parseTerm()
				p.expect(RBRACKET)
				if p.tok != EQ {
					p.unsupported(p.pos, "a map entry can only be restricted by =")
				}
			}
			p.refuseOperator(r.Column)
		}
		r.OpPos, r.Op = p.pos, p.tok
		switch {
		case p.tok == EQ || p.tok == LT || p.tok == LE || p.tok == GT || p.tok == GE:
			p.next()
			r.Value = p.parseTerm()
		case p.isWord("IN") && r.Token == nil:
			r.Op = IN
			p.next()
			p.parseInValues(&r)
		case p.isWord("CONTAINS") && r.Token == nil && !r.Multi():
			r.Op = CONTAINS
			p.next()
			if p.tok == KEY {
				r.Op = CONTAINSKEY
				p.next()
			}
			r.Value = p.parseTerm()
		default:
			if r.Multi() {
				p.refuseOperator(r.Column)
			}
			p.errorExpected("'=', '<', '<=', '>', '>=' or 'IN'")
		}
		rs = append(rs, r)
		if !p.got(AND) {
			return rs
		}
	}
}

// parseInValues parses what follows IN: (term, ...) or a bind marker.
func (p *parser) parseInValues(r *Relation) {
	if p.tok == QUESTION || p.tok == COLON {
		r.Value = p.parseIntOrBind("bind marker")
		return
	}
	if p.tok != LPAREN {
		p.errorExpected("'(' or a bind marker")
	}
	p.next()
	r.Values = []Term{}
	if p.got(RPAREN) {
		return
	}
	r.Values = append(r.Values, p.parseTerm())
	for p.got(COMMA) {
		r.Values = append(r.Values, p.parseTerm())
	}
	p.expect(RPAREN)
}

func (p *parser) parseDescribe(start Pos) Statement {
	s := &DescribeStmt{Start: start}
	switch p.tok {
	case KEYSPACES:
		s.Kind = DescribeKeyspaces
		p.next()
	case KEYSPACE:
		s.Kind = DescribeKeyspace
		p.next()
		if p.isIdent() {
			s.Keyspace = p.parseIdent("keyspace name")
		}
	case TABLES:
		s.Kind = DescribeTables
		p.next()
	case TABLE:
		s.Kind = DescribeTable
		p.next()
		s.Table = p.parseTableName()
	case CLUSTER:
		s.Kind = DescribeCluster
		p.next()
	default:
		if p.isWord("TYPES") {
			s.Kind = DescribeTypes
			p.next()
			break
		}
		if p.isWord("TYPE") {
			s.Kind = DescribeType
			p.next()
			s.Table = p.parseTypeName()
			break
		}
		if p.isWord("FULL") || p.isWord("SCHEMA") {
			s.Kind = DescribeSchema
			if p.isWord("FULL") { // kvnode's schema has no system keyspaces to add
				p.next()
			}
			p.expectWord("SCHEMA")
			break
		}
		p.refuseDescribe()
		p.errorExpected("'KEYSPACES', 'KEYSPACE', 'TABLES', 'TABLE', 'CLUSTER' or 'SCHEMA'")
	}
	if p.got(WITH) {
		p.expectWord("INTERNALS")
		s.Internals = true
	}
	return s
}

// maxMapDepth bounds the nesting of map literals so that hostile input
// cannot exhaust the stack.
const maxMapDepth = 8

func (p *parser) parseTerm() Term {
	t := p.term(0)
	p.refuseOperation()
	return t
}

func (p *parser) term(depth int) Term {
	if p.tok == LBRACE {
		if depth == maxMapDepth {
			p.errorf(p.pos, "map literals are nested too deeply")
		}
		m := &MapLiteral{Lbrace: p.pos}
		p.next()
		if p.got(RBRACE) {
			return m
		}
		var first Term
		if (p.tok == IDENT && !IsISODuration(p.lit)) || p.tok == QIDENT {
			pos, tok, lit := p.pos, p.tok, p.lit
			p.next()
			if p.tok == COLON { // {field: value, ...}, a user-defined type's literal
				return p.udtLiteral(m.Lbrace, pos, tok, lit, depth)
			}
			first = p.callTermAfter(pos, tok, lit, depth+1)
		}
		for {
			key := first
			if key == nil {
				key = p.term(depth + 1)
			}
			first = nil
			if len(m.Entries) == 0 && (p.tok == COMMA || p.tok == RBRACE) {
				return p.collectionLiteral(SetLiteral, m.Lbrace, key, RBRACE, depth)
			}
			p.expect(COLON)
			m.Entries = append(m.Entries, MapEntry{Key: key, Value: p.term(depth + 1)})
			if !p.got(COMMA) {
				break
			}
		}
		if p.tok != RBRACE {
			p.errorExpected("',' or '}'")
		}
		p.next()
		return m
	}
	if p.tok == IDENT && IsISODuration(p.lit) {
		lit := &Literal{ValuePos: p.pos, Kind: LitDuration, Value: p.lit}
		p.next()
		return lit
	}
	if p.tok == IDENT || p.tok == QIDENT {
		return p.parseCallTerm(depth)
	}
	switch p.tok {
	case LBRACKET:
		if depth == maxMapDepth {
			p.errorf(p.pos, "collection literals are nested too deeply")
		}
		start := p.pos
		p.next()
		if p.got(RBRACKET) {
			return &CollectionLiteral{Kind: ListLiteral, Start: start, Elements: []Term{}}
		}
		return p.collectionLiteral(ListLiteral, start, p.term(depth+1), RBRACKET, depth)
	case LPAREN:
		if depth == maxMapDepth {
			p.errorf(p.pos, "tuple literals are nested too deeply")
		}
		p.refuseTypeHint()
		start := p.pos
		p.next()
		return p.collectionLiteral(TupleLiteral, start, p.term(depth+1), RPAREN, depth)
	}
	return p.parseLiteral()
}

// collectionLiteral parses the rest of a list, set or tuple literal whose first element has
// been read, up to and including its closing token.
func (p *parser) collectionLiteral(kind CollectionLiteralKind, start Pos, first Term, closing Token, depth int) Term {
	c := &CollectionLiteral{Kind: kind, Start: start, Elements: []Term{first}}
	for p.got(COMMA) {
		c.Elements = append(c.Elements, p.term(depth+1))
	}
	if p.tok != closing {
		p.errorExpected("',' or '" + closing.String() + "'")
	}
	p.next()
	return c
}

func (p *parser) parseLiteral() *Literal {
	lit := &Literal{ValuePos: p.pos, Value: p.lit}
	switch p.tok {
	case STRING:
		lit.Kind = LitString
	case INT:
		lit.Kind = LitInteger
	case FLOAT:
		lit.Kind = LitFloat
	case BLOB:
		lit.Kind, lit.Value = LitBlob, strings.ToLower(p.lit)
	case UUID:
		lit.Kind, lit.Value = LitUUID, strings.ToLower(p.lit)
	case TRUE, FALSE:
		lit.Kind, lit.Value = LitBoolean, strings.ToLower(p.lit)
	case NULL:
		lit.Kind, lit.Value = LitNull, ""
	case QUESTION:
		lit = p.bind()
	case COLON:
		lit = p.namedBind()
	case NAN:
		lit.Kind, lit.Value = LitFloat, "NaN"
	case INFINITY:
		lit.Kind, lit.Value = LitFloat, "Infinity"
	case DURATION:
		lit.Kind = LitDuration
	case MINUS:
		p.next()
		if p.tok == IDENT && IsISODuration(p.lit) {
			lit.Kind, lit.Value = LitDuration, "-"+p.lit
			break
		}
		if p.tok != INFINITY {
			p.errorExpected("number or 'Infinity' after '-'")
		}
		lit.Kind, lit.Value = LitFloat, "-Infinity"
	default:
		p.errorExpected("value")
	}
	p.next()
	return lit
}

// parseAssignment parses one item of UPDATE ... SET: column = term, column[term] = term,
// column = column + term, column = column - term or column = term + column.
func (p *parser) parseAssignment() Assignment {
	a := Assignment{Column: p.parseIdent("column name")}
	if p.got(LBRACKET) {
		a.Element = p.term(0)
		p.expect(RBRACKET)
	} else if p.got(DOT) {
		f := p.parseIdent("field name")
		a.Field = &f
	}
	p.expect(EQ)
	if a.Element == nil && a.Field == nil && p.isColumn(a.Column) {
		save := *p
		p.next()
		if p.tok == PLUS || p.tok == MINUS {
			a.Op, a.OpPos = p.tok, p.pos
			p.next()
			a.Value = p.parseTerm()
			return a
		}
		*p = save
	}
	a.Value = p.term(0)
	if a.Element == nil && a.Field == nil && p.tok == PLUS {
		opPos := p.pos
		save := *p
		p.next()
		if p.isColumn(a.Column) {
			p.next()
			a.Op, a.OpPos, a.Prepend = PLUS, opPos, true
			p.refuseOperation()
			return a
		}
		*p = save
	}
	p.refuseOperation()
	return a
}

// isColumn reports whether the current token names column c.
func (p *parser) isColumn(c Ident) bool {
	switch {
	case p.tok == QIDENT:
		return p.lit == c.Name
	case p.isIdent():
		return strings.ToLower(p.lit) == c.Name
	}
	return false
}
