package native

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cqlwire"
)

// fakeAuthenticator logs in alice with password "pw"; any other login fails. It fails with
// backend when that is set, as when system_auth cannot be read.
type fakeAuthenticator struct {
	backend error
	mu      sync.Mutex
	calls   int
}

func (f *fakeAuthenticator) Authenticate(_ context.Context, user, pass string) (auth.Login, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.backend != nil {
		return auth.Login{}, f.backend
	}
	if user == "alice" && pass == "pw" {
		return auth.Login{Role: "alice"}, nil
	}
	return auth.Login{}, &auth.AuthenticationError{Username: user}
}

// roleEcho is an executor that fails unless its context carries a role, and reports the role
// in the error otherwise (so that the test sees which role the statement ran as).
func roleEcho() *fakeExecutor {
	return &fakeExecutor{execute: func(ctx context.Context, st coordinator.Statement) (coordinator.Result, error) {
		role, ok := auth.RoleFrom(ctx)
		if !ok {
			return coordinator.Result{}, &auth.UnauthorizedError{Msg: "anonymous"}
		}
		return coordinator.Result{}, &auth.UnauthorizedError{Role: role, Permission: auth.Alter, Resource: auth.TableResource("ks", "t")}
	}}
}

// login sends STARTUP (with opts), expects AUTHENTICATE naming Cassandra's password
// authenticator, and sends token as AUTH_RESPONSE, returning its answer.
func (c *testClient) login(opts map[string]string, token []byte) cqlwire.Frame {
	c.t.Helper()
	all := map[string]string{"CQL_VERSION": "3.0.0"}
	for k, v := range opts {
		all[k] = v
	}
	m := c.roundTrip(&cqlwire.Startup{Options: all})
	a, ok := m.(*cqlwire.Authenticate)
	if !ok || a.Authenticator != PasswordAuthenticator {
		c.t.Fatalf("STARTUP answered %#v, want AUTHENTICATE %s", m, PasswordAuthenticator)
	}
	if name := all["COMPRESSION"]; name != "" {
		c.comp = cqlwire.CompressionByName(name)
		c.fr.SetCompression(c.comp)
	}
	c.send(2, &cqlwire.AuthResponse{Token: token})
	return c.recv()
}

