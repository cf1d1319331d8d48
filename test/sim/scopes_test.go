package sim

import (
	"bytes"
	"context"
	"flag"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

var updateScopes = flag.Bool("update-scopes", false, "rewrite results/scopes.md and results/scopes-dc.md from the simulator (every scope row)")

const (
	scopesFile   = "results/scopes.md"
	scopesDCFile = "results/scopes-dc.md"
)

// TestScopeReport keeps results/scopes.md true: with -update-scopes it simulates every row and
// rewrites the file; otherwise it simulates a sample of rows (every 13th, 13 being prime to the
// 6 offered rates) and checks that the file has the same lines.
func TestScopeReport(t *testing.T) {
	rows := ScopeMatrix()
	if *updateScopes {
		results, err := RunScopes(context.Background(), rows, DefaultSeed, runtime.GOMAXPROCS(0))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteScopeMarkdown(&b, DefaultSeed, results); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(scopesFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(scopesFile)
	if err != nil {
		t.Fatalf("%v (go test ./test/sim -run TestScopeReport -update-scopes writes it)", err)
	}
	var sample []ScopeScenario
	for i := 0; i < len(rows); i += 13 {
		sample = append(sample, rows[i])
	}
	results, err := RunScopes(context.Background(), sample, DefaultSeed, runtime.GOMAXPROCS(0))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteScopeMarkdown(&b, DefaultSeed, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| scope ") && !strings.Contains(string(data), l+"\n") {
			t.Errorf("the simulator prints a row %s has not:\n%s", scopesFile, l)
		}
	}
}

// TestScopeBudgetHeldAcrossCoordinators: with 90 % of the load on one of three coordinators,
// moved to another at 60 s, scopelimit holds a keyspace and an organization's level to
// 0.95–1.05·L from the second second and to at most 2·L in the first, where a coordinator
// limiting to L/3 on its own admits barely more than a third of L.
func TestScopeBudgetHeldAcrossCoordinators(t *testing.T) {
	for _, k := range []ScopeKind{KeyspaceScope, LevelScope} {
		s := ScopeScenario{Kind: k, Coordinators: 3, Case: Moved, Offered: 2, Limit: ScopeLimit}
		r, err := RunScope(s, DefaultSeed)
		if err != nil {
			t.Fatal(err)
		}
		if m := r.Kvnode; m.Steady < 0.95 || m.Steady > 1.05 || m.First > 2 {
			t.Errorf("%v: kvnode steady %.3f·L, first second %.2f·L; want 0.95–1.05 and ≤ 2", s, m.Steady, m.First)
		}
		if m := r.PerNode; m.Steady > 0.6 {
			t.Errorf("%v: L/N per coordinator admits %.3f·L; the 90/10 split should starve it", s, m.Steady)
		}
	}
}

// TestScopeDCReport keeps results/scopes-dc.md true, as TestScopeReport does results/scopes.md
// (a sample of every 5th row without -update-scopes).
func TestScopeDCReport(t *testing.T) {
	rows := ScopeDCMatrix()
	if !*updateScopes {
		var sample []ScopeScenario
		for i := 0; i < len(rows); i += 5 {
			sample = append(sample, rows[i])
		}
		rows = sample
	}
	results, err := RunScopes(context.Background(), rows, DefaultSeed, runtime.GOMAXPROCS(0))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteScopeDCMarkdown(&b, DefaultSeed, results); err != nil {
		t.Fatal(err)
	}
	if *updateScopes {
		if err := os.WriteFile(scopesDCFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(scopesDCFile)
	if err != nil {
		t.Fatalf("%v (go test ./test/sim -run TestScopeDCReport -update-scopes writes it)", err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| WAN ") && !strings.Contains(string(data), l+"\n") {
			t.Errorf("the simulator prints a row %s has not:\n%s", scopesDCFile, l)
		}
	}
}

// TestScopeBudgetHeldAcrossDataCenters: with 90 % of the load on one coordinator, moved at
// 60 s to a coordinator of the other data center 150 ms away, scopelimit holds a keyspace and
// an organization's level to 0.95–1.05·L from the second second.
func TestScopeBudgetHeldAcrossDataCenters(t *testing.T) {
	for _, k := range []ScopeKind{KeyspaceScope, LevelScope} {
		s := ScopeScenario{Kind: k, Coordinators: 6, Case: Moved, Offered: 2, Limit: ScopeLimit, WAN: 150 * time.Millisecond}
		r, err := RunScope(s, DefaultSeed)
		if err != nil {
			t.Fatal(err)
		}
		if m := r.Kvnode; m.Steady < 0.95 || m.Steady > 1.05 {
			t.Errorf("%v across two data centers: kvnode steady %.3f·L; want 0.95–1.05", s, m.Steady)
		}
	}
}
