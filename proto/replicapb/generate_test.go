package replicapb

import (
	"testing"

	"github.com/kvnode/kvnode/internal/protocheck"
)

// TestGeneratedCodeIsCurrent regenerates the Go code of every .proto file of the package, as
// its go:generate lines do (gen*.go), and compares it with the committed files.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	protocheck.Current(t, ".", nil, "replica.proto")
	protocheck.Current(t, ".", nil, "stream.proto")
	protocheck.Current(t, ".", nil, "membership.proto")
	// repair.proto is compiled from proto/ as replicapb/repair.proto (see gen_repair.go).
	protocheck.Current(t, "..", []string{".", "replicapb"}, "replicapb/repair.proto")
	protocheck.Current(t, "..", []string{".", "replicapb"}, "replicapb/internode.proto")
}
