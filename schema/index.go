package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// Secondary indexes, as Cassandra 4.1's native (COMPOSITES) indexes: each node indexes the rows
// it holds, an entry per (indexed value, partition key, clustering) written in the same storage
// batch as the row (package replica), and a query by the indexed value asks the replicas of
// every token range for their candidates, which the coordinator reads back as rows at the
// statement's consistency level. An index belongs to its table's entry, so CREATE and DROP
// INDEX are agreed as ALTER TABLE is; index names are unique within a keyspace.

// FormatIndexes is the data format version from which a release of kvnode keeps secondary
// index entries (replica's index key space) and decodes a table's indexes. A node of an older
// format refuses a schema with one (it does not know the table flag), so coordinators refuse
// CREATE INDEX while a member of an older format remains.
const FormatIndexes = 12

// Index is a secondary index of a table.
type Index struct {
	// Name is the index's name, unique within its keyspace.
	Name string
	// Column is the indexed column's name.
	Column string
	// Target is how the column is indexed: "" for its values, "full" for the whole value of a
	// frozen collection (the same entries); for a non-frozen collection "values" (the
	// elements of a set or list, the values of a map), "keys" (a map's keys) or "entries" (a
	// map's key and value, EntryValue), an entry per element.
	Target string
	// ID keys the index's entries in storage: distinct for every creation (TableIDFor of the
	// table's name, the index's name and the CREATE INDEX's version), so entries of an index
	// dropped and created again under the same name are never read as the new index's.
	ID TableID
}

// TargetCQL is the index's target as CREATE INDEX and system_schema.indexes write it: the
// column, or full(column).
func (ix *Index) TargetCQL() string {
	if ix.Target == "" {
		return cql.QuoteIdent(ix.Column)
	}
	return ix.Target + "(" + cql.QuoteIdent(ix.Column) + ")"
}

// Indexes returns t's secondary indexes sorted by name; do not modify it.
func (t *Table) Indexes() []Index { return t.indexes }

// IndexFor returns the index that serves op (EQ, CONTAINS or CONTAINSKEY) on column name, if t
// has one.
func (t *Table) IndexFor(name string, op cql.Token) (*Index, bool) {
	for i := range t.indexes {
		ix := &t.indexes[i]
		if ix.Column != name {
			continue
		}
		switch {
		case op == cql.EQ && (ix.Target == "" || ix.Target == "full"),
			op == cql.CONTAINS && ix.Target == "values",
			op == cql.CONTAINSKEY && ix.Target == "keys":
			return ix, true
		}
	}
	return nil, false
}

// IndexOn returns an index on column name, if t has one.
func (t *Table) IndexOn(name string) (*Index, bool) {
	for i := range t.indexes {
		if t.indexes[i].Column == name {
			return &t.indexes[i], true
		}
	}
	return nil, false
}

// IndexByID returns t's index whose entries id keys.
func (t *Table) IndexByID(id TableID) (*Index, bool) {
	for i := range t.indexes {
		if t.indexes[i].ID == id {
			return &t.indexes[i], true
		}
	}
	return nil, false
}

// IndexesFormatFeatures returns the names of t's features that a release of a data format before
// FormatIndexes cannot decode: its indexes.
func (t *Table) IndexesFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, ix := range t.indexes {
		fs = append(fs, "secondary index "+cql.QuoteIdent(ix.Name))
	}
	return fs
}

// IndexedTable returns the table of keyspace ks that has the index named name.
func (s *Schema) IndexedTable(ks, name string) (*Table, bool) {
	for _, t := range s.Tables(ks) {
		for _, ix := range t.indexes {
			if ix.Name == name {
				return t, true
			}
		}
	}
	return nil, false
}

// errIndexCounter is Cassandra's refusal of an index on a counter table.
var errIndexCounter = errors.New("Secondary indexes on counter tables aren't supported")

