// Package cliflags parses a kvnode subcommand's flags the same way for every tool: -h prints the
// usage, errors name the command and say how to list its flags, and stray arguments are refused.
//
// It imports nothing of kvnode.
package cliflags
