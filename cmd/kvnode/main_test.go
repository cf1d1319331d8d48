package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// commandNames are every command kvnode has, in the order of its usage text.
func commandNames() []string {
	return []string{"serve", "cql", "bench", "demo", "toppartitions", "status", "decommission", "removenode", "cleanup", "repair"}
}

// runKVNode runs the command line args as main does and returns the exit status and output.
func runKVNode(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = exitStatus(run(context.Background(), args, strings.NewReader(""), &out, &errOut), &errOut)
	return status, out.String(), errOut.String()
}

// TestHelpListsTheCommands checks that kvnode --help, -h and help print every command with its
// one-line description on stdout and exit 0.
func TestHelpListsTheCommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		status, stdout, stderr := runKVNode(t, args...)
		if status != 0 || stderr != "" {
			t.Errorf("kvnode %s: exit status %d, stderr %q; want 0 and nothing on stderr", args[0], status, stderr)
		}
		for _, name := range commandNames() {
			if !regexp.MustCompile(`(?m)^  ` + name + ` +\S.*$`).MatchString(stdout) {
				t.Errorf("kvnode %s does not list %s with a description on one line:\n%s", args[0], name, stdout)
			}
		}
	}
}

// TestEveryCommandHasHelp runs kvnode CMD --help (and -h, and kvnode help CMD) for every command:
// each exits 0 and prints that command's usage.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, name := range commandNames() {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			status, stdout, stderr := runKVNode(t, args...)
			if status != 0 {
				t.Errorf("kvnode %s: exit status %d, want 0; stderr:\n%s", strings.Join(args, " "), status, stderr)
			}
			// bench, demo and toppartitions print their usage on stderr, the others on stdout.
			if usage := stdout + stderr; !strings.Contains(usage, "Usage: kvnode "+name) || !strings.Contains(usage, "-") {
				t.Errorf("kvnode %s printed no usage of %s with its flags:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), name, stdout, stderr)
			}
		}
	}
}

// TestUsageMistakesExitTwo checks that an unknown command, an unknown flag of any command and a
// stray argument exit with status 2 and a message on stderr naming what was wrong.
func TestUsageMistakesExitTwo(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `kvnode: unknown command "nope" (kvnode --help lists the commands)`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"--nope"}, "serve: flag provided but not defined: -nope (kvnode serve --help lists the flags)"},
		{[]string{"serve", "extra"}, `serve: unexpected argument "extra"`},
		{[]string{"status", "extra"}, `status takes no arguments, got ["extra"]`},
		{[]string{"status", "--wait-nodes", "-1"}, "--wait-nodes -1 is negative"},
		{[]string{"removenode"}, "removenode takes one argument"},
		{[]string{"repair", "a.b.c"}, `"a.b.c" is not a keyspace or keyspace.table`},
	}
	for _, name := range commandNames() {
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{name, "--nope"}, "-nope"})
	}
	for _, tc := range cases {
		status, stdout, stderr := runKVNode(t, tc.args...)
		if status != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("kvnode %s: exit status %d, stdout %q, stderr %q; want 2 and a message with %q", strings.Join(tc.args, " "), status, stdout, stderr, tc.want)
		}
		if n := strings.Count(stderr, "\n"); n != 1 {
			t.Errorf("kvnode %s printed %d lines on stderr, want the one naming the mistake:\n%s", strings.Join(tc.args, " "), n, stderr)
		}
	}
}
