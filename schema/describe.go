package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// CreateStatement returns the CREATE KEYSPACE statement that recreates k,
// ending in a semicolon.
func (k *Keyspace) CreateStatement() string {
	rl := ""
	if !k.RateLimit.IsZero() {
		rl = " AND " + OptionKeyspaceRateLimit + " = " + k.RateLimit.String()
	}
	return fmt.Sprintf("CREATE KEYSPACE %s WITH replication = %s%s;", cql.QuoteIdent(k.Name), k.ReplicationCQL(), rl)
}

// ReplicationCQL returns k's replication option as CQL writes it.
func (k *Keyspace) ReplicationCQL() string {
	if len(k.DataCenters) == 0 {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", k.ReplicationFactor)
	}
	var b strings.Builder
	b.WriteString("{'class': 'NetworkTopologyStrategy'")
	for _, f := range k.DataCenters {
		fmt.Fprintf(&b, ", %s: %d", cql.QuoteString(f.DC), f.RF)
	}
	b.WriteString("}")
	return b.String()
}

// CreateStatement returns the CREATE TABLE statement that recreates t
// (columns, primary key, the clustering order when a column is DESC and the
// per_partition_rate_limit, default_time_to_live (when set), gc_grace_seconds and
// speculative_retry options, and the compatibility options set to other than their defaults;
// not its id or version), over several
// lines and ending in a semicolon.
func (t *Table) CreateStatement() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", t.QualifiedName())
	for _, c := range t.Columns {
		static := ""
		if c.Static {
			static = " static"
		}
		fmt.Fprintf(&b, "    %s %s%s,\n", cql.QuoteIdent(c.Name), c.Type.CQL(), static)
	}
	b.WriteString("    PRIMARY KEY (")
	if len(t.PartitionKey) == 1 {
		b.WriteString(cql.QuoteIdent(t.PartitionKey[0].Name))
	} else {
		b.WriteString("(" + columnList(t.PartitionKey) + ")")
	}
	if len(t.Clustering) > 0 {
		b.WriteString(", " + columnList(t.Clustering))
	}
	b.WriteString(")\n)")
	with := " WITH "
	if t.HasDescending() {
		// As Cassandra's DESCRIBE does, only when some column is DESC: an
		// all-ASC order is the default.
		b.WriteString(with + "CLUSTERING ORDER BY (" + clusteringOrderList(t) + ")")
		with = "\n    AND "
	}
	if !t.RateLimit.IsZero() {
		b.WriteString(with + OptionRateLimit + " = " + t.RateLimit.String())
		with = "\n    AND "
	}
	if t.defaultTTL != 0 {
		b.WriteString(with + OptionDefaultTTL + " = " + strconv.FormatInt(int64(t.defaultTTL), 10))
		with = "\n    AND "
	}
	b.WriteString(with + OptionGCGrace + " = " + strconv.FormatUint(uint64(t.GCGraceSeconds()), 10))
	b.WriteString("\n    AND " + OptionSpeculativeRetry + " = " + cql.QuoteString(t.SpeculativeRetry().String()))
	for _, name := range t.setOptions() {
		b.WriteString("\n    AND " + name + " = " + t.options[name].CQL())
	}
	b.WriteString(";")
	return b.String()
}