// TestSASLPlainLogin checks the login handshake: STARTUP is answered AUTHENTICATE, a good SASL
// PLAIN token AUTH_SUCCESS, and the statements then run as the role; with and without
// compression.
func TestSASLPlainLogin(t *testing.T) {
	for _, comp := range []string{"", "lz4", "snappy"} {
		fa := &fakeAuthenticator{}
		_, addr := startServer(t, Config{Executor: roleEcho(), Authenticator: fa})
		c := dial(t, addr)
		opts := map[string]string{}
		if comp != "" {
			opts["COMPRESSION"] = comp
		}
		f := c.login(opts, []byte("\x00alice\x00pw"))
		if f.Header.Stream != 2 || f.Message.Opcode() != cqlwire.OpAuthSuccess {
			t.Fatalf("compression %q: AUTH_RESPONSE answered %#v on stream %d, want AUTH_SUCCESS on 2", comp, f.Message, f.Header.Stream)
		}
		m := c.roundTrip(&cqlwire.Query{Query: "SELECT * FROM ks.t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
		e, ok := m.(*cqlwire.Error)
		if !ok || e.Code != cqlwire.ErrUnauthorized || e.Message != "User alice has no ALTER permission on <table ks.t> or any of its parents" {
			t.Fatalf("compression %q: QUERY after login answered %#v, want Unauthorized naming alice (the executor saw the role)", comp, m)
		}
		// An authzid is ignored, as Cassandra does.
		c2 := dial(t, addr)
		if f := c2.login(nil, []byte("someone\x00alice\x00pw")); f.Message.Opcode() != cqlwire.OpAuthSuccess {
			t.Fatalf("a token with an authzid answered %#v, want AUTH_SUCCESS", f.Message)
		}
	}
}

// TestSASLPlainRefusals checks that nothing runs before a login, that a failed login is answered
// Bad_credentials (0x0100) and closes the connection, and that a malformed token is refused.
func TestSASLPlainRefusals(t *testing.T) {
	fa := &fakeAuthenticator{}
	ex := &fakeExecutor{execute: func(context.Context, coordinator.Statement) (coordinator.Result, error) {
		t.Error("a statement ran without a login")
		return coordinator.Result{}, nil
	}}
	_, addr := startServer(t, Config{Executor: ex, Authenticator: fa})

	for _, tt := range []struct {
		token []byte
		want  string
	}{
		{[]byte("\x00alice\x00wrong"), "Provided username alice and/or password are incorrect"},
		{[]byte("\x00bob\x00pw"), "Provided username bob and/or password are incorrect"},
		{[]byte("alice:pw"), "not a SASL PLAIN token"},
		{[]byte("\x00\x00pw"), "names no username"},
		{nil, "not a SASL PLAIN token"},
	} {
		c := dial(t, addr)
		f := c.login(nil, tt.token)
		e, ok := f.Message.(*cqlwire.Error)
		if !ok || e.Code != cqlwire.ErrBadCredentials || !contains(e.Message, tt.want) {
			t.Errorf("AUTH_RESPONSE %q answered %#v, want Bad_credentials saying %q", tt.token, f.Message, tt.want)
			continue
		}
		c.expectClosed()
	}

	// A statement between AUTHENTICATE and AUTH_SUCCESS is a protocol error.
	c := dial(t, addr)
	if m := c.roundTrip(&cqlwire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}); m.Opcode() != cqlwire.OpAuthenticate {
		t.Fatalf("STARTUP answered %#v, want AUTHENTICATE", m)
	}
	c.send(3, &cqlwire.Query{Query: "SELECT * FROM ks.t", Params: cqlwire.QueryParams{Consistency: cqlwire.One}})
	c.expectProtocolError(3, "the connection is not started")

	// AUTH_RESPONSE before STARTUP, and a second one after the login.
	c = dial(t, addr)
	c.send(4, &cqlwire.AuthResponse{Token: []byte("\x00alice\x00pw")})
	c.expectProtocolError(4, "send STARTUP first")
	c = dial(t, addr)
	if f := c.login(nil, []byte("\x00alice\x00pw")); f.Message.Opcode() != cqlwire.OpAuthSuccess {
		t.Fatalf("login answered %#v, want AUTH_SUCCESS", f.Message)
	}
	c.send(5, &cqlwire.AuthResponse{Token: []byte("\x00alice\x00pw")})
	c.expectProtocolError(5, "logged in already")

	// Without an authenticator, STARTUP is answered READY and AUTH_RESPONSE is refused.
	_, plain := startServer(t, Config{})
	c = dial(t, plain)
	c.send(6, &cqlwire.AuthResponse{Token: []byte("\x00alice\x00pw")})
	c.expectProtocolError(6, "authentication is not enabled")
}

// TestSASLPlainBackendFailure checks that a login that cannot be checked (system_auth
// unreadable) is answered Bad_credentials saying why, as Cassandra's "Error during
// authentication".
func TestSASLPlainBackendFailure(t *testing.T) {
	fa := &fakeAuthenticator{backend: errors.New("not enough replicas of system_auth")}
	_, addr := startServer(t, Config{Authenticator: fa})
	c := dial(t, addr)
	f := c.login(nil, []byte("\x00alice\x00pw"))
	e, ok := f.Message.(*cqlwire.Error)
	if !ok || e.Code != cqlwire.ErrBadCredentials || e.Message != "Error during authentication of user alice: not enough replicas of system_auth" {
		t.Fatalf("login answered %#v, want Bad_credentials saying the check failed", f.Message)
	}
}
