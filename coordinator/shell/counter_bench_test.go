package shell_test

import (
	"context"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
)

// BenchmarkCounterUpdate measures an increment against a plain write of the same shape, in the
// same run, through an Executor over three in-process replicas (in-memory pebble, no fsync) at
// QUORUM: the increment's leader reads its shard before writing, and the shard then goes to
// the other two replicas. Compare the two as a ratio.
func BenchmarkCounterUpdate(b *testing.B) {
	for _, bm := range []struct{ name, stmt string }{
		{"write", "UPDATE w SET v = 5 WHERE k = 'a' AND r = 1"},
		{"counter", "UPDATE ctr SET n = n + 5 WHERE k = 'a' AND r = 1"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			c := newCluster(b, options{})
			c.must(counterSchema...)
			c.must("CREATE TABLE ks.w (k text, r int, v bigint, PRIMARY KEY (k, r))")
			e := c.executors["n1"]
			req := coordinatorStatement(bm.stmt)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Execute(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.settle()
		})
	}
}

func coordinatorStatement(text string) coordinator.Statement {
	return coordinator.Statement{Text: text, Consistency: quorum, Keyspace: "ks"}
}
