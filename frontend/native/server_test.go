package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/schema"
)

func TestOptionsAnswersSupported(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dial(t, addr)
	m := c.roundTrip(cqlwire.Options{})
	sup, ok := m.(*cqlwire.Supported)
	if !ok {
		t.Fatalf("OPTIONS answered %#v, want SUPPORTED", m)
	}
	want := map[string][]string{
		"CQL_VERSION":             {"3.3.1"},
		"COMPRESSION":             {"lz4", "snappy"},
		"SCYLLA_RATE_LIMIT_ERROR": {"ERROR_CODE=61440"},
	}
	for k, v := range want {
		if !slices.Equal(sup.Options[k], v) {
			t.Errorf("SUPPORTED %s = %q, want %q", k, sup.Options[k], v)
		}
	}
	// OPTIONS again after STARTUP.
	c.startup(nil)
	if _, ok := c.roundTrip(cqlwire.Options{}).(*cqlwire.Supported); !ok {
		t.Fatal("OPTIONS after STARTUP not answered SUPPORTED")
	}
}

func TestStartupRefusesBadOptions(t *testing.T) {
	_, addr := startServer(t, Config{})
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{}, "CQL_VERSION option is missing"},
		{map[string]string{"CQL_VERSION": "4.0.0"}, `CQL_VERSION "4.0.0" is not supported`},
		{map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "zstd"}, `COMPRESSION "zstd" is not supported (supported: lz4, snappy)`},
	} {
		c := dial(t, addr)
		c.send(3, &cqlwire.Startup{Options: tc.opts})
		c.expectProtocolError(3, tc.want)
	}
}

func TestVersionOtherThan4GetsStepDownError(t *testing.T) {
	_, addr := startServer(t, Config{})
	for _, v := range []byte{1, 2, 3, 5, 6} {
		c := dial(t, addr)
		hdr := []byte{v, 0, 0, 7, byte(cqlwire.OpOptions), 0, 0, 0, 0}
		if v <= 2 {
			hdr = []byte{v, 0, 7, byte(cqlwire.OpOptions), 0, 0, 0, 0}
		}
		c.write(hdr)
		// Read the raw answer: its header is in the client's layout.
		c.nc.SetReadDeadline(deadline())
		var buf bytes.Buffer
		buf.ReadFrom(c.nc) // until the server closes
		msg := cqlwire.VersionErrorMessage(v)
		if !bytes.Contains(buf.Bytes(), []byte(msg)) {
			t.Errorf("version %d: answer %q does not contain %q", v, buf.Bytes(), msg)
		}
		if len(buf.Bytes()) == 0 || buf.Bytes()[0] != min(v, 4)|cqlwire.ResponseBit && v > 2 {
			t.Errorf("version %d: answer's version byte is %#x", v, buf.Bytes())
		}
	}
}

func TestRequestBeforeStartupIsProtocolError(t *testing.T) {
	_, addr := startServer(t, Config{})
	for _, m := range []cqlwire.Message{
		&cqlwire.Query{Query: "SELECT * FROM t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}},
		&cqlwire.Register{Events: []string{"SCHEMA_CHANGE"}},
		&cqlwire.Prepare{Query: "SELECT * FROM t"},
	} {
		c := dial(t, addr)
		c.send(9, m)
		c.expectProtocolError(9, "send STARTUP first")
	}
}

func TestHostileFrames(t *testing.T) {
	_, addr := startServer(t, Config{MaxFrameSize: 1 << 20})
	startup := cqlwire.AppendFrame(nil, 0, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}, cqlwire.FrameOptions{})
	header := func(stream int16, op cqlwire.Opcode, length uint32) []byte {
		return cqlwire.AppendHeader(nil, cqlwire.Header{Stream: stream, Opcode: op, Length: length})
	}
	for _, tc := range []struct {
		name   string
		in     []byte
		stream int16
		want   string // "" for a close without an answer
	}{
		{"oversized length", header(4, cqlwire.OpQuery, 0x7fffffff), 4, "exceeds the limit of"}, // 64 KiB before STARTUP (prelogin_test.go)
		{"length just over the limit", header(4, cqlwire.OpQuery, 1<<20+1), 4, "exceeds the limit"},
		{"unknown opcode", header(5, cqlwire.Opcode(0x42), 0), 5, "unknown opcode 0x42"},
		{"response opcode", header(5, cqlwire.OpResult, 0), 5, "unknown opcode"},
		{"response bit", []byte{0x84, 0, 0, 6, byte(cqlwire.OpOptions), 0, 0, 0, 0}, 6, "wrong direction"},
		{"negative stream", header(-3, cqlwire.OpOptions, 0), -3, "must not be negative"},
		{"garbage body", append(header(8, cqlwire.OpQuery, 5), 1, 2, 3, 4, 5), 8, "stream 8, QUERY"},
		{"compressed without negotiation", append(cqlwire.AppendHeader(nil, cqlwire.Header{Flags: cqlwire.FlagCompression, Stream: 2, Opcode: cqlwire.OpOptions, Length: 1}), 0), 2, "no compression was negotiated"},
	} {
		for _, started := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/started=%v", tc.name, started), func(t *testing.T) {
				c := dial(t, addr)
				if started {
					c.write(startup)
					if f := c.recv(); f.Header.Opcode != cqlwire.OpReady {
						t.Fatalf("STARTUP answered %v", f.Header.Opcode)
					}
				}
				c.write(tc.in)
				c.expectProtocolError(tc.stream, tc.want)
			})
		}
	}
	t.Run("truncated frame", func(t *testing.T) {
		c := dial(t, addr)
		c.write(startup)
		c.recv()
		c.write(append(header(1, cqlwire.OpQuery, 100), make([]byte, 10)...))
		c.nc.(interface{ CloseWrite() error }).CloseWrite()
		c.expectClosed()
	})
	t.Run("garbage bytes", func(t *testing.T) {
		c := dial(t, addr)
		c.write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		// 'G' is version 0x47: the step-down error, then the close.
		f, err := c.tryRecv()
		if err == nil {
			if e, ok := f.Message.(*cqlwire.Error); !ok || e.Code != cqlwire.ErrProtocol {
				t.Fatalf("garbage answered %#v", f.Message)
			}
		}
		c.expectClosed()
	})
	t.Run("the server still serves", func(t *testing.T) {
		c := dial(t, addr)
		c.startup(nil)
		if _, ok := c.roundTrip(&cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}).(cqlwire.VoidResult); !ok {
			t.Fatal("QUERY not answered Void")
		}
	})
}

