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
// The result has the greater GC horizon of the two (see Purge), and no
// tombstone older than it. A schema behind that horizon cannot bring back
// what the horizon purged: its entries older than the horizon count only
// for names the other schema has an entry for (when the horizon was set
// every node had every such entry, so one the other schema lacks was purged
// with its tombstone).
//
// Merge is commutative, associative and idempotent: nodes that exchange
// schemas in any order end with equal schemas (equal Digests).
func (s *Schema) Merge(o *Schema) *Schema {
	if s.digest == o.digest && bytes.Equal(s.encoded, o.encoded) {
		return s
	}
	h := max(s.gcBefore, o.gcBefore)
	// stale reports whether an entry of side from, at version v, of a name the other side
	// has no entry for (inOther false), predates a horizon that from has not seen.
	stale := func(from *Schema, v Version, inOther bool) bool {
		return from.gcBefore < h && v.Timestamp < h && !inOther
	}
	ks := make(map[string]*Keyspace, len(s.keyspaces)+len(o.keyspaces))
	for _, p := range [][2]*Schema{{s, o}, {o, s}} {
		for name, k := range p[0].keyspaces {
			if _, in := p[1].keyspaces[name]; stale(p[0], k.Version, in) {
				continue
			}
			if cur, ok := ks[name]; !ok || compareKeyspaces(k, cur) > 0 {
				ks[name] = k
			}
		}
	}
	ts := make(map[tableKey]*Table, len(s.tables)+len(o.tables))
	for _, p := range [][2]*Schema{{s, o}, {o, s}} {
		for key, t := range p[0].tables {
			if _, in := p[1].tables[key]; stale(p[0], t.Version, in) {
				continue
			}
			if k := ks[key.keyspace]; k == nil || k.dropped || k.Version != t.KeyspaceVersion {
				continue // the table's keyspace incarnation lost
			}
			if cur, ok := ts[key]; !ok || compareTables(t, cur) > 0 {
				ts[key] = t
			}
		}
	}
	dropTombstones(ks, ts, h)
	sides := [2]*Schema{s, o}
	sl := mergeLevels(&s.sl, &o.sl, func(i int, v Version, in bool) bool { return stale(sides[i], v, in) })
	sl.dropTombstones(h)
	return finishLevels(ks, ts, sl, h)
}

// dropTombstones deletes the tombstones older than before (a Version
// timestamp) from the entry maps.
func dropTombstones(ks map[string]*Keyspace, ts map[tableKey]*Table, before int64) {
	for name, k := range ks {
		if k.dropped && k.Version.Timestamp < before {
			delete(ks, name)
		}
	}
	for key, t := range ts {
		if t.dropped && t.Version.Timestamp < before {
			delete(ts, key)
		}
	}
}

// Tombstones returns how many dropped keyspaces and tables s remembers.
func (s *Schema) Tombstones() int {
	n := 0
	for _, k := range s.keyspaces {
		if k.dropped {
			n++
		}
	}
	for _, t := range s.tables {
		if t.dropped {
			n++
		}
	}
	return n + len(s.sl.tombstoneVersions())
}

// OldestTombstone returns the Version timestamp of s's oldest tombstone, and
// false when it has none.
func (s *Schema) OldestTombstone() (int64, bool) {
	var oldest int64
	found := false
	for _, v := range s.tombstoneVersions() {
		if !found || v.Timestamp < oldest {
			oldest, found = v.Timestamp, true
		}
	}
	return oldest, found
}

func (s *Schema) tombstoneVersions() []Version {
	var vs []Version
	for _, k := range s.keyspaces {
		if k.dropped {
			vs = append(vs, k.Version)
		}
	}
	for _, t := range s.tables {
		if t.dropped {
			vs = append(vs, t.Version)
		}
	}
	return append(vs, s.sl.tombstoneVersions()...)
}

// GCHorizon returns s's GC horizon: a Version timestamp below which s holds
// no tombstone (0 when it never purged one). See Purge.
func (s *Schema) GCHorizon() int64 { return s.gcBefore }