// createIndex applies CREATE INDEX (Cassandra 4.1's CreateIndexStatement: its checks and words).
func (s *Schema) createIndex(st *cql.CreateIndexStmt, current string, c Change) (*Schema, error) {
	ks, err := resolveKeyspace(st.Table, current)
	if err != nil && st.Name.Keyspace.Name != "" {
		ks, err = st.Name.Keyspace.Name, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Table.Keyspace.Name != "" && st.Name.Keyspace.Name != "" && st.Name.Keyspace.Name != ks {
		return nil, fmt.Errorf("Keyspace name '%s' doesn't match index name '%s'", ks, st.Name.Keyspace.Name+"."+st.Name.Name.Name)
	}
	if isSystemName(ks) {
		return nil, fmt.Errorf("system keyspace %s is not user-modifiable", cql.QuoteIdent(ks))
	}
	tn := st.Table
	tn.Keyspace.Name = ks
	t, err := s.lookupTable(tn, current)
	if err != nil {
		return nil, err
	}
	name := st.Name.Name.Name
	if name != "" {
		if err := checkName("index", name); err != nil {
			return nil, err
		}
		if _, ok := s.IndexedTable(ks, name); ok {
			if st.IfNotExists {
				return s, nil
			}
			return nil, fmt.Errorf("Index '%s' already exists", name)
		}
	}
	if t.IsCounter() {
		return nil, errIndexCounter
	}
	col, ok := t.Column(st.Column.Name)
	if !ok {
		return nil, fmt.Errorf("Column '%s' doesn't exist", st.Column.Name)
	}
	if err := indexTarget(t, col, st.Target); err != nil {
		return nil, err
	}
	target := st.Target
	if target == "" && col.Type.MultiCell() {
		target = "values" // as Cassandra: a non-frozen collection named alone is indexed by values
	}
	if name == "" {
		name = availableIndexName(s, ks, defaultIndexName(t.Name, col.Name))
	}
	for _, ix := range t.indexes {
		if ix.Column == col.Name && ix.Target == target {
			if st.IfNotExists {
				return s, nil
			}
			return nil, fmt.Errorf("Index %s is a duplicate of existing index %s", name, ix.Name)
		}
	}
	v := after(c.Version, t.Version)
	nt := *t
	nt.indexes = append(slices.Clone(t.indexes), Index{
		Name: name, Column: col.Name, Target: target, ID: TableIDFor(ks, t.Name+"."+name, v),
	})
	slices.SortFunc(nt.indexes, func(a, b Index) int { return strings.Compare(a.Name, b.Name) })
	nt.Version = v
	kss, ts := s.clone()
	ts[tableKey{t.Keyspace, t.Name}] = &nt
	return finishLevels(kss, ts, s.sl, s.gcBefore), nil
}

// indexTarget checks that column c of t can be indexed with target (Cassandra 4.1's
// validateIndexTarget), and refuses what kvnode does not index yet.
func indexTarget(t *Table, c *Column, target string) error {
	name := cql.QuoteIdent(c.Name)
	typ := string(c.Type)
	frozenColl := strings.HasPrefix(typ, "frozen<list<") || strings.HasPrefix(typ, "frozen<set<") || strings.HasPrefix(typ, "frozen<map<")
	collection := frozenColl || strings.HasPrefix(typ, "list<") || strings.HasPrefix(typ, "set<") || strings.HasPrefix(typ, "map<")
	switch {
	case strings.Contains(typ, "duration"):
		switch {
		case collection:
			return errors.New("Secondary indexes are not supported on collections containing durations")
		case strings.Contains(typ, "tuple<"):
			return errors.New("Secondary indexes are not supported on tuples containing durations")
		case strings.Contains(typ, "udt<"):
			return errors.New("Secondary indexes are not supported on UDTs containing durations")
		}
		return errors.New("Secondary indexes are not supported on duration columns")
	case c.Kind == PartitionKeyColumn && len(t.PartitionKey) == 1:
		return fmt.Errorf("Cannot create secondary index on the only partition key column %s", name)
	case frozenColl && target != "full":
		what := target
		if what == "" {
			what = "values"
		}
		return fmt.Errorf("Cannot create %s() index on frozen column %s. Frozen collections are immutable and must be fully indexed by using the 'full(%s)' modifier", what, name, name)
	case !frozenColl && target == "full":
		return errors.New("full() indexes can only be created on frozen collections")
	case !collection && target != "":
		return fmt.Errorf("Cannot create %s() index on %s. Non-collection columns only support simple indexes", target, name)
	case (target == "keys" || target == "entries") && !strings.HasPrefix(typ, "map<"):
		return fmt.Errorf("Cannot create index on %s of column %s with non-map type", target, name)
	case strings.HasPrefix(typ, "udt<"):
		return fmt.Errorf("Cannot create index on non-frozen UDT column %s", name)
	case c.Kind != RegularColumn:
		return fmt.Errorf("indexes on primary key columns (%s) are not supported yet: kvnode indexes regular columns", name)
	}
	return nil
}

// defaultIndexName is Cassandra's name of an index left unnamed: table_column_idx, without
// the characters that are not letters, digits or underscores.
func defaultIndexName(table, column string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, table+"_"+column+"_idx")
}

