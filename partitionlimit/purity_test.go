package partitionlimit

import (
	"testing"

	"github.com/kvnode/kvnode/internal/purity"
)

// TestPackageIsPure parses the package's non-test sources and fails on anything that would let
// the limiter read the clock, draw its own randomness, start goroutines, keep package-level
// mutable state or do I/O: the package promises none of these (see the package documentation).
func TestPackageIsPure(t *testing.T) {
	purity.Check(t, 3, purity.Rules{})
}
