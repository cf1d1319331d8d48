package native

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/cqlwire"
)

// metrics are the server's Prometheus metrics, registered on the node's registry through
// Server.Collector.
type metrics struct {
	connections prometheus.Gauge
	accepted    prometheus.Counter
	refused     prometheus.Counter
	panics      prometheus.Counter
	requests    *prometheus.CounterVec
	byOpcode    [256]prometheus.Counter // requests' children, resolved once
	errors      *prometheus.CounterVec
	byCode      map[cqlwire.ErrorCode]prometheus.Counter // errors' children of the common codes, resolved once
}

func newMetrics() *metrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "kvnode", Subsystem: "native", Name: name, Help: help}
	}
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts(opts("connections", "Open native protocol client connections."))),
		accepted:    prometheus.NewCounter(prometheus.CounterOpts(opts("connections_accepted_total", "Native protocol connections accepted."))),
		refused: prometheus.NewCounter(prometheus.CounterOpts(opts("connections_refused_total",
			"Native protocol connections refused because the node was at a connection limit (max_native_connections, max_connections_per_host, or 16 connections of one host not yet started or logged in)."))),
		panics: prometheus.NewCounter(prometheus.CounterOpts(opts("panics_total",
			"Panics (bugs in the node) recovered on native protocol connections instead of ending the process: a statement's is answered SERVER_ERROR, a reader's closes its connection. Each is logged with its stack."))),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts(opts("requests_total", "Native protocol requests read, by opcode.")), []string{"opcode"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts(opts("errors_total",
			"Native protocol ERROR answers, by error code.")), []string{"code"}),
	}
	m.byCode = map[cqlwire.ErrorCode]prometheus.Counter{}
	for _, code := range []cqlwire.ErrorCode{cqlwire.ErrRateLimit, cqlwire.ErrConfig, cqlwire.ErrOverloaded} {
		m.byCode[code] = m.errors.WithLabelValues(errorCodeName(code))
	}
	for op := range 256 {
		if cqlwire.Opcode(op).IsRequest() {
			m.byOpcode[op] = m.requests.WithLabelValues(cqlwire.Opcode(op).String())
		}
	}
	return m
}

// request counts a request frame; frames of other opcodes never get this far.
func (m *metrics) request(op cqlwire.Opcode) {
	if c := m.byOpcode[op]; c != nil {
		c.Inc()
	}
}

// errorCount returns the counter of ERROR answers with code.
func (m *metrics) errorCount(code cqlwire.ErrorCode) prometheus.Counter {
	if c, ok := m.byCode[code]; ok {
		return c
	}
	return m.errors.WithLabelValues(errorCodeName(code))
}

// Collector returns the server's metrics for the node's registry.
func (s *Server) Collector() prometheus.Collector { return s.metrics }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.connections.Describe(ch)
	m.accepted.Describe(ch)
	m.refused.Describe(ch)
	m.panics.Describe(ch)
	m.requests.Describe(ch)
	m.errors.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.connections.Collect(ch)
	m.accepted.Collect(ch)
	m.refused.Collect(ch)
	m.panics.Collect(ch)
	m.requests.Collect(ch)
	m.errors.Collect(ch)
}
