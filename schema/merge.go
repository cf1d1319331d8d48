package schema

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/kvnode/kvnode/cql"
)

// Merge returns the union of two nodes' schemas, object by object, last
// writer wins: for each keyspace name the entry with the greater Version;
// for each table name the entry created in the later keyspace incarnation
// (KeyspaceVersion), then with the greater Version. Tombstones take part
// like live entries, so a drop wins over an older copy of the object; a
// table that does not belong to its keyspace's winning incarnation is
// forgotten.
//
// Merge is commutative, associative and idempotent: nodes that exchange
// schemas in any order end with equal schemas (equal Digests).
func (s *Schema) Merge(o *Schema) *Schema {
	if s.digest == o.digest && bytes.Equal(s.encoded, o.encoded) {
		return s
	}
	ks := make(map[string]*Keyspace, len(s.keyspaces)+len(o.keyspaces))
	for _, m := range []map[string]*Keyspace{s.keyspaces, o.keyspaces} {
		for name, k := range m {
			if cur, ok := ks[name]; !ok || compareKeyspaces(k, cur) > 0 {
				ks[name] = k
			}
		}
	}
	ts := make(map[tableKey]*Table, len(s.tables)+len(o.tables))
	for _, m := range []map[tableKey]*Table{s.tables, o.tables} {
		for key, t := range m {
			if k := ks[key.keyspace]; k == nil || k.dropped || k.Version != t.KeyspaceVersion {
				continue // the table's keyspace incarnation lost
			}
			if cur, ok := ts[key]; !ok || compareTables(t, cur) > 0 {
				ts[key] = t
			}
		}
	}
	return finish(ks, ts)
}

// compareKeyspaces orders two entries for one keyspace name: by Version,
// then (only if two nodes made different changes with the same version)
// by encoding, so that every node picks the same winner.
func compareKeyspaces(a, b *Keyspace) int {
	if c := a.Version.Compare(b.Version); c != 0 {
		return c
	}
	return bytes.Compare(appendKeyspace(nil, a), appendKeyspace(nil, b))
}

// compareTables orders two entries for one table name: by keyspace
// incarnation, then Version, then encoding.
func compareTables(a, b *Table) int {
	if c := a.KeyspaceVersion.Compare(b.KeyspaceVersion); c != 0 {
		return c
	}
	if c := a.Version.Compare(b.Version); c != 0 {
		return c
	}
	return bytes.Compare(appendTable(nil, a), appendTable(nil, b))
}

func sortKeyspaces(ks []*Keyspace) {
	slices.SortFunc(ks, func(a, b *Keyspace) int { return cmp.Compare(a.Name, b.Name) })
}

// Restrict returns the part of s that belongs to keyspace name: its entry
// (live or a tombstone) and its tables' entries (tombstones included), or
// the empty schema when s has no entry for name. It is the value schema
// consensus agrees on per keyspace; merging it into a schema that has
// seen every earlier value of the keyspace yields the keyspace's state in
// it exactly.
func (s *Schema) Restrict(name string) *Schema {
	ks := map[string]*Keyspace{}
	ts := map[tableKey]*Table{}
	if k, ok := s.keyspaces[name]; ok {
		ks[name] = k
		for key, t := range s.tables {
			if key.keyspace == name {
				ts[key] = t
			}
		}
	}
	return finish(ks, ts)
}

// HoldsOnly reports whether every entry of s belongs to keyspace name: a
// check on a Restrict value received from another node.
func (s *Schema) HoldsOnly(name string) bool {
	for k := range s.keyspaces {
		if k != name {
			return false
		}
	}
	for key := range s.tables {
		if key.keyspace != name {
			return false
		}
	}
	return true
}

// EntryVersion returns the Version of the entry for keyspace (table "")
// or for table keyspace.table, live or a tombstone: the version of the
// last change to that name. It reports false when s has no entry for it.
func (s *Schema) EntryVersion(keyspace, table string) (Version, bool) {
	if table == "" {
		k, ok := s.keyspaces[keyspace]
		if !ok {
			return Version{}, false
		}
		return k.Version, true
	}
	t, ok := s.tables[tableKey{keyspace, table}]
	if !ok {
		return Version{}, false
	}
	return t.Version, true
}

// StatementTarget returns the keyspace a schema statement changes and the
// table in it ("" for CREATE and DROP KEYSPACE), resolving an unqualified
// table name against the current keyspace. It fails for a table name
// without a keyspace when there is no current one, and for statements that
// are not schema changes.
func StatementTarget(stmt cql.Statement, current string) (keyspace, table string, err error) {
	var tn cql.TableName
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return st.Name.Name, "", nil
	case *cql.DropKeyspaceStmt:
		return st.Name.Name, "", nil
	case *cql.CreateTableStmt:
		tn = st.Table
	case *cql.AlterTableStmt:
		tn = st.Table
	case *cql.DropTableStmt:
		tn = st.Table
	default:
		return "", "", fmt.Errorf("%s is not a schema statement", StatementName(stmt))
	}
	ks, err := resolveKeyspace(tn, current)
	if err != nil {
		return "", "", err
	}
	return ks, tn.Name.Name, nil
}

// Empty reports whether s has never held a keyspace (not even a dropped one).
func (s *Schema) Empty() bool { return len(s.keyspaces) == 0 }
