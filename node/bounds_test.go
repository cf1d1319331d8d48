package node_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/schema"
)

// TestSchemaLimits is issue 18's schema growth: DDL over a limit fails with an error naming
// it, and the schema does not change.
func TestSchemaLimits(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Catalog.Limits = schema.Limits{MaxColumnsPerTable: 20, MaxTablesPerKeyspace: 2, MaxSchemaSize: 64 << 10}
	nd := startNode(t, cfg)
	c, err := dialClient(nd.Addr(), insecure.NewCredentials())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(stmt string) error {
		_, err := c.Execute(ctx, client.One, stmt)
		return err
	}
	if err := run("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"); err != nil {
		t.Fatal(err)
	}
	cols := func(n int) string {
		var b strings.Builder
		b.WriteString("k int PRIMARY KEY")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, ", c%d int", i)
		}
		return b.String()
	}
	for _, c := range []struct{ stmt, want string }{
		{"CREATE TABLE ks.wide (" + cols(21) + ")", "the limit is 20 columns per table (max_columns_per_table)"},
		{"CREATE TABLE ks.a (" + cols(20) + ")", ""},
		{"CREATE TABLE ks.b (k int PRIMARY KEY)", ""},
		{"CREATE TABLE ks.c (k int PRIMARY KEY)", "the limit is 2 tables per keyspace (max_tables_per_keyspace)"},
		{"CREATE KEYSPACE big WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ""},
		{"CREATE TABLE big.t (k int PRIMARY KEY, " + strings.Repeat("x", 40<<10) + " int, " + strings.Repeat("y", 40<<10) + " int)", "(max_schema_size)"},
	} {
		err := run(c.stmt)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%.60s...: %v, want %q", c.stmt, err, c.want)
		}
	}
	got := nd.Schema().Tables("")
	if len(got) != 2 {
		t.Errorf("the schema holds %d tables, want the 2 within the limits", len(got))
	}
}

// TestGRPCConnectionLimit: a gRPC listener accepts at most max_grpc_connections connections;
// one more is closed at once, and a place frees when a connection closes.
func TestGRPCConnectionLimit(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.MaxGRPCConnections = 2
	nd := startNode(t, cfg)
	for _, addr := range []string{nd.Addr(), nd.InternodeAddr()} {
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		over, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		over.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, err := over.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: the connection over the limit read %d bytes, %v; want it closed (EOF)", addr, n, err)
		}
		over.Close()
		held[0].Close()
		if addr == nd.Addr() {
			poll.Must(t, 30*time.Second, "a client connects once a place is free", func() error {
				c, err := dialClient(addr, insecure.NewCredentials())
				if err == nil {
					c.Close()
				}
				return err
			})
		}
		held[1].Close()
	}
}

// TestGRPCConcurrentStreamsLimit: each gRPC listener advertises its bound on the streams of one
// connection (max_concurrent_streams on the client port, 16 times as many on the internode
// port) and enforces it on a client that ignores the advertisement: a stream beyond it is
// refused (RST_STREAM REFUSED_STREAM) while the others stay open.
func TestGRPCConcurrentStreamsLimit(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.MaxConcurrentStreams = 2
	nd := startNode(t, cfg)
	for _, l := range []struct {
		name, addr string
		want       uint32
		path       string // a unary method: its handler waits for the request, which never comes
	}{
		{"client", nd.Addr(), 2, "/kvnode.v1.KVNode/Execute"},
		{"internode", nd.InternodeAddr(), 2 * node.InternodeStreamsFactor, "/kvnode.replica.v1.Internode/Call"},
	} {
		nc, err := net.Dial("tcp", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(nc, nc)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s port: reading the server's settings: %v", l.name, err)
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			t.Fatalf("%s port: the server's first frame is %v, want its SETTINGS", l.name, f)
		}
		if got, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || got != l.want {
			t.Errorf("%s port advertises SETTINGS_MAX_CONCURRENT_STREAMS %d (set: %v), want %d", l.name, got, ok, l.want)
		}
		if err := fr.WriteSettingsAck(); err != nil {
			t.Fatal(err)
		}
		var hdr bytes.Buffer
		enc := hpack.NewEncoder(&hdr)
		for _, h := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", l.path}, {":authority", l.addr},
			{"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
		}
		last := 2*l.want + 1 // the stream id one past the bound
		for id := uint32(1); id <= last; id += 2 {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hdr.Bytes(), EndHeaders: true}); err != nil {
				t.Fatal(err)
			}
		}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("%s port: waiting for stream %d to be refused: %v", l.name, last, err)
			}
			rst, ok := f.(*http2.RSTStreamFrame)
			if !ok {
				continue // settings ack, window updates, pings
			}
			if rst.StreamID != last || rst.ErrCode != http2.ErrCodeRefusedStream {
				t.Fatalf("%s port: RST_STREAM of stream %d (%v), want only stream %d (stream %d of the connection) refused with REFUSED_STREAM",
					l.name, rst.StreamID, rst.ErrCode, last, l.want+1)
			}
			break
		}
	}
}

