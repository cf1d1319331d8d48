package native

import (
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/schema"
)

// fakeSchema is a SchemaSource whose schema tests change with apply.
type fakeSchema struct {
	mu      sync.Mutex
	cur     *schema.Schema
	changed chan struct{}
	ts      int64
}

func newFakeSchema() *fakeSchema { return &fakeSchema{cur: schema.New(), changed: make(chan struct{})} }

func (f *fakeSchema) Schema() *schema.Schema {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

func (f *fakeSchema) SchemaChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeSchema) apply(t *testing.T, stmts ...string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.cur
	for _, src := range stmts {
		parsed, err := cql.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		f.ts++
		if s, err = s.Apply(parsed[0], "", schema.Change{Version: schema.Version{Timestamp: f.ts, Node: "n1"}}); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
	}
	f.cur = s
	close(f.changed)
	f.changed = make(chan struct{})
}

// fakeTopology is a TopologySource tests change with set.
type fakeTopology struct {
	mu      sync.Mutex
	peers   []Peer
	changed chan struct{}
}

func (f *fakeTopology) Peers() []Peer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peers
}

func (f *fakeTopology) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeTopology) set(peers ...Peer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peers = peers
	close(f.changed)
	f.changed = make(chan struct{})
}

func TestSchemaEvents(t *testing.T) {
	fs := newFakeSchema()
	_, addr := startServer(t, Config{Schema: fs})
	c := dial(t, addr)
	c.startup(nil)
	if _, ok := c.roundTrip(&cqlwire.Register{Events: []string{"SCHEMA_CHANGE"}}).(cqlwire.Ready); !ok {
		t.Fatal("REGISTER not answered READY")
	}
	// A connection that did not register gets nothing (checked at the end).
	quiet := dial(t, addr)
	quiet.startup(nil)

	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			f := c.recv()
			ev, ok := f.Message.(*cqlwire.Event)
			if !ok || f.Header.Stream != -1 {
				t.Fatalf("got %#v on stream %d, want an EVENT on stream -1", f.Message, f.Header.Stream)
			}
			got := fmt.Sprintf("%s %s %s %s", ev.Schema.Change, ev.Schema.Target, ev.Schema.Keyspace, ev.Schema.Name)
			if ev.Type != "SCHEMA_CHANGE" || got != w {
				t.Fatalf("event %s %q, want SCHEMA_CHANGE %q", ev.Type, got, w)
			}
		}
	}
	fs.apply(t, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	expect("CREATED KEYSPACE ks ")
	fs.apply(t, "CREATE TABLE ks.t (k text PRIMARY KEY, v int)", "CREATE TABLE ks.u (k text PRIMARY KEY)")
	expect("CREATED TABLE ks t", "CREATED TABLE ks u")
	fs.apply(t, "ALTER TABLE ks.t WITH per_partition_rate_limit = {'max_writes_per_second': 5}")
	expect("UPDATED TABLE ks t")
	fs.apply(t, "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	expect("UPDATED KEYSPACE ks ")
	fs.apply(t, "DROP TABLE ks.u")
	expect("DROPPED TABLE ks u")
	fs.apply(t, "DROP KEYSPACE ks")
	expect("DROPPED KEYSPACE ks ")

	quiet.send(1, cqlwire.Options{})
	if f := quiet.recv(); f.Header.Stream != 1 {
		t.Fatalf("an unregistered connection got %v on stream %d", f.Header.Opcode, f.Header.Stream)
	}
}

func TestTopologyAndStatusEvents(t *testing.T) {
	ft := &fakeTopology{changed: make(chan struct{})}
	a := netip.MustParseAddrPort("127.0.0.2:9042")
	b := netip.MustParseAddrPort("127.0.0.3:9042")
	ft.peers = []Peer{{ID: "a", Addr: a, Live: true}}
	_, addr := startServer(t, Config{Topology: ft})
	c := dial(t, addr)
	c.startup(nil)
	c.roundTrip(&cqlwire.Register{Events: []string{"TOPOLOGY_CHANGE", "STATUS_CHANGE"}})
	status := dial(t, addr)
	status.startup(nil)
	status.roundTrip(&cqlwire.Register{Events: []string{"STATUS_CHANGE"}})

	recvEvent := func(c *testClient) cqlwire.Event {
		t.Helper()
		f := c.recv()
		ev, ok := f.Message.(*cqlwire.Event)
		if !ok || f.Header.Stream != -1 {
			t.Fatalf("got %#v on stream %d, want an EVENT", f.Message, f.Header.Stream)
		}
		return *ev
	}
	want := func(c *testClient, evs ...cqlwire.Event) {
		t.Helper()
		for _, w := range evs {
			if got := recvEvent(c); !reflect.DeepEqual(got, w) {
				t.Fatalf("event %+v, want %+v", got, w)
			}
		}
	}
	ft.set(Peer{ID: "a", Addr: a, Live: false}, Peer{ID: "b", Addr: b, Live: true})
	want(c, cqlwire.Event{Type: "STATUS_CHANGE", Change: "DOWN", Addr: a},
		cqlwire.Event{Type: "TOPOLOGY_CHANGE", Change: "NEW_NODE", Addr: b},
		cqlwire.Event{Type: "STATUS_CHANGE", Change: "UP", Addr: b})
	want(status, cqlwire.Event{Type: "STATUS_CHANGE", Change: "DOWN", Addr: a},
		cqlwire.Event{Type: "STATUS_CHANGE", Change: "UP", Addr: b})
	ft.set(Peer{ID: "b", Addr: b, Live: true})
	want(c, cqlwire.Event{Type: "TOPOLOGY_CHANGE", Change: "REMOVED_NODE", Addr: a})
	// The status-only connection got nothing for the removal: the next frame is its answer.
	status.send(2, cqlwire.Options{})
	if f := status.recv(); f.Header.Stream != 2 {
		t.Fatalf("status-only connection got %v on stream %d", f.Header.Opcode, f.Header.Stream)
	}
}

func TestRegisterUnknownEvent(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.startup(nil)
	e, ok := c.roundTrip(&cqlwire.Register{Events: []string{"SCHEMA_CHANGE", "NOPE"}}).(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrProtocol || !contains(e.Message, `unknown event type "NOPE"`) {
		t.Fatalf("REGISTER NOPE answered %#v", e)
	}
	// The connection stays usable.
	if _, ok := c.roundTrip(cqlwire.Options{}).(*cqlwire.Supported); !ok {
		t.Fatal("connection unusable after a refused REGISTER")
	}
}

// TestSlowEventReaderIsClosed checks that events never block the server: a connection whose
// event queue is full is closed.
func TestSlowEventReaderIsClosed(t *testing.T) {
	ft := &fakeTopology{changed: make(chan struct{})}
	s, addr := startServer(t, Config{Topology: ft, Options: Options{EventQueue: 1}})
	c := dial(t, addr)
	c.startup(nil)
	c.roundTrip(&cqlwire.Register{Events: []string{"TOPOLOGY_CHANGE"}})
	// Stop the writer from draining: hold the connection's queue full by publishing directly.
	var conn *conn
	s.mu.Lock()
	for k := range s.conns {
		conn = k
	}
	s.mu.Unlock()
	for i := range 10000 {
		conn.pushEvent(&cqlwire.Event{Type: "TOPOLOGY_CHANGE", Change: "NEW_NODE", Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i)}), 9042)})
		select {
		case <-conn.done:
			return
		default:
		}
	}
	// The client reads nothing: with a queue of 1 the server must give up on it.
	waitFor(t, func() bool {
		select {
		case <-conn.done:
			return true
		default:
			return false
		}
	})
}

// TestSchemaEventsOfRecreatedObjects checks that a keyspace or table dropped and created again
// between two observed schemas is reported CREATED (a new incarnation), not missed.
func TestSchemaEventsOfRecreatedObjects(t *testing.T) {
	fs := newFakeSchema()
	fs.apply(t, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY)", "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	before := fs.Schema()
	fs.apply(t, "DROP TABLE ks.t", "CREATE TABLE ks.t (k text PRIMARY KEY, v int)",
		"DROP KEYSPACE other", "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	var got []string
	for _, sc := range schemaEvents(before, fs.Schema()) {
		got = append(got, fmt.Sprintf("%s %s %s %s", sc.Change, sc.Target, sc.Keyspace, sc.Name))
	}
	want := []string{"CREATED KEYSPACE other ", "CREATED TABLE ks t"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
