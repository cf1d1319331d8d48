package kvnodepb

import (
	"testing"

	"github.com/kvnode/kvnode/internal/protocheck"
)

// TestGeneratedCodeIsCurrent regenerates the Go code of every .proto file of the package, as
// its go:generate lines do (gen*.go), and compares it with the committed files.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	protocheck.Current(t, ".", nil, "kvnode.proto")
	protocheck.Current(t, ".", nil, "admin.proto")
	protocheck.Current(t, ".", nil, "snapshot.proto")
	// repair.proto is compiled from proto/ as kvnodepb/repair.proto (see gen_repair.go).
	protocheck.Current(t, "..", []string{"."}, "kvnodepb/repair.proto")
}
