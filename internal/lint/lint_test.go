package lint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kvnode/kvnode"

// floors is the layer table, top to bottom: a package may import packages of its own floor and
// of the floors below it, never of a floor above. A pattern ending in "/..." matches the
// directory and everything below it; the first pattern that matches a package names its floor.
// docs/architecture.md shows the same table.
var floors = []struct {
	name     string
	patterns []string
}{
	{"the binary", []string{"cmd/..."}},
	{"tools and test harnesses", []string{"tool/...", "test/...", "node/localcluster"}},
	{"the node's wiring", []string{"node"}},
	{"front ends", []string{"frontend/...", "client"}},
	{"the coordinator's shell", []string{"coordinator/shell/..."}},
	{"services of a node", []string{"catalog", "hints", "repair", "snapshot", "replica", "cluster"}},
	{"the internode seam", []string{"internode"}},
	{"the coordinator's pure core", []string{"coordinator"}},
	{"the domain", []string{"partitionlimit", "scopelimit", "schema", "cql", "partitioner", "cell", "auth"}},
	{"leaves", []string{"internal/...", "proto/...", "cqlwire"}},
}

// forbidden are imports the floors alone allow but the architecture does not: each package
// (pattern) may not import the listed ones (patterns), for the reason given.
var forbidden = []struct {
	from, to []string
	why      string
}{
	{[]string{"frontend/..."}, []string{"coordinator/shell/..."},
		"front ends use the domain API (package coordinator) and interfaces they declare, never the shell"},
	{[]string{"coordinator/shell"}, []string{"replica", "cluster"},
		"the shell declares the small interfaces it consumes (a ring view, a replica sender)"},
	{[]string{"catalog", "hints", "repair", "snapshot"}, []string{"node/...", "coordinator/shell/..."},
		"a node's services are wired by node, behind interfaces they declare"},
}

// nodeBudget is how many lines node's non-test Go files may total: node wires a node and owns
// its life in the ring; a new protocol gets a package of its own.
const nodeBudget = 5000

type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	Doc        string
	Imports    []string
	GoFiles    []string
}

// packages lists the module's packages, with their imports within the module only.
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Dir,Doc,Imports,GoFiles", module+"/...")
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		p.ImportPath = rel(p.ImportPath)
		var own []string
		for _, imp := range p.Imports {
			if r := rel(imp); r != imp {
				own = append(own, r)
			}
		}
		p.Imports = own
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages in %s; expected the whole module", len(pkgs), module)
	}
	return pkgs
}

// rel returns path relative to the module ("." for the root), or path itself when it lies outside.
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return path
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root %s has no go.mod: %v", dir, err)
	}
	return dir
}

func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) })
}

// floor returns the index of path's floor in floors (0 is the top), or -1.
func floor(path string) int {
	for i, f := range floors {
		if matchesAny(f.patterns, path) {
			return i
		}
	}
	return -1
}

// TestLayers fails when a package imports one that stands above it in the layer table, or when
// a package has no floor (add it to the table, and to docs/architecture.md).
func TestLayers(t *testing.T) {
	for _, p := range packages(t) {
		from := floor(p.ImportPath)
		if from < 0 {
			t.Errorf("%s has no floor in the layer table: add it to floors in internal/lint and to docs/architecture.md", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			to := floor(imp)
			if to >= 0 && to < from {
				t.Errorf("%s (%s) imports %s, which stands above it (%s)", p.ImportPath, floors[from].name, imp, floors[to].name)
			}
		}
	}
}

// TestForbiddenImports fails on the imports the architecture rules out within the floors.
func TestForbiddenImports(t *testing.T) {
	for _, p := range packages(t) {
		for _, f := range forbidden {
			if !matchesAny(f.from, p.ImportPath) {
				continue
			}
			for _, imp := range p.Imports {
				if matchesAny(f.to, imp) {
					t.Errorf("%s imports %s: %s", p.ImportPath, imp, f.why)
				}
			}
		}
	}
}

// TestClientAPIStaysAtTheFrontEnds fails when a package below the front ends imports the client
// API's generated package: below them, code speaks domain types (schema.Op, coordinator.Statement,
// coordinator.Result, typed errors), and each front end owns its wire form.
func TestClientAPIStaysAtTheFrontEnds(t *testing.T) {
	const kvnodepb = "proto/kvnodepb"
	frontEnds := floor("frontend/grpcapi")
	for _, p := range packages(t) {
		if f := floor(p.ImportPath); f <= frontEnds || matches("proto/...", p.ImportPath) {
			continue
		}
		if slices.Contains(p.Imports, kvnodepb) {
			t.Errorf("%s (%s) imports %s: only the front ends and above speak the client API's wire form", p.ImportPath, floors[floor(p.ImportPath)].name, kvnodepb)
		}
	}
}

// TestSelfContained fails when internal/ imports outside internal/, or generated protobuf
// outside proto/: both are leaves every floor may use, so they can depend on nothing of kvnode.
func TestSelfContained(t *testing.T) {
	for _, p := range packages(t) {
		for _, dir := range []string{"internal", "proto"} {
			if !matches(dir+"/...", p.ImportPath) {
				continue
			}
			for _, imp := range p.Imports {
				if !matches(dir+"/...", imp) {
					t.Errorf("%s imports %s: %s/ imports only %s/", p.ImportPath, imp, dir, dir)
				}
			}
		}
	}
}

// TestPackageDocs fails when a package has no doc comment, or one whose first sentence does not
// start as Go's convention says: "Package name ..." (or "Command name ..." for a program).
func TestPackageDocs(t *testing.T) {
	for _, p := range packages(t) {
		if len(p.GoFiles) == 0 {
			continue
		}
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "Command " + filepath.Base(p.ImportPath) + " "
		}
		switch {
		case p.Doc == "":
			t.Errorf("%s has no package doc: say its one job in a doc comment (doc.go)", p.ImportPath)
		case !strings.HasPrefix(p.Doc, want):
			t.Errorf("%s's package doc begins %q, want %q", p.ImportPath, firstWords(p.Doc), want+"...")
		}
	}
}

