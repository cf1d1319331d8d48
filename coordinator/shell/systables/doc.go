// Package systables serves the system tables that Cassandra and ScyllaDB drivers read on connect,
// to discover the cluster and to build schema metadata: system.local, system.peers,
// system.peers_v2 and the system_schema tables (keyspaces, tables, columns, dropped_columns,
// types, functions, aggregates, triggers, indexes, views, scylla_tables). They are virtual: every
// node answers them from its own state (its membership view, the token ring, its schema) at the
// moment of the query, with no storage and no replica traffic, and they are exempt from the rate
// limiter.
//
// Tables is the coordinator shell's shell.SystemTables (shell.Config.System): Select answers a
// SELECT of the keyspaces system and system_schema (projections, equality restrictions on any
// column with or without ALLOW FILTERING, bind markers, LIMIT) and Prepare describes one for the
// native protocol's PREPARE. SELECTs of other keyspaces are left to the shell. Writes and schema
// changes naming the system keyspaces never reach this package: the schema refuses them as
// read-only.
//
// Derived identities: host_id is the node id when it is a UUID (kvnode generates version 4 UUIDs),
// else a version 5 UUID of the id (HostID); schema_version is a version 5 UUID of the node's
// schema digest (SchemaVersion), so nodes with the same schema agree and every schema change
// changes it; a table's id is a version 5 UUID of its keyspace, name and kvnode table id.
//
// The package sits beside the shell: it may import the core's domain types (coordinator), cql
// and schema, and reads the node through the small Source interface that package node adapts.
package systables
