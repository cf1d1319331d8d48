package cql

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Pos is a position in the source text. Line and Col count from 1; Col
// counts characters (runes), not bytes. The zero Pos is "no position".
type Pos struct {
	Offset int // byte offset, from 0
	Line   int
	Col    int
}

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String returns "line:col", or "-" for the zero Pos.
func (p Pos) String() string {
	if !p.IsValid() {
		return "-"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Col)
}

// A Scanner splits source text into tokens. Comments (-- to the end of the
// line, // to the end of the line, and /* */) and white space are skipped.
// The zero Scanner is ready to scan the empty input; use Init to set the text.
type Scanner struct {
	src  string
	off  int // byte offset of the next character
	line int
	col  int
}

// Init prepares s to scan src from its beginning.
func (s *Scanner) Init(src string) {
	*s = Scanner{src: src, line: 1, col: 1}
}

// Scan returns the next token, its position and its literal text:
//   - IDENT, INT, FLOAT, BLOB and keywords: the text as written;
//   - QIDENT and STRING: the unescaped name or value;
//   - ILLEGAL: a message saying what is wrong (unterminated string, ...);
//   - operators and EOF: "".
//
// After EOF, Scan keeps returning EOF.
func (s *Scanner) Scan() (pos Pos, tok Token, lit string) {
	if pos, msg := s.skipSpace(); msg != "" {
		return pos, ILLEGAL, msg
	}
	pos = s.pos()
	if s.off >= len(s.src) {
		return pos, EOF, ""
	}
	c := s.src[s.off]
	if n := uuidLen(s.src[s.off:]); n > 0 {
		for range n {
			s.advance()
		}
		return pos, UUID, s.src[s.off-n : s.off]
	}
	switch {
	case isLetter(c):
		start := s.off
		for s.off < len(s.src) && isIdentChar(s.src[s.off]) {
			s.advance()
		}
		lit = s.src[start:s.off]
		return pos, Lookup(lit), lit
	case isDigit(c) || (c == '-' && s.off+1 < len(s.src) && isDigit(s.src[s.off+1])):
		return s.number(pos)
	case c == '\'':
		return s.quoted(pos, '\'', STRING, "string literal")
	case c == '$' && s.off+1 < len(s.src) && s.src[s.off+1] == '$':
		return s.dollarQuoted(pos)
	case c == '"':
		pos, tok, lit = s.quoted(pos, '"', QIDENT, "quoted identifier")
		if tok == QIDENT && lit == "" {
			return pos, ILLEGAL, "empty quoted identifier"
		}
		return pos, tok, lit
	}
	if c >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(s.src[s.off:])
		s.advance()
		if r == utf8.RuneError && size == 1 {
			return pos, ILLEGAL, fmt.Sprintf("invalid UTF-8 byte 0x%02x", c)
		}
		return pos, ILLEGAL, fmt.Sprintf("unexpected character %q", r)
	}
	s.advance()
	switch c {
	case '(':
		tok = LPAREN
	case ')':
		tok = RPAREN
	case '{':
		tok = LBRACE
	case '}':
		tok = RBRACE
	case ',':
		tok = COMMA
	case '.':
		tok = DOT
		if s.peek() == '.' {
			s.advance()
			tok = RANGE
		}
	case ';':
		tok = SEMICOLON
	case ':':
		tok = COLON
	case '*':
		tok = STAR
	case '?':
		tok = QUESTION
	case '=':
		tok = EQ
	case '-':
		tok = MINUS
	case '[':
		tok = LBRACKET
	case ']':
		tok = RBRACKET
	case '+':
		tok = PLUS
	case '/':
		tok = SLASH
	case '%':
		tok = PERCENT
	case '!':
		if s.peek() != '=' {
			return pos, ILLEGAL, "unexpected character '!' (the operator is !=)"
		}
		s.advance()
		tok = NEQ
	case '<':
		tok = LT
		if s.peek() == '=' {
			s.advance()
			tok = LE
		}
	case '>':
		tok = GT
		if s.peek() == '=' {
			s.advance()
			tok = GE
		}
	default:
		return pos, ILLEGAL, fmt.Sprintf("unexpected character %q", rune(c))
	}
	return pos, tok, ""
}

