package grpcapi

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/frontend/loginguard"
)

// Authenticator checks a login: package node gives it the coordinator's executor.
type Authenticator interface {
	Authenticate(ctx context.Context, username, password string) (auth.Login, error)
}

// AuthMetadataKey is the metadata key of a call's credentials: "authorization" with the value
// "Basic " + base64(username + ":" + password), as HTTP's basic authentication spells it.
const AuthMetadataKey = "authorization"

// BasicCredentials returns the AuthMetadataKey value for username and password.
func BasicCredentials(username, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(username+":"+password))
}

// access is what a method needs of its caller.
type access uint8

const (
	accessNone      access = iota // health checks and the internode services
	accessLogin                   // the client API and reflection: any role that may log in
	accessSuperuser               // the admin services
)

// methodAccess returns what the full method name ("/package.Service/Method") needs: the admin
// services (kvnode's Admin, Repair and Snapshot: status, decommission, removenode, repair,
// snapshot) and TopPartitions (which shows the hot partitions' keys of every table) a superuser; the
// client API (every other kvnode service outside kvnode.replica) and reflection (which lists the
// services) a login; health checks and the internode services (kvnode.replica.*, which the
// internode listener and its mutual TLS protect) nothing.
func methodAccess(method string) access {
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	switch {
	case !ok:
		return accessLogin
	case strings.HasPrefix(svc, "grpc.health."):
		return accessNone
	case strings.HasPrefix(svc, "grpc.reflection."):
		return accessLogin
	case strings.HasPrefix(svc, "kvnode.replica."):
		return accessNone
	case strings.HasPrefix(svc, "kvnode."):
		switch svc[strings.LastIndexByte(svc, '.')+1:] {
		case "Admin", "Repair", "Snapshot":
			return accessSuperuser
		case "KVNode":
			if name == "TopPartitions" { // partition keys of every table, as nodetool's
				return accessSuperuser
			}
		}
		return accessLogin
	}
	return accessLogin
}

// AuthInterceptors return the interceptors that authenticate every call of the client gRPC
// server when authentication is on: the call's metadata must carry AuthMetadataKey
// credentials of a role that may log in (UNAUTHENTICATED otherwise), the admin services need a
// superuser (PERMISSION_DENIED otherwise), and the call then runs as that role
// (auth.WithRole), whose grants the coordinator checks statement by statement. Credentials are
// checked on every call; the coordinator remembers a verified password for a short while, so
// that a call does not pay for bcrypt each time. Every check goes through the login guard g
// (shared with the native front end), which counts and logs failures, and makes a call from an
// address that failed too often wait before its check, or refuses it as throttled; with g nil,
// calls are checked without it.
func AuthInterceptors(a Authenticator, g *loginguard.Guard) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := authenticate(ctx, a, g, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := authenticate(ss.Context(), a, g, info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &roleStream{ServerStream: ss, ctx: ctx})
	}
	return unary, stream
}

// roleStream is a server stream whose context carries the caller's role.
type roleStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *roleStream) Context() context.Context { return s.ctx }

// authenticate checks the credentials of a call of method through g and returns its context
// with the caller's role.
func authenticate(ctx context.Context, a Authenticator, g *loginguard.Guard, method string) (context.Context, error) {
	need := methodAccess(method)
	if need == accessNone {
		return ctx, nil
	}
	var remote net.Addr
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(AuthMetadataKey)
	if len(vals) == 0 {
		g.Malformed(loginguard.GRPC, remote, "no credentials")
		return nil, status.Errorf(codes.Unauthenticated, "%s: this node requires authentication: send the metadata %q: \"Basic \" + base64(username:password) (the Go client's WithCredentials; kvnode cql --username)", method, AuthMetadataKey)
	}
	if len(vals) > 1 {
		g.Malformed(loginguard.GRPC, remote, "credentials given more than once")
		return nil, status.Errorf(codes.Unauthenticated, "%s: the metadata %q is given %d times, want once", method, AuthMetadataKey, len(vals))
	}
	user, pass, err := parseBasic(vals[0])
	if err != nil {
		g.Malformed(loginguard.GRPC, remote, err.Error())
		return nil, status.Errorf(codes.Unauthenticated, "%s: %v", method, err)
	}
	login, err := g.Authenticate(ctx, a, loginguard.GRPC, remote, user, pass)
	if err != nil {
		var ae *auth.AuthenticationError
		if errors.As(err, &ae) {
			return nil, status.New(codes.Unauthenticated, ae.Error()).Err()
		}
		return nil, ErrorStatus(err).Err()
	}
	if need == accessSuperuser && !login.Superuser {
		return nil, status.Errorf(codes.PermissionDenied, "User %s is not a superuser: %s needs a superuser", login.Role, method)
	}
	return auth.WithRole(ctx, login.Role), nil
}

// parseBasic parses "Basic base64(username:password)".
func parseBasic(v string) (user, pass string, err error) {
	scheme, enc, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", errors.New(`the authorization metadata must be "Basic " + base64(username:password)`)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", errors.New("the authorization metadata's credentials are not valid base64")
	}
	user, pass, ok = strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New("the authorization metadata's credentials are not username:password")
	}
	return user, pass, nil
}
