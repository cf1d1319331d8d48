package cqlsh

import (
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// statement is one complete piece of input: a CQL statement for the server or a shell command.
type statement struct {
	// Text is the statement without its terminating ';' and without surrounding white space.
	Text string
	// Line is the source line (from 1) on which the statement starts.
	Line int
	// Shell is set when the statement is a shell command (CONSISTENCY, HELP, EXIT, QUIT).
	Shell bool
}

// shellCommands are the words that start a command handled by the shell itself. None of them
// starts a CQL statement. A shell command ends at the end of its line or at a ';', whichever
// comes first, as in cqlsh.
var shellCommands = [...]string{"CONSISTENCY", "HELP", "EXIT", "QUIT"}

func isShellCommand(word string) bool {
	for _, c := range shellCommands {
		if strings.EqualFold(word, c) {
			return true
		}
	}
	return false
}

// splitter cuts input into statements at top-level semicolons, using the cql scanner so that a
// ';' inside a string literal, a quoted identifier or a comment does not end a statement.
// Input arrives in pieces (lines from a terminal or a pipe, or a whole file) through feed;
// next hands out the complete statements. The zero splitter is ready, with line numbers
// counted from 1.
type splitter struct {
	buf  string // text not yet handed out
	line int    // source line of buf[0], minus 1
}

// feed appends text to the input.
func (s *splitter) feed(text string) { s.buf += text }

// reset discards the input not yet handed out (Ctrl-C on a half-typed statement).
func (s *splitter) reset() {
	s.line += strings.Count(s.buf, "\n")
	s.buf = ""
}

// next returns the next complete statement and removes it from the input. With atEOF, no more
// input will come: a trailing statement without ';' is complete, and so is one with an
// unterminated string or comment (the server reports it). Without atEOF such input waits for
// more.
func (s *splitter) next(atEOF bool) (statement, bool) {
	var sc cql.Scanner
	sc.Init(s.buf)
	for {
		pos, tok, lit := sc.Scan()
		switch tok {
		case cql.EOF:
			if atEOF {
				s.consume(len(s.buf)) // only white space and comments are left
			}
			return statement{}, false
		case cql.SEMICOLON:
			continue // an empty statement
		}
		start := pos.Offset
		if tok == cql.IDENT && isShellCommand(lit) {
			end, resume, ok := shellCommandEnd(s.buf, start, atEOF)
			if !ok {
				return statement{}, false
			}
			return s.emit(start, end, resume, true), true
		}
		// A BATCH holds statements that end in ';': it ends at the ';' after APPLY BATCH.
		batch, applied := tok == cql.BEGIN, false
		for {
			if tok == cql.ILLEGAL && unterminated(lit) && !atEOF {
				return statement{}, false
			}
			prev := tok
			pos, tok, lit = sc.Scan()
			if batch && prev == cql.APPLY && tok == cql.BATCH {
				applied = true
			}
			switch tok {
			case cql.SEMICOLON:
				if batch && !applied {
					continue
				}
				return s.emit(start, pos.Offset, pos.Offset+1, false), true
			case cql.EOF:
				if !atEOF {
					return statement{}, false
				}
				return s.emit(start, len(s.buf), len(s.buf), false), true
			}
		}
	}
}

// pending reports whether the input holds the beginning of a statement that is not complete yet
// (so a terminal shows the continuation prompt). White space, comments and empty statements
// are not pending.
func (s *splitter) pending() bool {
	var sc cql.Scanner
	sc.Init(s.buf)
	for {
		_, tok, _ := sc.Scan()
		switch tok {
		case cql.EOF:
			return false
		case cql.SEMICOLON:
			continue
		}
		return true
	}
}

// emit hands out buf[start:end] as a statement and drops the input up to resume.
func (s *splitter) emit(start, end, resume int, shell bool) statement {
	st := statement{
		Text:  strings.TrimSpace(s.buf[start:end]),
		Line:  s.line + 1 + strings.Count(s.buf[:start], "\n"),
		Shell: shell,
	}
	s.consume(resume)
	return st
}

func (s *splitter) consume(n int) {
	s.line += strings.Count(s.buf[:n], "\n")
	s.buf = s.buf[n:]
}

// shellCommandEnd finds the end of the shell command starting at buf[start]: the first top-level
// ';' on its line, or the end of the line. It returns where the command text ends and where the
// next statement may begin; ok is false when the line is not complete yet.
func shellCommandEnd(buf string, start int, atEOF bool) (end, resume int, ok bool) {
	lineEnd := strings.IndexByte(buf[start:], '\n')
	if lineEnd < 0 {
		if !atEOF {
			return 0, 0, false
		}
		lineEnd = len(buf)
	} else {
		lineEnd += start
	}
	var sc cql.Scanner
	sc.Init(buf[start:lineEnd])
	for {
		pos, tok, _ := sc.Scan()
		switch tok {
		case cql.SEMICOLON:
			return start + pos.Offset, start + pos.Offset + 1, true
		case cql.EOF:
			return lineEnd, lineEnd, true
		}
	}
}

// unterminated reports whether an ILLEGAL token's message says that a string literal, quoted
// identifier or block comment runs to the end of the input, i.e. that more input may complete
// it. TestScannerUnterminatedMessages pins the cql scanner messages this relies on.
func unterminated(msg string) bool { return strings.HasSuffix(msg, "is not terminated") }
