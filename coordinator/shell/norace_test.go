//go:build !race

package shell_test

// raceEnabled reports whether the race detector is on (race_test.go).
const raceEnabled = false
