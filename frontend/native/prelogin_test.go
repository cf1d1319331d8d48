package native

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/frontend/loginguard/loginguardtest"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
)

// dialFrom dials addr from the loopback address local (127.0.0.0/8 is all loopback on Linux),
// so that a test has clients on several hosts.
func dialFrom(t testing.TB, local, addr string) *testClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return newTestClient(t, nc)
}

// startLogin sends STARTUP, expects AUTHENTICATE, and sends token as AUTH_RESPONSE on stream 2
// without waiting for its answer.
func (c *testClient) startLogin(token string) {
	c.t.Helper()
	if m := c.roundTrip(&cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}); m.Opcode() != cqlwire.OpAuthenticate {
		c.t.Fatalf("STARTUP answered %#v, want AUTHENTICATE", m)
	}
	c.send(2, &cqlwire.AuthResponse{Token: []byte(token)})
}

// expectBadCredentials reads a Bad_credentials answer.
func (c *testClient) expectBadCredentials(what string) *cqlwire.Error {
	c.t.Helper()
	f := c.recv()
	e, ok := f.Message.(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrBadCredentials {
		c.t.Fatalf("%s: answered %#v, want Bad_credentials", what, f.Message)
	}
	return e
}

// gatherCounter returns the value of the counter name{labels} that c collects.
func gatherCounter(t *testing.T, c prometheus.Collector, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

// TestBruteForceSlowed: 15 wrong passwords from one host over the native protocol are counted
// and logged once; the 11th to the 15th each wait 1 s of the guard's clock before the
// authenticator is called; meanwhile a client from another host logs in at once.
func TestBruteForceSlowed(t *testing.T) {
	clock := loginguardtest.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	var logs lockedbuf.Buffer
	guard, err := loginguard.New(loginguard.Config{Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fa := &fakeAuthenticator{}
	_, addr := startServer(t, Config{Executor: roleEcho(), Authenticator: fa, Logins: guard})
	calls := func() int {
		fa.mu.Lock()
		defer fa.mu.Unlock()
		return fa.calls
	}
	others := 0
	for i := range 15 {
		c := dialFrom(t, "127.0.0.1", addr)
		c.startLogin("\x00alice\x00guess" + fmt.Sprint(i))
		if i >= 10 {
			poll.Must(t, timeout, fmt.Sprintf("guess %d waits", i+1), poll.Bool(func() bool { return clock.Sleepers() == 1 }))
			if n := calls() - others; n != i {
				t.Fatalf("guess %d: the authenticator was called %d times for the attacker while it waited, want %d: the wait comes before the check", i+1, n, i)
			}
			if i == 10 {
				other := dialFrom(t, "127.0.0.2", addr)
				if f := other.login(nil, []byte("\x00alice\x00pw")); f.Message.Opcode() != cqlwire.OpAuthSuccess {
					t.Fatalf("alice from another host while the attacker waits: %#v, want AUTH_SUCCESS at once", f.Message)
				}
				others++
			}
			clock.Advance(999 * time.Millisecond)
			if clock.Sleepers() != 1 {
				t.Fatalf("guess %d stopped waiting before 1 s", i+1)
			}
			clock.Advance(time.Millisecond)
		}
		c.expectBadCredentials(fmt.Sprintf("guess %d", i+1))
		c.expectClosed()
	}
	slept := clock.Slept()
	if len(slept) != 5 {
		t.Errorf("%d guesses waited (%v), want 5: the 11th to the 15th", len(slept), slept)
	}
	for _, d := range slept {
		if d < time.Second {
			t.Errorf("a guess waited %v, want ≥ 1s", d)
		}
	}
	if got := gatherCounter(t, guard.Collector(), "kvnode_auth_failures_total", map[string]string{"protocol": "native", "reason": "bad_password"}); got != 15 {
		t.Errorf("kvnode_auth_failures_total{protocol=native,reason=bad_password} = %v, want 15", got)
	}
	if got := gatherCounter(t, guard.Collector(), "kvnode_auth_delayed_logins_total", map[string]string{"protocol": "native"}); got != 5 {
		t.Errorf("kvnode_auth_delayed_logins_total{protocol=native} = %v, want 5", got)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "remote=127.0.0.1 role=alice reason=bad_password") {
		t.Errorf("the log after 15 failures has %d lines, want 1 naming the host, role and reason:\n%s", n, logs.String())
	}
}

// TestMalformedLoginCounted: a token that is not SASL PLAIN is counted as malformed.
func TestMalformedLoginCounted(t *testing.T) {
	guard, err := loginguard.New(loginguard.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, Config{Authenticator: &fakeAuthenticator{}, Logins: guard})
	c := dial(t, addr)
	c.startLogin("alice:pw")
	if e := c.expectBadCredentials("a token that is not SASL PLAIN"); !strings.Contains(e.Message, "not a SASL PLAIN token") {
		t.Errorf("answered %q, want it to say the token is not SASL PLAIN", e.Message)
	}
	if got := gatherCounter(t, guard.Collector(), "kvnode_auth_failures_total", map[string]string{"protocol": "native", "reason": "malformed"}); got != 1 {
		t.Errorf("kvnode_auth_failures_total{reason=malformed} = %v, want 1", got)
	}
}

// TestStartupOptionsBounded: a STARTUP with 65 options is refused with a protocol error naming
// the bound of 64.
func TestStartupOptionsBounded(t *testing.T) {
	_, addr := startServer(t, Config{})
	opts := map[string]string{"CQL_VERSION": "3.0.0"}
	for i := len(opts); i < cqlwire.MaxStartupOptions+1; i++ {
		opts[fmt.Sprintf("OPTION_%d", i)] = "x"
	}
	c := dial(t, addr)
	c.send(3, &cqlwire.Startup{Options: opts})
	c.expectProtocolError(3, "STARTUP options: 65 entries, at most 64 are accepted")
	// 64 are fine.
	delete(opts, "OPTION_64")
	c = dial(t, addr)
	c.startup(opts)
}

// TestPreLoginFrameBounded: before the connection is started, a frame claiming 1 MiB is refused
// from its header alone (its body is never sent, so the server did not wait to buffer it); once
// started, frames up to MaxFrameSize are read.
func TestPreLoginFrameBounded(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.write(cqlwire.AppendHeader(nil, cqlwire.Header{Stream: 7, Opcode: cqlwire.OpStartup, Length: 1 << 20}))
	c.expectProtocolError(7, "before the connection is started (READY or AUTH_SUCCESS), frames are at most 65536 bytes")

	c = dial(t, addr)
	c.startup(nil)
	q := &cqlwire.Query{Query: "SELECT * FROM t WHERE k = '" + strings.Repeat("x", 1<<20) + "'", Params: cqlwire.QueryParams{Consistency: cqlwire.One}}
	if m := c.roundTrip(q); m.Opcode() != cqlwire.OpResult {
		t.Errorf("a 1 MiB QUERY once started answered %#v, want a RESULT", m)
	}
}

// TestPreLoginConnectionsPerHost: the 17th connection of a host that are all not started is
// answered Overloaded naming the bound; another host is served meanwhile; once one of the 16
// starts, the host may open another.
func TestPreLoginConnectionsPerHost(t *testing.T) {
	s, addr := startServer(t, Config{Authenticator: &fakeAuthenticator{}})
	var idle []*testClient
	for range DefaultMaxPreLoginConnectionsPerHost {
		idle = append(idle, dialFrom(t, "127.0.0.1", addr))
	}
	c := dialFrom(t, "127.0.0.1", addr)
	f := c.recv()
	e, ok := f.Message.(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrOverloaded || !strings.Contains(e.Message, "too many connections from 127.0.0.1 that have not logged in: this node accepts at most 16 per host") {
		t.Fatalf("the 17th connection not started of a host: %#v, want Overloaded naming the bound", f.Message)
	}
	c.expectClosed()
	if got := gatherCounter(t, s.Collector(), "kvnode_native_connections_refused_total", nil); got != 1 {
		t.Errorf("kvnode_native_connections_refused_total = %v, want 1", got)
	}
	// Another host is served.
	if f := dialFrom(t, "127.0.0.2", addr).login(nil, []byte("\x00alice\x00pw")); f.Message.Opcode() != cqlwire.OpAuthSuccess {
		t.Fatalf("a client of another host: %#v, want AUTH_SUCCESS", f.Message)
	}
	// A connection that logged in frees its place.
	if f := idle[0].login(nil, []byte("\x00alice\x00pw")); f.Message.Opcode() != cqlwire.OpAuthSuccess {
		t.Fatalf("login: %#v", f.Message)
	}
	if f := dialFrom(t, "127.0.0.1", addr).login(nil, []byte("\x00alice\x00pw")); f.Message.Opcode() != cqlwire.OpAuthSuccess {
		t.Fatalf("a connection of the host once one of its 16 logged in: %#v, want AUTH_SUCCESS", f.Message)
	}
}
