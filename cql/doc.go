// Package cql reads and prints kvnode's CQL-like query language.
//
// It is split like Go's own go/token, go/scanner, go/ast and go/parser,
// in one package:
//
//	token.go    Token, the keyword table, Lookup
//	scanner.go  Pos and Scanner: text to tokens, comments skipped
//	ast.go      the syntax tree: Statement, Term and their node types
//	parser.go   Parse and ParseStatement: recursive descent, one token of
//	            lookahead; Error and ErrorList
//	format.go   Format: any statement back to canonical text
//	funcs.go    function calls (values and selectors) and CAST
//
// The language is the subset of CQL that kvnode executes:
//
//	CREATE KEYSPACE [IF NOT EXISTS] ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}
//	DROP KEYSPACE [IF EXISTS] ks
//	USE ks
//	CREATE TABLE [IF NOT EXISTS] [ks.]t (a int, b text, c bigint, v blob, PRIMARY KEY ((a, b), c))
//	    [WITH per_partition_rate_limit = {'max_reads_per_second': 100, 'max_writes_per_second': 50}]
//	ALTER TABLE [ks.]t WITH per_partition_rate_limit = {...}
//	DROP TABLE [IF EXISTS] [ks.]t
//	INSERT INTO [ks.]t (a, b, v) VALUES (1, 'x', 0xcafe) [USING TIMESTAMP 1700000000000000 [AND TIMEOUT 500ms]]
//	UPDATE [ks.]t [USING TIMESTAMP n] SET v = 0x00, w = NULL WHERE a = 1 AND b = 'x' AND c = 2
//	DELETE [v, w] FROM [ks.]t [USING TIMESTAMP n] WHERE a = 1 AND b = 'x' [AND c >= 2 ...]
//	SELECT * | a, v FROM [ks.]t [WHERE a = 1 AND b = 'x' AND c > 2 AND c <= 9] [ORDER BY c DESC] [LIMIT 10]
//	    [ALLOW FILTERING] [USING TIMEOUT 2s]
//	BEGIN [UNLOGGED | LOGGED] BATCH [USING TIMESTAMP n] INSERT ...; UPDATE ...; DELETE ...; APPLY BATCH
//	DESCRIBE KEYSPACES | KEYSPACE [ks] | TABLES | TABLE [ks.]t | CLUSTER | [FULL] SCHEMA [WITH INTERNALS]  (DESC is a synonym)
//
// Values and SELECT list items may call Cassandra's native functions:
// now(), toDate(c), minTimeuuid(?), blobAsInt(0x01), token(k) and
// CAST(v AS text) as selectors; which exist and what they take is the
// schema's to check.
//
// USING takes TIMESTAMP n and TIMEOUT d, joined by AND in either order
// (SELECT takes only TIMEOUT: ScyllaDB's extension, which gocql appends to
// its system queries).
//
// Keywords are case-insensitive. Unquoted identifiers are case-insensitive
// (stored lower-cased); "Quoted" identifiers keep their case and may be
// keywords. Literals, comments and statement separators:
//
//	'text', 'it''s'              strings (a quote inside is written twice)
//	$$text$$                     strings taken as written (function bodies)
//	42, -7                       integers
//	1.5, 2e10, NaN, -Infinity    floats
//	true, false                  booleans
//	0xcafe                       blobs (an even number of hex digits)
//	NULL, ?, :name               null and bind markers (numbered in source order: Literal.Index)
//	500ms, 1h30m                 durations (units y, mo, w, d, h, m, s, ms, us, ns)
//	-- to end of line, /* ... */ comments (// works like --)
//	;                            ends a statement (optional at the end)
//
// The rest of Cassandra 4.1's CQL is recognised by its leading words and
// refused with an error naming the feature ("materialized views are not
// supported"; Error.Unsupported, ErrorList.Unsupported), which front ends
// answer as Invalid rather than as a syntax error (unsupported.go).
//
// The parser checks syntax only; package schema checks a statement against
// the keyspaces and tables that exist. Errors read "line:col: expected X,
// found Y". The parser never panics: after the first error in a statement it
// skips to the next semicolon (in a BATCH, past its APPLY BATCH), and it
// stops after MaxErrors errors.
//
// The package imports nothing of kvnode and is pure: no I/O, no clock, no
// global state.
package cql
