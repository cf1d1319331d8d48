// Package auth is the vocabulary of authentication and authorization that the front ends and
// the coordinator shell share: the permissions and the resources they apply to (as Cassandra
// names them), the authenticated role a request runs as (carried in its context), and the two
// errors a client sees: a failed login (*AuthenticationError) and a statement its role may not
// run (*UnauthorizedError).
//
// The roles themselves, their hashed passwords and their grants live in the replicated
// system_auth keyspace, which the coordinator shell reads and writes (coordinator/shell/auth*.go);
// this package holds no state.
package auth

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// Permission is a set of permissions.
type Permission uint8

// The permissions, as Cassandra's CQL names them.
const (
	// Select allows SELECT.
	Select Permission = 1 << iota
	// Modify allows INSERT, UPDATE, DELETE and BATCH.
	Modify
	// Alter allows ALTER TABLE (a table's per_partition_rate_limit among its options).
	Alter
	// Create allows CREATE KEYSPACE (on ALL KEYSPACES) and CREATE TABLE (on the keyspace).
	Create
	// Drop allows DROP KEYSPACE and DROP TABLE.
	Drop
	// Authorize allows GRANT and REVOKE of the permissions the role holds on the resource.
	Authorize

	// All is every permission: GRANT ALL [PERMISSIONS].
	All = Select | Modify | Alter | Create | Drop | Authorize
)

// permissionNames lists the permissions in the order LIST PERMISSIONS shows them.
var permissionNames = [...]struct {
	p    Permission
	name string
}{
	{Create, "CREATE"}, {Alter, "ALTER"}, {Drop, "DROP"}, {Select, "SELECT"}, {Modify, "MODIFY"}, {Authorize, "AUTHORIZE"},
}

// ParsePermission returns the permission named name, case-insensitively: SELECT, MODIFY, ALTER,
// CREATE, DROP or AUTHORIZE.
func ParsePermission(name string) (Permission, error) {
	for _, n := range permissionNames {
		if strings.EqualFold(n.name, name) {
			return n.p, nil
		}
	}
	return 0, fmt.Errorf("unknown permission %s (valid: SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE, ALL PERMISSIONS)", name)
}

// Names returns the names of the permissions in p, in LIST PERMISSIONS order.
func (p Permission) Names() []string {
	var names []string
	for _, n := range permissionNames {
		if p&n.p != 0 {
			names = append(names, n.name)
		}
	}
	return names
}

// String returns "ALL PERMISSIONS" for All, else the names of p's permissions joined by ", ".
func (p Permission) String() string {
	if p == All {
		return "ALL PERMISSIONS"
	}
	if p == 0 {
		return "no permission"
	}
	return strings.Join(p.Names(), ", ")
}

// Resource is what a permission is granted on: every keyspace (the zero Resource), a keyspace
// (Table ""), a table, or (Levels) every service level.
type Resource struct {
	Keyspace, Table string
	// Levels marks ALL SERVICE LEVELS, ScyllaDB's resource of the service-level statements; its
	// Keyspace and Table are "".
	Levels bool
}

// AllKeyspaces is the root resource of the data.
var AllKeyspaces = Resource{}

// AllServiceLevels is the resource of the service levels: CREATE, ALTER and DROP on it allow
// CREATE, ALTER (and ATTACH, DETACH) and DROP SERVICE LEVEL; any permission on it allows
// listing them.
var AllServiceLevels = Resource{Levels: true}

// KeyspaceResource returns the resource of keyspace ks.
func KeyspaceResource(ks string) Resource { return Resource{Keyspace: ks} }

// TableResource returns the resource of table ks.t.
func TableResource(ks, t string) Resource { return Resource{Keyspace: ks, Table: t} }

// String returns how Cassandra's messages name the resource: "<all keyspaces>",
// "<keyspace ks>" or "<table ks.t>".
func (r Resource) String() string {
	switch {
	case r.Levels:
		return "<all service levels>"
	case r.Keyspace == "":
		return "<all keyspaces>"
	case r.Table == "":
		return "<keyspace " + r.Keyspace + ">"
	}
	return "<table " + r.Keyspace + "." + r.Table + ">"
}

// Key returns the resource's stored name, Cassandra's: "data", "data/ks" or "data/ks/t".
func (r Resource) Key() string {
	switch {
	case r.Levels:
		return levelsKey
	case r.Keyspace == "":
		return "data"
	case r.Table == "":
		return "data/" + r.Keyspace
	}
	return "data/" + r.Keyspace + "/" + r.Table
}

// levelsKey is the stored name of AllServiceLevels, ScyllaDB's.
const levelsKey = "service_levels"

// ParseResourceKey parses a name Key returned.
func ParseResourceKey(key string) (Resource, error) {
	if key == levelsKey {
		return AllServiceLevels, nil
	}
	parts := strings.Split(key, "/")
	if parts[0] != "data" || len(parts) > 3 {
		return Resource{}, fmt.Errorf("auth: malformed resource name %q", key)
	}
	for _, p := range parts[1:] {
		if p == "" {
			return Resource{}, fmt.Errorf("auth: malformed resource name %q", key)
		}
	}
	var r Resource
	if len(parts) > 1 {
		r.Keyspace = parts[1]
	}
	if len(parts) > 2 {
		r.Table = parts[2]
	}
	return r, nil
}

