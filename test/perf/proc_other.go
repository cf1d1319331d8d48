//go:build !linux

package main

import "os/exec"

// setDeathSignal does nothing here; the CPU accounting this program needs (/proc) is Linux-only
// and run refuses to start elsewhere.
func setDeathSignal(*exec.Cmd) {}
