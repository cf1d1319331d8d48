package native

import (
	"bufio"
	"net"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/cqlwire"
)

// The floor under the server's per-request cost: OPTIONS on a started connection answered by
// this package's server and, in the same run, by a minimal server (a goroutine per connection
// reading frames and writing SUPPORTED, nothing else), one request at a time and 16 pipelined.
// Besides the wall time, each reports cpu-ns/request: the process's CPU (client and server
// together, from getrusage) per request. test/perf's floor part measures the server alone,
// in processes of their own.

// startFloorServer starts the minimal server on loopback and returns its address; it stops at
// the end of the benchmark.
func startFloorServer(b *testing.B) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	supported := newSupported()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() { floorServe(nc, supported) })
		}
	})
	b.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return lis.Addr().String()
}

// floorServe answers STARTUP with READY and OPTIONS with SUPPORTED on nc, writing the answers
// to the frames read together at once, until nc fails or a frame is anything else.
func floorServe(nc net.Conn, supported cqlwire.Message) {
	br := bufio.NewReader(nc)
	fr := cqlwire.NewFrameReader(br, cqlwire.ReaderOptions{})
	var out []byte
	for {
		h, _, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch h.Opcode {
		case cqlwire.OpOptions:
			out = cqlwire.AppendFrame(out, h.Stream, supported, cqlwire.FrameOptions{})
		case cqlwire.OpStartup:
			out = cqlwire.AppendFrame(out, h.Stream, cqlwire.Ready{}, cqlwire.FrameOptions{})
		default:
			return
		}
		if br.Buffered() == 0 {
			if _, err := nc.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
	}
}

// benchOptions sends OPTIONS to addr after STARTUP, depth frames in one write at a time, and
// reports the CPU per request besides the wall time per depth requests.
func benchOptions(b *testing.B, addr string, depth int) {
	c := dial(b, addr)
	c.startup(nil)
	var batch []byte
	for i := range depth {
		batch = cqlwire.AppendFrame(batch, int16(i+1), cqlwire.Options{}, cqlwire.FrameOptions{})
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU(b)
	n := 0
	for b.Loop() {
		c.nc.Write(batch)
		for range depth {
			if h, _, err := c.fr.ReadFrame(); err != nil || h.Opcode != cqlwire.OpSupported {
				b.Fatalf("OPTIONS answered %v (%v), want SUPPORTED", h.Opcode, err)
			}
		}
		n += depth
	}
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(n), "cpu-ns/request")
}

// BenchmarkOptionsFloor runs OPTIONS against the server and the minimal server in one run.
func BenchmarkOptionsFloor(b *testing.B) {
	for _, depth := range []int{1, 16} {
		name := "one"
		if depth > 1 {
			name = "pipelined16"
		}
		b.Run(name+"/native", func(b *testing.B) {
			_, addr := startServer(b, Config{})
			benchOptions(b, addr, depth)
		})
		b.Run(name+"/floor", func(b *testing.B) {
			benchOptions(b, startFloorServer(b), depth)
		})
	}
}
