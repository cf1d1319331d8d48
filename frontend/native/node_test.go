package native_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/replica"
)

// These tests run the server inside real nodes: pebble on disk, memberlist and the listeners
// on loopback.

const waitLimit = 30 * time.Second

func startNode(t *testing.T, seeds ...string) *node.Node {
	t.Helper()
	nd, err := node.Start(context.Background(), node.Config{
		DataDir: filepath.Join(t.TempDir(), "n"),
		Listen:  node.ListenOptions{Addr: "127.0.0.1:0", CQLAddr: "127.0.0.1:0", InternodeAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0"},
		Cluster: cluster.Options{Seeds: seeds, Profile: cluster.ProfileTest, SchemaAgreementTimeout: 5 * time.Second},
		Storage: replica.Options{CacheSize: 8 << 20, MemTableSize: 4 << 20, NoSync: true},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	return nd
}

// wireClient is a minimal native protocol client: one request at a time, events set aside.
type wireClient struct {
	t      *testing.T
	nc     net.Conn
	fr     *cqlwire.FrameReader
	events []*cqlwire.Event
}

func connect(t *testing.T, addr string, opts map[string]string) *wireClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &wireClient{t: t, nc: nc, fr: cqlwire.NewFrameReader(bufio.NewReader(nc), cqlwire.ReaderOptions{Responses: true})}
	all := map[string]string{"CQL_VERSION": "3.0.0"}
	for k, v := range opts {
		all[k] = v
	}
	if m := c.do(&cqlwire.Startup{Options: all}); m.Opcode() != cqlwire.OpReady {
		t.Fatalf("STARTUP answered %#v", m)
	}
	return c
}

func (c *wireClient) do(m cqlwire.Message) cqlwire.Message {
	c.t.Helper()
	c.nc.SetDeadline(time.Now().Add(waitLimit))
	if _, err := c.nc.Write(cqlwire.AppendFrame(nil, 1, m, cqlwire.FrameOptions{})); err != nil {
		c.t.Fatal(err)
	}
	for {
		f := c.next()
		if f.Header.Stream == 1 {
			return f.Message
		}
	}
}

func (c *wireClient) next() cqlwire.Frame {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	h, body, err := c.fr.ReadFrame()
	if err != nil {
		c.t.Fatal(err)
	}
	f, err := cqlwire.DecodeFrame(h, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if ev, ok := f.Message.(*cqlwire.Event); ok && h.Stream == -1 {
		c.events = append(c.events, ev)
	}
	return f
}

// query runs text at QUORUM.
func (c *wireClient) query(text string) cqlwire.Message {
	c.t.Helper()
	return c.do(&cqlwire.Query{Query: text, Params: cqlwire.QueryParams{Consistency: cqlwire.Quorum}})
}

// ok runs text and fails unless it is answered with a RESULT.
func (c *wireClient) ok(text string) cqlwire.Message {
	c.t.Helper()
	m := c.query(text)
	if e, isErr := m.(*cqlwire.Error); isErr {
		c.t.Fatalf("%s: error 0x%04x %s", text, e.Code, e.Message)
	}
	return m
}

// waitEvent reads until an event for which match is true arrives.
func (c *wireClient) waitEvent(match func(*cqlwire.Event) bool) {
	c.t.Helper()
	for i := 0; ; i++ {
		for _, ev := range c.events {
			if match(ev) {
				return
			}
		}
		c.events = nil
		c.next()
	}
}

func TestNodeServesCQL(t *testing.T) {
	nd := startNode(t)
	c := connect(t, nd.CQLAddr(), map[string]string{"SCYLLA_RATE_LIMIT_ERROR": ""})

	sc, ok := c.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").(*cqlwire.SchemaChangeResult)
	if !ok || sc.Change != "CREATED" || sc.Target != "KEYSPACE" || sc.Keyspace != "ks" {
		t.Fatalf("CREATE KEYSPACE answered %#v", sc)
	}
	e, ok := c.query("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrAlreadyExists || e.Keyspace != "ks" || e.Table != "" {
		t.Fatalf("CREATE KEYSPACE again answered %#v, want Already_exists naming ks", e)
	}
	if m, ok := c.ok("USE ks").(*cqlwire.SetKeyspaceResult); !ok || m.Keyspace != "ks" {
		t.Fatalf("USE answered %#v", m)
	}
	c.ok("CREATE TABLE t (k text, c int, v bigint, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 1}")
	e, ok = c.query("CREATE TABLE t (k text PRIMARY KEY)").(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrAlreadyExists || e.Keyspace != "ks" || e.Table != "t" {
		t.Fatalf("CREATE TABLE again answered %#v, want Already_exists naming ks.t", e)
	}
	c.ok("INSERT INTO t (k, c, v) VALUES ('a', 1, 10)")
	rows, ok := c.ok("SELECT c, v FROM t WHERE k = 'a'").(*cqlwire.RowsResult)
	if !ok || rows.NumRows() != 1 || len(rows.Metadata.Columns) != 2 || rows.Metadata.Columns[1].Type.ID != cqlwire.TypeBigint ||
		rows.Metadata.Columns[0].Keyspace != "ks" || rows.Metadata.Columns[0].Table != "t" {
		t.Fatalf("SELECT answered %#v", rows)
	}
	if e, ok := c.query("SELEKT * FROM t").(*cqlwire.Error); !ok || e.Code != cqlwire.ErrSyntax || !strings.Contains(e.Message, "1:1") {
		t.Fatalf("a syntax error answered %#v, want Syntax_error with its position", e)
	}
	if e, ok := c.query("SELECT * FROM nope WHERE k = 'a'").(*cqlwire.Error); !ok || e.Code != cqlwire.ErrInvalid || !strings.Contains(e.Message, "nope") {
		t.Fatalf("an unknown table answered %#v, want Invalid naming it", e)
	}

	// The rate limit: 1 write per second per partition, so a burst to one partition is
	// rejected soon. The client opted in: ScyllaDB's error; another that did not: Config_error.
	plain := connect(t, nd.CQLAddr(), nil)
	plain.ok("USE ks")
	var gotOptIn, gotPlain *cqlwire.Error
	for i := 0; i < 1000 && (gotOptIn == nil || gotPlain == nil); i++ {
		for _, cl := range []*wireClient{c, plain} {
			if e, ok := cl.query(fmt.Sprintf("INSERT INTO t (k, c, v) VALUES ('hot', %d, 1)", i)).(*cqlwire.Error); ok {
				if cl == c {
					gotOptIn = e
				} else {
					gotPlain = e
				}
			}
		}
	}
	if gotOptIn == nil || gotOptIn.Code != cqlwire.ErrRateLimit || gotOptIn.RateLimitOp != cqlwire.RateLimitWrite || !gotOptIn.RejectedByCoordinator ||
		!strings.Contains(gotOptIn.Message, "rate limit exceeded for writes on ks.t (limit 1/s), rejected by coordinator") {
		t.Errorf("a client that opted in got %#v, want the rate-limit error 0xF000 (write, by coordinator)", gotOptIn)
	}
	if gotPlain == nil || gotPlain.Code != cqlwire.ErrConfig || !strings.Contains(gotPlain.Message, "rate limit exceeded for writes on ks.t") {
		t.Errorf("a client that did not opt in got %#v, want Config_error naming the limit", gotPlain)
	}
}

// TestSchemaEventsFromAnyNode checks that a client registered on one node hears of DDL run on
// another, and of the other node going down.
func TestSchemaEventsFromAnyNode(t *testing.T) {
	n1 := startNode(t)
	n2 := startNode(t, n1.GossipAddr())
	poll.Must(t, waitLimit, "the nodes to see each other", poll.Bool(func() bool {
		return len(n1.Cluster().Members()) >= 2 && n1.Cluster().IsLive(cluster.NodeID(n2.ID()))
	}))
	c1 := connect(t, n1.CQLAddr(), nil)
	if _, ok := c1.do(&cqlwire.Register{Events: []string{"SCHEMA_CHANGE", "STATUS_CHANGE", "TOPOLOGY_CHANGE"}}).(cqlwire.Ready); !ok {
		t.Fatal("REGISTER not answered READY")
	}
	c2 := connect(t, n2.CQLAddr(), nil)
	c2.ok("CREATE KEYSPACE ev WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	c2.ok("CREATE TABLE ev.t (k text PRIMARY KEY)")
	c1.waitEvent(func(ev *cqlwire.Event) bool {
		return ev.Type == "SCHEMA_CHANGE" && ev.Schema.Change == "CREATED" && ev.Schema.Target == "TABLE" && ev.Schema.Keyspace == "ev" && ev.Schema.Name == "t"
	})
	n2.Close()
	c1.waitEvent(func(ev *cqlwire.Event) bool {
		return ev.Type == "STATUS_CHANGE" && ev.Change == "DOWN" && ev.Addr.Addr().String() == "127.0.0.1"
	})
}

// TestNodeShutdownClosesCQLConnections checks that a node's Shutdown stops the native listener
// and closes its connections.
func TestNodeShutdownClosesCQLConnections(t *testing.T) {
	nd := startNode(t)
	c := connect(t, nd.CQLAddr(), nil)
	if err := nd.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.nc.SetReadDeadline(time.Now().Add(waitLimit))
	if _, _, err := c.fr.ReadFrame(); err == nil {
		t.Fatal("the connection is still open after Shutdown")
	}
	if nc, err := net.DialTimeout("tcp", nd.CQLAddr(), waitLimit); err == nil {
		nc.Close()
		t.Fatal("the native port still accepts connections after Shutdown")
	}
}

// TestRecreatedTableInvalidatesPreparedStatements: after DROP and CREATE of a table with other
// column types, EXECUTE of a statement prepared on the old table is answered Unprepared (so the
// driver prepares it again and learns the new metadata), never rows under the old metadata.
func TestRecreatedTableInvalidatesPreparedStatements(t *testing.T) {
	nd := startNode(t)
	c := connect(t, nd.CQLAddr(), nil)
	c.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	c.ok("CREATE TABLE ks.t (k text, c int, v int, PRIMARY KEY (k, c))")
	p := c.do(&cqlwire.Prepare{Query: "SELECT * FROM ks.t WHERE k = ?"}).(*cqlwire.PreparedResult)
	id := append([]byte(nil), p.ID...)
	c.ok("DROP TABLE ks.t")
	c.ok("CREATE TABLE ks.t (k text, c text, v blob, PRIMARY KEY (k, c))")
	c.ok("INSERT INTO ks.t (k, c, v) VALUES ('a', 'xyz', 0x01)")
	exec := &cqlwire.Execute{ID: id, Params: cqlwire.QueryParams{Consistency: cqlwire.One, SkipMetadata: true, Values: []cqlwire.Value{{Bytes: []byte("a")}}}}
	// The cache learns of the change from the node's schema watcher, just after the DDL's answer.
	poll.Must(t, 20*time.Second, "EXECUTE of the old prepared id to be answered Unprepared", func() error {
		switch m := c.do(exec).(type) {
		case *cqlwire.Error:
			if m.Code == cqlwire.ErrUnprepared {
				return nil
			}
			return fmt.Errorf("error %v, want Unprepared", m)
		case *cqlwire.RowsResult:
			return fmt.Errorf("rows under the old metadata (%d columns)", m.Metadata.ColumnCount)
		default:
			return fmt.Errorf("answer %T, want Unprepared", m)
		}
	})
}

// TestPreparedWriteRejectedFromItsKey runs prepared writes on a real node that is the replica
// of every partition: a write to the hot partition is rejected with ScyllaDB's error even when
// another of its values is malformed (the node looked at nothing but the partition key), while
// writes to other partitions are applied, and a malformed value there is refused as invalid.
func TestPreparedWriteRejectedFromItsKey(t *testing.T) {
	nd := startNode(t)
	c := connect(t, nd.CQLAddr(), map[string]string{"SCYLLA_RATE_LIMIT_ERROR": ""})
	c.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	c.ok("CREATE TABLE ks.t (k text, c int, v int, PRIMARY KEY (k, c)) WITH per_partition_rate_limit = {'max_writes_per_second': 1}")
	prepare := func() []byte {
		p, ok := c.do(&cqlwire.Prepare{Query: "INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)"}).(*cqlwire.PreparedResult)
		if !ok {
			t.Fatal("PREPARE did not answer a prepared result")
		}
		return p.ID
	}
	id := prepare()
	// write executes the prepared insert, preparing it again when the node dropped it (as a
	// driver does: the CREATE TABLE's schema event may reach the cache after the PREPARE).
	write := func(k string, col int, v []byte) cqlwire.Message {
		for {
			m := c.do(&cqlwire.Execute{ID: id, Params: cqlwire.QueryParams{Consistency: cqlwire.One, Values: []cqlwire.Value{
				{Bytes: []byte(k)}, {Bytes: []byte{0, 0, 0, byte(col)}}, {Bytes: v}}}})
			if e, ok := m.(*cqlwire.Error); !ok || e.Code != cqlwire.ErrUnprepared {
				return m
			}
			id = prepare()
		}
	}
	one := []byte{0, 0, 0, 1}
	var rejected *cqlwire.Error
	for i := 0; i < 1000 && rejected == nil; i++ {
		switch m := write("hot", i%100, one).(type) {
		case *cqlwire.Error:
			rejected = m
		case cqlwire.VoidResult:
		default:
			t.Fatalf("write %d to the hot partition answered %#v", i, m)
		}
	}
	if rejected == nil || rejected.Code != cqlwire.ErrRateLimit || !rejected.RejectedByCoordinator ||
		!strings.Contains(rejected.Message, "rate limit exceeded for writes on ks.t (limit 1/s), rejected by coordinator") {
		t.Fatalf("the hot partition answered %#v, want the rate-limit error", rejected)
	}
	// The limit is on the wall clock: a second boundary between the rejection above and this
	// write may let the counter halve and admit it (then its bad value is Invalid), so it is
	// tried until the partition is hot again, within as many writes as made it hot.
	var bad *cqlwire.Error
	for i := 0; i < 1000 && (bad == nil || bad.Code != cqlwire.ErrRateLimit); i++ {
		m := write("hot", 1, []byte("bad"))
		e, ok := m.(*cqlwire.Error)
		if !ok || e.Code != cqlwire.ErrRateLimit && e.Code != cqlwire.ErrInvalid {
			t.Fatalf("a write to the hot partition with a 3-byte int answered %#v, want the rate-limit error or Invalid", m)
		}
		bad = e
	}
	if bad.Code != cqlwire.ErrRateLimit {
		t.Errorf("a write to the hot partition with a 3-byte int answered %#v, want the rate-limit error (decided from the key alone)", bad)
	}
	if e, ok := write("cold", 1, []byte("bad")).(*cqlwire.Error); !ok || e.Code != cqlwire.ErrInvalid || !strings.Contains(e.Message, "v") {
		t.Errorf("a write to a cold partition with a 3-byte int answered %#v, want Invalid", e)
	}
	if m := write("cold", 2, one); m.Opcode() != cqlwire.OpResult {
		t.Fatalf("a write to a cold partition answered %#v", m)
	}
	rows, ok := c.ok("SELECT c, v FROM ks.t WHERE k = 'cold'").(*cqlwire.RowsResult)
	if !ok || rows.NumRows() != 1 {
		t.Fatalf("SELECT of the cold partition answered %#v, want its one row", rows)
	}
}
