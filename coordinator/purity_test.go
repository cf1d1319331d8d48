package coordinator

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/internal/purity"
)

// TestPackageIsPure parses the package's non-test sources and fails on anything that would let
// the coordinator's core read the clock, draw its own randomness, start goroutines, share memory
// between them, keep package-level mutable state, do I/O or speak a wire protocol: the package
// promises none of these (see "Core and shell" in the package documentation); the shell,
// package coordinator/shell, does all of that.
func TestPackageIsPure(t *testing.T) {
	// The domain packages the core may import: none of them does I/O or imports a wire protocol.
	allowedKVNode := map[string]bool{"schema": true, "cql": true, "cell": true, "partitionlimit": true, "auth": true, "partitioner": true}
	purity.Check(t, 3, purity.Rules{
		Imports: map[string]string{
			"context": "belongs to the shell, which waits on replicas", "sync": "synchronises goroutines", "sync/atomic": "synchronises goroutines",
			"runtime": "reaches into the runtime", "reflect": "bypasses the types",
		},
		Import: func(path string) (string, bool) {
			if strings.HasPrefix(path, "google.golang.org/") || strings.Contains(path, "/proto/") || strings.HasSuffix(path, "pb") {
				return "is a wire protocol; the shell translates at the edge", true
			}
			if strings.HasPrefix(path, "github.com/kvnode/kvnode/") && !allowedKVNode[strings.TrimPrefix(path, "github.com/kvnode/kvnode/")] {
				return "is not one of the domain packages the core may import", true
			}
			return "", false
		},
		// fmt.Fprint* may only write into a local buffer the package builds a message in (&b).
		FprintToLocalBuffer: true,
		Promise:             "the core takes `now` as a parameter and does no I/O",
	})
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
