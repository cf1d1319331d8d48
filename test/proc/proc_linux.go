package proc

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the node if the launching program dies without stopping
// it (a test binary killed by its timeout, an interrupted perf run), so no server outlives it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
