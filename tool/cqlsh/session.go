package cqlsh

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
)

const (
	promptPlain    = "kvnode> "
	promptContinue = "   ...> "
)

// session is the shell's state machine, shared by every mode: text goes in through feed (a
// line from the terminal, a line from a pipe, a whole file), complete statements run in order,
// and the results and errors are printed. The interactive loop around it only reads lines and
// shows prompt().
type session struct {
	client  conn
	cl      client.Consistency
	timeout time.Duration
	out     *stickyWriter
	errOut  io.Writer
	// source names the input in error messages ("file.cql:3: ..."); empty for the terminal
	// and for -e.
	source string
	// interactive sessions print errors and carry on; the others stop at the first one.
	interactive bool
	split       splitter
}

// feed adds text to the input and runs every statement it completes. done is true once EXIT or
// QUIT ran (or a non-interactive session stopped); err is ErrStatementFailed when a
// non-interactive session stopped at a failed statement, or the error that made the output
// unwritable.
func (s *session) feed(ctx context.Context, text string) (done bool, err error) {
	s.split.feed(text)
	return s.drain(ctx, false)
}

// finish runs what is left of the input at its end: a last statement without ';' runs too.
func (s *session) finish(ctx context.Context) (done bool, err error) {
	return s.drain(ctx, true)
}

// interrupt drops a half-typed statement (Ctrl-C at the prompt).
func (s *session) interrupt() { s.split.reset() }

// prompt is the prompt for the next line: the continuation prompt inside a statement, else
// the main prompt naming the current keyspace.
func (s *session) prompt() string {
	if s.split.pending() {
		return promptContinue
	}
	if ks := s.client.Keyspace(); ks != "" {
		return "kvnode:" + ks + "> "
	}
	return promptPlain
}

func (s *session) drain(ctx context.Context, atEOF bool) (bool, error) {
	for {
		st, ok := s.split.next(atEOF)
		if !ok {
			return false, nil
		}
		done, err := s.execute(ctx, st)
		if s.out.err != nil {
			return true, fmt.Errorf("cql: writing results: %w", s.out.err)
		}
		if done {
			return true, nil
		}
		if err == nil {
			continue
		}
		s.report(st, err)
		if !s.interactive {
			return true, ErrStatementFailed
		}
		if ctx.Err() != nil {
			// Interrupted: the rest of what was typed is dropped, not run.
			s.split.reset()
			return false, nil
		}
	}
}

// SchemaAgreementWait is what a schema change (CREATE, ALTER, DROP, TRUNCATE) adds to
// --timeout: a node answers one only once the live nodes agree on the new schema, or once its
// schema_agreement_timeout (10 s by default) passed, with a warning. Without it the shell could
// give up on a change the node was about to confirm.
const SchemaAgreementWait = 10 * time.Second

// statementTimeout is how long the shell waits for st's answer: --timeout, plus
// SchemaAgreementWait for a schema change.
func (s *session) statementTimeout(st statement) time.Duration {
	if f := strings.Fields(st.Text); len(f) > 0 {
		switch strings.ToUpper(f[0]) {
		case "CREATE", "ALTER", "DROP", "TRUNCATE":
			return s.timeout + SchemaAgreementWait
		}
	}
	return s.timeout
}

// report prints a failed statement's error with its kind, and in files with its line.
func (s *session) report(st statement, err error) {
	msg := describeError(err, s.client.Addr(), s.statementTimeout(st))
	if s.source != "" {
		fmt.Fprintf(s.errOut, "%s:%d: %s\n", s.source, st.Line, msg)
		return
	}
	fmt.Fprintln(s.errOut, msg)
}

