package native_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/gopool"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/replica"
)

// BenchmarkServerCost measures what one request costs the server, in CPU, on a real node (pebble
// on disk without fsync, the listeners on loopback), over both client protocols in the same run:
//
//	noop      OPTIONS (native) and the health check (gRPC): a request that does nothing
//	accepted  a write the limiter admits (the table's limit is never reached)
//	rejected  a write to a hot partition of a table limited to 1 write/s, which this node (a
//	          replica of every partition: one node, RF 1) rejects on the coordinator path
//
// Native writes are prepared statements (what drivers send); gRPC writes are text, the only
// form that API has. The clients run in a child process (this test binary re-executed), so the
// node's process CPU (getrusage) over a run is the server's alone; each client keeps
// costDepth requests in flight (native: pipelined on one connection; gRPC: costDepth
// concurrent calls on one connection). The metrics are µs of server CPU per request, and the
// ratios the targets name: rejected/accepted on the native path, and native
// rejected/gRPC rejected. Run it with a fixed count, e.g.
//
//	go test -run '^$' -bench BenchmarkServerCost -benchtime 20000x ./frontend/native/
func BenchmarkServerCost(b *testing.B) {
	if b.N < 100 {
		return // the framework's first, one-request run; the measured run follows
	}
	nd := startCostNode(b)
	setupCostSchema(b, nd)
	kinds := []string{"native-noop", "native-accepted", "native-rejected", "grpc-noop", "grpc-accepted", "grpc-rejected"}
	if only := os.Getenv("KVNODE_COST_KINDS"); only != "" { // to profile one kind: -cpuprofile
		kinds = strings.Split(only, ",")
	}
	cpu := map[string]float64{}
	for _, kind := range kinds {
		spec := costSpec{Kind: kind, CQLAddr: nd.CQLAddr(), GRPCAddr: nd.Addr(), N: b.N, Depth: costDepth}
		before := processCPU(b)
		res := runCostClient(b, spec)
		used := processCPU(b) - before
		if want := costWant(kind); float64(res.Want) < 0.95*float64(b.N) {
			b.Fatalf("%s: %d of %d requests were %s (others: %v); the run does not measure what it says", kind, res.Want, b.N, want, res.Other)
		}
		cpu[kind] = float64(used.Microseconds()) / float64(b.N)
		b.ReportMetric(cpu[kind], kind+"-cpu-µs/req")
	}
	if len(cpu) == 6 {
		b.ReportMetric(cpu["native-rejected"]/cpu["native-accepted"], "native-rejected/accepted")
		b.ReportMetric(cpu["grpc-rejected"]/cpu["grpc-accepted"], "grpc-rejected/accepted")
		b.ReportMetric(cpu["native-rejected"]/cpu["grpc-rejected"], "native/grpc-rejected")
		b.ReportMetric(cpu["native-noop"]/cpu["grpc-noop"], "native/grpc-noop")
	}
}

// BenchmarkGoroutineReuse measures what reusing goroutines (internal/gopool, and gRPC's stream
// workers) saves a node, in server CPU per accepted write, over both protocols: the same
// requests as BenchmarkServerCost's accepted kind, b.N of each on each of four nodes built in
// turn with reuse off, on, on and off (so that what the first node pays falls on both), in the
// same run. The "on/off" metrics are the ratios of the two modes' means.
//
//	go test -run '^$' -bench BenchmarkGoroutineReuse -benchtime 20000x ./frontend/native/
func BenchmarkGoroutineReuse(b *testing.B) {
	if b.N < 100 {
		return // the framework's first, one-request run; the measured run follows
	}
	defer gopool.SetReuse(true)
	kinds := []string{"native-accepted", "grpc-accepted"}
	cpu := map[string]float64{}
	for _, reuse := range []bool{false, true, true, false} {
		gopool.SetReuse(reuse) // before the node is built: its gRPC servers read it
		nd := startCostNode(b)
		setupCostSchema(b, nd)
		mode := map[bool]string{false: "off", true: "on"}[reuse]
		for _, kind := range kinds {
			spec := costSpec{Kind: kind, CQLAddr: nd.CQLAddr(), GRPCAddr: nd.Addr(), N: b.N, Depth: costDepth}
			before := processCPU(b)
			res := runCostClient(b, spec)
			used := processCPU(b) - before
			if float64(res.Want) < 0.95*float64(b.N) {
				b.Fatalf("%s, reuse %s: %d of %d requests were applied (others: %v)", kind, mode, res.Want, b.N, res.Other)
			}
			cpu[kind+"-"+mode] += float64(used.Microseconds()) / float64(b.N) / 2
		}
		nd.Close()
	}
	for _, kind := range kinds {
		b.ReportMetric(cpu[kind+"-off"], kind+"-reuse-off-cpu-µs/req")
		b.ReportMetric(cpu[kind+"-on"], kind+"-reuse-on-cpu-µs/req")
		b.ReportMetric(cpu[kind+"-on"]/cpu[kind+"-off"], kind+"-on/off")
	}
}

