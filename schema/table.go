package schema

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// OptionRateLimit is the name of the table option that sets a RateLimit.
const OptionRateLimit = "per_partition_rate_limit"

// The keys of the per_partition_rate_limit map.
const (
	KeyMaxReads  = "max_reads_per_second"
	KeyMaxWrites = "max_writes_per_second"
	KeyMode      = "mode"
)

// The values of the per_partition_rate_limit key 'mode' (LimitMode).
const (
	ModeEnforce = "enforce"
	ModeShadow  = "shadow"
)

// validKeys names the per_partition_rate_limit keys, for error messages.
const validKeys = "valid keys are '" + KeyMaxReads + "', '" + KeyMaxWrites + "' and '" + KeyMode + "'"

// NewTable builds the table that a CREATE TABLE statement defines, in
// keyspace (the statement's qualifier, or the current keyspace), with id
// and version v. It checks the statement: names, types, the primary key and
// the options. The caller (Apply) checks that the keyspace exists and
// records its version in KeyspaceVersion.
func NewTable(st *cql.CreateTableStmt, keyspace string, id TableID, v Version) (*Table, error) {
	return newTable(st, keyspace, id, v, nil)
}

// newTable is NewTable in a keyspace whose user types are udts.
func newTable(st *cql.CreateTableStmt, keyspace string, id TableID, v Version, udts map[string]*UserType) (*Table, error) {
	name := st.Table.Name.Name
	if err := checkName("table", name); err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, fmt.Errorf("table %s: table id 0 is not valid", qualified(keyspace, name))
	}
	t, err := buildTable(st, keyspace, name, udts)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", qualified(keyspace, name), err)
	}
	t.ID, t.Version = id, v
	return t, nil
}

func buildTable(st *cql.CreateTableStmt, keyspace, name string, udts map[string]*UserType) (*Table, error) {
	types := make(map[string]Type, len(st.Columns))
	var inline []string
	for _, c := range st.Columns {
		if c.Name.Name == "" {
			return nil, fmt.Errorf("a column name is empty")
		}
		if _, dup := types[c.Name.Name]; dup {
			return nil, fmt.Errorf("column %s is defined twice", cql.QuoteIdent(c.Name.Name))
		}
		typ, err := lookupTypeIn(c.Type.Name, keyspace, udts)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", cql.QuoteIdent(c.Name.Name), err)
		}
		types[c.Name.Name] = typ
		if c.PrimaryKey {
			inline = append(inline, c.Name.Name)
		}
	}
	if len(st.Columns) == 0 {
		return nil, fmt.Errorf("no columns are defined")
	}

	var partition, clustering []string
	switch {
	case len(inline) > 1:
		return nil, fmt.Errorf("columns %s and %s are both declared PRIMARY KEY; declare a composite key as PRIMARY KEY ((%s, %s))",
			cql.QuoteIdent(inline[0]), cql.QuoteIdent(inline[1]), cql.QuoteIdent(inline[0]), cql.QuoteIdent(inline[1]))
	case len(inline) == 1 && st.PrimaryKey != nil:
		return nil, fmt.Errorf("the primary key is declared twice: inline on column %s and in a PRIMARY KEY clause", cql.QuoteIdent(inline[0]))
	case len(inline) == 1:
		partition = inline
	case st.PrimaryKey != nil:
		for _, x := range st.PrimaryKey.PartitionKey {
			partition = append(partition, x.Name)
		}
		for _, x := range st.PrimaryKey.Clustering {
			clustering = append(clustering, x.Name)
		}
	default:
		return nil, fmt.Errorf("no PRIMARY KEY is declared")
	}
	seen := make(map[string]bool)
	for _, n := range slices.Concat(partition, clustering) {
		if _, ok := types[n]; !ok {
			return nil, fmt.Errorf("PRIMARY KEY names column %s, which is not defined", cql.QuoteIdent(n))
		}
		if seen[n] {
			return nil, fmt.Errorf("column %s appears twice in the PRIMARY KEY", cql.QuoteIdent(n))
		}
		seen[n] = true
		if types[n].MultiCell() { // Cassandra's words
			what := "collection type"
			if strings.HasPrefix(string(types[n]), "udt<") {
				what = "user-defined type"
			}
			return nil, fmt.Errorf("invalid non-frozen %s %s for PRIMARY KEY component %s", what, types[n].CQL(), cql.QuoteIdent(n))
		}
		if strings.Contains(string(types[n]), string(TypeDuration)) { // duration, or a type holding one
			return nil, fmt.Errorf("duration type is not supported for PRIMARY KEY column %s", cql.QuoteString(n))
		}
	}
	var regular []string
	for _, c := range st.Columns {
		if !seen[c.Name.Name] {
			regular = append(regular, c.Name.Name)
		}
	}
	slices.Sort(regular)

	t := &Table{Keyspace: keyspace, Name: name}
	cols := make([]Column, 0, len(st.Columns))
	add := func(names []string, kind ColumnKind) {
		for _, n := range names {
			cols = append(cols, Column{Name: n, Type: types[n], Kind: kind, Index: len(cols)})
		}
	}
	add(partition, PartitionKeyColumn)
	add(clustering, ClusteringColumn)
	add(regular, RegularColumn)
	if err := staticColumns(st, cols, len(clustering)); err != nil {
		return nil, err
	}
	if err := clusteringOrder(st.ClusteringOrder, cols[len(partition):len(partition)+len(clustering)]); err != nil {
		return nil, err
	}
	t.setColumns(cols, len(partition), len(clustering))

	rl, err := tableOptions(st.Options, RateLimit{})
	if err != nil {
		return nil, err
	}
	t.RateLimit = rl
	if err := t.gcGraceOption(st.Options); err != nil {
		return nil, err
	}
	if err := t.speculativeRetryOption(st.Options); err != nil {
		return nil, err
	}
	if err := t.defaultTTLOption(st.Options); err != nil {
		return nil, err
	}
	if err := t.compatOptionsFrom(st.Options); err != nil {
		return nil, err
	}
	if err := t.checkCounters(nil); err != nil {
		return nil, err
	}
	return t, nil
}