// execute runs one statement. done is true for EXIT and QUIT.
func (s *session) execute(ctx context.Context, st statement) (done bool, err error) {
	if st.Shell {
		return s.shellCommand(st.Text)
	}
	ctx, cancel := context.WithTimeout(ctx, s.statementTimeout(st))
	defer cancel()
	res, err := s.client.Execute(ctx, s.cl, st.Text)
	if err != nil {
		return false, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(s.errOut, "Warning: %s\n", w)
	}
	switch {
	case res.Columns != nil:
		io.WriteString(s.out, "\n") // as cqlsh: a blank line sets the table off from the prompt
		writeRows(s.out, res.Columns, res.Rows)
	case res.Description != "":
		io.WriteString(s.out, res.Description)
		if !strings.HasSuffix(res.Description, "\n") {
			io.WriteString(s.out, "\n")
		}
	}
	// USE (the client keeps the keyspace; the prompt shows it), DDL, INSERT, UPDATE and DELETE
	// print nothing, as in cqlsh.
	return false, nil
}

// shellCommand runs CONSISTENCY, HELP, EXIT or QUIT.
func (s *session) shellCommand(text string) (done bool, err error) {
	words := commandWords(text)
	switch name := strings.ToUpper(words[0]); name {
	case "EXIT", "QUIT":
		return true, nil
	case "HELP":
		io.WriteString(s.out, helpText)
		return false, nil
	case "CONSISTENCY":
		switch len(words) {
		case 1:
			fmt.Fprintf(s.out, "Current consistency level is %s.\n", s.cl)
			return false, nil
		case 2:
			cl, err := client.ParseConsistency(words[1])
			if err != nil {
				return false, &shellError{msg: "CONSISTENCY: " + err.Error()}
			}
			s.cl = cl
			fmt.Fprintf(s.out, "Consistency level set to %s.\n", cl)
			return false, nil
		default:
			return false, &shellError{msg: fmt.Sprintf("CONSISTENCY takes at most one level, got %q", strings.Join(words[1:], " "))}
		}
	default:
		return false, &shellError{msg: fmt.Sprintf("unknown shell command %q", words[0])}
	}
}

// commandWords splits a shell command into its words with the cql scanner (so comments are
// skipped and 'quoted' words lose their quotes). The first word is always the command name.
func commandWords(text string) []string {
	var (
		sc    cql.Scanner
		words []string
	)
	sc.Init(text)
	for {
		_, tok, lit := sc.Scan()
		switch {
		case tok == cql.EOF || tok == cql.SEMICOLON:
			if len(words) == 0 {
				words = append(words, "")
			}
			return words
		case tok == cql.ILLEGAL || lit == "":
			words = append(words, tok.String())
		default:
			words = append(words, lit)
		}
	}
}

// stickyWriter remembers the first write error, so the shell can stop when its output goes away
// (a closed pipe) instead of running the rest of a script blind.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (w *stickyWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	w.err = err
	return n, err
}

const helpText = `Shell commands (case-insensitive; ';' optional; each ends at the end of its line):
  CONSISTENCY            show the consistency level used for statements
  CONSISTENCY <level>    set it: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM
  HELP                   this text
  EXIT, QUIT             leave the shell (Ctrl-D works too)

CQL statements end with ';' and may span lines:
  CREATE KEYSPACE [IF NOT EXISTS] ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3};
  USE ks;
  CREATE TABLE [IF NOT EXISTS] t (k text, c int, v blob, PRIMARY KEY ((k), c))
      WITH per_partition_rate_limit = {'max_reads_per_second': 100, 'max_writes_per_second': 50};
  ALTER TABLE t WITH per_partition_rate_limit = {...};   DROP TABLE t;   DROP KEYSPACE ks;
  INSERT INTO t (k, c, v) VALUES ('a', 1, 0xcafe);
  UPDATE t SET v = 0x00 WHERE k = 'a' AND c = 1;
  DELETE FROM t WHERE k = 'a' [AND c >= 2];
  SELECT * FROM t WHERE k = 'a' [AND c > 2] [LIMIT 10];
  DESCRIBE KEYSPACES | KEYSPACE [ks] | TABLES | TABLE t | CLUSTER;

At the prompt, Ctrl-C clears the statement being typed and interrupts a running one.
`