func TestStreamReusedWhileInFlightIsProtocolError(t *testing.T) {
	g := newGate()
	_, addr := startServer(t, Config{Executor: &fakeExecutor{execute: g.execute}})
	c := dial(t, addr)
	c.startup(nil)
	q := &cqlwire.Query{Query: "SELECT 1", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
	c.send(5, q)
	waitArrived(t, g)
	c.send(5, q)
	c.expectProtocolError(5, "already in use")
}

func TestStreamIsReusableOnceAnswered(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.startup(nil)
	for range 3 {
		if _, ok := c.roundTrip(&cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}).(cqlwire.VoidResult); !ok {
			t.Fatal("QUERY not answered Void")
		}
	}
}

func waitArrived(t *testing.T, g *gate) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-timeoutCh():
		t.Fatal("the executor was not called")
	}
}

func TestAnswersOutOfOrder(t *testing.T) {
	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	arrived := make(chan string, 2)
	exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		arrived <- st.Text
		<-release[st.Text]
		return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: st.Text}, nil
	}}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	c.send(10, &cqlwire.Query{Query: "a", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	c.send(11, &cqlwire.Query{Query: "b", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	<-arrived
	<-arrived
	close(release["b"])
	if f := c.recv(); f.Header.Stream != 11 {
		t.Fatalf("first answer on stream %d, want 11 (the request that finished first)", f.Header.Stream)
	}
	close(release["a"])
	if f := c.recv(); f.Header.Stream != 10 {
		t.Fatalf("second answer on stream %d, want 10", f.Header.Stream)
	}
}

func TestUseSetsTheConnectionsKeyspace(t *testing.T) {
	var got []string
	exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		got = append(got, st.Keyspace)
		if st.Text == "USE ks1" {
			return coordinator.Result{Kind: coordinator.ResultSetKeyspace, Keyspace: "ks1"}, nil
		}
		return coordinator.Result{}, nil
	}}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	q := func(text string) cqlwire.Message {
		return c.roundTrip(&cqlwire.Query{Query: text, Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	}
	q("INSERT")
	if m, ok := q("USE ks1").(*cqlwire.SetKeyspaceResult); !ok || m.Keyspace != "ks1" {
		t.Fatalf("USE answered %#v, want Set_keyspace ks1", m)
	}
	q("INSERT")
	if want := []string{"", "", "ks1"}; !slices.Equal(got, want) {
		t.Errorf("statements ran in keyspaces %q, want %q", got, want)
	}
	// Another connection has its own keyspace.
	c2 := dial(t, addr)
	c2.startup(nil)
	c2.roundTrip(&cqlwire.Query{Query: "INSERT", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	if got[len(got)-1] != "" {
		t.Errorf("a new connection ran in keyspace %q, want none", got[len(got)-1])
	}
}

func TestQueryTranslatesParameters(t *testing.T) {
	var got coordinator.Statement
	exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		got = st
		return coordinator.Result{}, nil
	}}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	for _, tc := range []struct {
		cl   cqlwire.Consistency
		want coordinator.Consistency
	}{
		{cqlwire.One, coordinator.One}, {cqlwire.LocalOne, coordinator.LocalOne},
		{cqlwire.Quorum, coordinator.Quorum}, {cqlwire.LocalQuorum, coordinator.LocalQuorum},
		{cqlwire.All, coordinator.All}, {cqlwire.Two, coordinator.Two}, {cqlwire.Three, coordinator.Three},
		{cqlwire.EachQuorum, coordinator.EachQuorum},
		{cqlwire.Serial, coordinator.Serial}, {cqlwire.LocalSerial, coordinator.LocalSerial},
		{cqlwire.Any, coordinator.Any},
	} {
		c.roundTrip(&cqlwire.Query{Query: "INSERT ?", Params: cqlwire.QueryParams{
			Consistency: tc.cl, Values: []cqlwire.Value{{Bytes: []byte{1}}, {}, {Unset: true}},
			PageSize: 50, PagingState: []byte("ps"), Timestamp: 1234, HasTimestamp: true,
		}})
		if got.Consistency != tc.want {
			t.Errorf("consistency %s ran at %v, want %v", consistencyName(tc.cl), got.Consistency, tc.want)
		}
	}
	for _, sc := range []struct {
		wire cqlwire.Consistency
		want coordinator.Consistency
	}{{0, 0}, {cqlwire.Serial, coordinator.Serial}, {cqlwire.LocalSerial, coordinator.LocalSerial}} {
		c.roundTrip(&cqlwire.Query{Query: "INSERT ?", Params: cqlwire.QueryParams{Consistency: cqlwire.One, SerialConsistency: sc.wire,
			Values: []cqlwire.Value{{Bytes: []byte{1}}, {}, {Unset: true}}, PageSize: 50, PagingState: []byte("ps"), Timestamp: 1234, HasTimestamp: true}})
		if got.SerialConsistency != sc.want {
			t.Errorf("serial consistency %s ran at %v, want %v", consistencyName(sc.wire), got.SerialConsistency, sc.want)
		}
	}
	if got.Text != "INSERT ?" || got.PageSize != 50 || string(got.PagingState) != "ps" || got.Timestamp != 1234 || !got.HasTimestamp {
		t.Errorf("statement = %+v", got)
	}
	if len(got.Values) != 3 || !bytes.Equal(got.Values[0].Bytes, []byte{1}) || got.Values[1].Bytes != nil || got.Values[1].Unset || !got.Values[2].Unset {
		t.Errorf("values = %+v, want [01], null, unset", got.Values)
	}
	for _, cl := range []cqlwire.Consistency{0x99} {
		e, ok := c.roundTrip(&cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cl}}).(*cqlwire.Error)
		if !ok || e.Code != cqlwire.ErrInvalid || !contains(e.Message, "is not supported (valid: ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)") {
			t.Errorf("consistency %s answered %#v, want Invalid", consistencyName(cl), e)
		}
	}
	e, ok := c.roundTrip(&cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One,
		Values: []cqlwire.Value{{Bytes: []byte{1}}}, Names: []string{"a"}}}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrInvalid || !contains(e.Message, "a value is bound to the name a, which no bind marker has; the statement's markers are none") {
		t.Errorf("a value bound to a name the statement lacks answered %#v, want Invalid naming it", e)
	}
}

