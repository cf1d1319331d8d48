// Command simreport runs kvnode's rate-limiter accuracy matrix in the deterministic cluster
// simulator (package test/sim) and prints the report: a markdown table by default, or one JSON
// object per row with --json.
//
//	go run ./test/sim/cmd/simreport [--json] [--seed N] [--seconds S] [--warmup W] [--arrival poisson|smooth] [--workers K] [--onset]
//
// --onset runs only the onset rows (a partition turning hot, from idle or again after a pause).
// Each row is seeded on its own, so they print the same numbers as in the full matrix.
// The same flags always print the same bytes. docs/accuracy.md records the table for the default
// seed and length.
//
// It imports only test/sim.
package main