// clusteringOrder applies CLUSTERING ORDER BY to the clustering columns.
// As in Cassandra it must name every clustering column, in primary key
// order (the parser checks this too, with positions, for the statements it
// parses).
func clusteringOrder(order []cql.Ordering, clustering []Column) error {
	if len(order) == 0 {
		return nil
	}
	if len(clustering) == 0 {
		return fmt.Errorf("CLUSTERING ORDER BY is only allowed on a table with clustering columns; this table has none")
	}
	for i, o := range order {
		if i >= len(clustering) || o.Column.Name != clustering[i].Name {
			return fmt.Errorf("CLUSTERING ORDER BY (%s) must list the clustering columns in PRIMARY KEY order (%s)", orderingList(order), columnList(clustering))
		}
		clustering[i].Descending = o.Descending
	}
	if len(order) < len(clustering) {
		return fmt.Errorf("CLUSTERING ORDER BY (%s) must list every clustering column in PRIMARY KEY order (%s): %s is missing",
			orderingList(order), columnList(clustering), cql.QuoteIdent(clustering[len(order)].Name))
	}
	return nil
}

// orderingList returns c1 ASC, c2 DESC.
func orderingList(os []cql.Ordering) string {
	var b strings.Builder
	for i, o := range os {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cql.QuoteIdent(o.Column.Name) + " " + direction(o.Descending))
	}
	return b.String()
}

func direction(desc bool) string {
	if desc {
		return "DESC"
	}
	return "ASC"
}

// CompareClustering returns -1, 0 or +1 as the clustering key a sorts
// before, equal to or after b in t's clustering order: by each clustering
// column in turn, in its type's order, reversed for a Descending column.
// This is the order of the rows of a partition in storage and in a read
// without ORDER BY. a and b hold one canonical value per clustering column,
// or prefixes of the clustering key (a key sorts after its prefixes).
func (t *Table) CompareClustering(a, b [][]byte) int {
	for i := range min(len(a), len(b), len(t.Clustering)) {
		c := &t.Clustering[i]
		if r := c.Compare(a[i], b[i]); r != 0 {
			if c.Descending {
				return -r
			}
			return r
		}
	}
	return cmp.Compare(len(a), len(b))
}

