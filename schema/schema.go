package schema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// Errors that callers tell apart; every other error from this package is a
// statement that does not fit the schema (an invalid request).
var (
	// ErrUnknownKeyspace wraps "unknown keyspace ks".
	ErrUnknownKeyspace = errors.New("unknown keyspace")
	// ErrUnknownTable wraps "unknown table ks.t".
	ErrUnknownTable = errors.New("unknown table")
	// ErrExists wraps "keyspace ks already exists" and "table ks.t already
	// exists".
	ErrExists = errors.New("already exists")
)

// ExistsError is the error of creating a keyspace or table that exists: it
// reads "keyspace ks already exists" or "table ks.t already exists", is
// ErrExists for errors.Is, and names the object for front ends (the native
// protocol's Already_exists carries them). Table is "" for a keyspace.
type ExistsError struct {
	Keyspace, Table string
}

func (e *ExistsError) Error() string {
	if e.Table == "" {
		return fmt.Sprintf("keyspace %s %v", cql.QuoteIdent(e.Keyspace), ErrExists)
	}
	return fmt.Sprintf("table %s %v", qualified(e.Keyspace, e.Table), ErrExists)
}

// Is reports whether target is ErrExists.
func (e *ExistsError) Is(target error) bool { return target == ErrExists }

// TableID identifies a table for as long as it exists; storage keys carry
// it. Apply derives it from the table's name and the version of its
// creation (TableIDFor), so it never changes and is never reused: a table
// dropped and created again gets a new id. 0 is not a valid id.
type TableID uint64

// Version orders the changes to one schema object (a keyspace or a table):
// between two versions of an object, the greater Version wins. Versions
// compare by Timestamp, then Node.
type Version struct {
	Timestamp int64  // when the change was made; kvnode uses microseconds since the Unix epoch
	Node      string // the id of the node that made it
}

// Compare returns -1, 0 or +1 as v is before, equal to or after w.
func (v Version) Compare(w Version) int {
	if c := cmp.Compare(v.Timestamp, w.Timestamp); c != 0 {
		return c
	}
	return cmp.Compare(v.Node, w.Node)
}

// String returns "timestamp@node".
func (v Version) String() string { return strconv.FormatInt(v.Timestamp, 10) + "@" + v.Node }

// after returns v when it is after prev, else the smallest version with
// v's node that is: a change must supersede what it changes even when the
// changing node's clock is behind.
func after(v, prev Version) Version {
	if v.Compare(prev) > 0 {
		return v
	}
	return Version{Timestamp: prev.Timestamp + 1, Node: v.Node}
}

// Change is what the node executing a schema statement contributes to it.
type Change struct {
	// Version of the change: the node's clock and id. Apply raises the
	// timestamp when needed so the change supersedes the object it replaces.
	Version Version
	// TableID is the id of the table a CREATE TABLE creates; other
	// statements ignore it. 0 (the usual case) derives it with TableIDFor
	// from the table's name and the version of its creation, the one place
	// table ids come from; a non-zero id must be unused.
	TableID TableID
	// DataCenters are the cluster's data centers, as the node applying a CREATE or ALTER
	// KEYSPACE knows them: NetworkTopologyStrategy's 'replication_factor' shortcut gives each
	// the factor, and a data center not among them is refused (Cassandra 4.1). Nil skips both
	// (the shortcut is then refused): a node merging agreed schema never needs them.
	DataCenters []string
}

// DCFactor is a data center's replication factor under NetworkTopologyStrategy.
type DCFactor struct {
	DC string
	RF int
}

