package native

import (
	"context"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// The per-request overhead of the server: one connection over loopback TCP, one request at a
// time (a round trip), against an executor that answers at once. The allocations counted are
// the client's and the server's together; the client's reuse their buffers.

func benchRoundTrip(b *testing.B, exec Executor, m cqlwire.Message) {
	_, addr := startServer(b, Config{Executor: exec})
	c := dial(b, addr)
	c.startup(nil)
	frame := cqlwire.AppendFrame(nil, 1, m, cqlwire.FrameOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.nc.Write(frame)
		if _, _, err := c.fr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOptionsRoundTrip(b *testing.B) {
	benchRoundTrip(b, &fakeExecutor{}, cqlwire.Options{})
}

func BenchmarkQueryRoundTrip(b *testing.B) {
	exec := &fakeExecutor{execute: func(context.Context, coordinator.Statement) (coordinator.Result, error) {
		return coordinator.Result{}, nil
	}}
	benchRoundTrip(b, exec, &cqlwire.Query{Query: "INSERT INTO ks.t (k, v) VALUES (?, ?)",
		Params: cqlwire.QueryParams{Consistency: cqlwire.Quorum, Values: []cqlwire.Value{{Bytes: []byte("key")}, {Bytes: []byte{0, 0, 0, 1}}}}})
}

func BenchmarkSelectRoundTrip10Rows(b *testing.B) {
	rows := &coordinator.Rows{Keyspace: "ks", Table: "t",
		Columns: []coordinator.RowColumn{{Name: "k", Type: schema.TypeText}, {Name: "c", Type: schema.TypeInt}, {Name: "v", Type: schema.TypeBlob}}}
	for i := range 10 {
		rows.Values = append(rows.Values, [][]byte{[]byte("key"), {0, 0, 0, byte(i)}, make([]byte, 32)})
	}
	exec := &fakeExecutor{execute: func(context.Context, coordinator.Statement) (coordinator.Result, error) {
		return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}, nil
	}}
	benchRoundTrip(b, exec, &cqlwire.Query{Query: "SELECT * FROM ks.t WHERE k = ?",
		Params: cqlwire.QueryParams{Consistency: cqlwire.One, Values: []cqlwire.Value{{Bytes: []byte("key")}}}})
}

// BenchmarkQueryPipelined keeps 64 requests in flight on one connection: the writer batches
// the answers that are queued together into one write.
func BenchmarkQueryPipelined(b *testing.B) {
	_, addr := startServer(b, Config{})
	c := dial(b, addr)
	c.startup(nil)
	const depth = 64
	q := &cqlwire.Query{Query: "INSERT", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
	var batch []byte
	for i := range depth {
		batch = cqlwire.AppendFrame(batch, int16(i), q, cqlwire.FrameOptions{})
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		c.nc.Write(batch)
		for range depth {
			if _, _, err := c.fr.ReadFrame(); err != nil {
				b.Fatal(err)
			}
		}
		n += depth
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/request")
}