func (s *Scanner) pos() Pos { return Pos{Offset: s.off, Line: s.line, Col: s.col} }

func (s *Scanner) peek() byte {
	if s.off < len(s.src) {
		return s.src[s.off]
	}
	return 0
}

// advance moves past one character (a whole rune), keeping line and col.
func (s *Scanner) advance() {
	c := s.src[s.off]
	switch {
	case c == '\n':
		s.off++
		s.line++
		s.col = 1
		return
	case c < utf8.RuneSelf:
		s.off++
	default:
		_, size := utf8.DecodeRuneInString(s.src[s.off:])
		s.off += size
	}
	s.col++
}

// skipSpace skips white space and comments. When a block comment is not
// terminated it returns the comment's position and a message.
func (s *Scanner) skipSpace() (Pos, string) {
	for s.off < len(s.src) {
		switch c := s.src[s.off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			s.advance()
		case strings.HasPrefix(s.src[s.off:], "--") || strings.HasPrefix(s.src[s.off:], "//"):
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.advance()
			}
		case strings.HasPrefix(s.src[s.off:], "/*"):
			start := s.pos()
			end := strings.Index(s.src[s.off+2:], "*/")
			if end < 0 {
				for s.off < len(s.src) {
					s.advance()
				}
				return start, "comment is not terminated"
			}
			stop := s.off + 2 + end + 2
			for s.off < stop {
				s.advance()
			}
		default:
			return Pos{}, ""
		}
	}
	return Pos{}, ""
}

// number scans an integer, a float or a 0x blob. A number immediately
// followed by a letter (10abc) is one malformed token, not two.
func (s *Scanner) number(pos Pos) (Pos, Token, string) {
	start := s.off
	if s.src[s.off] == '-' {
		s.advance()
	}
	if s.src[s.off] == '0' && s.off+1 < len(s.src) && (s.src[s.off+1] == 'x' || s.src[s.off+1] == 'X') && start == s.off {
		s.advance()
		s.advance()
		for s.off < len(s.src) && isHex(s.src[s.off]) {
			s.advance()
		}
		lit := s.src[start:s.off]
		if s.off < len(s.src) && isIdentChar(s.src[s.off]) {
			return pos, ILLEGAL, s.malformed(start, "blob literal")
		}
		if len(lit)%2 != 0 {
			return pos, ILLEGAL, fmt.Sprintf("blob literal %s has an odd number of hex digits", truncate(lit))
		}
		return pos, BLOB, lit
	}
	tok := INT
	s.digits()
	if s.peek() == '.' && !(s.off+1 < len(s.src) && s.src[s.off+1] == '.') { // 1..3 is a range
		tok = FLOAT
		s.advance()
		s.digits()
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		// An exponent needs digits; "1e" or "1ex" is malformed.
		save := *s
		s.advance()
		if c := s.peek(); c == '+' || c == '-' {
			s.advance()
		}
		if !isDigit(s.peek()) {
			*s = save
			return pos, ILLEGAL, s.malformed(start, "number")
		}
		tok = FLOAT
		s.digits()
	}
	if s.off < len(s.src) && isIdentChar(s.src[s.off]) {
		if tok == INT && !strings.HasPrefix(s.src[start:], "0x") && !strings.HasPrefix(s.src[start:], "0X") {
			return s.duration(pos, start)
		}
		return pos, ILLEGAL, s.malformed(start, "number")
	}
	return pos, tok, s.src[start:s.off]
}

// duration scans a duration literal that began as the digits at start:
// one or more of a number and a unit (y, mo, w, d, h, m, s, ms, us, ns,
// case-insensitive), as in 1h30m. Anything else is a malformed number.
func (s *Scanner) duration(pos Pos, start int) (Pos, Token, string) {
	msg := s.malformed(start, "number")
	lit := s.src[start:s.off]
	if !IsDuration(strings.TrimPrefix(lit, "-")) {
		return pos, ILLEGAL, msg
	}
	return pos, DURATION, lit
}