// Keyspace is a keyspace. Values reachable from a *Schema are shared and
// must not be modified.
type Keyspace struct {
	Name string
	// ReplicationFactor is SimpleStrategy's replication factor, or under
	// NetworkTopologyStrategy the sum of the data centers' (what QUORUM counts over).
	ReplicationFactor int
	// DataCenters are NetworkTopologyStrategy's replication factors, sorted by data center,
	// none zero; nil under SimpleStrategy.
	DataCenters []DCFactor
	// Version is the version of the keyspace's creation (or, for a
	// tombstone, of its drop); tables record it to tell incarnations of a
	// name apart. ALTER KEYSPACE leaves it: an altered keyspace is the same
	// incarnation, with the same tables.
	Version Version
	// Altered is the version of the last ALTER KEYSPACE of this
	// incarnation, the zero Version when it was never altered. Between two
	// entries of one incarnation the later Altered wins (see Merge).
	Altered Version
	// RateLimit is the keyspace's rate_limit option: the rates every request on its tables
	// shares, cluster-wide; zero for none.
	RateLimit RateLimit

	// userTypes are the keyspace's user-defined types by name (see udt.go); never changed
	// once the Keyspace is built.
	userTypes map[string]*UserType

	dropped bool // a tombstone: the keyspace was dropped at Version
}

// LastChange returns the version of the last change to k: its ALTER, else its creation (or
// drop).
func (k *Keyspace) LastChange() Version {
	if k.Altered.Compare(k.Version) > 0 {
		return k.Altered
	}
	return k.Version
}

// ColumnKind says what part of the primary key a column is.
type ColumnKind uint8

// The column kinds.
const (
	PartitionKeyColumn ColumnKind = iota + 1
	ClusteringColumn
	RegularColumn
)

// String returns "partition key", "clustering" or "regular".
func (k ColumnKind) String() string {
	switch k {
	case PartitionKeyColumn:
		return "partition key"
	case ClusteringColumn:
		return "clustering"
	case RegularColumn:
		return "regular"
	}
	return "ColumnKind(" + strconv.Itoa(int(k)) + ")"
}

// Column is a column of a table.
type Column struct {
	Name  string
	Type  Type
	Kind  ColumnKind
	Index int // position in Table.Columns
	// Descending is set on a clustering column declared DESC in CLUSTERING
	// ORDER BY: rows sort by it in the reverse of its type's order.
	Descending bool
	// Static is set on a regular column declared STATIC: one value per
	// partition, shared by all its rows, stored in the partition's static
	// row (see static.go). Its Kind stays RegularColumn.
	Static bool

	// parsed is Type parsed, for a parametric type, set when the table's
	// columns are set (setColumns) so that Check and Compare parse nothing;
	// nil for a scalar type or a Column built by hand.
	parsed *typeNode
}

// RateLimit is the per_partition_rate_limit option of a table: the most
// operations per second one partition may take, per replica. 0 means no
// limit for that kind of operation. Mode says whether the limits reject
// (Enforce, the default) or only report what they would reject (Shadow).
type RateLimit struct {
	MaxReadsPerSecond  uint32
	MaxWritesPerSecond uint32
	Mode               LimitMode
}

// LimitMode is how a table's per-partition rate limits act: the
// per_partition_rate_limit key 'mode'.
type LimitMode uint8

// The modes.
const (
	// Enforce: operations over a partition's limit are rejected.
	Enforce LimitMode = iota
	// Shadow: every operation is counted and decided exactly as in Enforce
	// mode, and none is rejected; the operations Enforce would reject are
	// reported instead (a metric, the hot partitions, a warning to the
	// client), so that a DBA can try a limit before enforcing it.
	Shadow
)

// String returns "enforce" or "shadow", the values of the 'mode' key.
func (m LimitMode) String() string {
	switch m {
	case Enforce:
		return ModeEnforce
	case Shadow:
		return ModeShadow
	}
	return fmt.Sprintf("LimitMode(%d)", uint8(m))
}

// IsZero reports whether r limits nothing.
func (r RateLimit) IsZero() bool { return r == RateLimit{} }

// MaxLimit is the largest value a per_partition_rate_limit key accepts.
const MaxLimit = 1<<31 - 1

