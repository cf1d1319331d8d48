package internode

import (
	"context"
	"net"
	"reflect"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// benchMutate is a small write: one row of two cells, as most writes are.
func benchMutate() *replicapb.MutateRequest {
	return &replicapb.MutateRequest{
		Limiter: &replicapb.Limiter{Mode: replicapb.Limiter_ACCOUNT_AND_ENFORCE, Draw: 0.42, StampUnixNanos: 1_700_000_000_000_000_000},
		Mutation: &replicapb.Mutation{TableId: 7, PartitionKey: [][]byte{[]byte("user-12345")}, Token: -4_000_000_000,
			Rows: []*replicapb.Row{{Clustering: [][]byte{[]byte("2024-01-01")}, Cells: []*replicapb.Cell{
				{Column: "name", Value: []byte("Ada Lovelace"), Timestamp: 1_700_000_000_000_000},
				{Column: "score", Value: []byte{0, 0, 0, 42}, Timestamp: 1_700_000_000_000_000},
			}}}},
	}
}

// mutateOKResponse is the handler of every variant; not inlined, so that calling it directly
// costs what calling a replica's handler does.
//
//go:noinline
func mutateOKResponse(context.Context, *replicapb.MutateRequest) (*replicapb.MutateResponse, error) {
	return &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK}, nil
}

// BenchmarkWrap measures what the seam adds to one remote call in CPU: finding the request's
// kind and wrapping it (caller), unwrapping it and finding its kind (server), wrapping the answer
// (server) and unwrapping it (caller). "switch" is what the package does (wire.go);
// "protoreflect" does the same through protoreflect's oneof accessors, which the package
// avoids for their cost.
func BenchmarkWrap(b *testing.B) {
	req := benchMutate()
	resp := &replicapb.MutateResponse{Status: replicapb.Status_STATUS_OK}
	k := newKinds()
	b.Run("switch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i, err := k.kindOf(req)
			if err != nil {
				b.Fatal(err)
			}
			r, err := k.wrap(i, req)
			if err != nil {
				b.Fatal(err)
			}
			j, _, err := k.unwrap(r)
			if err != nil {
				b.Fatal(err)
			}
			w, err := k.respond(j, resp)
			if err != nil {
				b.Fatal(err)
			}
			m, err := k.unwrapResponse(w)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := m.(*replicapb.MutateResponse); !ok {
				b.Fatal("wrong answer")
			}
		}
	})
	b.Run("protoreflect", func(b *testing.B) {
		respField := k.byResp[reflect.TypeFor[*replicapb.MutateResponse]()]
		b.ReportAllocs()
		for b.Loop() {
			i, err := k.kindOf(req)
			if err != nil {
				b.Fatal(err)
			}
			r := &replicapb.Request{}
			r.ProtoReflect().Set(k.req[i], protoreflect.ValueOfMessage(req.ProtoReflect()))
			rm := r.ProtoReflect()
			fd := rm.WhichOneof(k.reqOneof)
			if _, err := k.kindOf(rm.Get(fd).Message().Interface()); err != nil {
				b.Fatal(err)
			}
			w := &replicapb.Response{}
			w.ProtoReflect().Set(respField, protoreflect.ValueOfMessage(resp.ProtoReflect()))
			wm := w.ProtoReflect()
			m := wm.Get(wm.WhichOneof(k.respOneof)).Message().Interface()
			if _, ok := m.(*replicapb.MutateResponse); !ok {
				b.Fatal("wrong answer")
			}
		}
	})
}

// plainReplica is a per-method gRPC service with one unary method, Mutate, as the Replica
// service the seam replaced was (protoc-gen-go-grpc generates the same descriptor): the
// baseline of BenchmarkCall.
var plainReplica = grpc.ServiceDesc{
	ServiceName: "bench.Replica",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Mutate",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := new(replicapb.MutateRequest)
			if err := dec(req); err != nil {
				return nil, err
			}
			return mutateOKResponse(ctx, req)
		},
	}},
}

// BenchmarkCall compares a Mutate over the seam with the per-service gRPC method it replaced,
// over loopback TCP and in process.
func BenchmarkCall(b *testing.B) {
	req := benchMutate()
	ctx := b.Context()
	b.Run("grpc-Replica.Mutate", func(b *testing.B) {
		lis := listen(b)
		srv := grpc.NewServer()
		srv.RegisterService(&plainReplica, nil)
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(lis) }()
		b.Cleanup(func() { srv.Stop(); <-done })
		conn := dial(b, lis.Addr().String())
		b.ReportAllocs()
		for b.Loop() {
			if err := conn.Invoke(ctx, "/bench.Replica/Mutate", req, new(replicapb.MutateResponse)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// internode-Call goes on the framed protocol, internode-Call-grpc-pipe on a gRPC Pipe stream
	// (a peer without the framed protocol); -parallel with 16 callers at once per CPU.
	for _, framed := range []bool{true, false} {
		name := "internode-Call"
		if !framed {
			name += "-grpc-pipe"
		}
		sender := func(b *testing.B) *Sender {
			m := NewMux()
			Handle(m, mutateOKResponse)
			book := &addrBook{}
			if framed {
				book.set("n2", serveFramed(b, m))
			} else {
				book.set("n2", serve(b, m))
			}
			return newSender(b, Options{Self: "n1", Addresses: book})
		}
		b.Run(name, func(b *testing.B) {
			s := sender(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Call[*replicapb.MutateResponse](ctx, s, "n2", req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			s := sender(b)
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := Call[*replicapb.MutateResponse](ctx, s, "n2", req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	b.Run("local-direct", func(b *testing.B) {
		f := mutateOKResponse
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local-Call", func(b *testing.B) {
		m := NewMux()
		Handle(m, mutateOKResponse)
		s := newSender(b, Options{Self: "n1", Local: m, Addresses: &addrBook{}})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Call[*replicapb.MutateResponse](ctx, s, "n1", req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// serveFramed serves m on a loopback listener as a node does: the framed protocol beside gRPC.
func serveFramed(t testing.TB, m *Mux) string {
	t.Helper()
	f := NewFramedServer(m, FramedServerOptions{})
	addr := serveOn(t, f.Split(listen(t)), m)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f.Stop(ctx)
	})
	return addr
}

// BenchmarkPipeCoalescing measures what a framed pipe's remote Mutate costs in CPU (both ends,
// this process's user and system time per call, "cpu-µs/op") with 32 callers at once per CPU:
// "yield" as the pipes write (a writer that finds other requests in flight yields once before
// writing, so that one write carries the requests queued meanwhile), "noyield" with each
// request written at once, the code before; run them in the same invocation to compare.
func BenchmarkPipeCoalescing(b *testing.B) {
	req := benchMutate()
	ctx := b.Context()
	for _, yield := range []bool{true, false} {
		name := "yield"
		if !yield {
			name = "noyield"
		}
		b.Run(name, func(b *testing.B) {
			m := NewMux()
			Handle(m, mutateOKResponse)
			book := &addrBook{}
			book.set("n2", serveFramed(b, m))
			s := newSender(b, Options{Self: "n1", Addresses: book})
			s.pipeNoYield = !yield
			b.SetParallelism(32)
			b.ReportAllocs()
			defer reportCPU(b, processCPU(b))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := Call[*replicapb.MutateResponse](ctx, s, "n2", req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// reportCPU reports the CPU time this process used since it had used before, per op, in
// "cpu-ns/op": what a benchmark costs when other work shares the machine's cores, which its
// ns/op does not tell.
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64(processCPU(b)-before)/float64(b.N), "cpu-ns/op")
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
