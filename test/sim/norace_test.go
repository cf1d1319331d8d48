//go:build !race

package sim

// raceEnabled is true when the race detector is on: the simulator runs several times slower,
// so the longest tests sample the matrix instead of running all of it.
const raceEnabled = false