// Table is a table. Values reachable from a *Schema are shared and must not
// be modified.
type Table struct {
	Keyspace string
	Name     string
	ID       TableID

	// Columns holds every column in canonical order: the partition key
	// columns in key order, the clustering columns in key order, then the
	// regular columns sorted by name. PartitionKey, Clustering and Regular
	// are the three parts of Columns. Rows sort by their clustering
	// columns, each ascending or (Column.Descending) descending; see
	// CompareClustering.
	Columns      []Column
	PartitionKey []Column
	Clustering   []Column
	Regular      []Column

	RateLimit RateLimit

	// gcGrace is the gc_grace_seconds option when gcGraceSet (see GCGraceSeconds).
	gcGrace    uint32
	gcGraceSet bool
	// defaultTTL is the default_time_to_live option in seconds, 0 for none (see DefaultTTL).
	defaultTTL int32
	// specRetry is the speculative_retry option when specRetrySet (see SpeculativeRetry).
	specRetry    SpeculativeRetry
	specRetrySet bool
	// droppedCols are the records of dropped columns, sorted by name (see alter.go).
	droppedCols []DroppedColumn
	// truncatedAt is the timestamp of the last TRUNCATE when truncatedSet.
	truncatedAt  int64
	truncatedSet bool
	// options holds the compatibility options set to other than their defaults (see Option);
	// never changed once the table is built.
	options map[string]OptionValue
	// indexes are the table's secondary indexes, sorted by name (index.go).
	indexes []Index

	Version Version // of the last CREATE, ALTER or DROP of the table
	// KeyspaceVersion is the Version of the keyspace the table was created
	// in: a table belongs to one incarnation of its keyspace's name.
	KeyspaceVersion Version

	dropped bool           // a tombstone: the table was dropped at Version
	byName  map[string]int // column name → index in Columns
}

// Column returns the column named name (case-sensitive: the name as stored).
func (t *Table) Column(name string) (*Column, bool) {
	i, ok := t.byName[name]
	if !ok {
		return nil, false
	}
	return &t.Columns[i], true
}

// QualifiedName returns ks.t as written in a statement (quoted if needed).
func (t *Table) QualifiedName() string { return qualified(t.Keyspace, t.Name) }

func qualified(ks, table string) string { return cql.QuoteIdent(ks) + "." + cql.QuoteIdent(table) }

type tableKey struct{ keyspace, name string }

// Schema is the set of keyspaces and tables of a cluster. A *Schema is
// immutable: Apply and Merge return a new one, so readers share a pointer
// (swapped atomically by its owner) without locks. Create one with New or
// Decode; the zero Schema is not ready for use.
//
// A Schema also remembers dropped keyspaces and tables (tombstones with
// their Version) so that a drop wins over a node that still has the object;
// lookups never return them. Tombstones are garbage-collected once every node
// has seen them (see Purge): the schema then carries a GC horizon.
type Schema struct {
	keyspaces map[string]*Keyspace // live and dropped
	tables    map[tableKey]*Table  // live and dropped, all in a live keyspace's current incarnation
	byID      map[TableID]*Table   // live tables only
	// gcBefore is the GC horizon (a Version timestamp; 0 for none): the schema holds no
	// tombstone older, and every node had every entry older when it was set (see Purge).
	gcBefore int64
	// sl holds the service levels, their attachments and the roles granted to roles (the state
	// agreed under LevelsKey); lix is derived from it.
	sl      levelState
	lix     levelIndex
	encoded []byte
	digest  Digest
}

// New returns the empty schema.
func New() *Schema {
	return finish(map[string]*Keyspace{}, map[tableKey]*Table{}, 0)
}

// finish builds the derived indexes, encoding and digest of a schema made
// of these entries, which it takes ownership of, with GC horizon gcBefore.
func finish(keyspaces map[string]*Keyspace, tables map[tableKey]*Table, gcBefore int64) *Schema {
	return finishLevels(keyspaces, tables, levelState{}, gcBefore)
}

// finishLevels is finish with level state l.
func finishLevels(keyspaces map[string]*Keyspace, tables map[tableKey]*Table, l levelState, gcBefore int64) *Schema {
	s := &Schema{keyspaces: keyspaces, tables: tables, byID: make(map[TableID]*Table, len(tables)), gcBefore: gcBefore, sl: l}
	for _, t := range s.sortedTables() {
		if t.dropped {
			continue
		}
		// Ids are unique unless two nodes chose the same one; then the
		// first table in name order keeps the id, the same on every node.
		if _, dup := s.byID[t.ID]; !dup {
			s.byID[t.ID] = t
		}
	}
	s.indexLevels()
	s.encoded = s.encode()
	s.digest = digestOf(s.encoded)
	return s
}

