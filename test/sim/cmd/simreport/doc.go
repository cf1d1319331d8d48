// Command simreport runs kvnode's rate-limiter accuracy matrix in the deterministic cluster
// simulator (package test/sim) and prints the report: a markdown document by default (a heading
// with the flags that reproduce it, then the table), or one JSON object per row with --json.
//
//	go run ./test/sim/cmd/simreport [--json] [--out FILE] [--match TERMS] [--seed N] [--seconds S] [--warmup W] [--arrival poisson|smooth] [--no-learning] [--workers K] [--onset] [--offered V]
//
// --onset runs only the onset rows (a partition turning hot, from idle or again after a pause).
// --match runs only the rows whose scenario has the given terms, e.g. one row over several
// seeds. --offered replaces the picked rows' V (a multiple of L), e.g. to run every layout at
// 0.9·L. Each row is seeded on its own, so any subset prints the same numbers as in the full
// matrix.
// The same flags always print the same bytes. test/sim/results/accuracy.md is the report for
// the default flags (go test ./test/sim -run TestReport -update rewrites it); docs/accuracy.md
// reads it.
//
// It imports only test/sim.
package main
