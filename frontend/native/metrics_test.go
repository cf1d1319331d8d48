package native

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/cqlwire"
)

func TestMetrics(t *testing.T) {
	s, addr := startServer(t, Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	c := dial(t, addr)
	c.startup(nil)
	c.roundTrip(cqlwire.Options{})
	c.roundTrip(&cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	c.roundTrip(&cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: 0x99}})
	for _, tc := range []struct {
		c    prometheus.Collector
		want float64
		what string
	}{
		{s.metrics.connections, 1, "open connections"},
		{s.metrics.accepted, 1, "accepted connections"},
		{s.metrics.requests.WithLabelValues("QUERY"), 2, "QUERY requests"},
		{s.metrics.requests.WithLabelValues("OPTIONS"), 1, "OPTIONS requests"},
		{s.metrics.requests.WithLabelValues("STARTUP"), 1, "STARTUP requests"},
		{s.metrics.errors.WithLabelValues("invalid"), 1, "Invalid errors"},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.what, got, tc.want)
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Errorf("the registry gathers %d series (err %v)", n, err)
	}
}