// availableIndexName returns base, or base_1, base_2, ... the first that names no index of ks.
func availableIndexName(s *Schema, ks, base string) string {
	name := base
	for i := 1; ; i++ {
		if _, ok := s.IndexedTable(ks, name); !ok {
			return name
		}
		name = fmt.Sprintf("%s_%d", base, i)
	}
}

// dropIndex applies DROP INDEX. The statement names its table (DropIndexStmt.Table, which the
// coordinator resolves); an index missing there is missing.
func (s *Schema) dropIndex(st *cql.DropIndexStmt, current string, c Change) (*Schema, error) {
	ks, err := resolveKeyspace(st.Name, current)
	if err != nil {
		return nil, err
	}
	name := st.Name.Name.Name
	missing := func() (*Schema, error) {
		if st.IfExists {
			return s, nil
		}
		return nil, fmt.Errorf("Index '%s.%s' doesn't exist", ks, name)
	}
	t, ok := s.Table(ks, st.Table.Name.Name)
	if !ok {
		return missing()
	}
	i := slices.IndexFunc(t.indexes, func(ix Index) bool { return ix.Name == name })
	if i < 0 {
		return missing()
	}
	nt := *t
	nt.indexes = slices.Delete(slices.Clone(t.indexes), i, i+1)
	if len(nt.indexes) == 0 {
		nt.indexes = nil
	}
	nt.Version = after(c.Version, t.Version)
	kss, ts := s.clone()
	ts[tableKey{t.Keyspace, t.Name}] = &nt
	return finishLevels(kss, ts, s.sl, s.gcBefore), nil
}

// ResolveDropIndex fills in the table of a DROP INDEX from s (the statement names only the
// index). It leaves the statement as it is when no table of the keyspace has the index, so that
// the change fails (or, with IF EXISTS, does nothing) as Cassandra's does.
func (s *Schema) ResolveDropIndex(st *cql.DropIndexStmt, current string) {
	ks, err := resolveKeyspace(st.Name, current)
	if err != nil {
		return
	}
	if t, ok := s.IndexedTable(ks, st.Name.Name.Name); ok {
		st.Table = cql.TableName{Keyspace: cql.Ident{Name: ks}, Name: cql.Ident{Name: t.Name}}
	}
}

// indexesBit, in a table's flags byte, says that the table's indexes follow its dropped
// columns and last TRUNCATE, if any (see appendIndexes). Data format FormatIndexes.
const indexesBit = 0x04

// appendIndexes appends t's indexes: their count, then each one's name, column, target and id.
func appendIndexes(b []byte, t *Table) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.indexes)))
	for _, ix := range t.indexes {
		b = appendString(b, ix.Name)
		b = appendString(b, ix.Column)
		b = appendString(b, ix.Target)
		b = binary.BigEndian.AppendUint64(b, uint64(ix.ID))
	}
	return b
}

// decodeIndexes reads what appendIndexes wrote, checking each index against t's columns
// (cols, not yet set on t).
func decodeIndexes(d *decoder, t *Table, cols []Column) error {
	n := d.count()
	if d.err != nil {
		return d.err
	}
	if n == 0 {
		return fmt.Errorf("table %q.%q: an empty list of indexes", t.Keyspace, t.Name)
	}
	for range n {
		ix := Index{Name: d.string(), Column: d.string(), Target: d.string(), ID: TableID(d.uint64())}
		if d.err != nil {
			return d.err
		}
		if err := checkName("index", ix.Name); err != nil {
			return fmt.Errorf("table %q.%q: %w", t.Keyspace, t.Name, err)
		}
		if len(t.indexes) > 0 && t.indexes[len(t.indexes)-1].Name >= ix.Name {
			return fmt.Errorf("table %q.%q: index %q is out of order", t.Keyspace, t.Name, ix.Name)
		}
		if !slices.ContainsFunc(cols, func(c Column) bool { return c.Name == ix.Column }) || ix.ID == 0 || !slices.Contains([]string{"", "full", "keys", "values", "entries"}, ix.Target) {
			return fmt.Errorf("table %q.%q: bad index %q on %q (target %q, id %d)", t.Keyspace, t.Name, ix.Name, ix.Column, ix.Target, ix.ID)
		}
		t.indexes = append(t.indexes, ix)
	}
	return nil
}

// indexDependents returns the names of t's indexes on column name, for the refusals of ALTER
// TABLE DROP and RENAME.
func (t *Table) indexDependents(name string) []string {
	var out []string
	for _, ix := range t.indexes {
		if ix.Column == name {
			out = append(out, ix.Name)
		}
	}
	return out
}