// costDepth is how many requests each client keeps in flight.
const costDepth = 16

// costSpec tells the child process which requests to send.
type costSpec struct {
	Kind     string
	CQLAddr  string
	GRPCAddr string
	N        int
	Depth    int
}

// costResult is the child's tally: Want answers of the kind the run measures, Other the rest
// by name.
type costResult struct {
	Want  int
	Other map[string]int
	Err   string
}

func costWant(kind string) string {
	switch {
	case strings.HasSuffix(kind, "-noop"):
		return "answered"
	case strings.HasSuffix(kind, "-accepted"):
		return "applied"
	}
	return "rejected by the rate limit"
}

const costEnv = "KVNODE_COST_CLIENT"

// runCostClient runs the child process for spec and returns its tally.
func runCostClient(b *testing.B, spec costSpec) costResult {
	b.Helper()
	js, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCostClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), costEnv+"="+string(js))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("cost client %s: %v\n%s", spec.Kind, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if js, ok := strings.CutPrefix(line, "COST_RESULT "); ok {
			var res costResult
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				b.Fatalf("cost client %s: %v", spec.Kind, err)
			}
			if res.Err != "" {
				b.Fatalf("cost client %s: %s", spec.Kind, res.Err)
			}
			return res
		}
	}
	b.Fatalf("cost client %s printed no result:\n%s", spec.Kind, out)
	return costResult{}
}

// processCPU returns the user and system CPU this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCostNode(tb testing.TB) *node.Node {
	tb.Helper()
	nd, err := node.Start(context.Background(), node.Config{
		DataDir: filepath.Join(tb.TempDir(), "n"),
		Listen:  node.ListenOptions{Addr: "127.0.0.1:0", CQLAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0"},
		Cluster: cluster.Options{Profile: cluster.ProfileTest, SchemaAgreementTimeout: 5 * time.Second},
		Storage: replica.Options{CacheSize: 32 << 20, MemTableSize: 16 << 20, NoSync: true},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nd.Close() })
	return nd
}

// setupCostSchema creates the tables and makes the hot partition hot.
func setupCostSchema(tb testing.TB, nd *node.Node) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := client.Dial(ctx, nd.Addr())
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	for _, stmt := range []string{
		"CREATE KEYSPACE cost WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE cost.hot (k text PRIMARY KEY, v bigint) WITH per_partition_rate_limit = {'max_writes_per_second': 1}",
		"CREATE TABLE cost.free (k bigint PRIMARY KEY, v bigint) WITH per_partition_rate_limit = {'max_writes_per_second': 1000000}",
	} {
		if _, err := c.Execute(ctx, client.Quorum, stmt); err != nil {
			tb.Fatalf("%s: %v", stmt, err)
		}
	}
	for i := 0; ; i++ {
		_, err := c.Execute(ctx, client.Quorum, "INSERT INTO cost.hot (k, v) VALUES ('hot', 1)")
		var rl *client.RateLimitError
		if errors.As(err, &rl) {
			return
		}
		if err != nil || i == 10000 {
			tb.Fatalf("making the partition hot: %d writes, then %v", i, err)
		}
	}
}

// TestCostClient is the child process of BenchmarkServerCost; it does nothing unless started
// by it.
func TestCostClient(t *testing.T) {
	js := os.Getenv(costEnv)
	if js == "" {
		t.Skip("the client process of BenchmarkServerCost")
	}
	var spec costSpec
	var res costResult
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		res.Err = err.Error()
	} else if strings.HasPrefix(spec.Kind, "native-") {
		res = nativeCostClient(spec)
	} else {
		res = grpcCostClient(spec)
	}
	out, _ := json.Marshal(res)
	fmt.Printf("COST_RESULT %s\n", out)
}

