package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// FormatExpiring is the data format version (the replica's FormatVersion) from which a release
// of kvnode stores expiring cells, and decodes the table features FormatFeatures names. A node
// of an older format stores an expiring cell as one that never expires, and refuses a schema
// with those features (it does not know their flags), so none may reach it: coordinators refuse
// them while a member of an older format remains.
const FormatExpiring = 2

// FormatFeatures returns the names of t's features that a release of a data format before
// FormatExpiring cannot decode, in a fixed order; none for a table that encodes as such a release
// reads it (see Encode).
func (t *Table) FormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	if t.defaultTTL != 0 {
		fs = append(fs, OptionDefaultTTL)
	}
	if len(t.options) > 0 {
		fs = append(fs, "table options "+strings.Join(t.setOptions(), ", "))
	}
	if t.specRetrySet && (t.specRetry.Kind == SpeculateMin || t.specRetry.Kind == SpeculateMax) {
		fs = append(fs, "speculative_retry MIN or MAX")
	}
	if len(t.droppedCols) > 0 {
		fs = append(fs, "records of dropped columns (ALTER TABLE DROP)")
	}
	if t.truncatedSet {
		fs = append(fs, "a record of TRUNCATE")
	}
	return fs
}

// FormatFeatures returns the names of k's features that a release of a data format before
// FormatExpiring cannot decode: an ALTER KEYSPACE, whose version such a release does not read.
func (k *Keyspace) FormatFeatures() []string {
	if k.dropped || k.Altered == (Version{}) {
		return nil
	}
	return []string{"a record of ALTER KEYSPACE"}
}

// FormatLevels is the data format version from which a release of kvnode decodes the service
// levels, their attachments, the roles granted to roles and keyspaces' rate_limit. A node of an
// older format refuses a schema that has any of them, so coordinators refuse them while such a
// member remains.
const FormatLevels = 3

// LevelsFormatFeatures returns the names of k's features that a release of a data format before
// FormatLevels cannot decode: a rate_limit.
func (k *Keyspace) LevelsFormatFeatures() []string {
	if k.dropped || k.RateLimit.IsZero() {
		return nil
	}
	return []string{OptionKeyspaceRateLimit}
}

// FormatTypes is the data format version from which a release of kvnode decodes columns of the
// duration type, frozen collections and tuples in a table's schema (a parametric type is stored
// as its own code and name, see typeCodes). A node of an older format refuses a schema with a column
// type it does not know, so coordinators refuse such a table while a member of an older format
// remains.
const FormatTypes = 4

// TypesFormatFeatures returns the names of t's features that a release of a data format before
// FormatTypes cannot decode: its columns, dropped ones included, of the types added with it.
func (t *Table) TypesFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, c := range t.Columns {
		if newType(c.Type) {
			fs = append(fs, fmt.Sprintf("column %s of type %s", cql.QuoteIdent(c.Name), c.Type))
		}
	}
	for _, c := range t.droppedCols {
		if newType(c.Type) {
			fs = append(fs, fmt.Sprintf("a record of dropped column %s of type %s", cql.QuoteIdent(c.Name), c.Type))
		}
	}
	return fs
}

// newType reports whether t is one of the types added with FormatTypes: duration and the
// parametric ones, whose codes a release of an older format does not know.
func newType(t Type) bool {
	return typeCode(t) >= typeCode(TypeDuration)
}

// FormatUDTKeys is the data format version from which a release of kvnode encodes a user type
// in a primary key column (replica's clustering key encoding of a user type ends with a marker
// that one of an older format does not write); such a release also refuses the table. So
// coordinators refuse such a table while a member of an older format remains.
const FormatUDTKeys = 6

// FormatLWT is the data format version from which a release of kvnode serves lightweight
// transactions: it answers the Paxos exchanges and keeps Paxos state per partition (replica's
// paxos.go). Coordinators refuse conditional statements and SERIAL reads while a member of an
// older format remains, which would answer its part of every round UNIMPLEMENTED.
const FormatLWT = 9

// UDTKeysFormatFeatures returns the names of t's features that a release of a data format before
// FormatUDTKeys cannot serve: its primary key columns of a type holding a user type.
func (t *Table) UDTKeysFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, c := range slices.Concat(t.PartitionKey, t.Clustering) {
		if strings.Contains(string(c.Type), "udt<") {
			fs = append(fs, fmt.Sprintf("primary key column %s of type %s", cql.QuoteIdent(c.Name), c.Type.CQL()))
		}
	}
	return fs
}

// FormatNTS is the data format version from which a release of kvnode decodes a keyspace under
// NetworkTopologyStrategy (keyspace flag 32) and places its replicas per data center. A node of
// an older format refuses a schema with one, so coordinators refuse it while such a member
// remains.
const FormatNTS = 8

// NTSFormatFeatures returns the names of k's features that a release of a data format before
// FormatNTS cannot decode: NetworkTopologyStrategy.
func (k *Keyspace) NTSFormatFeatures() []string {
	if k.dropped || len(k.DataCenters) == 0 {
		return nil
	}
	return []string{"replication class NetworkTopologyStrategy"}
}

// FormatNeed is a feature of a schema entry that only releases of data format Format or later
// decode.
type FormatNeed struct {
	Format  int
	Feature string
}

// FormatNeeds returns what the entry of keyspace ks (table "") or of table ks.table holds that
// releases of older data formats cannot decode, with the format each needs, and the entry's
// name for an error; the service levels when ks is LevelsKey. A coordinator refuses a change
// that leaves such a feature while a member of an older format remains: that member would
// refuse the whole schema and fall out of schema agreement (and, for FormatExpiring, store
// expiring writes as never expiring). A missing entry needs nothing.
func (s *Schema) FormatNeeds(ks, table string) (what string, needs []FormatNeed) {
	add := func(format int, fs []string) {
		for _, f := range fs {
			needs = append(needs, FormatNeed{Format: format, Feature: f})
		}
	}
	switch {
	case ks == LevelsKey:
		what = "the schema"
		add(FormatLevels, s.LevelFormatFeatures())
	case table == "":
		k, ok := s.Keyspace(ks)
		if !ok {
			return "", nil
		}
		what = "keyspace " + ks
		add(FormatExpiring, k.FormatFeatures())
		add(FormatLevels, k.LevelsFormatFeatures())
		add(FormatUDT, k.UDTFormatFeatures())
		add(FormatNTS, k.NTSFormatFeatures())
	default:
		t, ok := s.Table(ks, table)
		if !ok {
			return "", nil
		}
		what = "table " + ks + "." + table
		add(FormatExpiring, t.FormatFeatures())
		add(FormatTypes, t.TypesFormatFeatures())
		add(FormatUDT, t.UDTFormatFeatures())
		add(FormatUDTKeys, t.UDTKeysFormatFeatures())
		add(FormatCollections, t.CollectionsFormatFeatures())
		add(FormatCounters, t.CountersFormatFeatures())
		add(FormatStatic, t.StaticFormatFeatures())
		add(FormatIndexes, t.IndexesFormatFeatures())
	}
	return what, needs
}
