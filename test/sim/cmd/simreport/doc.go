// Command simreport runs kvnode's rate-limiter accuracy matrix in the deterministic cluster
// simulator (package test/sim) and prints the report: a markdown table by default, or one JSON
// object per row with --json.
//
//	go run ./test/sim/cmd/simreport [--json] [--seed N] [--seconds S] [--warmup W] [--arrival poisson|smooth] [--workers K]
//
// The same flags always print the same bytes. docs/accuracy.md records the table for the default
// seed and length.
//
// It imports only test/sim.
package main