// Keyspace returns the keyspace named name.
func (s *Schema) Keyspace(name string) (*Keyspace, bool) {
	k, ok := s.keyspaces[name]
	if !ok || k.dropped {
		return nil, false
	}
	return k, true
}

// Keyspaces returns the keyspaces, sorted by name.
func (s *Schema) Keyspaces() []*Keyspace {
	var ks []*Keyspace
	for _, k := range s.keyspaces {
		if !k.dropped {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b *Keyspace) int { return cmp.Compare(a.Name, b.Name) })
	return ks
}

// Table returns the table keyspace.name.
func (s *Schema) Table(keyspace, name string) (*Table, bool) {
	t, ok := s.tables[tableKey{keyspace, name}]
	if !ok || t.dropped {
		return nil, false
	}
	return t, true
}

// TableByID returns the table with id id. It is cheap: one map lookup.
func (s *Schema) TableByID(id TableID) (*Table, bool) {
	t, ok := s.byID[id]
	return t, ok
}

// Tables returns the tables of keyspace sorted by name, or with keyspace ""
// every table sorted by keyspace and name.
func (s *Schema) Tables(keyspace string) []*Table {
	var ts []*Table
	for _, t := range s.sortedTables() {
		if !t.dropped && (keyspace == "" || t.Keyspace == keyspace) {
			ts = append(ts, t)
		}
	}
	return ts
}

// sortedTables returns every table entry, tombstones included, sorted by
// keyspace and name.
func (s *Schema) sortedTables() []*Table {
	ts := make([]*Table, 0, len(s.tables))
	for _, t := range s.tables {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, compareTableNames)
	return ts
}