// IsDuration reports whether lit is a duration literal: one or more of a
// number and a unit (y, mo, w, d, h, m, s, ms, us, ns, case-insensitive).
func IsDuration(lit string) bool {
	if lit == "" {
		return false
	}
	for i := 0; i < len(lit); {
		j := i
		for j < len(lit) && isDigit(lit[j]) {
			j++
		}
		k := j
		for k < len(lit) && isLetter(lit[k]) {
			k++
		}
		if j == i || k == j {
			return false
		}
		switch strings.ToLower(lit[j:k]) {
		case "y", "mo", "w", "d", "h", "m", "s", "ms", "us", "ns":
		default:
			return false
		}
		i = k
	}
	return true
}

// IsISODuration reports whether word, an identifier, is an ISO 8601 duration with designators
// as CQL writes duration constants: P, then at least one of a number and Y, M (months), D, W, or
// a T followed by numbers with H, M (minutes) or S; P1DT2H, P3W, PT90M. The schema checks the
// units' order when it converts the value (schema.ParseDuration).
func IsISODuration(word string) bool {
	if len(word) < 3 || word[0] != 'P' && word[0] != 'p' {
		return false
	}
	digits := false
	for i := 1; i < len(word); i++ {
		c := word[i]
		switch {
		case isDigit(c):
			digits = true
		case strings.IndexByte("YMDWHSymdwhs", c) >= 0:
			if !digits {
				return false
			}
			digits = false
		case (c == 'T' || c == 't') && !digits && i+1 < len(word):
		default:
			return false
		}
	}
	return !digits
}

// malformed consumes the rest of a word that began as a number and returns
// the message for it.
func (s *Scanner) malformed(start int, what string) string {
	for s.off < len(s.src) && isIdentChar(s.src[s.off]) {
		s.advance()
	}
	return fmt.Sprintf("malformed %s %s", what, truncate(s.src[start:s.off]))
}

func (s *Scanner) digits() {
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.advance()
	}
}

// quoted scans a quote-delimited token in which a doubled quote stands for
// one quote character.
func (s *Scanner) quoted(pos Pos, q byte, tok Token, what string) (Pos, Token, string) {
	s.advance() // opening quote
	var b strings.Builder
	start := s.off
	for {
		i := strings.IndexByte(s.src[s.off:], q)
		if i < 0 {
			for s.off < len(s.src) {
				s.advance()
			}
			return pos, ILLEGAL, what + " is not terminated"
		}
		for end := s.off + i; s.off < end; {
			s.advance()
		}
		s.advance() // the quote
		if s.peek() != q {
			break
		}
		b.WriteString(s.src[start:s.off]) // includes one quote
		s.advance()                       // the second quote
		start = s.off
	}
	b.WriteString(s.src[start : s.off-1])
	v := b.String()
	if !utf8.ValidString(v) {
		return pos, ILLEGAL, what + " is not valid UTF-8"
	}
	return pos, tok, v
}

// uuidLen returns 36 when src starts with an unquoted uuid literal
// (8-4-4-4-12 hex digits, not followed by an identifier character), as CQL
// writes uuid constants; 0 otherwise. Such a word can be nothing else: an
// identifier or a number cannot contain '-'.
func uuidLen(src string) int {
	const n = 36
	if len(src) < n || (len(src) > n && isIdentChar(src[n])) {
		return 0
	}
	for i := 0; i < n; i++ {
		switch i {
		case 8, 13, 18, 23:
			if src[i] != '-' {
				return 0
			}
		default:
			if !isHex(src[i]) {
				return 0
			}
		}
	}
	return n
}

func isLetter(c byte) bool    { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isIdentChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }
func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// dollarQuoted scans a $$-quoted string, $$any text$$ (CQL's form for
// function bodies): a STRING whose value is the text between the $$ pairs,
// taken as it is.
func (s *Scanner) dollarQuoted(pos Pos) (Pos, Token, string) {
	s.advance()
	s.advance()
	start := s.off
	end := strings.Index(s.src[start:], "$$")
	if end < 0 {
		for s.off < len(s.src) {
			s.advance()
		}
		return pos, ILLEGAL, "unterminated $$ string"
	}
	for s.off < start+end+2 {
		s.advance()
	}
	return pos, STRING, s.src[start : start+end]
}
