package native

import (
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/schema"
)

// fuzzSeeds are byte streams a client could send: a handshake and each statement message, with
// and without compression.
func fuzzSeeds() [][]byte {
	startup := func(comp string) []byte {
		opts := map[string]string{"CQL_VERSION": "3.0.0", "SCYLLA_RATE_LIMIT_ERROR": ""}
		if comp != "" {
			opts["COMPRESSION"] = comp
		}
		return cqlwire.AppendFrame(nil, 0, &cqlwire.Startup{Options: opts}, cqlwire.FrameOptions{})
	}
	params := cqlwire.QueryParams{Consistency: cqlwire.Quorum, Values: []cqlwire.Value{{Bytes: []byte("k")}, {}, {Unset: true}},
		PageSize: 10, PagingState: []byte("p"), HasTimestamp: true, Timestamp: 7, SkipMetadata: true}
	msgs := []cqlwire.Message{
		cqlwire.Options{},
		&cqlwire.Register{Events: []string{"SCHEMA_CHANGE", "TOPOLOGY_CHANGE", "STATUS_CHANGE"}},
		&cqlwire.Query{Query: "SELECT * FROM ks.t WHERE k = ?", Params: params},
		&cqlwire.Query{Query: "USE ks", Params: cqlwire.QueryParams{Consistency: cqlwire.One}},
		&cqlwire.Prepare{Query: "INSERT INTO ks.t (k, v) VALUES (?, ?)"},
		&cqlwire.Execute{ID: make([]byte, 16), Params: params},
		&cqlwire.Batch{Type: cqlwire.BatchLogged, Consistency: cqlwire.One, Children: []cqlwire.BatchChild{
			{Query: "INSERT INTO ks.t (k) VALUES ('a')"}, {ID: make([]byte, 16), Values: []cqlwire.Value{{Bytes: []byte("b")}}}}},
	}
	var seeds [][]byte
	for _, comp := range []string{"", "lz4", "snappy"} {
		in := startup(comp)
		var scratch []byte
		opts := cqlwire.FrameOptions{Compression: cqlwire.CompressionByName(comp), Scratch: &scratch}
		if comp == "" {
			opts = cqlwire.FrameOptions{}
		}
		for i, m := range msgs {
			in = cqlwire.AppendFrame(in, int16(i+1), m, opts)
		}
		seeds = append(seeds, in)
	}
	seeds = append(seeds,
		cqlwire.AppendFrame(nil, 0, cqlwire.Options{}, cqlwire.FrameOptions{}),
		[]byte{0x03, 0, 0, 1, byte(cqlwire.OpOptions), 0, 0, 0, 0},
		[]byte{0x02, 0, 1, byte(cqlwire.OpOptions), 0, 0, 0, 0},
		append(startup(""), 0x04, 0, 0, 1, byte(cqlwire.OpQuery), 0x7f, 0xff, 0xff, 0xff, 1, 2, 3),
	)
	return seeds
}

// FuzzConn feeds arbitrary bytes to a server connection as a client would send them. The
// server must never panic or hang: whatever it reads, the connection ends once the client
// goes away, and the server goes on serving others. Statements run against an executor that
// answers rows, so answers are encoded (and compressed) too.
func FuzzConn(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	rows := &coordinator.Rows{Keyspace: "ks", Table: "t",
		Columns: []coordinator.RowColumn{{Name: "k", Type: schema.TypeText}, {Name: "v", Type: schema.TypeBlob}},
		Values:  [][][]byte{{[]byte("a"), nil}, {[]byte("b"), []byte{1, 2}}}}
	exec := &fakeExecutor{
		execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
			if len(st.Values) > 0 {
				return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows, PagingState: []byte("more"), Warnings: []string{"w"}}, nil
			}
			return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: "ks"}, nil
		},
		prepare: func(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) {
			return &coordinator.Prepared{ID: [16]byte{}, Text: text, Columns: rows.Columns,
				Variables: []coordinator.Variable{{Keyspace: "ks", Table: "t", Name: "k", Type: schema.TypeText}}}, nil
		},
	}
	s, err := New(Config{Executor: exec, MaxFrameSize: 64 << 10, Options: Options{MaxInFlight: 8}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, in []byte) {
		srvEnd, cliEnd := net.Pipe()
		s.accept(srvEnd)
		drained := make(chan struct{})
		go func() {
			io.Copy(io.Discard, cliEnd)
			close(drained)
		}()
		cliEnd.SetWriteDeadline(time.Now().Add(timeout))
		cliEnd.Write(in) // fails once the server closes on a protocol error
		cliEnd.Close()
		select {
		case <-drained:
		case <-time.After(timeout):
			buf := make([]byte, 1<<20)
			t.Fatalf("the client's reads did not end\n%s", buf[:runtime.Stack(buf, true)])
		}
		if err := poll.Until(context.Background(), timeout, "the server to end the connection after the client closed it", poll.Bool(func() bool { return connCount(s) == 0 })); err != nil {
			buf := make([]byte, 1<<20)
			t.Fatalf("%v\n%s", err, buf[:runtime.Stack(buf, true)])
		}
	})
}
