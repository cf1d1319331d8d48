package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/test/sim"
)

// TestJSONPrintsEveryRow: --json prints one object per matrix row with the report's fields.
// A short run keeps the test cheap; the numbers themselves are tested in package sim.
func TestJSONPrintsEveryRow(t *testing.T) {
	// Onset rows need two measured seconds (the first, and the one after), so this is the
	// shortest run the matrix accepts.
	seconds := "2.5"
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"--json", "--seconds", seconds, "--warmup", "0.5", "--seed", "3", "-q"}, &out, &errs)
	if err != nil {
		t.Fatalf("run failed: %v (stderr %q)", err, errs.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if want := len(sim.Matrix()); len(lines) != want {
		t.Fatalf("--json printed %d lines, want one per matrix row (%d)", len(lines), want)
	}
	fields := []string{"rf", "op", "cl", "routing", "skew_ms", "offered_over_limit", "replica_down", "flood",
		"accepted_over_limit", "wasted_per_accepted", "disagreement", "configuration"}
	for i, l := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("line %d %q is not a JSON object: %v", i+1, l, err)
		}
		for _, f := range fields {
			if _, ok := row[f]; !ok {
				t.Fatalf("line %d %q lacks field %q", i+1, l, f)
			}
		}
	}
	if !strings.Contains(out.String(), `"first_second_over_limit"`) {
		t.Errorf("no row carries first_second_over_limit; the onset rows should")
	}
	if errs.Len() != 0 {
		t.Errorf("-q still wrote %q to stderr", errs.String())
	}
}

// TestBadFlags: flags that cannot describe a run are refused with a message naming them.
func TestBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--seconds", "2", "--warmup", "3"}, "--warmup"},
		{[]string{"--seed", "0"}, "--seed"},
		{[]string{"--arrival", "bursty"}, "--arrival"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--out", "/nonexistent-dir/accuracy.md"}, "--out"},
		{[]string{"--match", "V=3L"}, "--match"},
		{[]string{"--offered", "-1"}, "--offered"},
	}
	for _, c := range cases {
		var out, errs bytes.Buffer
		err := run(context.Background(), c.args, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = error %v, want an error mentioning %q", c.args, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) printed %q to stdout, want nothing", c.args, out.String())
		}
	}
}

// TestOutWritesTheMarkdownReport: --out writes the markdown report to the file, heading with
// the flags that reproduce it, and nothing to stdout.
func TestOutWritesTheMarkdownReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "accuracy.md")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--onset", "--seconds", "2.5", "--warmup", "0.5", "--seed", "3", "-q", "--out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run failed: %v (stderr %q)", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("--out still printed %d bytes to stdout", stdout.Len())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if want := "# simreport --seed 3 --seconds 2.5 --warmup 0.5 --onset"; lines[0] != want {
		t.Errorf("the report's heading is %q, want %q", lines[0], want)
	}
	onset := 0
	for _, sc := range sim.Matrix() {
		if sc.Onset {
			onset++
		}
	}
	rows := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "| kvnode |") || strings.HasPrefix(l, "| scylla |") {
			rows++
		}
	}
	if rows != onset {
		t.Errorf("the report has %d rows, want one per onset scenario (%d)", rows, onset)
	}
}

// TestMatchPicksRows: --match runs exactly the rows whose scenario has every term, whole terms
// only (V=1L is not V=10L), and names the baseline configuration=scylla and unset onset
// and again =false.
func TestMatchPicksRows(t *testing.T) {
	cases := []struct {
		match string
		want  int
	}{
		{"configuration=kvnode rf=3 op=read cl=ALL routing=outside skew=500ms V=100L down=false flood=false", 1},
		{"configuration=scylla rf=1 op=write cl=ONE routing=fixed-first skew=0s V=1L", 1},
		{"rf=1 op=write cl=ONE routing=fixed-first skew=0s V=1L", 2},
		{"configuration=kvnode rf=1 op=write cl=ONE routing=fixed-first skew=0s V=2L", 3}, // steady, onset, again
		{"configuration=kvnode rf=1 op=write cl=ONE routing=fixed-first skew=0s V=2L onset=false", 1},
	}
	for _, c := range cases {
		var out, errs bytes.Buffer
		err := run(context.Background(), []string{"--json", "-q", "--seconds", "2.5", "--warmup", "0.5", "--match", c.match}, &out, &errs)
		if err != nil {
			t.Fatalf("--match %q: %v (stderr %q)", c.match, err, errs.String())
		}
		if got := strings.Count(out.String(), "\n"); got != c.want {
			t.Errorf("--match %q printed %d rows, want %d:\n%s", c.match, got, c.want, out.String())
		}
	}
}

// TestOfferedReplacesV: --offered runs the picked rows at that V instead of their own.
func TestOfferedReplacesV(t *testing.T) {
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"--json", "-q", "--seconds", "2.5", "--warmup", "0.5", "--offered", "0.9",
		"--match", "configuration=kvnode rf=1 op=write cl=ONE routing=fixed-first skew=0s V=2L onset=false"}, &out, &errs)
	if err != nil {
		t.Fatalf("--offered 0.9: %v (stderr %q)", err, errs.String())
	}
	if !strings.Contains(out.String(), `"offered_over_limit":0.9,`) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("--offered 0.9 printed %q, want the one picked row at offered_over_limit 0.9", out.String())
	}
}
