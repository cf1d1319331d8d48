package client

import (
	"context"
	"encoding/base64"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// WithCredentials logs every call in as the role username with password, for nodes started
// with --authenticator password: each call carries the metadata "authorization: Basic
// base64(username:password)", which the node checks (it remembers a verified password for a
// couple of seconds, so calls do not each pay for the password hash). Over a plaintext
// connection the password crosses the network in the clear: use TLS (WithDialOptions with
// transport credentials) beyond loopback.
func WithCredentials(username, password string) Option {
	return func(o *options) {
		o.dialOptions = append(o.dialOptions, grpc.WithPerRPCCredentials(Credentials(username, password)))
	}
}

// Credentials returns the per-call credentials WithCredentials sends, for programs that dial a
// node's other gRPC services (the admin services) with grpc.NewClient:
// grpc.WithPerRPCCredentials(client.Credentials(username, password)).
func Credentials(username, password string) credentials.PerRPCCredentials {
	return basicAuth{value: "Basic " + base64.StdEncoding.EncodeToString([]byte(username+":"+password))}
}

// basicAuth is the per-call credentials of WithCredentials.
type basicAuth struct{ value string }

func (b basicAuth) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.value}, nil
}

// RequireTransportSecurity is false so that loopback and test clusters work without TLS; the
// operator decides (docs/operations.md).
func (basicAuth) RequireTransportSecurity() bool { return false }

// AuthenticationError reports a call the node refused to log in: no credentials, an unknown
// role, a wrong password, or a role that may not log in (gRPC UNAUTHENTICATED).
type AuthenticationError struct {
	Message string
	st      *status.Status
}

func (e *AuthenticationError) Error() string { return "kvnode: authentication failed: " + e.Message }

// GRPCStatus returns the server's status (UNAUTHENTICATED).
func (e *AuthenticationError) GRPCStatus() *status.Status { return e.st }

// UnauthorizedError reports a statement or call the logged-in role may not run: it lacks the
// permission the message names, or the call needs a superuser (gRPC PERMISSION_DENIED).
// Retrying it cannot succeed.
type UnauthorizedError struct {
	Message string
	st      *status.Status
}

func (e *UnauthorizedError) Error() string { return "kvnode: unauthorized: " + e.Message }

// GRPCStatus returns the server's status (PERMISSION_DENIED).
func (e *UnauthorizedError) GRPCStatus() *status.Status { return e.st }
