// Package lint holds the checks that keep kvnode's floor plan: its tests fail when a package
// imports one above it in the layer table (docs/architecture.md cites it), when internal/ or
// proto/ import outside themselves, when a front end imports the coordinator's shell, when
// catalog, hints or repair import node, when node outgrows its budget, and when a package's doc
// comment is missing. It has no code of its own; the tests ask `go list` about the module.
package lint
