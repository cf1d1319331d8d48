// Package serveline is the line `kvnode serve` prints on stdout once it serves clients, and the
// reader that tools and tests use to learn a started node's id and real addresses from it (the
// addresses are the bound ones, so port 0 works). Printing and parsing live here together so that
// the two can never drift apart.
//
// It imports nothing of kvnode: both the server (cmd/kvnode) and the launchers that read its output
// (test/proc) use it.
package serveline
