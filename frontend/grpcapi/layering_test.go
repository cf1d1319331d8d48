package grpcapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNothingBelowTheFrontEndsImportsTheClientAPI checks the rule of docs/architecture.md:
// the client API's generated package is the front ends' alone. The packages below them speak
// domain types (schema.Op, coordinator.Statement, coordinator.Result, typed errors).
func TestNothingBelowTheFrontEndsImportsTheClientAPI(t *testing.T) {
	const kvnodepb = "github.com/kvnode/kvnode/proto/kvnodepb"
	below := []string{"coordinator", "replica", "cluster", "schema", "cql", "partitioner", "cell", "partitionlimit"}
	args := []string{"list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}
	for _, p := range below {
		args = append(args, "github.com/kvnode/kvnode/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == kvnodepb {
			t.Errorf("%s is a dependency of a package below the front ends (%s)", kvnodepb, strings.Join(below, ", "))
		}
		for _, imp := range strings.Fields(imports) {
			if imp == kvnodepb {
				t.Errorf("%s imports %s", pkg, kvnodepb)
			}
		}
	}
}
