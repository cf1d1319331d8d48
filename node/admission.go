package node

import (
	"context"
	"fmt"

	"github.com/kvnode/kvnode/frontend/admission"
)

// newAdmission returns the node's admission controller, shared by both client front ends, and
// registers its metrics. Internode requests (package internode, on the internode listener)
// never pass through it.
func (n *Node) newAdmission() (*admission.Controller, error) {
	a, err := admission.New(n.cfg.Admission)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.registry.MustRegister(a)
	return a, nil
}

// Admission returns the node's admission controller (tests fill its slots to see the node
// shed).
func (n *Node) Admission() *admission.Controller { return n.admission }

// scanPacer gives the coordinator's scans the node's admission controller (shell.ScanPacer),
// which is made after the executor: it is read when a scan runs, once the node serves.
type scanPacer struct{ n *Node }

func (p scanPacer) Pace(ctx context.Context, rows, bytes int) error {
	return p.n.admission.Pace(ctx, rows, bytes)
}
