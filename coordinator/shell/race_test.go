//go:build race

package shell_test

// raceEnabled reports whether the race detector is on: it makes sync.Pool drop some of what is
// put back, so allocation counts do not hold under it.
const raceEnabled = true