// HasDescending reports whether any clustering column of t is Descending.
func (t *Table) HasDescending() bool {
	for _, c := range t.Clustering {
		if c.Descending {
			return true
		}
	}
	return false
}

// setColumns sets Columns, its three parts and the name index.
func (t *Table) setColumns(cols []Column, npk, nck int) {
	for i := range cols {
		if cols[i].parsed == nil { // a copied Column keeps its parsed type
			cols[i].parsed = cols[i].Type.node()
		}
	}
	t.Columns = cols
	t.PartitionKey = cols[:npk:npk]
	t.Clustering = cols[npk : npk+nck : npk+nck]
	t.Regular = cols[npk+nck:]
	t.byName = make(map[string]int, len(cols))
	for i, c := range cols {
		t.byName[c.Name] = i
	}
}

// Alter returns the table after an ALTER TABLE statement, at version v. The
// per_partition_rate_limit option replaces the whole limit: keys it does not
// name have no limit afterwards, and {} removes both limits.
//
// ADD, DROP and RENAME change the columns (see alter.go); their errors read as
// Cassandra's and carry the position of the column they are about.
func (t *Table) Alter(st *cql.AlterTableStmt, v Version) (*Table, error) {
	return t.alter(st, v, nil)
}

// alter is Alter in a keyspace whose user types are udts.
func (t *Table) alter(st *cql.AlterTableStmt, v Version, udts map[string]*UserType) (*Table, error) {
	if st.Action != cql.AlterOptions {
		nt := *t
		if err := nt.alterColumns(st, v, udts); err != nil {
			return nil, err
		}
		if slices.Equal(nt.Columns, t.Columns) && slices.Equal(nt.droppedCols, t.droppedCols) {
			return t, nil // IF [NOT] EXISTS skipped every column: a no-op
		}
		if err := nt.checkCounters(addedNames(st)); err != nil {
			return nil, err
		}
		nt.Version = v
		return &nt, nil
	}
	rl, err := tableOptions(st.Options, t.RateLimit)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), err)
	}
	nt := *t
	nt.RateLimit = rl
	if err := nt.gcGraceOption(st.Options); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), err)
	}
	if err := nt.speculativeRetryOption(st.Options); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), err)
	}
	if err := nt.defaultTTLOption(st.Options); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), err)
	}
	if err := nt.compatOptionsFrom(st.Options); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), err)
	}
	if err := nt.checkCounters(nil); err != nil {
		return nil, err
	}
	nt.Version = v
	return &nt, nil
}

// tableOptions interprets the WITH options of CREATE or ALTER TABLE, given
// the current limit.
func tableOptions(opts []cql.Option, rl RateLimit) (RateLimit, error) {
	seen := make(map[string]bool)
	for _, o := range opts {
		if seen[o.Name.Name] {
			return rl, fmt.Errorf("option %s is given twice", cql.QuoteIdent(o.Name.Name))
		}
		seen[o.Name.Name] = true
		switch o.Name.Name {
		case OptionRateLimit:
			var err error
			if rl, err = ParseRateLimit(o.Value); err != nil {
				return rl, err
			}
		case OptionGCGrace: // see gcGraceOption
		case OptionSpeculativeRetry: // see speculativeRetryOption
		case OptionDefaultTTL: // see defaultTTLOption
		case "id":
			return rl, fmt.Errorf("table option id (which Cassandra's DESCRIBE ... WITH INTERNALS writes) is not supported: kvnode gives each table its own id")
		default:
			if _, ok := compatOptions[o.Name.Name]; ok || o.Name.Name == OptionExtensions {
				continue // see compatOptionsFrom
			}
			return rl, fmt.Errorf("unknown table option %s (supported: %s, %s, %s, %s, and for compatibility, without effect: %s)",
				cql.QuoteIdent(o.Name.Name), OptionRateLimit, OptionGCGrace, OptionSpeculativeRetry, OptionDefaultTTL, strings.Join(CompatOptionNames(), ", "))
		}
	}
	return rl, nil
}

