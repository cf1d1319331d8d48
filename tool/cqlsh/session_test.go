package cqlsh

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// These tests drive the session the way the interactive loop does: one line at a time, reading
// prompt() before each, interrupt() for Ctrl-C, feedInterruptible for a running statement.

func TestInteractivePromptsFollowTheInput(t *testing.T) {
	f := startNode(t)
	answerKV(f, "SELECT k, v\nFROM ks.t\nWHERE k = 'a'")
	s, out, errOut := f.session(t, true)
	ctx := context.Background()
	steps := []struct {
		line       string
		wantPrompt string // the prompt shown after the line
	}{
		{"", "kvnode> "},
		{"-- a comment alone is not a statement", "kvnode> "},
		{"SELECT k, v", "   ...> "},
		{"FROM ks.t", "   ...> "},
		{"WHERE k = 'a'", "   ...> "},
		{";", "kvnode> "},
		{"use ks;", "kvnode:ks> "},
		{"INSERT INTO t (k, v) VALUES ('multi", "   ...> "},
		{"line; still a string', 1);", "kvnode:ks> "},
		{"CONSISTENCY QUORUM", "kvnode:ks> "},
	}
	for _, st := range steps {
		done, err := s.feed(ctx, st.line+"\n")
		if done || err != nil {
			t.Fatalf("feeding %q ended the session: done %v, err %v", st.line, done, err)
		}
		if got := s.prompt(); got != st.wantPrompt {
			t.Errorf("after %q the prompt is %q, want %q", st.line, got, st.wantPrompt)
		}
	}
	want := []string{"SELECT k, v\nFROM ks.t\nWHERE k = 'a'", "use ks", "INSERT INTO t (k, v) VALUES ('multi\nline; still a string', 1)"}
	if got := f.statements(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the node received %q, want %q", got, want)
	}
	if wantOut := kvTable + "Consistency level set to QUORUM.\n"; out.String() != wantOut || errOut.Len() != 0 {
		t.Errorf("the session printed %q and on stderr %q; want %q and nothing on stderr", out, errOut, wantOut)
	}
}

func TestInteractiveErrorsDoNotEndTheSession(t *testing.T) {
	f := startNode(t)
	f.answer("SELECT * FORM t", nil, statusWith(t, codes.InvalidArgument, "1:10: expected FROM, found 'FORM'"))
	s, _, errOut := f.session(t, true)
	ctx := context.Background()
	for _, line := range []string{"SELECT * FORM t; INSERT INTO t (k) VALUES (1);", "CONSISTENCY SOME", "INSERT INTO t (k) VALUES (2);"} {
		if done, err := s.feed(ctx, line+"\n"); done || err != nil {
			t.Fatalf("after %q the session ended (done %v, err %v); an interactive session carries on after errors", line, done, err)
		}
	}
	want := []string{"SELECT * FORM t", "INSERT INTO t (k) VALUES (1)", "INSERT INTO t (k) VALUES (2)"}
	if got := f.statements(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the node received %q, want %q", got, want)
	}
	wantErr := "InvalidRequest: 1:10: expected FROM, found 'FORM'\n" +
		`ShellError: CONSISTENCY: unknown consistency level "SOME" (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)` + "\n"
	if errOut.String() != wantErr {
		t.Errorf("stderr = %q, want %q (no source prefix at the terminal)", errOut, wantErr)
	}
}

func TestInterruptClearsTheStatementBeingTyped(t *testing.T) {
	f := startNode(t)
	s, _, _ := f.session(t, true)
	ctx := context.Background()
	s.feed(ctx, "INSERT INTO t (k, v)\n")
	s.feed(ctx, "VALUES ('half\n")
	s.interrupt()
	if got := s.prompt(); got != promptPlain {
		t.Errorf("after Ctrl-C the prompt is %q, want %q", got, promptPlain)
	}
	s.feed(ctx, "INSERT INTO t (k) VALUES (1);\n")
	if got := f.statements(); len(got) != 1 || got[0] != "INSERT INTO t (k) VALUES (1)" {
		t.Errorf("the node received %q; the interrupted statement must be dropped, the next one sent alone", got)
	}
}

func TestExitAndQuitEndTheSession(t *testing.T) {
	for _, line := range []string{"exit", "QUIT", "Exit;", "quit; SELECT 1;"} {
		f := startNode(t)
		s, _, _ := f.session(t, true)
		done, err := s.feed(context.Background(), line+"\n")
		if !done || err != nil {
			t.Errorf("feeding %q gave done %v, err %v; want done and no error", line, done, err)
		}
		if got := f.statements(); len(got) != 0 {
			t.Errorf("feeding %q sent %q to the node; nothing after EXIT may run", line, got)
		}
	}
}

func TestHelpListsShellCommands(t *testing.T) {
	f := startNode(t)
	s, out, _ := f.session(t, true)
	s.feed(context.Background(), "help\n")
	for _, want := range []string{"CONSISTENCY <level>", "EXIT, QUIT", "SELECT * FROM t"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("HELP printed\n%s\nwhich does not mention %q", out, want)
		}
	}
}

func TestSignalCancelsTheRunningStatementOnly(t *testing.T) {
	f := startNode(t)
	s, _, errOut := f.session(t, true)
	sigs := make(chan os.Signal, 1)
	go func() {
		<-f.slowStarted // the statement is running on the node
		sigs <- os.Interrupt
	}()
	ctx := context.Background()
	done, err := feedInterruptible(ctx, s, slowStatement+"; INSERT INTO t (k) VALUES (1);\n", sigs)
	if done || err != nil {
		t.Fatalf("Ctrl-C during a statement ended the session: done %v, err %v", done, err)
	}
	if want := "Cancelled: statement interrupted; a write may still have been applied\n"; errOut.String() != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	if got := f.statements(); len(got) != 1 {
		t.Errorf("the node received %q; the rest of an interrupted line must not run", got)
	}
	if _, err := feedInterruptible(ctx, s, "INSERT INTO t (k) VALUES (2);\n", sigs); err != nil {
		t.Fatal(err)
	}
	if got := f.statements(); len(got) != 2 || got[1] != "INSERT INTO t (k) VALUES (2)" {
		t.Errorf("the node received %q; the session must run statements after an interrupted one", got)
	}
}

func TestClosedOutputStopsTheSession(t *testing.T) {
	f := startNode(t)
	answerKV(f)
	s, _, _ := f.session(t, false)
	s.out = &stickyWriter{w: failingWriter{}}
	done, err := s.feed(context.Background(), selectKV+"; INSERT INTO t (k) VALUES (1);\n")
	if !done || err == nil || !strings.Contains(err.Error(), "writing results") {
		t.Errorf("with stdout closed, feed gave done %v, err %v; want it to stop with a write error", done, err)
	}
	if got := f.statements(); len(got) != 1 {
		t.Errorf("the node received %q; nothing may run once output fails", got)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestDescribeErrorOfContextErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, "Timeout: no answer from 127.0.0.1:9043 within 2s; a write may still have been applied"},
		{context.Canceled, "Cancelled: statement interrupted; a write may still have been applied"},
		{errors.New("kvnode: something odd"), "Error: something odd"},
	} {
		if got := describeError(tc.err, "127.0.0.1:9043", 2*time.Second); got != tc.want {
			t.Errorf("describeError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
