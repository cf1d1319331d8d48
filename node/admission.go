package node

import (
	"fmt"

	"github.com/kvnode/kvnode/frontend/admission"
)

// admissionConfig is the node's admission control configuration.
func (c *Config) admissionConfig() admission.Config {
	return admission.Config{MaxConcurrent: c.MaxConcurrentRequests, MaxQueued: c.MaxQueuedRequests, QueueTimeout: c.RequestQueueTimeout}
}

// ensureAdmissionDefaults fills in the admission bounds derived from the machine.
func (c *Config) ensureAdmissionDefaults() {
	a := c.admissionConfig()
	a.EnsureDefaults()
	c.MaxConcurrentRequests, c.MaxQueuedRequests, c.RequestQueueTimeout = a.MaxConcurrent, a.MaxQueued, a.QueueTimeout
}

// validateAdmission checks the admission bounds.
func (c *Config) validateAdmission() error {
	switch {
	case c.MaxConcurrentRequests < 1:
		return fmt.Errorf("node: Config.MaxConcurrentRequests (max_concurrent_requests) is %d, want ≥ 1", c.MaxConcurrentRequests)
	case c.RequestQueueTimeout <= 0:
		return fmt.Errorf("node: Config.RequestQueueTimeout (request_queue_timeout) is %v, want a positive duration", c.RequestQueueTimeout)
	}
	return nil
}

// newAdmission returns the node's admission controller, shared by both client front ends, and
// registers its metrics. Internode requests (package internode, on the internode listener)
// never pass through it.
func (n *Node) newAdmission() (*admission.Controller, error) {
	a, err := admission.New(n.cfg.admissionConfig())
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.registry.MustRegister(a)
	return a, nil
}

// Admission returns the node's admission controller (tests fill its slots to see the node
// shed).
func (n *Node) Admission() *admission.Controller { return n.admission }