// IndexCQL returns the CREATE INDEX statement that creates ix on t, as DESCRIBE prints it.
func IndexCQL(t *Table, ix *Index) string {
	return "CREATE INDEX " + cql.QuoteIdent(ix.Name) + " ON " + t.QualifiedName() + " (" + ix.TargetCQL() + ");"
}

// describeCQL is t's CREATE TABLE followed by its indexes' CREATE INDEX, as DESCRIBE TABLE
// prints them.
func (t *Table) describeCQL() string {
	s := t.CreateStatement()
	for i := range t.indexes {
		s += "\n\n" + IndexCQL(t, &t.indexes[i])
	}
	return s
}

// indexed reports whether a SELECT's relations restrict an indexed column by =, so that an
// index can serve it.
func indexed(t *Table, rels []cql.Relation) bool {
	for _, r := range rels {
		if r.Token != nil || r.Multi() {
			continue
		}
		if _, ok := indexForRelation(t, r.Column.Name, r.Op, r.Element != nil); ok {
			return true
		}
	}
	return false
}

// indexForRelation returns the index that serves a relation op on column name, on an entry of
// a map when element is set.
func indexForRelation(t *Table, name string, op cql.Token, element bool) (*Index, bool) {
	if !element {
		return t.IndexFor(name, op)
	}
	for i := range t.indexes {
		if ix := &t.indexes[i]; ix.Column == name && ix.Target == "entries" && op == cql.EQ {
			return ix, true
		}
	}
	return nil, false
}

// EntryValue is the value an entries() index keeps for a map's entry: the key's length (4
// bytes, big-endian), the key, then the value.
func EntryValue(key, value []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(key)+len(value)), uint32(len(key)))
	return append(append(b, key...), value...)
}

// indexServes reports whether rels, the relations on regular columns of a SELECT, are one =
// on an indexed column: the query needs no ALLOW FILTERING then, as in Cassandra. It judges the
// relations, not their bound filters: when a statement is prepared, m[?] = ? has no key yet.
func indexServes(t *Table, rels []cql.Relation) bool {
	return len(rels) == 1 && indexed(t, rels)
}

// indexWhere interprets the WHERE clause of a scan that an index serves (indexed): token
// relations bound the scan's tokens; the first = on an indexed column picks the index; every
// other relation is a filter (that one too), on regular columns and, as Cassandra's filter
// restrictions, on primary key columns (some of the partition key's, clustering columns, tuples
// of them; scanFilter), and more than one needs ALLOW FILTERING, as in Cassandra. IN on a
// partition key column is refused with Cassandra's message.
func (r *Read) indexWhere(st *cql.SelectStmt, b *binder) error {
	t := r.Table
	var tokens []cql.Relation
	token := onToken(st.Where)
	bounds := scanBounds{}
	for _, rel := range st.Where {
		if rel.Token != nil {
			tokens = append(tokens, rel)
			continue
		}
		var c *Column
		if !rel.Multi() {
			var err error
			if c, err = column(t, rel.Column); err != nil {
				return err
			}
		}
		if c == nil || c.Kind != RegularColumn {
			if c != nil && c.Kind == PartitionKeyColumn && rel.Op == cql.IN {
				return errors.New("Select on indexed columns and with IN clause for the PRIMARY KEY are not supported")
			}
			f, err := scanFilter(t, rel, true, token, b)
			if err == nil {
				err = bounds.add(f)
			}
			if err != nil {
				return err
			}
			r.Filters = append(r.Filters, f)
			continue
		}
		name := cql.QuoteIdent(c.Name)
		if rel.Op == cql.IN {
			return fmt.Errorf("IN predicates on non-primary-key columns (%s) is not yet supported", name)
		}
		f, v, err := regularFilter(c, rel, b)
		if err != nil {
			return err
		}
		r.Filters = append(r.Filters, f)
		if ix, ok := indexForRelation(t, c.Name, rel.Op, rel.Element != nil); ok && r.Index == nil {
			r.Index, r.IndexValue = ix, v
			if f.Element != nil {
				r.IndexValue = EntryValue(f.Element, v)
			}
		}
	}
	if len(r.Filters) > 1 && !st.AllowFiltering {
		return errors.New(errNeedsFiltering)
	}
	ts := *st
	ts.Where = tokens
	tokenRange, extra, err := scanWhere(t, &ts, b)
	r.Tokens, r.Filters = tokenRange, append(r.Filters, extra...)
	return err
}

