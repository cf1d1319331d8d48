package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Replication is a keyspace's replica placement: SimpleStrategy's Factor replicas in ring order
// when DataCenters is empty, else NetworkTopologyStrategy's replication factor per data center
// (Factor is then ignored; Keyspace.Replication sets it to their total).
type Replication struct {
	Factor      int
	DataCenters []DCFactor // sorted by DC, each DC once, each RF ≥ 1
}

// Simple returns SimpleStrategy's placement at replication factor rf.
func Simple(rf int) Replication { return Replication{Factor: rf} }

// NetworkTopology returns NetworkTopologyStrategy's placement with the replication factor of each
// data center in rfs; data centers with a factor of 0 place nothing and are left out. It refuses
// a negative factor or a name that is no data center's.
func NetworkTopology(rfs map[string]int) (Replication, error) {
	var p Replication
	for dc, rf := range rfs {
		if err := checkDataCenterName(dc); err != nil {
			return Replication{}, err
		}
		if rf < 0 {
			return Replication{}, fmt.Errorf("data center %q: replication factor %d is negative", dc, rf)
		}
		if rf > 0 {
			p.DataCenters = append(p.DataCenters, DCFactor{DC: dc, RF: rf})
		}
	}
	slices.SortFunc(p.DataCenters, func(a, b DCFactor) int { return cmp.Compare(a.DC, b.DC) })
	return p, nil
}

// Total returns the number of replicas the placement asks for: Factor, or the sum of the data
// centers' factors (Cassandra's QUORUM counts over it).
func (p Replication) Total() int {
	if len(p.DataCenters) == 0 {
		return p.Factor
	}
	n := 0
	for _, f := range p.DataCenters {
		n += f.RF
	}
	return n
}

// InDC returns the replication factor of data center dc: Factor under SimpleStrategy, which
// does not place by data center, else the data center's factor (0 when it has none).
func (p Replication) InDC(dc string) int {
	if len(p.DataCenters) == 0 {
		return p.Factor
	}
	if i, ok := slices.BinarySearchFunc(p.DataCenters, dc, func(f DCFactor, dc string) int { return cmp.Compare(f.DC, dc) }); ok {
		return p.DataCenters[i].RF
	}
	return 0
}

// Equal reports whether p and o place alike.
func (p Replication) Equal(o Replication) bool {
	if len(p.DataCenters) == 0 && len(o.DataCenters) == 0 {
		return p.Factor == o.Factor
	}
	return slices.Equal(p.DataCenters, o.DataCenters)
}

// String returns the placement as CQL's replication map writes it.
func (p Replication) String() string {
	if len(p.DataCenters) == 0 {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", p.Factor)
	}
	var b strings.Builder
	b.WriteString("{'class': 'NetworkTopologyStrategy'")
	for _, f := range p.DataCenters {
		fmt.Fprintf(&b, ", '%s': %d", f.DC, f.RF)
	}
	b.WriteString("}")
	return b.String()
}

// Replication returns k's placement.
func (k *Keyspace) Replication() Replication {
	return Replication{Factor: k.ReplicationFactor, DataCenters: k.DataCenters}
}
