package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/cqlwire"
	"github.com/kvnode/kvnode/frontend/loginguard"
)

// Authenticator checks a login: package node gives it the coordinator's executor.
type Authenticator interface {
	Authenticate(ctx context.Context, username, password string) (auth.Login, error)
}

// PasswordAuthenticator is the authenticator class AUTHENTICATE names: Cassandra's, which every
// driver's plain-text (SASL PLAIN) authenticator accepts.
const PasswordAuthenticator = "org.apache.cassandra.auth.PasswordAuthenticator"

// loginState is a connection's login, kept by its reader during the handshake.
type loginState struct {
	// pending is set once STARTUP was answered AUTHENTICATE, until AUTH_RESPONSE logs in.
	pending bool
}

// startAuth answers STARTUP with AUTHENTICATE when the server has an Authenticator: the client
// must then log in with AUTH_RESPONSE (SASL PLAIN) before anything else but OPTIONS. The
// compression STARTUP chose applies from the frame after the answer, as with READY; the
// handshake timeout still runs, so a client that never logs in is closed.
func (c *conn) startAuth(fr *cqlwire.FrameReader, stream int16, comp cqlwire.Compression) bool {
	c.login.pending = true
	fr.SetCompression(comp)
	c.send(outFrame{stream: stream, msg: &cqlwire.Authenticate{Authenticator: PasswordAuthenticator}, request: true, compress: comp})
	return true
}

// authResponse handles AUTH_RESPONSE before the connection started: the SASL PLAIN token is
// checked by the Authenticator, through the server's login guard (which counts and logs
// failures, and delays or refuses attempts from an address that failed too often); success
// answers AUTH_SUCCESS and the connection's statements then run as the role (auth.WithRole);
// failure answers Bad_credentials (0x0100) and closes the connection, so that each guess costs
// a new connection. It reports whether to go on reading.
func (c *conn) authResponse(fr *cqlwire.FrameReader, stream int16, m *cqlwire.AuthResponse) bool {
	if !c.login.pending {
		switch {
		case c.started.Load() && c.srv.cfg.Authenticator != nil:
			c.protocolError(stream, fmt.Sprintf("stream %d, AUTH_RESPONSE: the connection is logged in already", stream))
		case c.srv.cfg.Authenticator == nil:
			c.protocolError(stream, fmt.Sprintf("stream %d, AUTH_RESPONSE: authentication is not enabled on this node", stream))
		default:
			c.protocolError(stream, fmt.Sprintf("stream %d, AUTH_RESPONSE: send STARTUP first; it is answered AUTHENTICATE", stream))
		}
		return false
	}
	user, pass, err := parsePlain(m.Token)
	if err != nil {
		c.srv.logins.Malformed(loginguard.Native, c.nc.RemoteAddr(), err.Error())
		c.badCredentials(stream, err.Error())
		return false
	}
	// The guard may make the attempt wait before its check (its address failed too often):
	// on this connection's reader, which has nothing else to read before the login.
	login, err := c.srv.logins.Authenticate(c.ctx, c.srv.cfg.Authenticator, loginguard.Native, c.nc.RemoteAddr(), user, pass)
	if err != nil {
		var ae *auth.AuthenticationError
		msg := err.Error()
		if !errors.As(err, &ae) {
			msg = fmt.Sprintf("Error during authentication of user %s: %v", user, err)
		}
		c.badCredentials(stream, msg)
		return false
	}
	c.login.pending = false
	// Request goroutines start only after this, on this reader's goroutine: they see the role.
	c.ctx = auth.WithRole(c.ctx, login.Role)
	c.start(fr)
	c.send(outFrame{stream: stream, msg: &cqlwire.AuthSuccess{}, request: true})
	return true
}

// badCredentials answers a failed login and closes the connection once that is written.
func (c *conn) badCredentials(stream int16, msg string) {
	c.srv.metrics.errors.WithLabelValues(errorCodeName(cqlwire.ErrBadCredentials)).Inc()
	c.send(outFrame{stream: stream, msg: &cqlwire.Error{Code: cqlwire.ErrBadCredentials, Message: msg}, closeErr: true})
}

// parsePlain parses a SASL PLAIN token (RFC 4616): [authzid] NUL authcid NUL passwd. The
// authorization identity, when given, is ignored, as Cassandra does.
func parsePlain(token []byte) (user, pass string, err error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", "", errors.New("the AUTH_RESPONSE token is not a SASL PLAIN token: [authzid] NUL username NUL password")
	}
	if len(parts[1]) == 0 {
		return "", "", errors.New("the AUTH_RESPONSE token names no username")
	}
	return string(parts[1]), string(parts[2]), nil
}
