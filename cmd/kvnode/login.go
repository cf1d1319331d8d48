package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// adminConn holds what the admin commands (status, decommission, removenode, cleanup, repair)
// dial a node's client gRPC address with: the superuser to log in as and the CA to trust.
type adminConn struct {
	// username and password log in as a superuser on nodes with --authenticator password (the
	// password from --password, else KVNODE_PASSWORD); "" for no login.
	username, password string
	// tlsCA, when set, connects over TLS trusting the CA certificates in this PEM file.
	tlsCA string
}

// call dials the node at addr with c's credentials and calls fn on the connection within
// timeout. An error of fn that carries a gRPC status is reported by its code and message.
func (c adminConn) call(ctx context.Context, addr string, timeout time.Duration, fn func(context.Context, *grpc.ClientConn) error) error {
	opts, err := c.dialOptions()
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := fn(ctx, conn); err != nil {
		if s, ok := status.FromError(err); ok {
			return fmt.Errorf("node at %s: %s: %s", addr, s.Code(), s.Message())
		}
		return fmt.Errorf("node at %s: %w", addr, err)
	}
	return nil
}

// dialOptions returns the transport credentials (TLS trusting c.tlsCA, or plaintext) and the
// per-call login of c.
func (c adminConn) dialOptions() ([]grpc.DialOption, error) {
	creds := insecure.NewCredentials()
	if c.tlsCA != "" {
		cfg, err := tlsconfig.ClientConfig(c.tlsCA)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	u, p, err := cliflags.Credentials(c.username, c.password, c.password != "", os.Getenv(cliflags.PasswordEnv))
	if err != nil {
		return nil, err
	}
	if u != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(client.Credentials(u, p)))
	}
	return opts, nil
}
