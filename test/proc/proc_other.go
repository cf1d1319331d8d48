//go:build !linux

package proc

import "os/exec"

// setDeathSignal does nothing here: only Linux has a parent-death signal, so elsewhere a
// launcher that dies without stopping its nodes leaves them running.
func setDeathSignal(*exec.Cmd) {}