// TestValuesBoundByName checks QUERY's and EXECUTE's values bound by name (the flag 0x40):
// each of the statement's variables takes the value of its name, whatever the order the
// client sent them in; a missing name is Invalid, naming it.
func TestValuesBoundByName(t *testing.T) {
	vars := []coordinator.Variable{{Name: "k", Type: schema.TypeInt}, {Name: "v", Type: schema.TypeText}, {Name: "k", Type: schema.TypeInt}, {Name: "[limit]", Type: schema.TypeInt}}
	var got coordinator.Statement
	exec := &fakeExecutor{
		execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
			got = st
			return coordinator.Result{}, nil
		},
		prepare: func(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) {
			return &coordinator.Prepared{ID: [16]byte{9}, Text: text, Keyspace: keyspace, Variables: vars}, nil
		},
	}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	named := cqlwire.QueryParams{Consistency: cqlwire.One,
		Names:  []string{"V", "[limit]", "k"},
		Values: []cqlwire.Value{{Bytes: []byte("x")}, {Unset: true}, {Bytes: []byte{7}}}}
	check := func(what string) {
		t.Helper()
		if len(got.Values) != 4 || string(got.Values[0].Bytes) != "\x07" || string(got.Values[1].Bytes) != "x" ||
			string(got.Values[2].Bytes) != "\x07" || !got.Values[3].Unset {
			t.Errorf("%s bound by name ran with values %+v, want [07] 'x' [07] unset", what, got.Values)
		}
	}
	if m, ok := c.roundTrip(&cqlwire.Query{Query: "SELECT", Params: named}).(*cqlwire.Error); ok {
		t.Fatalf("QUERY bound by name answered %#v", m)
	}
	check("QUERY")
	got = coordinator.Statement{}
	prep, ok := c.roundTrip(&cqlwire.Prepare{Query: "SELECT"}).(*cqlwire.PreparedResult)
	if !ok {
		t.Fatal("PREPARE failed")
	}
	if m, ok := c.roundTrip(&cqlwire.Execute{ID: prep.ID, Params: named}).(*cqlwire.Error); ok {
		t.Fatalf("EXECUTE bound by name answered %#v", m)
	}
	check("EXECUTE")
	missing := cqlwire.QueryParams{Consistency: cqlwire.One, Names: []string{"k"}, Values: []cqlwire.Value{{Bytes: []byte{7}}}}
	e, ok := c.roundTrip(&cqlwire.Execute{ID: prep.ID, Params: missing}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrInvalid || !contains(e.Message, "no value is bound to the name v (bind marker 1); the statement's markers are k, v, k, [limit]") {
		t.Errorf("EXECUTE missing a name answered %#v, want Invalid naming v", e)
	}
}