func firstWords(s string) string {
	if f := strings.Fields(s); len(f) > 3 {
		return strings.Join(f[:3], " ")
	}
	return s
}

// TestNodeBudget fails when node's non-test Go files outgrow nodeBudget lines.
func TestNodeBudget(t *testing.T) {
	for _, p := range packages(t) {
		if p.ImportPath != "node" {
			continue
		}
		total := 0
		for _, f := range p.GoFiles {
			n, err := countLines(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		if total >= nodeBudget {
			t.Errorf("node's non-test Go files total %d lines, want under %d: give a new protocol a package of its own", total, nodeBudget)
		}
		return
	}
	t.Fatal("go list did not list node")
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for s.Scan() {
		n++
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("count lines of %s: %w", path, err)
	}
	return n, nil
}

// diallers are the packages that may open gRPC client connections: internode, through which a
// node reaches its peers, and the clients of a node's client port (the Go client, the binary's
// admin commands, the tools and test harnesses).
var diallers = []string{"internode", "client", "cmd/...", "tool/...", "test/..."}

// TestOnlyInternodeDialsPeers fails when a package other than diallers opens a gRPC connection
// (grpc.NewClient, grpc.Dial, grpc.DialContext) in a non-test file: every internode exchange
// goes through internode's Sender, so that the transport under all of them stays in one place.
func TestOnlyInternodeDialsPeers(t *testing.T) {
	fset := token.NewFileSet()
	found := map[string]int{} // calls per package
	for _, p := range packages(t) {
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, pos := range grpcDials(f) {
				found[p.ImportPath]++
				if !matchesAny(diallers, p.ImportPath) {
					t.Errorf("%s: %s opens a gRPC connection; a node reaches its peers only through internode's Sender (add the exchange to internode.proto)", fset.Position(pos), p.ImportPath)
				}
			}
		}
	}
	if found["internode"] == 0 {
		t.Error("found no gRPC dial in internode, which dials every peer: the check no longer sees dials")
	}
}

// grpcDials returns where file f calls grpc.NewClient, grpc.Dial or grpc.DialContext, under
// whatever name f imports google.golang.org/grpc.
func grpcDials(f *ast.File) []token.Pos {
	local := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"google.golang.org/grpc"` {
			local = "grpc"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" || local == "_" {
		return nil
	}
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && slices.Contains([]string{"NewClient", "Dial", "DialContext"}, sel.Sel.Name) {
			out = append(out, call.Pos())
		}
		return true
	})
	return out
}

// TestMatches pins the pattern rule the table relies on.
func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"coordinator", "coordinator", true},
		{"coordinator", "coordinator/shell", false},
		{"coordinator/shell/...", "coordinator/shell", true},
		{"coordinator/shell/...", "coordinator/shell/systables", true},
		{"coordinator/shell/...", "coordinator/shellfish", false},
		{"internal/...", "internalx/y", false},
	} {
		if got := matches(c.pattern, c.path); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