// nativeCostClient pipelines spec.N requests of spec.Kind on one connection.
func nativeCostClient(spec costSpec) (res costResult) {
	res.Other = map[string]int{}
	fail := func(err error) costResult { res.Err = err.Error(); return res }
	nc, err := net.Dial("tcp", spec.CQLAddr)
	if err != nil {
		return fail(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Minute))
	br := bufio.NewReaderSize(nc, 64<<10)
	fr := cqlwire.NewFrameReader(br, cqlwire.ReaderOptions{Responses: true})
	call := func(m cqlwire.Message) (cqlwire.Message, error) {
		if _, err := nc.Write(cqlwire.AppendFrame(nil, 0, m, cqlwire.FrameOptions{})); err != nil {
			return nil, err
		}
		h, body, err := fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		f, err := cqlwire.DecodeFrame(h, body)
		return f.Message, err
	}
	if _, err := call(&cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "SCYLLA_RATE_LIMIT_ERROR": ""}}); err != nil {
		return fail(err)
	}
	var id []byte
	table := "hot"
	if spec.Kind == "native-accepted" {
		table = "free"
	}
	if spec.Kind != "native-noop" {
		m, err := call(&cqlwire.Prepare{Query: "INSERT INTO cost." + table + " (k, v) VALUES (?, ?)"})
		if err != nil {
			return fail(err)
		}
		p, ok := m.(*cqlwire.PreparedResult)
		if !ok {
			return fail(fmt.Errorf("PREPARE answered %#v", m))
		}
		id = p.ID
	}
	// request i's frame: OPTIONS, or EXECUTE with the hot key or key i.
	key := make([]byte, 8)
	v := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	exec := &cqlwire.Execute{ID: id, Params: cqlwire.QueryParams{Consistency: cqlwire.One, Values: []cqlwire.Value{{Bytes: key}, {Bytes: v}}}}
	var buf []byte
	appendReq := func(i int, stream int16) {
		switch spec.Kind {
		case "native-noop":
			buf = cqlwire.AppendFrame(buf, stream, cqlwire.Options{}, cqlwire.FrameOptions{})
			return
		case "native-accepted":
			binary.BigEndian.PutUint64(key, uint64(i))
			exec.Params.Values[0].Bytes = key
		default:
			exec.Params.Values[0].Bytes = []byte("hot")
		}
		buf = cqlwire.AppendFrame(buf, stream, exec, cqlwire.FrameOptions{})
	}
	sent, got := 0, 0
	for ; sent < min(spec.Depth, spec.N); sent++ {
		appendReq(sent, int16(sent))
	}
	for got < spec.N {
		// Like a driver that coalesces its writes: the requests made while reading the
		// answers at hand go out together.
		if len(buf) > 0 && !wholeFrameBuffered(br) {
			if _, err := nc.Write(buf); err != nil {
				return fail(err)
			}
			buf = buf[:0]
		}
		h, body, err := fr.ReadFrame()
		if err != nil {
			return fail(err)
		}
		got++
		switch {
		case spec.Kind == "native-noop" && h.Opcode == cqlwire.OpSupported,
			spec.Kind == "native-accepted" && h.Opcode == cqlwire.OpResult:
			res.Want++
		case h.Opcode == cqlwire.OpError:
			f, err := cqlwire.DecodeFrame(h, body)
			if err != nil {
				return fail(err)
			}
			e := f.Message.(*cqlwire.Error)
			if e.Code == cqlwire.ErrRateLimit && spec.Kind == "native-rejected" {
				res.Want++
			} else {
				res.Other[fmt.Sprintf("error 0x%04x %s", e.Code, e.Message)]++
			}
		default:
			res.Other[h.Opcode.String()]++
		}
		if sent < spec.N {
			appendReq(sent, h.Stream) // answers come in any order: reuse the one answered
			sent++
		}
	}
	return res
}

// wholeFrameBuffered reports whether br holds a whole frame.
func wholeFrameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < cqlwire.HeaderSize {
		return false
	}
	hdr, err := br.Peek(cqlwire.HeaderSize)
	return err == nil && n-cqlwire.HeaderSize >= int(binary.BigEndian.Uint32(hdr[5:9]))
}

// grpcCostClient makes spec.N calls of spec.Kind, spec.Depth at a time, on one connection.
func grpcCostClient(spec costSpec) (res costResult) {
	res.Other = map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		health healthpb.HealthClient
		c      *client.Client
		err    error
	)
	if spec.Kind == "grpc-noop" {
		conn, err := grpc.NewClient(spec.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			res.Err = err.Error()
			return res
		}
		defer conn.Close()
		health = healthpb.NewHealthClient(conn)
	} else if c, err = client.Dial(ctx, spec.GRPCAddr); err != nil {
		res.Err = err.Error()
		return res
	} else {
		defer c.Close()
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range spec.Depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var err error
				switch spec.Kind {
				case "grpc-noop":
					_, err = health.Check(ctx, &healthpb.HealthCheckRequest{})
				case "grpc-accepted":
					_, err = c.Execute(ctx, client.One, fmt.Sprintf("INSERT INTO cost.free (k, v) VALUES (%d, 1)", i))
				default:
					_, err = c.Execute(ctx, client.One, "INSERT INTO cost.hot (k, v) VALUES ('hot', 1)")
				}
				var rl *client.RateLimitError
				mu.Lock()
				switch {
				case err == nil && spec.Kind != "grpc-rejected", errors.As(err, &rl) && spec.Kind == "grpc-rejected":
					res.Want++
				case err == nil:
					res.Other["ok"]++
				default:
					res.Other[err.Error()]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range spec.N {
		next <- i
	}
	close(next)
	wg.Wait()
	return res
}
