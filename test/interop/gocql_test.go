package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gocql/gocql"
)

// TestGocqlIsScyllaDBsFork checks that go.mod's replace directive took effect: ScyllaDB's fork
// has the typed rate-limit error, which upstream gocql lacks, and it survives wrapping.
func TestGocqlIsScyllaDBsFork(t *testing.T) {
	var err error = fmt.Errorf("insert: %w", &gocql.RequestErrRateLimitReached{OpType: gocql.OpTypeWrite, RejectedByCoordinator: true})
	var rl *gocql.RequestErrRateLimitReached
	if !errors.As(err, &rl) {
		t.Fatalf("errors.As(%v, *gocql.RequestErrRateLimitReached) = false", err)
	}
	if s := rl.String(); !strings.Contains(s, "OpType=Write") || !strings.Contains(s, "RejectedByCoordinator=true") {
		t.Errorf("RequestErrRateLimitReached.String() = %q, want OpType=Write and RejectedByCoordinator=true", s)
	}
}
