package sim

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestMain(m *testing.M) {
	// The simulator allocates a request state machine per operation and keeps little live;
	// collecting less often makes the tests markedly faster (cmd/simreport does the same).
	debug.SetGCPercent(800)
	os.Exit(m.Run())
}
