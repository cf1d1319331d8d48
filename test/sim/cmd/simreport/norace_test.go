//go:build !race

package main

// raceEnabled is true when the race detector is on: the simulator runs several times slower,
// so the matrix test simulates less time.
const raceEnabled = false
