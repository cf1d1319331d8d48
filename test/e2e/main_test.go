package e2e

import (
	"testing"

	"github.com/kvnode/kvnode/test/proc"
)

// kvnodeBinary is the path of the kvnode binary TestMain built; it is set once, before any test
// runs, and only read afterwards. It is empty under -short.
var kvnodeBinary string

// TestMain builds the kvnode binary once for every test in the package. A build failure fails
// the whole package loudly: without the binary nothing here can run.
func TestMain(m *testing.M) { proc.Main(m, "e2e", &kvnodeBinary) }

// skipShort skips an end-to-end test under go test -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped under -short (it builds the kvnode binary and runs 3-node clusters for tens of seconds); run go test without -short for it")
	}
}