// ParseRateLimit interprets the value of the per_partition_rate_limit
// option: a map with the optional keys 'max_reads_per_second' and
// 'max_writes_per_second', each a positive integer up to 2147483647 written
// as a number (100) or as a string of digits ('100'), and 'mode', the string
// 'enforce' (the default) or 'shadow' (see LimitMode). A missing limit key
// means no limit for that kind of operation; {} means no limits.
//
// Anything else is an error that names the key and the value: a value that
// is not a map, an unknown or repeated key, a limit that is negative,
// zero, a float, not a number, a number followed by other characters
// ('10abc') or too large, and a mode other than those two strings.
func ParseRateLimit(v cql.Term) (RateLimit, error) { return parseRateLimit(OptionRateLimit, v) }

// parseRateLimit is ParseRateLimit for the option named OptionRateLimit: per_partition_rate_limit
// of a table, or rate_limit of a keyspace.
func parseRateLimit(OptionRateLimit string, v cql.Term) (RateLimit, error) {
	m, ok := v.(*cql.MapLiteral)
	if !ok {
		return RateLimit{}, fmt.Errorf("%s = %s is not a map; write %s = {'%s': N, '%s': M}, leaving out a key for no limit",
			OptionRateLimit, describeValue(v), OptionRateLimit, KeyMaxReads, KeyMaxWrites)
	}
	var rl RateLimit
	seen := make(map[string]cql.Term)
	for _, e := range m.Entries {
		key, ok := e.Key.(*cql.Literal)
		if !ok || key.Kind != cql.LitString {
			return RateLimit{}, fmt.Errorf("%s: key %s (with value %s) is not a string; %s",
				OptionRateLimit, describeValue(e.Key), describeValue(e.Value), validKeys)
		}
		if first, dup := seen[key.Value]; dup {
			return RateLimit{}, fmt.Errorf("%s: key %s is given twice (values %s and %s)",
				OptionRateLimit, cql.QuoteString(key.Value), describeValue(first), describeValue(e.Value))
		}
		seen[key.Value] = e.Value
		var dst *uint32
		switch key.Value {
		case KeyMaxReads:
			dst = &rl.MaxReadsPerSecond
		case KeyMaxWrites:
			dst = &rl.MaxWritesPerSecond
		case KeyMode:
			m, err := parseLimitMode(e.Value)
			if err != nil {
				return RateLimit{}, fmt.Errorf("%s: '%s' = %w", OptionRateLimit, KeyMode, err)
			}
			rl.Mode = m
			continue
		default:
			return RateLimit{}, fmt.Errorf("%s: unknown key %s (with value %s); %s",
				OptionRateLimit, cql.QuoteString(key.Value), describeValue(e.Value), validKeys)
		}
		n, err := positiveInt(e.Value, MaxLimit, "a limit is a positive integer (leave the key out for no limit)")
		if err != nil {
			return RateLimit{}, fmt.Errorf("%s: '%s' = %w", OptionRateLimit, key.Value, err)
		}
		*dst = uint32(n)
	}
	return rl, nil
}

// parseLimitMode reads the value of the 'mode' key: the string 'enforce' or
// 'shadow', exactly. Its errors begin with the value, for the caller to
// prefix with the key.
func parseLimitMode(v cql.Term) (LimitMode, error) {
	if lit, ok := v.(*cql.Literal); ok && lit.Kind == cql.LitString {
		switch lit.Value {
		case ModeEnforce:
			return Enforce, nil
		case ModeShadow:
			return Shadow, nil
		}
	}
	return 0, fmt.Errorf("%s is not a mode; write '%s' (reject over the limit, the default) or '%s' (count and report, never reject)",
		describeValue(v), ModeEnforce, ModeShadow)
}