// Parent returns the resource r belongs to (a table's keyspace, a keyspace's ALL KEYSPACES);
// false for ALL KEYSPACES.
func (r Resource) Parent() (Resource, bool) {
	switch {
	case r.Keyspace == "": // ALL KEYSPACES, ALL SERVICE LEVELS
		return Resource{}, false
	case r.Table == "":
		return AllKeyspaces, true
	}
	return Resource{Keyspace: r.Keyspace}, true
}

// Applicable returns the permissions that can be granted on r: all of them, except CREATE on a
// table (tables hold nothing to create) and MODIFY on the service levels.
func (r Resource) Applicable() Permission {
	if r.Levels {
		return Create | Alter | Drop | Select | Authorize
	}
	if r.Table != "" {
		return All &^ Create
	}
	return All
}

// Within reports whether r is o or lies under it (a table of keyspace o, anything under ALL
// KEYSPACES).
func (r Resource) Within(o Resource) bool {
	for {
		if r == o {
			return true
		}
		var ok bool
		if r, ok = r.Parent(); !ok {
			return false
		}
	}
}

// ctxKey is the context key of the authenticated role.
type ctxKey struct{}

// WithRole returns ctx carrying role as the authenticated role its requests run as. Front ends
// set it once a client logged in; the coordinator shell checks every statement against it when
// authentication is on.
func WithRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, ctxKey{}, role)
}

// RoleFrom returns the authenticated role ctx carries; false when it carries none (anonymous).
func RoleFrom(ctx context.Context) (string, bool) {
	role, ok := ctx.Value(ctxKey{}).(string)
	return role, ok
}

// clientKey is the context key of the client's address.
type clientKey struct{}

// WithClient returns ctx carrying addr, the address the request's client connected from. Front
// ends set it on every connection; the coordinator shell holds a request by the service levels
// attached to its address (with or without authentication).
func WithClient(ctx context.Context, addr netip.Addr) context.Context {
	return context.WithValue(ctx, clientKey{}, addr.Unmap())
}

// ClientFrom returns the client address ctx carries; false when it carries none (a request the
// node makes itself, or a test).
func ClientFrom(ctx context.Context) (netip.Addr, bool) {
	addr, ok := ctx.Value(clientKey{}).(netip.Addr)
	return addr, ok && addr.IsValid()
}

// Login is who a successful authentication logged in.
type Login struct {
	Role      string
	Superuser bool
}

// AuthenticationError is a failed login: unknown role, wrong password, or a role that may not
// log in. Its message never says which, so that it does not tell an attacker which roles exist;
// Cause does, for the node's own logs and metrics.
type AuthenticationError struct {
	Username string
	// Reason, when set, replaces the default message (a missing username, a malformed token).
	Reason string
	// Cause says why the login failed; never part of the message.
	Cause LoginFailure
}

// LoginFailure is why a login failed, as the node counts and logs it (never as a client sees
// it).
type LoginFailure uint8

// The causes of a failed login.
const (
	// FailureUnspecified is a failure whose authenticator did not say why.
	FailureUnspecified LoginFailure = iota
	// FailureBadPassword is a role that exists but whose password did not match (or that has
	// none).
	FailureBadPassword
	// FailureUnknownRole is a username that names no role.
	FailureUnknownRole
	// FailureNotPermitted is a role that may not log in (LOGIN = false).
	FailureNotPermitted
	// FailureMalformed is credentials missing or that do not parse (no username, a name or
	// password longer than can be stored, a token that is not SASL PLAIN).
	FailureMalformed
	// FailureThrottled is a login refused before its check, because too many failed from its
	// address.
	FailureThrottled
)

// String returns the cause's name in metrics and logs: "unspecified", "bad_password",
// "unknown_role", "not_permitted", "malformed" or "throttled".
func (f LoginFailure) String() string {
	switch f {
	case FailureBadPassword:
		return "bad_password"
	case FailureUnknownRole:
		return "unknown_role"
	case FailureNotPermitted:
		return "not_permitted"
	case FailureMalformed:
		return "malformed"
	case FailureThrottled:
		return "throttled"
	}
	return "unspecified"
}

// Error reads as Cassandra's: "Provided username alice and/or password are incorrect".
func (e *AuthenticationError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	return fmt.Sprintf("Provided username %s and/or password are incorrect", e.Username)
}

// UnauthorizedError is a statement the role may not run: it lacks Permission on Resource (and on
// each of its parents), or the statement needs a superuser. Retrying it cannot succeed.
type UnauthorizedError struct {
	// Role is the role that ran the statement; "" for an anonymous client.
	Role string
	// Permission and Resource name what was missing; Permission 0 when Msg says it.
	Permission Permission
	Resource   Resource
	// Msg, when set, is the whole message (a superuser-only statement, an anonymous client).
	Msg string
}

// Error reads as Cassandra's: "User alice has no ALTER permission on <table ks.t> or any of its
// parents".
func (e *UnauthorizedError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("User %s has no %s permission on %s or any of its parents", e.Role, e.Permission, e.Resource)
}
