package shell

import "github.com/kvnode/kvnode/coordinator"

// UnrepairedRing is implemented by a Ring that knows the replicas that must not serve reads: a
// node started despite a corrupt write-ahead log lost writes it acknowledged, and counts toward
// no read consistency level until a repair run on it completes. Writes still go to it.
type UnrepairedRing interface {
	// IsUnrepaired reports whether id must not count toward a read's consistency level. It is
	// called for every replica of every read: it must be cheap.
	IsUnrepaired(id coordinator.NodeID) bool
}

// skipUnrepaired leaves the unrepaired replicas out of p, a read's parameters, as if they were
// down: the read is answered by the others, or is unavailable when too few remain (a read at
// ALL always is). When the coordinator itself is unrepaired it is no longer Self either: the
// read goes to the other replicas as if it were not one.
func (e *Executor) skipUnrepaired(p *coordinator.Params) {
	ur, ok := e.ring.(UnrepairedRing)
	if !ok {
		return
	}
	for i := range p.Replicas {
		if ur.IsUnrepaired(p.Replicas[i].ID) {
			p.Replicas[i].Down = true
			if p.Replicas[i].ID == p.Self {
				p.Self = ""
			}
		}
	}
}
