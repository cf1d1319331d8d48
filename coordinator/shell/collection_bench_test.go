package shell_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// BenchmarkCollectionUpdate compares an update of a non-frozen collection's elements with a
// scalar update of the same row, in one run, through an Executor over three in-process replicas
// (in-memory pebble): replica-reads/op counts the replica reads each update makes (a set or map
// update makes none: Cassandra's cell-per-element writes), cpu-ns/op the process's CPU time per
// update (every goroutine: coordinator and replicas), the server CPU of an update.
func BenchmarkCollectionUpdate(b *testing.B) {
	for _, bm := range []struct{ name, stmt string }{
		{"scalar", "UPDATE c SET n = ? WHERE k = 1"},
		{"set-add", "UPDATE c SET s = s + {?} WHERE k = 1"},
		{"map-put", "UPDATE c SET m['a'] = ? WHERE k = 1"},
		{"map-add", "UPDATE c SET m = m + {'b': ?} WHERE k = 1"},
		{"list-append", "UPDATE c SET l = l + ['x'], n = ? WHERE k = 1"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			c := newCluster(b, options{draw: 0.99})
			c.must(schemaCollections...)
			e := c.executors["n1"]
			ctx := context.Background()
			p, err := e.Prepare(ctx, bm.stmt, "ks")
			if err != nil {
				b.Fatal(err)
			}
			req := coordinator.Statement{Prepared: p, Consistency: quorum, Values: []coordinator.Value{intv(1)}}
			c.settle()
			reads := c.transport.readCount()
			cpu := processCPU()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Execute(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			c.settle()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(c.transport.readCount()-reads)/float64(b.N), "replica-reads/op")
		})
	}
}

// processCPU returns the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readCount returns how many ReadRequests the replicas answered.
func (t *transport) readCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reads
}
