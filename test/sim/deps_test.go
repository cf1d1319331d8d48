package sim

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGRPC checks that the simulator links no gRPC: it drives the coordinator's pure core and
// the replica's pure admission decision, not the shell or the replica service.
func TestNoGRPC(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the dependencies with: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/kvnode/kvnode/partitionlimit\n") {
		t.Fatalf("go list -deps ./... does not list partitionlimit, which the simulator drives:\n%s", out)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "google.golang.org/grpc") {
			t.Errorf("the simulator depends on %s; it should drive the pure core, not the shell", d)
		}
	}
}
