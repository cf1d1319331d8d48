package main

import (
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/cliflags"
	"github.com/kvnode/kvnode/internal/tlsconfig"
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