// containsType returns the type of the value of CONTAINS (key false) or CONTAINS KEY (key true)
// on column c: a set's or list's element, a map's value or key.
func containsType(c *Column, key bool) (Type, error) {
	kind, elems := c.Type.Frozen().Params()
	name := cql.QuoteIdent(c.Name)
	switch {
	case key && kind == ParamMap:
		return elems[0], nil
	case key:
		return TypeInvalid, fmt.Errorf("cannot use CONTAINS KEY on non-map column %s", name)
	case kind == ParamMap:
		return elems[1], nil
	case kind == ParamList || kind == ParamSet:
		return elems[0], nil
	}
	return TypeInvalid, fmt.Errorf("cannot use CONTAINS on non-collection column %s", name)
}

// regularFilter binds a relation on regular column c (=, a range, CONTAINS, CONTAINS KEY) as a
// filter, and returns the value it compares with.
func regularFilter(c *Column, rel cql.Relation, b *binder) (RowFilter, []byte, error) {
	name := cql.QuoteIdent(c.Name)
	if rel.Element != nil {
		return entryFilter(c, rel, b)
	}
	bc := c
	if rel.Op == cql.CONTAINS || rel.Op == cql.CONTAINSKEY {
		typ, err := containsType(c, rel.Op == cql.CONTAINSKEY)
		if err != nil {
			return RowFilter{}, nil, err
		}
		bc = &Column{Name: c.Name, Type: typ, Kind: RegularColumn}
	}
	v, ok, err := b.term(bc, rel.Value)
	if err != nil {
		return RowFilter{}, nil, err
	}
	if !b.check && (v == nil || !ok) {
		return RowFilter{}, nil, fmt.Errorf("invalid null value in condition for column %s", name)
	}
	return RowFilter{Columns: []*Column{c}, Op: rel.Op, Values: [][][]byte{{v}}}, v, nil
}

// containsMatch reports whether collection value coll (a frozen collection's encoding) of
// column c holds v as an element (a map's value), or with key as a map's key.
func containsMatch(c *Column, coll, v []byte, key bool) bool {
	kind, elems := c.Type.Frozen().Params()
	isMap := kind == ParamMap
	for k, val := range collectionElements(coll, isMap) {
		switch {
		case isMap && key && elems[0].Compare(k, v) == 0, isMap && !key && elems[1].Compare(val, v) == 0:
			return true
		case !isMap && !key && elems[0].Compare(k, v) == 0:
			return true
		}
	}
	return false
}

// collectionElements yields the elements of frozen collection value coll with nil values, or a
// map's keys and values (isMap); it stops early at a malformed element.
func collectionElements(coll []byte, isMap bool) iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		if len(coll) < 4 {
			return
		}
		rest := coll[4:]
		for len(rest) > 0 {
			var k, v []byte
			var err error
			if k, rest, err = paramElement(rest); err != nil {
				return
			}
			if isMap {
				if v, rest, err = paramElement(rest); err != nil {
					return
				}
			}
			if !yield(k, v) {
				return
			}
		}
	}
}

// entryFilter binds m[key] = value on map column c as a filter.
func entryFilter(c *Column, rel cql.Relation, b *binder) (RowFilter, []byte, error) {
	name := cql.QuoteIdent(c.Name)
	kind, elems := c.Type.Frozen().Params()
	if kind != ParamMap {
		return RowFilter{}, nil, fmt.Errorf("column %s is not a map: only a map's entries can be restricted, m[key] = value", name)
	}
	if rel.Op != cql.EQ {
		return RowFilter{}, nil, fmt.Errorf("a map entry (of %s) can only be restricted by =", name)
	}
	k, kok, err := b.term(&Column{Name: "key(" + c.Name + ")", Type: elems[0], Kind: RegularColumn}, rel.Element)
	if err != nil {
		return RowFilter{}, nil, err
	}
	v, vok, err := b.term(&Column{Name: "value(" + c.Name + ")", Type: elems[1], Kind: RegularColumn}, rel.Value)
	if err != nil {
		return RowFilter{}, nil, err
	}
	if !b.check && (k == nil || v == nil || !kok || !vok) {
		return RowFilter{}, nil, fmt.Errorf("invalid null value in condition for an entry of column %s", name)
	}
	return RowFilter{Columns: []*Column{c}, Op: cql.EQ, Values: [][][]byte{{v}}, Element: k}, v, nil
}

// entryMatch reports whether map value coll of column c holds key with value v.
func entryMatch(c *Column, coll, key, v []byte) bool {
	_, elems := c.Type.Frozen().Params()
	if len(elems) != 2 {
		return false
	}
	for k, val := range collectionElements(coll, true) {
		if elems[0].Compare(k, key) == 0 {
			return elems[1].Compare(val, v) == 0
		}
	}
	return false
}
