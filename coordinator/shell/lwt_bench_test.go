package shell_test

import (
	"fmt"
	"testing"
)

// BenchmarkLWT measures an uncontended INSERT ... IF NOT EXISTS against a plain QUORUM INSERT
// on the in-process three-replica harness (no network: the coordinator's and replicas' CPU).
func BenchmarkLWT(b *testing.B) {
	for _, kind := range []string{"quorum_write", "lwt"} {
		b.Run(kind, func(b *testing.B) {
			c := newCluster(b, options{})
			c.must(schemaRF3...)
			suffix := ""
			if kind == "lwt" {
				suffix = " IF NOT EXISTS"
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := c.exec("n1", quorum, fmt.Sprintf("INSERT INTO t (k, c, v, w) VALUES ('b%d', 1, 'x', 1)%s", i, suffix)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
