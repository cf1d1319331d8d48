package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the server if this program dies without stopping it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
