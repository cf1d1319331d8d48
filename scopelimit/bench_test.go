package scopelimit

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/partitionlimit"
)

// The benchmarks set a scope's decision beside partitionlimit's Table.Decide, the partition
// decision every accepted write already pays, on the same times (a million operations per
// simulated second) and limits:
//
//	go test -run '^$' -bench . -benchmem ./scopelimit/
//
// admitted: one scope far under its limit; rejected: one scope at 1000× its limit (almost every
// request rejected); chain3: a client level, an organization's level and a keyspace, all
// admitting; drain: a coordinator's 20 ms drain of 3 scopes.

func BenchmarkScopeDecide(b *testing.B) {
	for _, bc := range []struct {
		name  string
		chain []Scope
	}{
		{"admitted", []Scope{{ID: 1, Label: 1, Limit: 1 << 30}}},
		{"rejected", []Scope{{ID: 1, Label: 1, Limit: 1000}}},
		{"chain3", []Scope{{ID: 1, Label: 1, Limit: 1 << 30}, {ID: 2, Label: 1, Limit: 1 << 30}, {ID: 3, Label: 2, Limit: 1 << 30}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLimiter(b)
			var i int
			for b.Loop() {
				l.Decide(bc.chain, uint64(i), epoch.Add(time.Duration(i)*time.Microsecond))
				i++
			}
		})
	}
	b.Run("drain", func(b *testing.B) {
		l := newLimiter(b)
		chain := []Scope{{ID: 1, Label: 1, Limit: 1 << 30}, {ID: 2, Label: 1, Limit: 1 << 30}, {ID: 3, Label: 2, Limit: 1 << 30}}
		buf := make([]Delta, 0, 8)
		var i int
		for b.Loop() {
			l.Decide(chain, uint64(i), epoch)
			buf = l.Drain(buf[:0])
			i++
		}
	})
}

// BenchmarkPartitionDecide is partitionlimit's decision of one hot partition, for comparison.
func BenchmarkPartitionDecide(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit uint32
	}{{"admitted", 1 << 30}, {"rejected", 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			tb, err := partitionlimit.New(partitionlimit.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var i int
			for b.Loop() {
				tb.Decide(1, 1, bc.limit, Draw(uint64(i), 0), epoch.Add(time.Duration(i)*time.Microsecond))
				i++
			}
		})
	}
}