// String returns the limit as the per_partition_rate_limit map that sets
// it: {'max_reads_per_second': 100}, or {} for no limits. The mode is
// written when it is not the default: {'max_writes_per_second': 50,
// 'mode': 'shadow'}.
func (r RateLimit) String() string {
	var parts []string
	if r.MaxReadsPerSecond > 0 {
		parts = append(parts, "'"+KeyMaxReads+"': "+strconv.FormatUint(uint64(r.MaxReadsPerSecond), 10))
	}
	if r.MaxWritesPerSecond > 0 {
		parts = append(parts, "'"+KeyMaxWrites+"': "+strconv.FormatUint(uint64(r.MaxWritesPerSecond), 10))
	}
	if r.Mode != Enforce {
		parts = append(parts, "'"+KeyMode+"': '"+r.Mode.String()+"'")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ErrDescribeCluster is returned by Describe for DESCRIBE CLUSTER, which
// needs live cluster state that the schema does not have: the node answers
// it.
var ErrDescribeCluster = errors.New("DESCRIBE CLUSTER is answered by the node, not the schema")

// Describe returns the output of a DESCRIBE statement, with keyspace as the
// current keyspace ("" if none):
//
//	KEYSPACES      the keyspace names, one per line
//	KEYSPACE [ks]  CREATE KEYSPACE, then CREATE TABLE for each of its tables
//	TABLES         the tables of the current keyspace, one per line; with no
//	               current keyspace every table, as keyspace.table
//	TABLE [ks.]t   CREATE TABLE
//	SCHEMA         for each keyspace, as DESCRIBE KEYSPACE
//
// The CREATE statements, run again, recreate the objects. The output ends
// in a newline unless it is empty. DESCRIBE CLUSTER gives ErrDescribeCluster.
func (s *Schema) Describe(st *cql.DescribeStmt, keyspace string) (string, error) {
	var b strings.Builder
	switch st.Kind {
	case cql.DescribeKeyspaces:
		for _, k := range s.Keyspaces() {
			b.WriteString(cql.QuoteIdent(k.Name) + "\n")
		}
	case cql.DescribeKeyspace:
		name := st.Keyspace.Name
		if name == "" {
			name = keyspace
		}
		if name == "" {
			return "", errors.New("no keyspace to describe: USE a keyspace or write DESCRIBE KEYSPACE name")
		}
		k, ok := s.Keyspace(name)
		if !ok {
			return "", fmt.Errorf("%w %s", ErrUnknownKeyspace, cql.QuoteIdent(name))
		}
		b.WriteString(k.CreateStatement() + "\n")
		for _, u := range k.TypesInOrder() {
			b.WriteString("\n" + u.CreateStatement() + "\n")
		}
		for _, t := range s.Tables(name) {
			b.WriteString("\n" + t.describeCQL() + "\n")
		}
	case cql.DescribeSchema:
		for i, k := range s.Keyspaces() {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(k.CreateStatement() + "\n")
			for _, u := range k.TypesInOrder() {
				b.WriteString("\n" + u.CreateStatement() + "\n")
			}
			for _, t := range s.Tables(k.Name) {
				b.WriteString("\n" + t.describeCQL() + "\n")
			}
		}
	case cql.DescribeTables:
		if keyspace != "" {
			if _, ok := s.Keyspace(keyspace); !ok {
				return "", fmt.Errorf("%w %s", ErrUnknownKeyspace, cql.QuoteIdent(keyspace))
			}
		}
		for _, t := range s.Tables(keyspace) {
			if keyspace != "" {
				b.WriteString(cql.QuoteIdent(t.Name) + "\n")
			} else {
				b.WriteString(t.QualifiedName() + "\n")
			}
		}
	case cql.DescribeTable:
		t, err := s.lookupTable(st.Table, keyspace)
		if err != nil {
			return "", err
		}
		b.WriteString(t.describeCQL() + "\n")
	case cql.DescribeType:
		u, err := s.lookupUserType(st.Table, keyspace)
		if err != nil {
			return "", err
		}
		b.WriteString(u.CreateStatement() + "\n")
	case cql.DescribeTypes:
		for _, k := range s.Keyspaces() {
			if keyspace != "" && k.Name != keyspace {
				continue
			}
			for _, u := range k.UserTypes() {
				if keyspace != "" {
					b.WriteString(cql.QuoteIdent(u.Name) + "\n")
				} else {
					b.WriteString(qualified(u.Keyspace, u.Name) + "\n")
				}
			}
		}
	case cql.DescribeCluster:
		return "", ErrDescribeCluster
	default:
		return "", fmt.Errorf("unknown DESCRIBE kind %d", st.Kind)
	}
	return b.String(), nil
}

// Element is one row of a DESCRIBE ... WITH INTERNALS answer, as Cassandra 4's server-side
// DESCRIBE gives it: the keyspace, the element's type ("keyspace" or "table"), its name and
// the CREATE statement that recreates it.
type Element struct {
	Keyspace, Type, Name, CreateStatement string
}

// DescribeElements returns the answer to DESCRIBE ... WITH INTERNALS as Elements, with
// keyspace as the current keyspace: DESCRIBE KEYSPACE gives the keyspace then each of its
// tables, DESCRIBE TABLE the table, DESCRIBE KEYSPACES one element per keyspace (its
// name as its statement) and DESCRIBE TABLES one per table. Errors are Describe's.
func (s *Schema) DescribeElements(st *cql.DescribeStmt, keyspace string) ([]Element, error) {
	if _, err := s.Describe(st, keyspace); err != nil {
		return nil, err // the same checks and errors as Describe
	}
	var out []Element
	table := func(t *Table) {
		out = append(out, Element{Keyspace: t.Keyspace, Type: "table", Name: t.Name, CreateStatement: t.CreateStatement()})
		for i := range t.indexes {
			out = append(out, Element{Keyspace: t.Keyspace, Type: "index", Name: t.indexes[i].Name, CreateStatement: IndexCQL(t, &t.indexes[i])})
		}
	}
	switch st.Kind {
	case cql.DescribeKeyspaces:
		for _, k := range s.Keyspaces() {
			out = append(out, Element{Keyspace: k.Name, Type: "keyspace", Name: k.Name})
		}
	case cql.DescribeKeyspace:
		name := st.Keyspace.Name
		if name == "" {
			name = keyspace
		}
		k, _ := s.Keyspace(name)
		out = append(out, Element{Keyspace: k.Name, Type: "keyspace", Name: k.Name, CreateStatement: k.CreateStatement()})
		for _, u := range k.TypesInOrder() {
			out = append(out, typeElement(u))
		}
		for _, t := range s.Tables(name) {
			table(t)
		}
	case cql.DescribeTables:
		for _, t := range s.Tables(keyspace) {
			out = append(out, Element{Keyspace: t.Keyspace, Type: "table", Name: t.Name})
		}
	case cql.DescribeSchema:
		for _, k := range s.Keyspaces() {
			out = append(out, Element{Keyspace: k.Name, Type: "keyspace", Name: k.Name, CreateStatement: k.CreateStatement()})
			for _, u := range k.TypesInOrder() {
				out = append(out, typeElement(u))
			}
			for _, t := range s.Tables(k.Name) {
				table(t)
			}
		}
	case cql.DescribeTable:
		t, err := s.lookupTable(st.Table, keyspace)
		if err != nil {
			return nil, err
		}
		table(t)
	case cql.DescribeType:
		u, err := s.lookupUserType(st.Table, keyspace)
		if err != nil {
			return nil, err
		}
		out = append(out, typeElement(u))
	case cql.DescribeTypes:
		for _, k := range s.Keyspaces() {
			if keyspace == "" || k.Name == keyspace {
				for _, u := range k.UserTypes() {
					out = append(out, Element{Keyspace: u.Keyspace, Type: "type", Name: u.Name})
				}
			}
		}
	}
	return out, nil
}
