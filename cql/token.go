package cql

import (
	"fmt"
	"strings"
)

// Token is a lexical token of the language.
type Token int

// The tokens. Keywords lie between keywordBeg and keywordEnd; Lookup maps an
// unquoted word to its keyword or IDENT.
const (
	// ILLEGAL is a malformed token; its literal is the scanner's message.
	ILLEGAL Token = iota
	// EOF is the end of the input.
	EOF

	literalBeg
	// DURATION is a duration: 500ms, 1h30m (literal as written).
	DURATION
	IDENT  // an unquoted identifier: foo (literal as written)
	QIDENT // a quoted identifier: "Foo" (literal is the name, unescaped)
	STRING // 'abc' (literal is the value, unescaped)
	INT    // 42, -7
	FLOAT  // 1.5, -2e10
	BLOB   // 0xcafe
	UUID   // 123e4567-e89b-12d3-a456-426614174000 (literal as written)
	literalEnd

	operatorBeg
	LPAREN    // (
	RPAREN    // )
	LBRACE    // {
	RBRACE    // }
	COMMA     // ,
	DOT       // .
	SEMICOLON // ;
	COLON     // :
	STAR      // *
	QUESTION  // ?
	EQ        // =
	LT        // <
	LE        // <=
	GT        // >
	GE        // >=
	MINUS     // -
	LBRACKET  // [
	RBRACKET  // ]
	PLUS      // +
	SLASH     // /
	PERCENT   // %
	NEQ       // !=
	// IN is a relation's operator IN (v, ...): a word, never produced by the scanner.
	IN
	RANGE // .. (a slice of a collection in a SELECT list)
	// CONTAINS and CONTAINSKEY are a relation's operators CONTAINS and CONTAINS KEY: words, never
	// produced by the scanner.
	CONTAINS
	CONTAINSKEY
	operatorEnd

	keywordBeg
	ALLOW
	ALTER
	AND
	APPLY
	ASC
	BATCH
	BEGIN
	BY
	CLUSTER
	CLUSTERING
	CREATE
	DELETE
	DESC
	DESCRIBE
	DROP
	EXISTS
	FALSE
	FILTERING
	FROM
	IF
	INFINITY
	INSERT
	INTO
	KEY
	KEYSPACE
	KEYSPACES
	LIMIT
	LOGGED
	NAN
	NOT
	NULL
	ORDER
	PRIMARY
	SELECT
	SET
	TABLE
	TABLES
	TIMEOUT
	TIMESTAMP
	TRUE
	UNLOGGED
	UPDATE
	USE
	USING
	VALUES
	WHERE
	WITH
	keywordEnd
)

var tokens = [...]string{
	ILLEGAL: "ILLEGAL",
	EOF:     "EOF",

	DURATION: "DURATION",

	IDENT:  "IDENT",
	QIDENT: "QIDENT",
	STRING: "STRING",
	INT:    "INT",
	FLOAT:  "FLOAT",
	BLOB:   "BLOB",
	UUID:   "UUID",

	LPAREN:    "(",
	RPAREN:    ")",
	LBRACE:    "{",
	RBRACE:    "}",
	COMMA:     ",",
	DOT:       ".",
	SEMICOLON: ";",
	COLON:     ":",
	STAR:      "*",
	QUESTION:  "?",
	EQ:        "=",
	LT:        "<",
	LE:        "<=",
	GT:        ">",
	GE:        ">=",
	MINUS:     "-",
	LBRACKET:  "[",
	RBRACKET:  "]",
	PLUS:      "+",
	SLASH:     "/",
	PERCENT:   "%",
	RANGE:     "..",
	NEQ:       "!=",
	IN:        "IN",

	CONTAINS:    "CONTAINS",
	CONTAINSKEY: "CONTAINS KEY",

	ALLOW:      "ALLOW",
	ALTER:      "ALTER",
	AND:        "AND",
	APPLY:      "APPLY",
	ASC:        "ASC",
	BATCH:      "BATCH",
	BEGIN:      "BEGIN",
	BY:         "BY",
	CLUSTER:    "CLUSTER",
	CLUSTERING: "CLUSTERING",
	CREATE:     "CREATE",
	DELETE:     "DELETE",
	DESC:       "DESC",
	DESCRIBE:   "DESCRIBE",
	DROP:       "DROP",
	EXISTS:     "EXISTS",
	FALSE:      "FALSE",
	FILTERING:  "FILTERING",
	FROM:       "FROM",
	IF:         "IF",
	INFINITY:   "INFINITY",
	INSERT:     "INSERT",
	INTO:       "INTO",
	KEY:        "KEY",
	KEYSPACE:   "KEYSPACE",
	KEYSPACES:  "KEYSPACES",
	LIMIT:      "LIMIT",
	LOGGED:     "LOGGED",
	NAN:        "NAN",
	NOT:        "NOT",
	NULL:       "NULL",
	ORDER:      "ORDER",
	PRIMARY:    "PRIMARY",
	SELECT:     "SELECT",
	SET:        "SET",
	TABLE:      "TABLE",
	TABLES:     "TABLES",
	TIMEOUT:    "TIMEOUT",
	TIMESTAMP:  "TIMESTAMP",
	TRUE:       "TRUE",
	UNLOGGED:   "UNLOGGED",
	UPDATE:     "UPDATE",
	USE:        "USE",
	USING:      "USING",
	VALUES:     "VALUES",
	WHERE:      "WHERE",
	WITH:       "WITH",
}

