package repair

import (
	"fmt"
	"math"
	"slices"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// Ring is one view of the token ring: the node hands repair a snapshot, so that a table's ranges
// and their replicas come from the same ring.
type Ring interface {
	// Tokens returns every token of the ring's members, in any order.
	Tokens() []int64
	// Replicas returns the replicas of token under placement rf, in ring order.
	Replicas(token int64, rf schema.Replication) []coordinator.NodeID
}

// Range is one token range to repair and its replicas.
type Range struct {
	Range    replica.TokenRange
	Replicas []coordinator.NodeID
}

// LocalRanges returns the token ranges of ring that self replicates under placement rf,
// each with its replicas, in token order. The range that wraps around the ring is split in two,
// (last token, MaxInt64] and (MinInt64, first token].
func LocalRanges(ring Ring, self coordinator.NodeID, rf schema.Replication) []Range {
	tokens := slices.Clone(ring.Tokens())
	slices.Sort(tokens)
	tokens = slices.Compact(tokens)
	if len(tokens) == 0 {
		return nil
	}
	var out []Range
	add := func(r replica.TokenRange, owner int64) {
		if r.Start >= r.End {
			return
		}
		ids := ring.Replicas(owner, rf)
		if !slices.Contains(ids, self) {
			return
		}
		out = append(out, Range{Range: r, Replicas: slices.Clone(ids)})
	}
	add(replica.TokenRange{Start: math.MinInt64, End: tokens[0]}, tokens[0])
	for i := 1; i < len(tokens); i++ {
		add(replica.TokenRange{Start: tokens[i-1], End: tokens[i]}, tokens[i])
	}
	add(replica.TokenRange{Start: tokens[len(tokens)-1], End: math.MaxInt64}, tokens[0])
	return out
}

// Select returns the tables of s a repair of keyspace and table names: every table when both
// are empty, the keyspace's when only table is, or the one table. It fails, naming what is
// wrong, for an unknown keyspace or table, or a table without its keyspace.
func Select(s *schema.Schema, keyspace, table string) ([]*schema.Table, error) {
	switch {
	case keyspace == "" && table != "":
		return nil, fmt.Errorf("repair: table %s needs its keyspace (KEYSPACE.TABLE)", cql.QuoteIdent(table))
	case keyspace == "":
		var out []*schema.Table
		for _, k := range s.Keyspaces() {
			out = append(out, s.Tables(k.Name)...)
		}
		return out, nil
	}
	if _, ok := s.Keyspace(keyspace); !ok {
		return nil, fmt.Errorf("repair: unknown keyspace %s", cql.QuoteIdent(keyspace))
	}
	if table == "" {
		return s.Tables(keyspace), nil
	}
	t, ok := s.Table(keyspace, table)
	if !ok {
		return nil, fmt.Errorf("repair: unknown table %s.%s", cql.QuoteIdent(keyspace), cql.QuoteIdent(table))
	}
	return []*schema.Table{t}, nil
}