// Purge returns s without the tombstones older than before (a Version
// timestamp), with its GC horizon raised to before; s itself when that
// changes nothing. Only a whole schema (not a Restrict value) may be
// purged, and only once every node of the cluster holds s (equal digests):
// then no node has an object older than a purged tombstone, and Merge
// keeps a node that somehow still does (restored from a backup, say) from
// bringing it back. Versions given after before must exceed it (see
// Merge): the horizon should be well behind every node's clock.
func (s *Schema) Purge(before int64) *Schema {
	if before <= s.gcBefore {
		return s
	}
	ks, ts := s.clone()
	dropTombstones(ks, ts, before)
	sl := s.sl.clone()
	sl.dropTombstones(before)
	return finishLevels(ks, ts, sl, before)
}

// WithoutTombstonesBefore returns s without the tombstones older than
// before, keeping its GC horizon; s itself when it has none. Schema
// consensus uses it on a keyspace's agreed state (a Restrict value, which
// has no horizon of its own) so that it does not carry purged tombstones
// forever.
func (s *Schema) WithoutTombstonesBefore(before int64) *Schema {
	found := false
	for _, v := range s.tombstoneVersions() {
		found = found || v.Timestamp < before
	}
	if !found {
		return s
	}
	ks, ts := s.clone()
	dropTombstones(ks, ts, before)
	sl := s.sl.clone()
	sl.dropTombstones(before)
	return finishLevels(ks, ts, sl, s.gcBefore)
}

// compareKeyspaces orders two entries for one keyspace name: by Version
// (the incarnation, or a drop), then by Altered (the last ALTER of one
// incarnation), then (only if two nodes made different changes with the
// same versions) by encoding, so that every node picks the same winner.
func compareKeyspaces(a, b *Keyspace) int {
	if c := a.Version.Compare(b.Version); c != 0 {
		return c
	}
	if c := a.Altered.Compare(b.Altered); c != 0 {
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
	if name == LevelsKey {
		return finishLevels(ks, ts, s.sl, 0)
	}
	if k, ok := s.keyspaces[name]; ok {
		ks[name] = k
		for key, t := range s.tables {
			if key.keyspace == name {
				ts[key] = t
			}
		}
	}
	return finish(ks, ts, 0)
}

// HoldsOnly reports whether every entry of s belongs to keyspace name: a
// check on a Restrict value received from another node.
func (s *Schema) HoldsOnly(name string) bool {
	if name != LevelsKey && !s.sl.empty() {
		return false
	}
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
	if keyspace == LevelsKey && table == "" {
		return s.sl.changed, !s.sl.empty()
	}
	if table == "" {
		k, ok := s.keyspaces[keyspace]
		if !ok {
			return Version{}, false
		}
		return k.LastChange(), true
	}
	t, ok := s.tables[tableKey{keyspace, table}]
	if !ok {
		return Version{}, false
	}
	return t.Version, true
}

// StatementTarget returns the keyspace a schema statement changes and the
// table in it ("" for CREATE, ALTER and DROP KEYSPACE), resolving an unqualified
// table name against the current keyspace. It fails for a table name
// without a keyspace when there is no current one, and for statements that
// are not schema changes.
func StatementTarget(stmt cql.Statement, current string) (keyspace, table string, err error) {
	if isLevelStatement(stmt) {
		return LevelsKey, "", nil
	}
	var tn cql.TableName
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return st.Name.Name, "", nil
	case *cql.AlterKeyspaceStmt:
		return st.Name.Name, "", nil
	case *cql.DropKeyspaceStmt:
		return st.Name.Name, "", nil
	case *cql.CreateTypeStmt, *cql.AlterTypeStmt, *cql.DropTypeStmt:
		// A user type is part of its keyspace's entry.
		ks, err := resolveKeyspace(typeStatementName(st), current)
		return ks, "", err
	case *cql.CreateTableStmt:
		tn = st.Table
	case *cql.AlterTableStmt:
		tn = st.Table
	case *cql.TruncateStmt:
		tn = st.Table
	case *cql.DropTableStmt:
		tn = st.Table
	case *cql.CreateIndexStmt:
		// An index belongs to its table's entry. The index's qualifier names the keyspace when
		// the table's does not.
		tn = st.Table
		if tn.Keyspace.Name == "" {
			tn.Keyspace = st.Name.Keyspace
		}
	case *cql.DropIndexStmt:
		tn = st.Table // resolved by the coordinator (Schema.ResolveDropIndex)
		if tn.Name.Name == "" {
			ks, err := resolveKeyspace(st.Name, current)
			if err != nil {
				return "", "", err
			}
			return "", "", fmt.Errorf("Index '%s.%s' doesn't exist", ks, st.Name.Name.Name)
		}
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
