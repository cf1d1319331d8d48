package partitionlimit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackageIsPure parses the package's non-test sources and fails on anything that would let
// the limiter read the clock, draw its own randomness, start goroutines, keep package-level
// mutable state or do I/O: the package promises none of these (see the package documentation).
func TestPackageIsPure(t *testing.T) {
	forbiddenImports := map[string]string{
		"os": "does I/O", "io": "does I/O", "io/fs": "does I/O", "io/ioutil": "does I/O", "bufio": "does I/O", "net": "does I/O",
		"log": "does I/O", "log/slog": "does I/O", "syscall": "does I/O", "unsafe": "bypasses type safety",
		"math/rand": "draws global randomness", "math/rand/v2": "draws global randomness", "crypto/rand": "draws global randomness",
	}
	forbiddenCalls := map[string]string{
		"time.Now": "reads the clock", "time.Since": "reads the clock", "time.Until": "reads the clock",
		"time.Sleep": "waits on the clock", "time.After": "waits on the clock", "time.AfterFunc": "waits on the clock",
		"time.Tick": "waits on the clock", "time.NewTimer": "waits on the clock", "time.NewTicker": "waits on the clock",
		"fmt.Print": "does I/O", "fmt.Println": "does I/O", "fmt.Printf": "does I/O",
		"fmt.Fprint": "does I/O", "fmt.Fprintln": "does I/O", "fmt.Fprintf": "does I/O",
	}
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
			case *ast.GoStmt:
				t.Errorf("%s starts a goroutine; the package starts none", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if pkg, ok := n.X.(*ast.Ident); ok {
					if path, ok := imported[pkg.Name]; ok {
						if why, bad := forbiddenCalls[path+"."+n.Sel.Name]; bad {
							t.Errorf("%s uses %s.%s, which %s; the package takes `now` as a parameter and does no I/O",
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
