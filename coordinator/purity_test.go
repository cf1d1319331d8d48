package coordinator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPackageIsPure parses the package's non-test sources and fails on anything that would let
// the coordinator's core read the clock, draw its own randomness, start goroutines, share memory
// between them, keep package-level mutable state, do I/O or speak a wire protocol: the package
// promises none of these (see "Core and shell" in the package documentation); the shell,
// package coordinator/shell, does all of that.
func TestPackageIsPure(t *testing.T) {
	forbiddenImports := map[string]string{
		"os": "does I/O", "io": "does I/O", "io/fs": "does I/O", "io/ioutil": "does I/O", "bufio": "does I/O", "net": "does I/O",
		"log": "does I/O", "log/slog": "does I/O", "syscall": "does I/O", "unsafe": "bypasses type safety",
		"math/rand": "draws global randomness", "math/rand/v2": "draws global randomness", "crypto/rand": "draws global randomness",
		"context": "belongs to the shell, which waits on replicas", "sync": "synchronises goroutines", "sync/atomic": "synchronises goroutines",
		"runtime": "reaches into the runtime", "reflect": "bypasses the types",
	}
	forbiddenCalls := map[string]string{
		"time.Now": "reads the clock", "time.Since": "reads the clock", "time.Until": "reads the clock",
		"time.Sleep": "waits on the clock", "time.After": "waits on the clock", "time.AfterFunc": "waits on the clock",
		"time.Tick": "waits on the clock", "time.NewTimer": "waits on the clock", "time.NewTicker": "waits on the clock",
		"fmt.Print": "does I/O", "fmt.Println": "does I/O", "fmt.Printf": "does I/O",
	}
	// fmt.Fprint* may only write into a local buffer the package builds a message in (&b).
	fprints := map[string]bool{"fmt.Fprint": true, "fmt.Fprintln": true, "fmt.Fprintf": true}
	// The domain packages the core may import: none of them does I/O or imports a wire protocol.
	allowedKVNode := map[string]bool{"schema": true, "cql": true, "cell": true, "partitionlimit": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatalf("listing the package's sources: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		checked++
		// Local names of imported packages, so that renamed imports are caught too.
		imported := map[string]string{}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			why, bad := forbiddenImports[path]
			if strings.HasPrefix(path, "net/") || strings.HasPrefix(path, "os/") {
				why, bad = "does I/O", true
			}
			if strings.HasPrefix(path, "google.golang.org/") || strings.Contains(path, "/proto/") || strings.HasSuffix(path, "pb") {
				why, bad = "is a wire protocol; the shell translates at the edge", true
			}
			if strings.HasPrefix(path, "github.com/kvnode/kvnode/") && !allowedKVNode[strings.TrimPrefix(path, "github.com/kvnode/kvnode/")] {
				why, bad = "is not one of the domain packages the core may import", true
			}
			if bad {
				t.Errorf("%s imports %q, which %s", fset.Position(imp.Pos()), path, why)
			}
			local := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			imported[local] = path
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					t.Errorf("%s declares a package-level variable; the package keeps no package-level state", fset.Position(d.Pos()))
				}
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "init" {
					t.Errorf("%s declares an init function", fset.Position(d.Pos()))
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && fprints[imported[pkg.Name]+"."+sel.Sel.Name] {
						if u, ok := n.Args[0].(*ast.UnaryExpr); !ok || u.Op != token.AND {
							t.Errorf("%s calls %s.%s on something other than a local buffer (&b), which may do I/O",
								fset.Position(n.Pos()), imported[pkg.Name], sel.Sel.Name)
						}
					}
				}
			case *ast.GoStmt:
				t.Errorf("%s starts a goroutine; the package starts none", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if pkg, ok := n.X.(*ast.Ident); ok {
					if path, ok := imported[pkg.Name]; ok {
						if why, bad := forbiddenCalls[path+"."+n.Sel.Name]; bad {
							t.Errorf("%s uses %s.%s, which %s; the core takes `now` as a parameter and does no I/O",
								fset.Position(n.Pos()), path, n.Sel.Name, why)
						}
					}
				}
			}
			return true
		})
	}
	if checked < 3 {
		t.Fatalf("checked %d source files, want at least 3: is the test running in the package directory?", checked)
	}
}

// TestNoWireDependencies checks the whole import graph, not just the package's own imports: the
// core links no gRPC and no protobuf, whatever its domain packages come to import.
func TestNoWireDependencies(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the dependencies with: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps .: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/kvnode/kvnode/coordinator") {
		t.Fatalf("go list -deps . does not list the package itself:\n%s", out)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "google.golang.org/grpc") || strings.HasPrefix(d, "google.golang.org/protobuf") {
			t.Errorf("the core depends on %s; wire forms belong in coordinator/shell", d)
		}
	}
}
