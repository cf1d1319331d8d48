package cqlsh

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cqlwire"
)

// login answers the node's AUTHENTICATE with a SASL PLAIN AUTH_RESPONSE and expects
// AUTH_SUCCESS.
func (c *nativeConn) login(ctx context.Context, authenticator, username, password string) error {
	if username == "" {
		return &client.AuthenticationError{Message: fmt.Sprintf("the node requires authentication (%s): log in with --username and the password in %s", authenticator, PasswordEnv)}
	}
	token := append(append(append([]byte{0}, username...), 0), password...)
	m, _, err := c.roundTrip(ctx, &cqlwire.AuthResponse{Token: token})
	if err != nil {
		return err
	}
	switch m := m.(type) {
	case *cqlwire.AuthSuccess:
		return nil
	case *cqlwire.Error:
		return &client.AuthenticationError{Message: m.Message}
	case *cqlwire.AuthChallenge:
		return errors.New("the node sent an AUTH_CHALLENGE, which SASL PLAIN does not have")
	default:
		return fmt.Errorf("AUTH_RESPONSE answered with %s, want AUTH_SUCCESS", m.Opcode())
	}
}