func TestRowsResult(t *testing.T) {
	rows := &coordinator.Rows{Keyspace: "ks", Table: "t",
		Columns: []coordinator.RowColumn{{Name: "k", Type: schema.TypeText}, {Name: "v", Type: schema.TypeInt}},
		Values:  [][][]byte{{[]byte("a"), {0, 0, 0, 1}}, {[]byte("b"), nil}},
	}
	exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		res := coordinator.Result{Kind: coordinator.ResultRows, Rows: rows, Warnings: []string{"careful"}}
		if st.PagingState == nil {
			res.PagingState = []byte("next")
		}
		return res, nil
	}}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	c.send(1, &cqlwire.Query{Query: "SELECT", Params: cqlwire.QueryParams{Consistency: cqlwire.One, PageSize: 2}})
	f := c.recv()
	r, ok := f.Message.(*cqlwire.RowsResult)
	if !ok {
		t.Fatalf("SELECT answered %#v", f.Message)
	}
	if !slices.Equal(f.Warnings, []string{"careful"}) {
		t.Errorf("warnings %q, want [careful]", f.Warnings)
	}
	md := r.Metadata
	if md.ColumnCount != 2 || string(md.PagingState) != "next" || md.NoMetadata ||
		!reflect.DeepEqual(md.Columns[0], cqlwire.ColumnSpec{Keyspace: "ks", Table: "t", Name: "k", Type: cqlwire.Type{ID: cqlwire.TypeVarchar}}) ||
		md.Columns[1].Type.ID != cqlwire.TypeInt {
		t.Errorf("metadata = %+v", md)
	}
	if r.NumRows() != 2 || string(r.Row(0)[0]) != "a" || !bytes.Equal(r.Row(0)[1], []byte{0, 0, 0, 1}) || r.Row(1)[1] != nil {
		t.Errorf("rows = %q", r.Cells)
	}
	// The last page: no paging state; skip_metadata honoured.
	r2, ok := c.roundTrip(&cqlwire.Query{Query: "SELECT", Params: cqlwire.QueryParams{Consistency: cqlwire.One, PageSize: 2, PagingState: []byte("next"), SkipMetadata: true}}).(*cqlwire.RowsResult)
	if !ok || r2.Metadata.PagingState != nil || !r2.Metadata.NoMetadata || r2.Metadata.Columns != nil || r2.NumRows() != 2 {
		t.Errorf("last page with skip_metadata = %+v", r2)
	}
}

