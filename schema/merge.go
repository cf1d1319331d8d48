package schema

import (
	"bytes"
	"cmp"
	"slices"
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