// positiveInt reads an integer option value in 1..max, written as a number
// or as a quoted string of digits. Its errors begin with the value, for the
// caller to prefix with the key: "-5 is negative; <hint>".
func positiveInt(v cql.Term, max int64, hint string) (int64, error) {
	text := describeValue(v)
	lit, ok := v.(*cql.Literal)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", text)
	}
	var s string
	switch lit.Kind {
	case cql.LitInteger, cql.LitString:
		s = lit.Value
	case cql.LitFloat:
		return 0, fmt.Errorf("%s is not an integer", text)
	case cql.LitBind:
		return 0, fmt.Errorf("%s: bind markers cannot be used in schema statements", text)
	default:
		return 0, fmt.Errorf("%s is not a number", text)
	}
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	switch {
	case j == i:
		return 0, fmt.Errorf("%s is not a number", text)
	case j < len(s):
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return 0, fmt.Errorf("%s is not an integer", text)
		}
		return 0, fmt.Errorf("%s has %s after the number %s; write only digits", text, describeTrailing(s[j:]), s[:j])
	}
	digits := strings.TrimLeft(s[i:j], "0")
	switch {
	case digits == "":
		return 0, fmt.Errorf("%s is zero; %s", text, hint)
	case neg:
		return 0, fmt.Errorf("%s is negative; %s", text, hint)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("%s is too large; the maximum is %d", text, max)
	}
	return n, nil
}

func describeTrailing(s string) string {
	if len(s) == 1 {
		return "the character " + strconv.Quote(s)
	}
	return "the characters " + strconv.Quote(truncate(s, 20))
}

// describeValue returns a term as messages show it: as written in CQL,
// shortened when long.
func describeValue(v cql.Term) string {
	if v == nil {
		return "nothing"
	}
	return truncate(cql.Format(v), 40)
}

