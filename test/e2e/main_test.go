package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/kvnode/kvnode/internal/testproc"
)

// kvnodeBinary is the path of the kvnode binary TestMain built; it is set once, before any test
// runs, and only read afterwards. It is empty under -short.
var kvnodeBinary string

// TestMain builds the kvnode binary once for every test in the package. A build failure fails
// the whole package loudly: without the binary nothing here can run.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test skips itself
	}
	dir, err := os.MkdirTemp("", "kvnode-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temporary directory for the kvnode binary:", err)
		os.Exit(1)
	}
	bin, err := testproc.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: FAIL: cannot build the kvnode binary:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	kvnodeBinary = bin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// skipShort skips an end-to-end test under go test -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped under -short (it builds the kvnode binary and runs 3-node clusters for tens of seconds); run go test without -short for it")
	}
}