// TestNativeConnectionLimit: the native listener takes at most max_native_connections
// connections; one more is answered Overloaded, naming the bound, and closed.
func TestNativeConnectionLimit(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Native.MaxConnections = 1
	nd := startNode(t, cfg)
	nativeConn(t, nd.CQLAddr()) // holds the one place
	over, err := net.Dial("tcp", nd.CQLAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetDeadline(time.Now().Add(30 * time.Second))
	h, body, err := cqlwire.NewFrameReader(bufio.NewReader(over), cqlwire.ReaderOptions{Responses: true}).ReadFrame()
	if err != nil {
		t.Fatalf("the connection over max_native_connections: %v, want an Overloaded answer", err)
	}
	f, err := cqlwire.DecodeFrame(h, body)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := f.Message.(*cqlwire.Error); !ok || e.Code != cqlwire.ErrOverloaded || !strings.Contains(e.Message, "at most 1") {
		t.Errorf("the connection over max_native_connections = 1 was answered %#v, want Overloaded naming the bound", f.Message)
	}
}

// TestSilentConnectionsDoNotLockClientsOut is audit 18's finding 4: a listener counts a
// connection from accept, so connections that never handshake used to hold every place of
// max_grpc_connections for gRPC's 120 s (renewable at will), locking clients and peers out.
// Each gRPC listener now closes them after handshake_timeout, and a client gets in.
func TestSilentConnectionsDoNotLockClientsOut(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.MaxGRPCConnections = 1
	cfg.Listen.HandshakeTimeout = 300 * time.Millisecond
	cfg.Listen.MetricsAddr = "127.0.0.1:0"
	nd := startNode(t, cfg)
	for _, l := range []struct {
		name, addr string
		call       func() error // what a well-behaved client does
	}{
		{"client", nd.Addr(), func() error {
			c, err := dialClient(nd.Addr(), insecure.NewCredentials())
			if err == nil {
				c.Close()
			}
			return err
		}},
		{"internode", nd.InternodeAddr(), func() error { return callInternode(t, nd.InternodeAddr(), insecure.NewCredentials()) }},
		{"metrics", nd.MetricsAddr(), nil},
	} {
		silent, err := net.Dial("tcp", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		// Closed by the node (after the server's half of the handshake, on gRPC): reading
		// ends long before the deadline, which only bounds a failing test.
		silent.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := io.Copy(io.Discard, silent); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s port: a connection that never handshakes read %d bytes and was still open after 20 s, want it closed after handshake_timeout", l.name, n)
			continue
		}
		if l.call != nil {
			poll.Must(t, 30*time.Second, l.name+" port: a well-behaved client connects once the silent one is closed", l.call)
		}
	}
}

// TestIdleConnectionsAreClosed: a client gRPC connection with no request in flight is closed
// after idle_connection_timeout, so it does not keep another client out of
// max_grpc_connections for ever; its client reconnects at its next request.
func TestIdleConnectionsAreClosed(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.MaxGRPCConnections = 1
	cfg.Listen.IdleConnectionTimeout = 300 * time.Millisecond
	nd := startNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	idle, err := dialClient(nd.Addr(), insecure.NewCredentials())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Execute(ctx, client.One, "DESCRIBE KEYSPACES"); err != nil {
		t.Fatal(err)
	}
	var other *client.Client
	poll.Must(t, 30*time.Second, "another client gets the idle connection's place", func() error {
		c, err := dialClient(nd.Addr(), insecure.NewCredentials())
		if err != nil {
			return err
		}
		if _, err := c.Execute(ctx, client.One, "DESCRIBE KEYSPACES"); err != nil {
			c.Close()
			return err
		}
		other = c
		return nil
	})
	other.Close()
	poll.Must(t, 30*time.Second, "the idle client reconnects at its next request", func() error {
		_, err := idle.Execute(ctx, client.One, "DESCRIBE KEYSPACES")
		return err
	})
}

// TestMetricsConnectionLimit: the metrics listener takes at most node.MaxMetricsConnections
// connections; one more is closed at once.
func TestMetricsConnectionLimit(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.MetricsAddr = "127.0.0.1:0"
	nd := startNode(t, cfg)
	for range node.MaxMetricsConnections {
		c, err := net.Dial("tcp", nd.MetricsAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	over, err := net.Dial("tcp", nd.MetricsAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetReadDeadline(time.Now().Add(5 * time.Second)) // under handshake_timeout's 10 s
	if n, err := io.Copy(io.Discard, over); err != nil {
		t.Errorf("connection %d to the metrics port read %d bytes, %v; want it closed at once (EOF)", node.MaxMetricsConnections+1, n, err)
	}
}

// TestConnectionsPerHost: no host may hold more than max_connections_per_host connections of
// a client or internode listener, so that one host cannot take every place of the listener's
// bound; a connection over it is closed at once (on the native port after an Overloaded answer
// naming the bound), while another host still gets in. The hosts are two loopback addresses.
func TestConnectionsPerHost(t *testing.T) {
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Listen.MaxConnectionsPerHost = 2
	nd := startNode(t, cfg)
	from := func(ip, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 20 * time.Second}
		return d.Dial("tcp", addr)
	}
	for _, l := range []struct{ name, addr string }{
		{"client", nd.Addr()}, {"internode", nd.InternodeAddr()}, {"native", nd.CQLAddr()},
	} {
		for range 2 {
			c, err := from("127.0.0.1", l.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		over, err := from("127.0.0.1", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer over.Close()
		over.SetReadDeadline(time.Now().Add(5 * time.Second)) // under handshake_timeout's 10 s
		if l.name == "native" {
			// The native port says why, as it does over max_native_connections, then closes.
			fr := cqlwire.NewFrameReader(bufio.NewReader(over), cqlwire.ReaderOptions{Responses: true})
			h, body, err := fr.ReadFrame()
			var f cqlwire.Frame
			if err == nil {
				f, err = cqlwire.DecodeFrame(h, body)
			}
			e, ok := f.Message.(*cqlwire.Error)
			if err != nil || !ok || e.Code != cqlwire.ErrOverloaded || !strings.Contains(e.Message, "at most 2 per host (max_connections_per_host)") {
				t.Errorf("native port: connection 3 from one host read %#v, %v; want Overloaded naming max_connections_per_host", f.Message, err)
			}
			if _, _, err := fr.ReadFrame(); !errors.Is(err, io.EOF) {
				t.Errorf("native port: after the answer, connection 3 read %v, want its end (EOF)", err)
			}
		} else if n, err := io.Copy(io.Discard, over); err != nil || n != 0 {
			t.Errorf("%s port: connection 3 from one host read %d bytes, %v; want it closed at once (EOF)", l.name, n, err)
		}
		other, err := from("127.0.0.2", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		other.SetDeadline(time.Now().Add(20 * time.Second))
		switch l.name {
		case "native":
			if _, err := other.Write(cqlwire.AppendFrame(nil, 1, &cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}, cqlwire.FrameOptions{})); err != nil {
				t.Fatal(err)
			}
		case "internode":
			// The internode port tells gRPC from the framed protocol by the client's first
			// bytes: HTTP/2's preface goes to gRPC.
			if _, err := io.WriteString(other, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
		// Another host is served: gRPC sends its settings (at once on the client port, after
		// the preface on the internode port) and the native protocol answers STARTUP.
		other.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := other.Read(make([]byte, 64)); err != nil || n == 0 {
			t.Errorf("%s port: a connection from another host read %d bytes, %v; want it served", l.name, n, err)
		}
	}
}

// TestConnectionsPerHostOverTLS: on a TLS native port the answer to a connection over
// max_connections_per_host comes over TLS, after the client's handshake.
func TestConnectionsPerHostOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir(), "cluster")
	f := ca.Issue(t, t.TempDir(), "n1")
	cfg := nodeConfig(t.TempDir(), nil)
	cfg.Security.TLSCert, cfg.Security.TLSKey, cfg.Security.TLSCA = f.Cert, f.Key, f.CA
	cfg.Listen.MaxConnectionsPerHost = 1
	nd := startNode(t, cfg)
	clientCfg, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	dial := func() *tls.Conn {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 20 * time.Second}, "tcp", nd.CQLAddr(), clientCfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	over := dial()
	over.SetReadDeadline(time.Now().Add(20 * time.Second))
	fr := cqlwire.NewFrameReader(bufio.NewReader(over), cqlwire.ReaderOptions{Responses: true})
	h, body, err := fr.ReadFrame()
	var fm cqlwire.Frame
	if err == nil {
		fm, err = cqlwire.DecodeFrame(h, body)
	}
	if e, ok := fm.Message.(*cqlwire.Error); err != nil || !ok || e.Code != cqlwire.ErrOverloaded || !strings.Contains(e.Message, "at most 1 per host") {
		t.Errorf("a second TLS connection from one host read %#v, %v; want Overloaded naming max_connections_per_host", fm.Message, err)
	}
}