func compareTableNames(a, b *Table) int {
	if c := cmp.Compare(a.Keyspace, b.Keyspace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// clone returns copies of s's entry maps for a copy-on-write change.
func (s *Schema) clone() (map[string]*Keyspace, map[tableKey]*Table) {
	ks := make(map[string]*Keyspace, len(s.keyspaces)+1)
	for k, v := range s.keyspaces {
		ks[k] = v
	}
	ts := make(map[tableKey]*Table, len(s.tables)+1)
	for k, v := range s.tables {
		ts[k] = v
	}
	return ks, ts
}

// Apply returns the schema after the schema statement stmt: CREATE, ALTER or DROP
// KEYSPACE, CREATE, ALTER or DROP TABLE, TRUNCATE. keyspace is the session's current
// keyspace, used for unqualified table names ("" if none). When the
// statement changes nothing (IF NOT EXISTS on an existing object, IF EXISTS
// on a missing one) Apply returns s itself.
func (s *Schema) Apply(stmt cql.Statement, keyspace string, c Change) (*Schema, error) {
	if isLevelStatement(stmt) {
		return s.applyLevels(stmt, c)
	}
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return s.createKeyspace(st, c)
	case *cql.AlterKeyspaceStmt:
		return s.alterKeyspace(st, c)
	case *cql.DropKeyspaceStmt:
		return s.dropKeyspace(st, c)
	case *cql.CreateTableStmt:
		return s.createTable(st, keyspace, c)
	case *cql.CreateTypeStmt:
		return s.createType(st, keyspace, c)
	case *cql.AlterTypeStmt:
		return s.alterType(st, keyspace, c)
	case *cql.DropTypeStmt:
		return s.dropType(st, keyspace, c)
	case *cql.AlterTableStmt:
		t, err := s.lookupTable(st.Table, keyspace)
		if err != nil {
			if ks, _ := resolveKeyspace(st.Table, keyspace); st.IfExists && !isSystemName(ks) &&
				(errors.Is(err, ErrUnknownTable) || errors.Is(err, ErrUnknownKeyspace)) {
				return s, nil
			}
			return nil, err
		}
		var udts map[string]*UserType
		if k, ok := s.Keyspace(t.Keyspace); ok {
			udts = k.userTypes
		}
		nt, err := t.alter(st, after(c.Version, t.Version), udts)
		if err != nil {
			return nil, err
		}
		if nt == t {
			return s, nil
		}
		ks, ts := s.clone()
		ts[tableKey{t.Keyspace, t.Name}] = nt
		return finishLevels(ks, ts, s.sl, s.gcBefore), nil
	case *cql.CreateIndexStmt:
		return s.createIndex(st, keyspace, c)
	case *cql.DropIndexStmt:
		return s.dropIndex(st, keyspace, c)
	case *cql.TruncateStmt:
		t, err := s.lookupTable(st.Table, keyspace)
		if err != nil {
			return nil, err
		}
		if t.IsCounter() {
			return nil, errCounterTruncate
		}
		ks, ts := s.clone()
		ts[tableKey{t.Keyspace, t.Name}] = t.truncate(after(c.Version, t.Version))
		return finishLevels(ks, ts, s.sl, s.gcBefore), nil
	case *cql.DropTableStmt:
		t, err := s.lookupTable(st.Table, keyspace)
		if err != nil {
			if ks, _ := resolveKeyspace(st.Table, keyspace); st.IfExists && !isSystemName(ks) &&
				(errors.Is(err, ErrUnknownTable) || errors.Is(err, ErrUnknownKeyspace)) {
				return s, nil
			}
			return nil, err
		}
		ks, ts := s.clone()
		ts[tableKey{t.Keyspace, t.Name}] = &Table{
			Keyspace: t.Keyspace, Name: t.Name, ID: t.ID,
			Version: after(c.Version, t.Version), KeyspaceVersion: t.KeyspaceVersion,
			dropped: true,
		}
		return finishLevels(ks, ts, s.sl, s.gcBefore), nil
	}
	return nil, fmt.Errorf("%s is not a schema statement", StatementName(stmt))
}

func (s *Schema) createKeyspace(st *cql.CreateKeyspaceStmt, c Change) (*Schema, error) {
	name := st.Name.Name
	if err := checkName("keyspace", name); err != nil {
		return nil, err
	}
	if isSystemName(name) {
		return nil, fmt.Errorf("keyspace name %s is reserved for the system", cql.QuoteIdent(name))
	}
	o, err := keyspaceOptions(st.Options)
	if err != nil {
		return nil, fmt.Errorf("keyspace %s: %w", cql.QuoteIdent(name), err)
	}
	if o.replication == nil {
		return nil, fmt.Errorf("keyspace %s: the replication option is missing; write WITH replication = {'class': 'SimpleStrategy', 'replication_factor': N}", cql.QuoteIdent(name))
	}
	rf, perDC, err := o.replication.placement(c.DataCenters, nil)
	if err != nil {
		return nil, fmt.Errorf("keyspace %s: %w", cql.QuoteIdent(name), err)
	}
	prev, ok := s.keyspaces[name]
	if ok && !prev.dropped {
		if st.IfNotExists {
			return s, nil
		}
		return nil, &ExistsError{Keyspace: name}
	}
	v := c.Version
	if ok {
		v = after(v, prev.Version)
	}
	ks, ts := s.clone()
	ks[name] = &Keyspace{Name: name, ReplicationFactor: rf, DataCenters: perDC, Version: v}
	if o.rateLimit != nil {
		ks[name].RateLimit = *o.rateLimit
	}
	return finishLevels(ks, ts, s.sl, s.gcBefore), nil
}

// alterKeyspace applies ALTER KEYSPACE as Cassandra 4.1 does: the options given replace the
// keyspace's, those left out keep their values, and the keyspace stays the same incarnation
// (its Version and its tables are kept; Altered records the change). The data already written
// stays where it is: replicas a raised replication factor adds get it from repair, and those a
// lowered one removes keep it until cleanup (docs/operations.md, Changing replication).
func (s *Schema) alterKeyspace(st *cql.AlterKeyspaceStmt, c Change) (*Schema, error) {
	name := st.Name.Name
	if isSystemName(name) {
		return nil, fmt.Errorf("system keyspace %s is not user-modifiable: kvnode computes the system keyspaces on each node", cql.QuoteIdent(name))
	}
	o, err := keyspaceOptions(st.Options)
	if err != nil {
		return nil, fmt.Errorf("keyspace %s: %w", cql.QuoteIdent(name), err)
	}
	prev, ok := s.Keyspace(name)
	if !ok {
		if st.IfExists {
			return s, nil
		}
		return nil, unknownKeyspace(name)
	}
	k := *prev
	if o.replication != nil {
		if k.ReplicationFactor, k.DataCenters, err = o.replication.placement(c.DataCenters, prev); err != nil {
			return nil, fmt.Errorf("keyspace %s: %w", cql.QuoteIdent(name), err)
		}
	}
	if o.rateLimit != nil {
		k.RateLimit = *o.rateLimit
	}
	// As in Cassandra, an ALTER that changes nothing is still a schema change (an event, a new
	// schema version): it records its version.
	k.Altered = after(c.Version, prev.LastChange())
	ks, ts := s.clone()
	ks[name] = &k
	return finishLevels(ks, ts, s.sl, s.gcBefore), nil
}

func (s *Schema) dropKeyspace(st *cql.DropKeyspaceStmt, c Change) (*Schema, error) {
	name := st.Name.Name
	prev, ok := s.Keyspace(name)
	if !ok {
		if st.IfExists && !isSystemName(name) {
			return s, nil
		}
		return nil, unknownKeyspace(name)
	}
	ks, ts := s.clone()
	ks[name] = &Keyspace{Name: name, Version: after(c.Version, prev.LastChange()), dropped: true}
	// The keyspace tombstone covers its tables: they belong to the dropped
	// incarnation and are forgotten.
	for k := range ts {
		if k.keyspace == name {
			delete(ts, k)
		}
	}
	return finishLevels(ks, ts, s.sl, s.gcBefore), nil
}

func (s *Schema) createTable(st *cql.CreateTableStmt, keyspace string, c Change) (*Schema, error) {
	ksName, err := resolveKeyspace(st.Table, keyspace)
	if err != nil {
		return nil, err
	}
	k, ok := s.Keyspace(ksName)
	if !ok {
		return nil, unknownKeyspace(ksName)
	}
	key := tableKey{ksName, st.Table.Name.Name}
	prev, exists := s.tables[key]
	if exists && !prev.dropped {
		if st.IfNotExists {
			return s, nil
		}
		return nil, &ExistsError{Keyspace: key.keyspace, Table: key.name}
	}
	v := c.Version
	if exists {
		v = after(v, prev.Version)
	}
	id := c.TableID
	if id == 0 {
		id = TableIDFor(ksName, st.Table.Name.Name, v)
	}
	t, err := newTable(st, ksName, id, v, k.userTypes)
	if err != nil {
		return nil, err
	}
	for _, o := range s.tables {
		if o.ID == t.ID {
			return nil, fmt.Errorf("table id %d is already used by table %s", t.ID, o.QualifiedName())
		}
	}
	t.KeyspaceVersion = k.Version
	ks, ts := s.clone()
	ts[key] = t
	return finishLevels(ks, ts, s.sl, s.gcBefore), nil
}

// resolveKeyspace returns the keyspace of a table name: its qualifier, or
// the current keyspace.
func resolveKeyspace(tn cql.TableName, current string) (string, error) {
	if tn.Keyspace.Name != "" {
		return tn.Keyspace.Name, nil
	}
	if current == "" {
		return "", fmt.Errorf("no keyspace for table %s: USE a keyspace or write keyspace.%s", cql.QuoteIdent(tn.Name.Name), cql.QuoteIdent(tn.Name.Name))
	}
	return current, nil
}

// lookupTable finds the live table a statement names.
func (s *Schema) lookupTable(tn cql.TableName, current string) (*Table, error) {
	ks, err := resolveKeyspace(tn, current)
	if err != nil {
		return nil, err
	}
	if _, ok := s.Keyspace(ks); !ok {
		return nil, unknownKeyspace(ks)
	}
	t, ok := s.Table(ks, tn.Name.Name)
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownTable, qualified(ks, tn.Name.Name))
	}
	return t, nil
}