// unreserved lists the keywords that may also be used, unquoted, as
// identifiers (column, table and keyspace names, type names), as in CQL:
// their keyword meaning only applies where the grammar expects it.
var unreserved = [...]bool{
	CLUSTER:    true,
	CLUSTERING: true,
	EXISTS:     true,
	FILTERING:  true,
	LOGGED:     true,
	TIMEOUT:    true,
	UNLOGGED:   true,
	KEY:        true,
	KEYSPACES:  true,
	TABLES:     true,
	TIMESTAMP:  true,
	VALUES:     true,
	keywordEnd: false,
}

// String returns the token's text for operators and keywords (upper case),
// and its class name (IDENT, STRING, ...) otherwise.
func (t Token) String() string {
	if t >= 0 && int(t) < len(tokens) && tokens[t] != "" {
		return tokens[t]
	}
	return fmt.Sprintf("Token(%d)", int(t))
}

// IsLiteral reports whether t is an identifier or a literal value token.
func (t Token) IsLiteral() bool { return literalBeg < t && t < literalEnd }

// IsOperator reports whether t is punctuation or an operator.
func (t Token) IsOperator() bool { return operatorBeg < t && t < operatorEnd }

// IsKeyword reports whether t is a keyword.
func (t Token) IsKeyword() bool { return keywordBeg < t && t < keywordEnd }

// IsReserved reports whether t is a keyword that cannot be used as an
// unquoted identifier.
func (t Token) IsReserved() bool { return t.IsKeyword() && !unreserved[t] }

// Lookup maps a word to its keyword token, case-insensitively, or IDENT.
func Lookup(word string) Token {
	var buf [10]byte // the longest keyword, CLUSTERING
	if len(word) < 2 || len(word) > len(buf) {
		return IDENT
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	up := string(buf[:len(word)])
	for t := keywordBeg + 1; t < keywordEnd; t++ {
		if tokens[t] == up {
			return t
		}
	}
	return IDENT
}

// describe returns how a scanned token reads in an error message:
// 'FROM', ')', identifier foo, string 'abc', end of input.
func describe(tok Token, lit string) string {
	switch {
	case tok == EOF:
		return "end of input"
	case tok == ILLEGAL:
		return lit
	case tok == IDENT:
		return "identifier " + lit
	case tok == QIDENT:
		return `identifier "` + strings.ReplaceAll(lit, `"`, `""`) + `"`
	case tok == STRING:
		return "string " + truncate(QuoteString(lit))
	case tok == INT:
		return "integer " + lit
	case tok == FLOAT:
		return "float " + lit
	case tok == BLOB:
		return "blob " + truncate(lit)
	case tok == DURATION:
		return "duration " + truncate(lit)
	case tok.IsKeyword():
		return "'" + strings.ToUpper(lit) + "'"
	default:
		return "'" + tok.String() + "'"
	}
}

func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-3 {
			return s[:i] + "..."
		}
		n++
	}
	return s
}
