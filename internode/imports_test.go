package internode

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports holds the package's place below every subsystem: it imports of kvnode only
// proto/replicapb and internal packages, so that any of them can send through it.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/kvnode/kvnode/"
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			own, ok := strings.CutPrefix(path, module)
			if ok && own != "proto/replicapb" && !strings.HasPrefix(own, "internal/") {
				t.Errorf("%s imports %s: internode may import only proto/replicapb and internal/ of kvnode", name, path)
			}
		}
	}
}