// TableFor returns the table that a statement's table name refers to, with
// keyspace as the current keyspace for unqualified names.
func (s *Schema) TableFor(name cql.TableName, keyspace string) (*Table, error) {
	return s.lookupTable(name, keyspace)
}

// maxNameLen is the longest keyspace or table name, as in Cassandra.
const maxNameLen = 48

// checkName checks a keyspace or table name: 1 to 48 letters, digits and
// underscores (names become parts of file names and metric labels).
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", what)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return fmt.Errorf("%s name %s may contain only letters, digits and underscores", what, cql.QuoteIdent(name))
		}
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("%s name %s is %d characters long; the maximum is %d", what, name, len(name), maxNameLen)
	}
	return nil
}

// unknownKeyspace is the error for a keyspace the schema does not have. The
// system keyspaces are never in it: the node computes their tables, and
// only for SELECT, so a write or schema change naming them says so.
func unknownKeyspace(name string) error {
	if isSystemName(name) {
		return fmt.Errorf("%w %s: system keyspaces are read-only (each node computes system.local, system.peers, system.peers_v2 and system_schema.* for SELECT)", ErrUnknownKeyspace, cql.QuoteIdent(name))
	}
	return fmt.Errorf("%w %s", ErrUnknownKeyspace, cql.QuoteIdent(name))
}