func TestPrepareAndExecute(t *testing.T) {
	id := [16]byte{0xAB, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	prep := &coordinator.Prepared{ID: id, Text: "SELECT v FROM ks.t WHERE k = ?", RowsKeyspace: "ks", RowsTable: "t",
		Variables: []coordinator.Variable{{Keyspace: "ks", Table: "t", Name: "k", Type: schema.TypeText}},
		PKIndexes: []int{0},
		Columns:   []coordinator.RowColumn{{Name: "v", Type: schema.TypeBigInt}},
	}
	var got coordinator.Statement
	exec := &fakeExecutor{
		prepare: func(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) { return prep, nil },
		execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
			got = st
			return coordinator.Result{}, nil
		},
	}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	p, ok := c.roundTrip(&cqlwire.Prepare{Query: prep.Text}).(*cqlwire.PreparedResult)
	if !ok {
		t.Fatal("PREPARE not answered Prepared")
	}
	if !bytes.Equal(p.ID, id[:]) || !slices.Equal(p.PKIndexes, []uint16{0}) || len(p.Bind) != 1 ||
		!reflect.DeepEqual(p.Bind[0], cqlwire.ColumnSpec{Keyspace: "ks", Table: "t", Name: "k", Type: cqlwire.Type{ID: cqlwire.TypeVarchar}}) {
		t.Errorf("prepared = %+v", p)
	}
	if p.Result.ColumnCount != 1 || !reflect.DeepEqual(p.Result.Columns[0], cqlwire.ColumnSpec{Keyspace: "ks", Table: "t", Name: "v", Type: cqlwire.Type{ID: cqlwire.TypeBigint}}) {
		t.Errorf("result metadata = %+v", p.Result)
	}
	// Another connection executes it: the cache is the node's.
	c2 := dial(t, addr)
	c2.startup(nil)
	if _, ok := c2.roundTrip(&cqlwire.Execute{ID: id[:], Params: cqlwire.QueryParams{Consistency: cqlwire.Quorum, Values: []cqlwire.Value{{Bytes: []byte("x")}}}}).(cqlwire.VoidResult); !ok {
		t.Fatal("EXECUTE not answered Void")
	}
	if got.Prepared != prep || got.Consistency != coordinator.Quorum || string(got.Values[0].Bytes) != "x" {
		t.Errorf("EXECUTE ran %+v", got)
	}
	// An unknown id: Unprepared with the id, so the driver prepares again.
	unknown := []byte("0123456789abcdef")
	e, ok := c2.roundTrip(&cqlwire.Execute{ID: unknown, Params: cqlwire.QueryParams{Consistency: cqlwire.One}}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrUnprepared || !bytes.Equal(e.UnpreparedID, unknown) {
		t.Errorf("EXECUTE of an unknown id answered %#v, want Unprepared with the id", e)
	}
	e, ok = c2.roundTrip(&cqlwire.Execute{ID: []byte{1, 2}, Params: cqlwire.QueryParams{Consistency: cqlwire.One}}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrUnprepared {
		t.Errorf("EXECUTE of a short id answered %#v, want Unprepared", e)
	}
}

// TestPreparedCacheIsBoundedInBytes: large statements evict the least recently used ones by
// their size, not only by count (found by review: 64 PREPAREs of 1 MiB held 129 MiB).
func TestPreparedCacheIsBoundedInBytes(t *testing.T) {
	const text = 1 << 20
	c := newPreparedCache(DefaultPreparedCacheSize, 10*text, nil)
	for i := range 64 {
		c.put(&coordinator.Prepared{ID: [16]byte{byte(i)}, Text: strings.Repeat("x", text)})
		if c.bytes > 10*text {
			t.Fatalf("after %d statements of %d bytes the cache holds an estimated %d bytes, over its %d", i+1, text, c.bytes, 10*text)
		}
	}
	if n := c.len(); n < 3 || n > 5 {
		t.Errorf("cache holds %d statements of 1 MiB within 10 MiB (each counts twice its text), want 4 or so", n)
	}
	if _, ok := c.get([]byte{63, 15: 0}); !ok {
		t.Error("the most recent statement was dropped")
	}
}

// TestPreparedStatementsOfAChangedTableAreDropped: a table's statements are dropped when it is
// dropped, recreated or altered (their metadata may be stale; drivers re-prepare on
// Unprepared), and the other tables' statements are kept; a dropped keyspace drops all of its.
func TestPreparedStatementsOfAChangedTableAreDropped(t *testing.T) {
	c := newPreparedCache(DefaultPreparedCacheSize, DefaultPreparedCacheBytes, nil)
	sel := &coordinator.Prepared{ID: [16]byte{1}, RowsKeyspace: "ks", RowsTable: "t"}
	ins := &coordinator.Prepared{ID: [16]byte{2}, Variables: []coordinator.Variable{{Keyspace: "ks", Table: "t", Name: "k"}}}
	other := &coordinator.Prepared{ID: [16]byte{3}, RowsKeyspace: "ks", RowsTable: "u"}
	elsewhere := &coordinator.Prepared{ID: [16]byte{4}, RowsKeyspace: "ks2", RowsTable: "t"}
	for _, p := range []*coordinator.Prepared{sel, ins, other, elsewhere} {
		c.put(p)
	}
	c.schemaChanged(cqlwire.SchemaChange{Change: "DROPPED", Target: "TABLE", Keyspace: "ks", Name: "t"})
	for _, tc := range []struct {
		id   byte
		kept bool
	}{{1, false}, {2, false}, {3, true}, {4, true}} {
		if _, ok := c.get([]byte{tc.id, 15: 0}); ok != tc.kept {
			t.Errorf("after DROP TABLE ks.t, statement %d kept = %v, want %v", tc.id, ok, tc.kept)
		}
	}
	c.schemaChanged(cqlwire.SchemaChange{Change: "DROPPED", Target: "KEYSPACE", Keyspace: "ks"})
	if _, ok := c.get([]byte{3, 15: 0}); ok {
		t.Error("after DROP KEYSPACE ks, a statement on ks.u was kept")
	}
	if _, ok := c.get([]byte{4, 15: 0}); !ok {
		t.Error("after DROP KEYSPACE ks, a statement on ks2.t was dropped")
	}
	if c.bytes != entrySize(elsewhere) {
		t.Errorf("cache accounts %d bytes for its one statement, want %d", c.bytes, entrySize(elsewhere))
	}
}

func TestPreparedCacheIsBounded(t *testing.T) {
	c := newPreparedCache(2, DefaultPreparedCacheBytes, nil)
	p := func(b byte) *coordinator.Prepared { return &coordinator.Prepared{ID: [16]byte{b}} }
	c.put(p(1))
	c.put(p(2))
	c.get([]byte{1, 15: 0}) // 1 is now the most recently used
	c.put(p(3))
	if c.len() != 2 {
		t.Fatalf("cache holds %d statements, want 2", c.len())
	}
	if _, ok := c.get(append([]byte{2}, make([]byte, 15)...)); ok {
		t.Error("the least recently used statement (2) was kept")
	}
	for _, b := range []byte{1, 3} {
		if _, ok := c.get(append([]byte{b}, make([]byte, 15)...)); !ok {
			t.Errorf("statement %d was dropped", b)
		}
	}
}

func TestBatch(t *testing.T) {
	id := [16]byte{7}
	prep := &coordinator.Prepared{ID: id, Text: "INSERT INTO t (k) VALUES (?)"}
	var got coordinator.BatchStatement
	exec := &fakeExecutor{
		prepare: func(ctx context.Context, text, keyspace string) (*coordinator.Prepared, error) { return prep, nil },
		batch: func(ctx context.Context, b coordinator.BatchStatement) (coordinator.Result, error) {
			got = b
			return coordinator.Result{}, nil
		},
	}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	c.roundTrip(&cqlwire.Prepare{Query: prep.Text})
	m := c.roundTrip(&cqlwire.Batch{Type: cqlwire.BatchUnlogged, Consistency: cqlwire.LocalQuorum, Timestamp: 99, HasTimestamp: true,
		Children: []cqlwire.BatchChild{
			{Query: "INSERT INTO t (k) VALUES ('a')"},
			{ID: id[:], Values: []cqlwire.Value{{Bytes: []byte("b")}}},
		}})
	if _, ok := m.(cqlwire.VoidResult); !ok {
		t.Fatalf("BATCH answered %#v", m)
	}
	if got.Type != coordinator.BatchUnlogged || got.Consistency != coordinator.LocalQuorum || got.Timestamp != 99 || !got.HasTimestamp ||
		len(got.Children) != 2 || got.Children[0].Text != "INSERT INTO t (k) VALUES ('a')" || got.Children[1].Prepared != prep ||
		string(got.Children[1].Values[0].Bytes) != "b" {
		t.Errorf("BATCH ran %+v", got)
	}
	e, ok := c.roundTrip(&cqlwire.Batch{Type: cqlwire.BatchLogged, Consistency: cqlwire.One,
		Children: []cqlwire.BatchChild{{ID: []byte("0123456789abcdef")}}}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrUnprepared || string(e.UnpreparedID) != "0123456789abcdef" {
		t.Errorf("BATCH with an unknown id answered %#v, want Unprepared", e)
	}
}

func TestSchemaChangeResult(t *testing.T) {
	exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		return coordinator.Result{Kind: coordinator.ResultSchemaChange, SchemaChange: coordinator.SchemaChange{
			Change: coordinator.Created, Target: coordinator.TargetTable, Keyspace: "ks", Table: "t"}}, nil
	}}
	_, addr := startServer(t, Config{Executor: exec})
	c := dial(t, addr)
	c.startup(nil)
	m, ok := c.roundTrip(&cqlwire.Query{Query: "CREATE TABLE", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}).(*cqlwire.SchemaChangeResult)
	if !ok || !reflect.DeepEqual(m.SchemaChange, cqlwire.SchemaChange{Change: "CREATED", Target: "TABLE", Keyspace: "ks", Name: "t"}) {
		t.Errorf("DDL answered %#v", m)
	}
}

func TestCompression(t *testing.T) {
	for _, name := range []string{"lz4", "snappy"} {
		t.Run(name, func(t *testing.T) {
			big := bytes.Repeat([]byte("compressible "), 1000)
			exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
				if !bytes.Equal(st.Values[0].Bytes, big) {
					t.Errorf("the bound value did not arrive intact")
				}
				return coordinator.Result{Kind: coordinator.ResultRows, Rows: &coordinator.Rows{Keyspace: "ks", Table: "t",
					Columns: []coordinator.RowColumn{{Name: "v", Type: schema.TypeBlob}}, Values: [][][]byte{{big}}}}, nil
			}}
			_, addr := startServer(t, Config{Executor: exec})
			c := dial(t, addr)
			c.startup(map[string]string{"COMPRESSION": name})
			c.send(1, &cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cqlwire.One, Values: []cqlwire.Value{{Bytes: big}}}})
			f := c.recv()
			if f.Header.Flags&cqlwire.FlagCompression == 0 || int(f.Header.Length) >= len(big) {
				t.Errorf("answer flags %v, %d bytes: not compressed", f.Header.Flags, f.Header.Length)
			}
			if r, ok := f.Message.(*cqlwire.RowsResult); !ok || !bytes.Equal(r.Cells[0], big) {
				t.Errorf("answer %#v", f.Message)
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	syntaxErr := func() error {
		_, err := parseForTest("SELEKT")
		return &coordinator.InvalidError{Err: err}
	}()
	for _, tc := range []struct {
		name      string
		err       error
		cl        cqlwire.Consistency
		batch     bool
		optIn     bool
		want      cqlwire.Error
		inMessage string
	}{
		{name: "rate limit opted in", optIn: true,
			err:       &coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: schema.OpWrite, RejectedBy: coordinator.RejectedByCoordinator, Limit: 10, RetryAfter: 1500e6},
			want:      cqlwire.Error{Code: cqlwire.ErrRateLimit, RateLimitOp: cqlwire.RateLimitWrite, RejectedByCoordinator: true},
			inMessage: "rate limit exceeded for writes on ks.t (limit 10/s), rejected by coordinator; retry after 1.5s"},
		{name: "rate limit read by replicas opted in", optIn: true,
			err:       &coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: schema.OpRead, RejectedBy: coordinator.RejectedByReplicas, Limit: 5},
			want:      cqlwire.Error{Code: cqlwire.ErrRateLimit, RateLimitOp: cqlwire.RateLimitRead},
			inMessage: "reads on ks.t (limit 5/s), rejected by replicas"},
		{name: "rate limit not opted in",
			err:       &coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: schema.OpWrite, RejectedBy: coordinator.RejectedByCoordinator, Limit: 10},
			want:      cqlwire.Error{Code: cqlwire.ErrConfig},
			inMessage: "rate limit exceeded for writes on ks.t (limit 10/s), rejected by coordinator"},
		{name: "unavailable", cl: cqlwire.LocalQuorum,
			err:  &coordinator.UnavailableError{Consistency: coordinator.LocalQuorum, Live: 1, Required: 2},
			want: cqlwire.Error{Code: cqlwire.ErrUnavailable, Consistency: cqlwire.LocalQuorum, BlockFor: 2, Received: 1}},
		{name: "write timeout", cl: cqlwire.All,
			err:  &coordinator.TimeoutError{Op: schema.OpWrite, Consistency: coordinator.All, Received: 2, Required: 3},
			want: cqlwire.Error{Code: cqlwire.ErrWriteTimeout, Consistency: cqlwire.All, Received: 2, BlockFor: 3, WriteType: "SIMPLE"}},
		{name: "batch write timeout", cl: cqlwire.Quorum, batch: true,
			err:  &coordinator.TimeoutError{Op: schema.OpWrite, Consistency: coordinator.Quorum, Received: 0, Required: 2},
			want: cqlwire.Error{Code: cqlwire.ErrWriteTimeout, Consistency: cqlwire.Quorum, BlockFor: 2, WriteType: "BATCH"}},
		{name: "batchlog write timeout", cl: cqlwire.Quorum, batch: true,
			err:  &coordinator.TimeoutError{Op: schema.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2, BatchLog: true},
			want: cqlwire.Error{Code: cqlwire.ErrWriteTimeout, Consistency: cqlwire.Quorum, Received: 1, BlockFor: 2, WriteType: "BATCH_LOG"}, inMessage: "batchlog write timed out"},
		{name: "batchlog write failure", cl: cqlwire.Quorum, batch: true,
			err:  &coordinator.FailureError{Op: schema.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2, Failures: 1, Err: errors.New("disk full"), BatchLog: true},
			want: cqlwire.Error{Code: cqlwire.ErrWriteFailure, Consistency: cqlwire.Quorum, Received: 1, BlockFor: 2, NumFailures: 1, WriteType: "BATCH_LOG"}},
		{name: "read timeout", cl: cqlwire.Quorum,
			err:  &coordinator.TimeoutError{Op: schema.OpRead, Consistency: coordinator.Quorum, Received: 1, Required: 2},
			want: cqlwire.Error{Code: cqlwire.ErrReadTimeout, Consistency: cqlwire.Quorum, Received: 1, BlockFor: 2, DataPresent: true}},
		{name: "write failure", cl: cqlwire.One,
			err:  &coordinator.FailureError{Op: schema.OpWrite, Consistency: coordinator.One, Required: 1, Failures: 3, Err: errors.New("disk full")},
			want: cqlwire.Error{Code: cqlwire.ErrWriteFailure, Consistency: cqlwire.One, BlockFor: 1, NumFailures: 3, WriteType: "SIMPLE"}},
		{name: "syntax", err: syntaxErr, want: cqlwire.Error{Code: cqlwire.ErrSyntax}, inMessage: "1:1"},
		{name: "invalid", err: &coordinator.InvalidError{Err: fmt.Errorf("%w ks.x", schema.ErrUnknownTable)},
			want: cqlwire.Error{Code: cqlwire.ErrInvalid}, inMessage: "unknown table ks.x"},
		{name: "table exists", err: &coordinator.InvalidError{Err: &schema.ExistsError{Keyspace: "ks", Table: "t"}},
			want: cqlwire.Error{Code: cqlwire.ErrAlreadyExists, Keyspace: "ks", Table: "t"}, inMessage: "table ks.t already exists"},
		{name: "keyspace exists", err: &coordinator.InvalidError{Err: &schema.ExistsError{Keyspace: "ks"}},
			want: cqlwire.Error{Code: cqlwire.ErrAlreadyExists, Keyspace: "ks"}, inMessage: "keyspace ks already exists"},
		{name: "schema unavailable", err: &coordinator.SchemaUnavailableError{Message: "no majority"},
			want: cqlwire.Error{Code: cqlwire.ErrOverloaded}, inMessage: "no majority"},
		{name: "closed", err: fmt.Errorf("x: %w", errClosedForTest()), want: cqlwire.Error{Code: cqlwire.ErrOverloaded}, inMessage: "shutting down"},
		{name: "internal", err: errors.New("pebble: corrupted"), want: cqlwire.Error{Code: cqlwire.ErrServer}, inMessage: "pebble: corrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &fakeExecutor{
				execute: func(context.Context, coordinator.Statement) (coordinator.Result, error) {
					return coordinator.Result{}, tc.err
				},
				batch: func(context.Context, coordinator.BatchStatement) (coordinator.Result, error) {
					return coordinator.Result{}, tc.err
				},
			}
			_, addr := startServer(t, Config{Executor: exec})
			c := dial(t, addr)
			opts := map[string]string{}
			if tc.optIn {
				opts["SCYLLA_RATE_LIMIT_ERROR"] = ""
			}
			c.startup(opts)
			cl := cmpOr(tc.cl, cqlwire.One)
			var m cqlwire.Message = &cqlwire.Query{Query: "x", Params: cqlwire.QueryParams{Consistency: cl}}
			if tc.batch {
				m = &cqlwire.Batch{Consistency: cl, Children: []cqlwire.BatchChild{{Query: "x"}}}
			}
			e, ok := c.roundTrip(m).(*cqlwire.Error)
			if !ok {
				t.Fatalf("answer is not an ERROR")
			}
			msg := e.Message
			e.Message = ""
			tc.want.Message = ""
			if fmt.Sprintf("%+v", *e) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("ERROR = %+v,\nwant    %+v", *e, tc.want)
			}
			if want := cmpOr(tc.inMessage, tc.err.Error()); !contains(msg, want) {
				t.Errorf("message %q does not say %q", msg, want)
			}
		})
	}
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// TestOversizedFrameErrorReachesClientStillSending checks that a client that goes on sending
// the body of a frame over the limit reads the protocol error, rather than a reset connection.
func TestOversizedFrameErrorReachesClientStillSending(t *testing.T) {
	_, addr := startServer(t, Config{MaxFrameSize: 1 << 16})
	for range 5 {
		c := dial(t, addr)
		c.startup(nil)
		frame := append(cqlwire.AppendHeader(nil, cqlwire.Header{Stream: 3, Opcode: cqlwire.OpQuery, Length: 256 << 10}), make([]byte, 256<<10)...)
		go c.nc.Write(frame) // may fail once the server closes; the error must be readable anyway
		c.expectProtocolError(3, "exceeds the limit of 65536")
	}
}

