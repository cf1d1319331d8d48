//go:build race

package partitionlimit

// raceEnabled reports whether the race detector is on; the longest simulations shorten
// themselves under it (they exercise no concurrency, and the detector slows them ~20×).
const raceEnabled = true
