// Package atomicfile replaces small files (a node's id, its known peers, its schema) so that a
// crash at any point leaves either the old or the new content, never a mix or an empty file.
//
// It imports nothing of kvnode.
package atomicfile
