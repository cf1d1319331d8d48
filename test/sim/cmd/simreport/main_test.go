package main

import (
	"bytes"
	"context"
	"encoding/json"
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
