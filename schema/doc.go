// Package schema holds kvnode's keyspaces and tables: column types and the
// canonical encoding of values, the per_partition_rate_limit table option,
// validation of statements against the schema, last-writer-wins merging of
// two nodes' schemas, a deterministic encoding with a digest, and DESCRIBE
// output.
//
// # Values
//
// A Schema is immutable. Apply (a DDL statement) and Merge (another node's
// schema) return a new *Schema, so the owner swaps one pointer atomically
// and readers — the replica's hot path looking up TableByID and the
// table's RateLimit — never lock.
//
// # Versions and merging
//
// Each keyspace and table carries a Version (timestamp, node id) of its
// last change. Drops leave tombstones that keep their version, so a drop
// wins over a node that still has the object. Merge keeps, per object, the
// entry with the greater version; a table also records the version of the
// keyspace incarnation it was created in, so dropping and re-creating a
// keyspace forgets the old tables on every node. Merge is commutative,
// associative and idempotent; Digest summarises a schema so two nodes can
// tell whether they agree. Schemas are pure values: Apply takes the
// version and, for CREATE TABLE, the new TableID from the caller; nothing
// there reads a clock or draws random numbers.
//
// # Statements
//
// PrepareWrite and PrepareRead validate INSERT, UPDATE, DELETE and SELECT
// against the schema and return plain data (partition key values, a
// clustering range, cells, columns, limit) for the coordinator; no syntax
// tree reaches the layers below. BindWrite, BindRead and BindBatch do the
// same for statements with bind markers, given one BindValue per marker;
// Variables validates a statement without values and describes its markers
// (what a PREPARE answers).
//
// # Functions
//
// Cassandra's native scalar functions (functions.go) are compiled against
// the statement's table when it is bound: values of INSERT, UPDATE, DELETE
// and WHERE are computed then, selectors per row (Read.Eval). The
// current-time functions read the time the caller gives (BindWriteAt,
// BindReadAt, BindBatchAt: the coordinator's clock; time.Now for the
// variants without it), and now() and uuid() draw their random bits from
// crypto/rand; token() uses package partitioner.
//
// # Imports
//
// schema imports package cql (it builds tables from, and validates,
// syntax trees) and, of the domain's other leaves, cell and partitioner
// (token()).
package schema
