package cql

import "strings"

// Function calls: Cassandra's native scalar functions as values (now(),
// minTimeuuid('2024-01-01'), blobAsInt(?)) and as selectors (toDate(ts),
// token(k), CAST(v AS text)). The parser reads any name(args); which
// functions exist, and what their arguments may be, is the schema's to
// check (package schema, functions.go), except for the aggregates and
// user-defined functions, refused here by name.

// maxCallDepth bounds the nesting of function calls so that hostile input
// cannot exhaust the stack.
const maxCallDepth = 8

// parseCallTerm parses a term that starts with an identifier: a function
// call name(args) or system.name(args). Anything else is refused as
// refuseTerm does. The current token is the identifier.
func (p *parser) parseCallTerm(depth int) Term {
	pos, tok, lit := p.pos, p.tok, p.lit
	p.next()
	return p.callTermAfter(pos, tok, lit, depth)
}

// callTermAfter is parseCallTerm once the identifier (tok, lit at pos) has been read.
func (p *parser) callTermAfter(pos Pos, tok Token, lit string, depth int) Term {
	system := false
	if p.tok == DOT && tok != QIDENT && strings.EqualFold(lit, "system") {
		p.next()
		if !p.isIdent() {
			p.errorExpected("function name after 'system.'")
		}
		system, pos, tok, lit = true, p.pos, p.tok, p.lit
		p.next()
		if p.tok != LPAREN {
			p.errorExpected("'('")
		}
	}
	switch p.tok {
	case LPAREN:
		return p.parseCallArgs(p.callName(pos, tok, lit, system), depth, false)
	case DOT:
		p.unsupported(pos, "user-defined functions are not supported")
	case PLUS, MINUS:
		p.unsupported(pos, "counter and collection updates (c = c + ...) are not supported")
	}
	if tok == QIDENT {
		p.errorf(pos, "expected value, found %s", describe(QIDENT, lit))
	}
	p.errorf(pos, "expected value, found %s", describe(IDENT, lit))
	return nil
}

// callName returns the call of the function named lit at pos (its '('
// current), refusing those kvnode does not run (refuseCall).
func (p *parser) callName(pos Pos, tok Token, lit string, system bool) *FuncCall {
	name := lit
	if tok != QIDENT {
		name = strings.ToLower(lit)
	}
	p.refuseCall(pos, tok == QIDENT, lit, name)
	return &FuncCall{NamePos: pos, System: system, Name: name}
}

// nativeFunction reports whether name (lower-cased unless quoted) is one of
// the native functions kvnode runs; their argument types are the schema's
// to check.
func nativeFunction(name string) bool {
	switch name {
	case "now", "currenttimeuuid", "uuid", "currenttimestamp", "currentdate", "currenttime",
		"totimestamp", "todate", "tounixtimestamp", "mintimeuuid", "maxtimeuuid", "dateof", "unixtimestampof",
		"token", "writetime", "ttl", "tojson", "fromjson":
		return true
	}
	return strings.HasPrefix(name, "blobas") && len(name) > len("blobas") ||
		strings.HasSuffix(name, "asblob") && len(name) > len("asblob")
}

// parseCallArgs parses the arguments of call f, the current token being its
// '(': terms, or with selector set selector arguments.
func (p *parser) parseCallArgs(f *FuncCall, depth int, selector bool) *FuncCall {
	if depth >= maxCallDepth {
		p.errorf(f.NamePos, "function calls are nested too deeply")
	}
	p.expect(LPAREN)
	if p.tok != RPAREN {
		for {
			if selector {
				f.Args = append(f.Args, p.parseSelectorArg(depth+1))
			} else {
				f.Args = append(f.Args, p.term(depth+1))
				p.refuseOperation()
			}
			if !p.got(COMMA) {
				break
			}
		}
	}
	if p.tok != RPAREN {
		p.errorExpected("',' or ')'")
	}
	f.Rparen = p.pos
	p.next()
	return f
}

// parseSelectorExpr parses a selector that is a function call or CAST, the
// current token being the function's name (or system, before
// '.name(').
func (p *parser) parseSelectorExpr(depth int) Term {
	pos, tok, lit := p.pos, p.tok, p.lit
	system := false
	p.next()
	if p.tok == DOT {
		p.next()
		if !p.isIdent() {
			p.errorExpected("function name after '.'")
		}
		if tok == QIDENT || !strings.EqualFold(lit, "system") {
			p.unsupported(pos, "user-defined functions are not supported")
		}
		system, pos, tok, lit = true, p.pos, p.tok, p.lit
		p.next()
		if p.tok != LPAREN {
			p.errorExpected("'('")
		}
	}
	if tok != QIDENT && strings.EqualFold(lit, "cast") && !system {
		if depth >= maxCallDepth {
			p.errorf(pos, "function calls are nested too deeply")
		}
		c := &Cast{CastPos: pos}
		p.expect(LPAREN)
		c.Arg = p.parseSelectorArg(depth + 1)
		p.expectWord("AS")
		c.Type = p.parseType()
		p.expect(RPAREN)
		return c
	}
	f := p.callName(pos, tok, lit, system)
	if !system && (f.Name == "writetime" || f.Name == "ttl") {
		p.expect(LPAREN)
		f.Args = []Term{&ColumnRef{Column: p.parseIdent("column name")}}
		if p.tok == LBRACKET || p.tok == DOT {
			p.unsupported(p.pos, "%s of collection elements or fields is not supported", strings.ToUpper(f.Name))
		}
		if p.tok != RPAREN {
			p.errorExpected("')'")
		}
		f.Rparen = p.pos
		p.next()
		return f
	}
	return p.parseCallArgs(f, depth, true)
}

// parseSelectorArg parses an argument of a function call in a SELECT list: a
// column, a literal or bind marker, or a nested call.
func (p *parser) parseSelectorArg(depth int) Term {
	switch {
	case p.isIdent():
		if p.tok == IDENT && IsISODuration(p.lit) {
			p.unsupported(p.pos, "duration values are not supported")
		}
		pos, tok, lit := p.pos, p.tok, p.lit
		save := *p
		p.next()
		if p.tok == LPAREN || p.tok == DOT {
			*p = save
			return p.parseSelectorExpr(depth)
		}
		name := lit
		if tok != QIDENT {
			name = strings.ToLower(lit)
		}
		if !p.isWord("AS") {
			p.refuseSelectorTail()
		}
		return &ColumnRef{Column: Ident{NamePos: pos, Name: name}}
	case p.tok == LBRACE || p.tok == LBRACKET || p.tok == LPAREN:
		p.unsupported(p.pos, "collection, tuple and user-defined type literals are not supported")
	}
	t := p.term(depth)
	p.refuseOperation()
	return t
}