// isSystemName reports whether a keyspace name is reserved: "system" and
// "system_*", in any case.
func isSystemName(name string) bool {
	const p = "system"
	if len(name) < len(p) || !strings.EqualFold(name[:len(p)], p) {
		return false
	}
	return len(name) == len(p) || name[len(p)] == '_'
}

// StatementName returns how messages name a statement's kind: "SELECT",
// "CREATE TABLE", ...
func StatementName(stmt cql.Statement) string {
	switch stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		return "CREATE KEYSPACE"
	case *cql.AlterKeyspaceStmt:
		return "ALTER KEYSPACE"
	case *cql.DropKeyspaceStmt:
		return "DROP KEYSPACE"
	case *cql.UseStmt:
		return "USE"
	case *cql.CreateTableStmt:
		return "CREATE TABLE"
	case *cql.AlterTableStmt:
		return "ALTER TABLE"
	case *cql.DropTableStmt:
		return "DROP TABLE"
	case *cql.CreateTypeStmt:
		return "CREATE TYPE"
	case *cql.AlterTypeStmt:
		return "ALTER TYPE"
	case *cql.DropTypeStmt:
		return "DROP TYPE"
	case *cql.TruncateStmt:
		return "TRUNCATE"
	case *cql.CreateIndexStmt:
		return "CREATE INDEX"
	case *cql.DropIndexStmt:
		return "DROP INDEX"
	case *cql.InsertStmt:
		return "INSERT"
	case *cql.UpdateStmt:
		return "UPDATE"
	case *cql.DeleteStmt:
		return "DELETE"
	case *cql.SelectStmt:
		return "SELECT"
	case *cql.DescribeStmt:
		return "DESCRIBE"
	case *cql.BatchStmt:
		return "BATCH"
	case *cql.CreateRoleStmt:
		return "CREATE ROLE"
	case *cql.AlterRoleStmt:
		return "ALTER ROLE"
	case *cql.DropRoleStmt:
		return "DROP ROLE"
	case *cql.GrantStmt:
		if st, _ := stmt.(*cql.GrantStmt); st.Revoke {
			return "REVOKE"
		}
		return "GRANT"
	case *cql.ListRolesStmt:
		return "LIST ROLES"
	case *cql.ListPermissionsStmt:
		return "LIST PERMISSIONS"
	case *cql.CreateServiceLevelStmt:
		return "CREATE SERVICE LEVEL"
	case *cql.AlterServiceLevelStmt:
		return "ALTER SERVICE LEVEL"
	case *cql.DropServiceLevelStmt:
		return "DROP SERVICE LEVEL"
	case *cql.AttachServiceLevelStmt:
		return "ATTACH SERVICE LEVEL"
	case *cql.DetachServiceLevelStmt:
		return "DETACH SERVICE LEVEL"
	case *cql.ListServiceLevelsStmt:
		return "LIST SERVICE LEVELS"
	case *cql.GrantRoleStmt:
		if st, _ := stmt.(*cql.GrantRoleStmt); st.Revoke {
			return "REVOKE ROLE"
		}
		return "GRANT ROLE"
	}
	return fmt.Sprintf("%T", stmt)
}