// truncate shortens s to at most max characters, ending in "...".
func truncate(s string, max int) string {
	n := 0
	for i := range s {
		if n == max-3 && len(s)-i > 3 {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// keyspaceOpts are the WITH options of CREATE or ALTER KEYSPACE: rf is 0 when the
// replication option is not given.
type keyspaceOpts struct {
	replication *replicationOpts // nil when replication is not given
	rateLimit   *RateLimit       // nil when rate_limit is not given
}

// OptionKeyspaceRateLimit is the keyspace option that caps the rates of every request on the
// keyspace's tables, cluster-wide.
const OptionKeyspaceRateLimit = "rate_limit"

// keyspaceOptions interprets the WITH options of CREATE and ALTER KEYSPACE.
func keyspaceOptions(opts []cql.Option) (keyspaceOpts, error) {
	var o keyspaceOpts
	seen := make(map[string]bool)
	for _, opt := range opts {
		if seen[opt.Name.Name] {
			return o, fmt.Errorf("option %s is given twice", cql.QuoteIdent(opt.Name.Name))
		}
		seen[opt.Name.Name] = true
		switch opt.Name.Name {
		case "replication":
			r, err := replication(opt.Value)
			if err != nil {
				return o, err
			}
			o.replication = &r
		case "durable_writes":
			// Writes are always durable; accept the Cassandra default.
			if lit, ok := opt.Value.(*cql.Literal); !ok || lit.Kind != cql.LitBoolean || lit.Value != "true" {
				return o, fmt.Errorf("durable_writes = %s is not supported: writes are always durable", describeValue(opt.Value))
			}
		case OptionKeyspaceRateLimit:
			rl, err := parseRateLimit(OptionKeyspaceRateLimit, opt.Value)
			if err != nil {
				return o, err
			}
			if rl.MaxReadsPerSecond == 0 && rl.MaxWritesPerSecond == 0 {
				rl = RateLimit{} // no limit, in whichever mode
			}
			o.rateLimit = &rl
		default:
			return o, fmt.Errorf("unknown keyspace option %s (supported: replication, durable_writes, rate_limit)", cql.QuoteIdent(opt.Name.Name))
		}
	}
	return o, nil
}

// replicationOpts is a replication option as written: SimpleStrategy's factor (rf), or
// NetworkTopologyStrategy's factors per data center (nts set; perDC as given, 0s included) with
// its 'replication_factor' shortcut (auto, 0 when not given) for the data centers not named.
type replicationOpts struct {
	rf    int
	nts   bool
	perDC map[string]int
	auto  int
}

// The replication classes, as CQL names them and as Cassandra's full class names.
const (
	simpleStrategy          = "SimpleStrategy"
	networkTopologyStrategy = "NetworkTopologyStrategy"
	locatorPackage          = "org.apache.cassandra.locator."
)

func replication(v cql.Term) (replicationOpts, error) {
	var o replicationOpts
	m, ok := v.(*cql.MapLiteral)
	if !ok {
		return o, fmt.Errorf("replication = %s is not a map; write replication = {'class': 'SimpleStrategy', 'replication_factor': N}", describeValue(v))
	}
	var class string
	seen := make(map[string]bool)
	factors := make(map[string]cql.Term)
	for _, e := range m.Entries {
		key, ok := e.Key.(*cql.Literal)
		if !ok || key.Kind != cql.LitString {
			return o, fmt.Errorf("replication: key %s is not a string; valid keys are 'class', 'replication_factor' and, for NetworkTopologyStrategy, data center names", describeValue(e.Key))
		}
		if seen[key.Value] {
			return o, fmt.Errorf("replication: key %s is given twice", cql.QuoteString(key.Value))
		}
		seen[key.Value] = true
		if key.Value != "class" {
			factors[key.Value] = e.Value
			continue
		}
		lit, ok := e.Value.(*cql.Literal)
		if !ok || lit.Kind != cql.LitString {
			return o, fmt.Errorf("replication: 'class' = %s is not a string", describeValue(e.Value))
		}
		class = strings.TrimPrefix(lit.Value, locatorPackage)
		if class != simpleStrategy && class != networkTopologyStrategy {
			return o, fmt.Errorf("replication: class %s is not supported (supported: 'SimpleStrategy', 'NetworkTopologyStrategy')", cql.QuoteString(lit.Value))
		}
	}
	if class == "" {
		return o, fmt.Errorf("replication: 'class' is missing; write 'class': 'SimpleStrategy' or 'NetworkTopologyStrategy'")
	}
	o.nts = class == networkTopologyStrategy
	for _, key := range slices.Sorted(maps.Keys(factors)) {
		val := factors[key]
		if !o.nts {
			if key != "replication_factor" {
				return o, fmt.Errorf("replication: unknown key %s for SimpleStrategy; valid keys are 'class' and 'replication_factor'", cql.QuoteString(key))
			}
			rf, err := positiveInt(val, 1<<31-1, "the replication factor is a positive integer")
			if err != nil {
				return o, fmt.Errorf("replication: 'replication_factor' = %w", err)
			}
			o.rf = int(rf)
			continue
		}
		rf, err := replicaCount(val)
		if err != nil {
			return o, fmt.Errorf("replication: %s = %w", cql.QuoteString(key), err)
		}
		if key == "replication_factor" {
			o.auto = rf
			continue
		}
		if err := checkDataCenterName(key); err != nil {
			return o, fmt.Errorf("replication: %w", err)
		}
		if o.perDC == nil {
			o.perDC = make(map[string]int)
		}
		o.perDC[key] = rf
	}
	if !o.nts && o.rf == 0 {
		return o, fmt.Errorf("replication: 'replication_factor' is missing")
	}
	return o, nil
}

// replicaCount reads a data center's replication factor: a non-negative integer (0 places no
// replica there), as a number or a string as Cassandra's options are.
func replicaCount(v cql.Term) (int, error) {
	if lit, ok := v.(*cql.Literal); ok && (lit.Kind == cql.LitInteger || lit.Kind == cql.LitString) && strings.Trim(lit.Value, "0") == "" && lit.Value != "" {
		return 0, nil
	}
	rf, err := positiveInt(v, 1<<31-1, "a replication factor is a non-negative integer")
	return int(rf), err
}

// checkDataCenterName refuses what cannot be a data center's name (the rule of the nodes'
// --dc option: printable ASCII but for space, quotes and backslash, at most 64 bytes).
func checkDataCenterName(dc string) error {
	if dc == "" || len(dc) > 64 {
		return fmt.Errorf("data center name %s must be 1 to 64 bytes", cql.QuoteString(dc))
	}
	for i := 0; i < len(dc); i++ {
		if c := dc[i]; c <= ' ' || c > '~' || c == '\'' || c == '"' || c == '\\' {
			return fmt.Errorf("data center name %s has byte %#x at offset %d; allowed are printable ASCII characters other than space, quotes and backslash", cql.QuoteString(dc), c, i)
		}
	}
	return nil
}

// placement resolves o against the cluster's data centers (dcs; nil when the caller does not
// know them) and, for ALTER KEYSPACE, the keyspace's placement before (prev; nil for CREATE), as
// Cassandra 4.1's NetworkTopologyStrategy.prepareOptions does: SimpleStrategy's factor, or
// NetworkTopologyStrategy's factors, where the shortcut 'replication_factor' keeps the factors
// prev gave data centers not named and gives its own to every other data center of dcs, and a
// map with nothing but the class takes prev's SimpleStrategy factor as that shortcut; data
// centers dcs does not have are refused. It returns the total replication factor and the per-DC
// factors (nil for SimpleStrategy), sorted, without the zeros.
func (o replicationOpts) placement(dcs []string, prev *Keyspace) (int, []DCFactor, error) {
	if !o.nts {
		return o.rf, nil, nil
	}
	rfs := maps.Clone(o.perDC)
	if rfs == nil {
		rfs = make(map[string]int)
	}
	if o.auto == 0 && len(rfs) == 0 && prev != nil && len(prev.DataCenters) == 0 {
		o.auto = prev.ReplicationFactor // SimpleStrategy to NetworkTopologyStrategy
	}
	if o.auto > 0 && prev != nil {
		for _, f := range prev.DataCenters {
			if _, named := rfs[f.DC]; !named {
				rfs[f.DC] = f.RF
			}
		}
	}
	if o.auto > 0 {
		if len(dcs) == 0 {
			return 0, nil, errors.New("replication: 'replication_factor' for NetworkTopologyStrategy gives every data center of the cluster that factor, and this node does not know them yet; name the data centers")
		}
		for _, dc := range dcs {
			if _, named := rfs[dc]; !named {
				rfs[dc] = o.auto
			}
		}
	}
	var out []DCFactor
	total := 0
	for _, dc := range slices.Sorted(maps.Keys(rfs)) {
		if len(dcs) > 0 && !slices.Contains(dcs, dc) && rfs[dc] > 0 {
			return 0, nil, fmt.Errorf("replication: unrecognized strategy option {%s} passed to NetworkTopologyStrategy: the cluster has no data center %s (it has %s)", dc, cql.QuoteString(dc), strings.Join(dcs, ", "))
		}
		if rfs[dc] > 0 {
			out = append(out, DCFactor{DC: dc, RF: rfs[dc]})
			total += rfs[dc]
		}
	}
	if total == 0 {
		return 0, nil, errors.New("replication: NetworkTopologyStrategy places no replica; give at least one data center a replication factor")
	}
	if total > 1<<31-1 {
		return 0, nil, fmt.Errorf("replication: the replication factors add up to %d, the maximum is %d", total, 1<<31-1)
	}
	return total, out, nil
}

// TableIDFor derives a table id from the table's name and the version of
// its CREATE TABLE: distinct for every creation, without randomness. A node
// executing CREATE TABLE may use it for Change.TableID.
func TableIDFor(keyspace, table string, v Version) TableID {
	// FNV-1a over a length-prefixed encoding, then a mixer; 0 is avoided.
	var b []byte
	for _, s := range []string{keyspace, table, v.Node} {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	b = strconv.AppendInt(b, v.Timestamp, 10)
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	if h == 0 {
		h = 1
	}
	return TableID(h)
}
