// Package purity checks, from a package's own tests, that the package is pure: that its non-test
// sources read no clock, draw no global randomness, start no goroutines, keep no package-level
// variables, have no init function and do no I/O. Packages that promise purity (partitionlimit,
// the coordinator's core) call Check from a test; each adds the rules of its own promise.
//
// It imports nothing of kvnode.
package purity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Rules are what a package adds to the rules every pure package follows.
type Rules struct {
	// Imports maps further forbidden import paths to why they are forbidden.
	Imports map[string]string
	// Import, when set, judges every import path the common rules allow: why it is forbidden,
	// and whether it is.
	Import func(path string) (why string, bad bool)
	// FprintToLocalBuffer allows fmt.Fprint, Fprintln and Fprintf when their first argument is
	// the address of a local buffer (&b) the package builds a message in; otherwise they are I/O.
	FprintToLocalBuffer bool
	// Promise ends every message about a forbidden call: what the package does instead.
	Promise string
}

// common are the imports no pure package may have.
func commonImports() map[string]string {
	return map[string]string{
		"os": "does I/O", "io": "does I/O", "io/fs": "does I/O", "io/ioutil": "does I/O", "bufio": "does I/O", "net": "does I/O",
		"log": "does I/O", "log/slog": "does I/O", "syscall": "does I/O", "unsafe": "bypasses type safety",
		"math/rand": "draws global randomness", "math/rand/v2": "draws global randomness", "crypto/rand": "draws global randomness",
	}
}

// forbiddenCalls are the functions no pure package may use.
func forbiddenCalls() map[string]string {
	return map[string]string{
		"time.Now": "reads the clock", "time.Since": "reads the clock", "time.Until": "reads the clock",
		"time.Sleep": "waits on the clock", "time.After": "waits on the clock", "time.AfterFunc": "waits on the clock",
		"time.Tick": "waits on the clock", "time.NewTimer": "waits on the clock", "time.NewTicker": "waits on the clock",
		"fmt.Print": "does I/O", "fmt.Println": "does I/O", "fmt.Printf": "does I/O",
		"fmt.Fprint": "does I/O", "fmt.Fprintln": "does I/O", "fmt.Fprintf": "does I/O",
	}
}

// Check parses the non-test Go sources of the current directory (a test runs in its package's
// directory) and reports, with t.Errorf and the position, everything the rules forbid. It fails
// the test if it finds fewer than minFiles sources, which would mean it checked the wrong place.
func Check(t testing.TB, minFiles int, r Rules) {
	t.Helper()
	imports := commonImports()
	for p, why := range r.Imports {
		imports[p] = why
	}
	calls := forbiddenCalls()
	fprints := map[string]bool{"fmt.Fprint": true, "fmt.Fprintln": true, "fmt.Fprintf": true}
	if r.FprintToLocalBuffer {
		for c := range fprints {
			delete(calls, c)
		}
	}
	promise := r.Promise
	if promise == "" {
		promise = "the package takes `now` as a parameter and does no I/O"
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
			why, bad := imports[path]
			if strings.HasPrefix(path, "net/") || strings.HasPrefix(path, "os/") {
				why, bad = "does I/O", true
			}
			if !bad && r.Import != nil {
				why, bad = r.Import(path)
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
			case *ast.CallExpr:
				if !r.FprintToLocalBuffer {
					break
				}
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && fprints[imported[pkg.Name]+"."+sel.Sel.Name] {
						if u, ok := n.Args[0].(*ast.UnaryExpr); !ok || u.Op != token.AND {
							t.Errorf("%s calls %s.%s on something other than a local buffer (&b), which may do I/O",
								fset.Position(n.Pos()), imported[pkg.Name], sel.Sel.Name)
						}
					}
				}
			case *ast.SelectorExpr:
				if pkg, ok := n.X.(*ast.Ident); ok {
					if path, ok := imported[pkg.Name]; ok {
						if why, bad := calls[path+"."+n.Sel.Name]; bad {
							t.Errorf("%s uses %s.%s, which %s; %s", fset.Position(n.Pos()), path, n.Sel.Name, why, promise)
						}
					}
				}
			}
			return true
		})
	}
	if checked < minFiles {
		t.Fatalf("checked %d source files, want at least %d: is the test running in the package directory?", checked, minFiles)
	}
}