// TestStatementPanicIsAnsweredServerError: a statement that panics (a bug) is answered
// SERVER_ERROR on its stream, counted and logged with its stack, and the node and the
// connection go on serving.
func TestStatementPanicIsAnsweredServerError(t *testing.T) {
	var logged lockedbuf.Buffer
	exec := &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		if st.Text == "boom" {
			var m map[string]int
			m["x"] = 1 // a nil map write: a runtime panic, as a real bug would be
		}
		return coordinator.Result{}, nil
	}}
	s, addr := startServer(t, Config{Executor: exec, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	c := dial(t, addr)
	c.startup(nil)
	m := c.roundTrip(&cqlwire.Query{Query: "boom", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	if e, ok := m.(*cqlwire.Error); !ok || e.Code != cqlwire.ErrServer || !strings.Contains(e.Message, "bug") {
		t.Fatalf("a statement that panics was answered %#v, want SERVER_ERROR", m)
	}
	if m := c.roundTrip(&cqlwire.Query{Query: "fine", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}); m.Opcode() != cqlwire.OpResult {
		t.Errorf("the next statement on the connection was answered %#v, want its RESULT", m)
	}
	if got := testutil.ToFloat64(s.metrics.panics); got != 1 {
		t.Errorf("kvnode_native_panics_total = %v, want 1", got)
	}
	if log := logged.String(); !strings.Contains(log, "assignment to entry in nil map") || !strings.Contains(log, "goroutine") {
		t.Errorf("the log does not hold the panic and its stack:\n%s", log)
	}
}

// TestReaderPanicClosesOnlyItsConnection: a panic in a connection's reader (here in the early
// rate-limit decision it makes) closes that connection, counted and logged, and the node goes
// on serving the others.
func TestReaderPanicClosesOnlyItsConnection(t *testing.T) {
	var logged lockedbuf.Buffer
	exec := &admittingExecutor{admit: func(p *coordinator.Prepared) error { panic("a bug in the early decision") }}
	exec.prepare = func(_ context.Context, text, keyspace string) (*coordinator.Prepared, error) {
		return &coordinator.Prepared{ID: [16]byte{9}, Text: text, Keyspace: keyspace, PKIndexes: []int{0},
			Variables: []coordinator.Variable{{Name: "k", Type: schema.TypeText}}}, nil
	}
	s, addr := startServer(t, Config{Executor: exec, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	other := dial(t, addr)
	other.startup(nil)
	c := dial(t, addr)
	c.startup(map[string]string{rateLimitOption: ""})
	p, ok := c.roundTrip(&cqlwire.Prepare{Query: "INSERT INTO ks.t (k) VALUES (?)"}).(*cqlwire.PreparedResult)
	if !ok {
		t.Fatal("PREPARE did not answer a prepared result")
	}
	c.send(1, &cqlwire.Execute{ID: p.ID, Params: cqlwire.QueryParams{Consistency: cqlwire.One, Values: []cqlwire.Value{{Bytes: []byte("k")}}}})
	c.expectClosed()
	if m := other.roundTrip(cqlwire.Options{}); m.Opcode() != cqlwire.OpSupported {
		t.Errorf("another connection, after a reader panicked, answered %#v, want SUPPORTED", m)
	}
	if got := testutil.ToFloat64(s.metrics.panics); got != 1 {
		t.Errorf("kvnode_native_panics_total = %v, want 1", got)
	}
	if log := logged.String(); !strings.Contains(log, "a bug in the early decision") || !strings.Contains(log, "goroutine") {
		t.Errorf("the log does not hold the panic and its stack:\n%s", log)
	}
}
