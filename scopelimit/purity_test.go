package scopelimit

import (
	"testing"

	"github.com/kvnode/kvnode/internal/purity"
)

// TestPackageIsPure fails on anything that would let the package read the clock, draw its own
// randomness, start goroutines, keep package-level mutable state or do I/O.
func TestPackageIsPure(t *testing.T) {
	purity.Check(t, 2, purity.Rules{})
}
