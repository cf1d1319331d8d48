package node

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/coordinator/shell"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/frontend/native"
	"github.com/kvnode/kvnode/internal/loop"
)

// The values of Config.Authenticator.
const (
	AuthenticatorNone     = "none"
	AuthenticatorPassword = "password"
)

// The superuser's executor is both front ends' authenticator.
var (
	_ native.Authenticator  = (*shell.Executor)(nil)
	_ grpcapi.Authenticator = (*shell.Executor)(nil)
)

// authEnabled reports whether clients must log in.
func (c *Config) authEnabled() bool { return c.Authenticator == AuthenticatorPassword }

func (c *Config) validateAuth() error {
	switch c.Authenticator {
	case AuthenticatorNone:
		if c.SuperuserPasswordFile != "" {
			return fmt.Errorf("node: Config.SuperuserPasswordFile (superuser_password_file) is set but Config.Authenticator (authenticator) is %q: set authenticator to password, or drop the file", c.Authenticator)
		}
	case AuthenticatorPassword:
		if c.SuperuserPasswordFile == "" {
			return fmt.Errorf("node: Config.Authenticator (authenticator) is password but Config.SuperuserPasswordFile (superuser_password_file) is empty: name a file holding the initial password of the superuser role %s", shell.SuperuserRole)
		}
	default:
		return fmt.Errorf("node: Config.Authenticator (authenticator) is %q, want none or password", c.Authenticator)
	}
	return nil
}

// authConfig returns the coordinator's authentication configuration; nil when it is off.
func (c *Config) authConfig() *shell.AuthConfig {
	if !c.authEnabled() {
		return nil
	}
	ac := &shell.AuthConfig{}
	if c.Testing != nil {
		ac.HashCost = c.Testing.AuthHashCost
	}
	return ac
}

// readSuperuserPassword reads Config.SuperuserPasswordFile when authentication is on: the
// password is its content without a trailing newline, and must not be empty. "" when off.
func readSuperuserPassword(c Config) (string, error) {
	if !c.authEnabled() {
		return "", nil
	}
	data, err := os.ReadFile(c.SuperuserPasswordFile)
	if err != nil {
		return "", fmt.Errorf("node: --superuser-password-file (superuser_password_file): %w", err)
	}
	pw := strings.TrimRight(string(data), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("node: --superuser-password-file (superuser_password_file) %s is empty: it must hold the initial password of the superuser role %s", c.SuperuserPasswordFile, shell.SuperuserRole)
	}
	if fi, err := os.Stat(c.SuperuserPasswordFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		c.Logger.Warn("the superuser password file is readable by other users than its owner; chmod 600 it",
			"file", c.SuperuserPasswordFile, "mode", fi.Mode().Perm().String())
	}
	return pw, nil
}

// nativeAuthenticator returns the native protocol's authenticator: nil (no login) when
// authentication is off.
func (n *Node) nativeAuthenticator() native.Authenticator {
	if !n.cfg.authEnabled() {
		return nil
	}
	return n.exec
}

// authServerOptions returns the gRPC server's interceptors that check every call's credentials
// when authentication is on. The internode service (Internode, on its own listener) is exempt:
// the internode listener and its mutual TLS protect it (docs/operations.md).
func (n *Node) authServerOptions() []grpc.ServerOption {
	if !n.cfg.authEnabled() {
		return nil
	}
	unary, stream := grpcapi.AuthInterceptors(n.exec, n.logins)
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

// newLoginGuard returns the guard of both front ends' logins (frontend/loginguard: failures
// counted by reason, logged at WARN at most once per login_log_interval per address, and
// attempts from an address that failed login_failure_threshold times recently delayed before
// their check), and registers its metrics, which exist (at zero) when authentication is off
// too.
func (n *Node) newLoginGuard() (*loginguard.Guard, error) {
	g, err := loginguard.New(loginguard.Config{Options: n.cfg.Logins, Logger: n.cfg.Logger.With("component", "auth")})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.registry.MustRegister(g.Collector())
	return g, nil
}

// authSetupRetry is how long the setup waits between attempts.
const authSetupRetry = time.Second

// startAuthSetup starts creating the superuser role admin when authentication is on and
// system_auth holds no role. It retries until a QUORUM of system_auth's replicas answers (a
// node starting before its peers cannot write yet) or the node shuts down.
func (n *Node) startAuthSetup(password string) {
	if !n.cfg.authEnabled() {
		return
	}
	attempt := 0
	n.authSetup = loop.Start(loop.Options{Every: authSetupRetry}, func(ctx context.Context) time.Duration {
		attempt++
		created, err := n.exec.SetupAuth(ctx, password)
		switch {
		case err == nil && created:
			n.log.Info("created the superuser role: log in as it and create the roles clients use", "role", shell.SuperuserRole)
			return loop.Done
		case err == nil, ctx.Err() != nil:
			return loop.Done
		case attempt%10 == 1:
			n.log.Warn("cannot set up authentication yet; retrying", "err", err)
		}
		return 0
	})
}
