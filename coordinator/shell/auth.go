package shell

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator/shell/systables"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// AuthConfig turns on authentication and authorization (Config.Auth; kvnode's --authenticator
// password): clients log in as a role of system_auth, and every statement is checked against
// the role's grants. The zero value of each field means its default.
type AuthConfig struct {
	// CacheTTL is how long a role, its grants and its last verified password are remembered
	// before system_auth is read again (Cassandra's roles_validity and permissions_validity).
	// Changes made through this node apply here at once, on other nodes within CacheTTL.
	// Default DefaultAuthCacheTTL.
	CacheTTL time.Duration
	// HashCost is the bcrypt cost of new password hashes. Default bcrypt.DefaultCost (10, as
	// Cassandra's); tests lower it.
	HashCost int
}

// DefaultAuthCacheTTL is the default AuthConfig.CacheTTL: Cassandra's 2 s.
const DefaultAuthCacheTTL = 2 * time.Second

// SuperuserRole is the role SetupAuth creates when system_auth holds no role.
const SuperuserRole = "admin"

// maxAuthCacheEntries bounds the roles the cache holds; past it, expired entries are dropped,
// and if none expired the cache starts over (roles are few; this only stops a flood of lookups
// of made-up names from growing it).
const maxAuthCacheEntries = 4096

// maxPasswordBytes is bcrypt's limit: it reads at most 72 bytes of a password.
const maxPasswordBytes = 72

// authorizer is the executor's authentication and authorization state.
type authorizer struct {
	store *authStore
	ttl   time.Duration
	cost  int
	// key keys the HMAC under which the cache remembers the last password that matched a role's
	// hash, so that a login or a gRPC call does not pay bcrypt each time and the cache never
	// holds a password.
	key [32]byte
	// hashing bounds concurrent bcrypt computations (each takes tens of milliseconds of CPU):
	// a flood of logins queues instead of taking every core.
	hashing chan struct{}
	// dummy is a hash of a random password, compared against when the role does not exist or
	// has no password, so that a failed login takes as long whether or not the role exists.
	dummy []byte

	mu    sync.Mutex
	cache map[string]*roleEntry
}

// roleEntry is what the cache knows of a role.
type roleEntry struct {
	loaded time.Time
	// graph is the version of the role graph (schema.LevelsKey's entry) the entry was loaded
	// under: a GRANT or REVOKE of roles, agreed cluster-wide, outdates it at once.
	graph  schema.Version
	exists bool
	row    roleRow
	// perms are the role's permissions and those of every role granted to it (as Cassandra's
	// roles inherit them; not superuser status).
	perms    map[auth.Resource]auth.Permission
	verified []byte // HMAC of the password last verified against row.hash; nil for none
}

func newAuthorizer(cfg *AuthConfig) (*authorizer, error) {
	a := &authorizer{store: newAuthStore(), ttl: cfg.CacheTTL, cost: cfg.HashCost, cache: make(map[string]*roleEntry)}
	if a.ttl == 0 {
		a.ttl = DefaultAuthCacheTTL
	}
	if a.ttl < 0 {
		return nil, fmt.Errorf("coordinator: Config.Auth.CacheTTL is %v, want ≥ 0", cfg.CacheTTL)
	}
	if a.cost == 0 {
		a.cost = bcrypt.DefaultCost
	}
	if a.cost < bcrypt.MinCost || a.cost > bcrypt.MaxCost {
		return nil, fmt.Errorf("coordinator: Config.Auth.HashCost is %d, want between %d and %d", cfg.HashCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	if _, err := rand.Read(a.key[:]); err != nil {
		return nil, fmt.Errorf("coordinator: auth cache key: %w", err)
	}
	a.hashing = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var pw [16]byte
	rand.Read(pw[:])
	dummy, err := bcrypt.GenerateFromPassword(pw[:], a.cost)
	if err != nil {
		return nil, fmt.Errorf("coordinator: auth: %w", err)
	}
	a.dummy = dummy
	return a, nil
}

// mac returns the HMAC of password under the cache's key.
func (a *authorizer) mac(password string) []byte {
	h := hmac.New(sha256.New, a.key[:])
	h.Write([]byte(password))
	return h.Sum(nil)
}

// hash returns password's bcrypt hash, waiting for a hashing slot.
func (a *authorizer) hash(ctx context.Context, password string) (string, error) {
	if len(password) > maxPasswordBytes {
		return "", fmt.Errorf("the password is %d bytes long; the maximum is %d (bcrypt reads no more)", len(password), maxPasswordBytes)
	}
	if err := a.acquire(ctx); err != nil {
		return "", err
	}
	defer a.release()
	h, err := bcrypt.GenerateFromPassword([]byte(password), a.cost)
	if err != nil {
		return "", fmt.Errorf("hashing the password: %w", err)
	}
	return string(h), nil
}

func (a *authorizer) acquire(ctx context.Context) error {
	select {
	case a.hashing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *authorizer) release() { <-a.hashing }

// invalidate forgets role (every role for ""), so that this node's next check reads it again.
func (a *authorizer) invalidate(role string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if role == "" {
		clear(a.cache)
		return
	}
	delete(a.cache, role)
}

// role returns what the cache knows of role, reading system_auth when it knows nothing or its
// entry expired.
func (e *Executor) role(ctx context.Context, name string) (*roleEntry, error) {
	a := e.auth
	now := e.now()
	a.mu.Lock()
	ent := a.cache[name]
	var verified []byte
	if ent != nil {
		verified = ent.verified
	}
	a.mu.Unlock()
	graph := e.roleGraph()
	if ent != nil && now.Sub(ent.loaded) < a.ttl && !now.Before(ent.loaded) && ent.graph == graph {
		return ent, nil
	}
	row, ok, err := e.readRole(ctx, name)
	if err != nil {
		return nil, err
	}
	// The permissions are read for a role that does not exist too, so that a login takes the
	// same reads whether or not its username exists: its time does not tell.
	perms, err := e.readPermissions(ctx, name)
	if err != nil {
		return nil, err
	}
	fresh := &roleEntry{loaded: now, graph: graph, exists: ok, row: row}
	if ok {
		if granted := e.schema.Schema().AllGrantedRoles(name); len(granted) > 0 {
			perms = maps.Clone(perms)
			if perms == nil {
				perms = make(map[auth.Resource]auth.Permission)
			}
			for _, g := range granted {
				gp, err := e.readPermissions(ctx, g)
				if err != nil {
					return nil, err
				}
				for r, p := range gp {
					perms[r] |= p
				}
			}
		}
		fresh.perms = perms
		if ent != nil && ent.row.hash == row.hash {
			fresh.verified = verified // the password did not change
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= maxAuthCacheEntries {
		// Full: forget expired entries, then names that are no role (a client trying made-up
		// usernames fills the cache with them), and only then every entry.
		for k, v := range a.cache {
			if now.Sub(v.loaded) >= a.ttl || !v.exists {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= maxAuthCacheEntries {
			clear(a.cache)
		}
	}
	a.cache[name] = fresh
	return fresh, nil
}

// roleGraph returns the version of the role graph: the last change agreed under
// schema.LevelsKey.
func (e *Executor) roleGraph() schema.Version {
	v, _ := e.schema.Schema().EntryVersion(schema.LevelsKey, "")
	return v
}

// Authenticate checks a login: the role must exist, have a password that matches, and be
// allowed to log in. A failure is an *auth.AuthenticationError that does not say which of them
// failed; an error reading system_auth (no replica of it answering) is returned as it is. It is
// the front ends' SASL PLAIN (native protocol) and per-call credentials (gRPC) check. Without
// Config.Auth every login fails.
func (e *Executor) Authenticate(ctx context.Context, username, password string) (auth.Login, error) {
	if e.auth == nil {
		return auth.Login{}, &auth.AuthenticationError{Username: username, Reason: "authentication is not enabled on this node"}
	}
	if username == "" {
		return auth.Login{}, &auth.AuthenticationError{Reason: "no username given: log in with a username and password", Cause: auth.FailureMalformed}
	}
	if len(username) > maxRoleNameBytes || len(password) > maxPasswordBytes {
		return auth.Login{}, &auth.AuthenticationError{Username: "(too long)", Cause: auth.FailureMalformed}
	}
	ent, err := e.role(ctx, username)
	if err != nil {
		return auth.Login{}, fmt.Errorf("authenticating %s: %w", username, err)
	}
	bad := &auth.AuthenticationError{Username: username, Cause: auth.FailureBadPassword}
	if !ent.exists {
		bad.Cause = auth.FailureUnknownRole
	}
	hash := []byte(ent.row.hash)
	if !ent.exists || ent.row.hash == "" {
		hash = e.auth.dummy // fail as slowly as a wrong password
	}
	mac := e.auth.mac(password)
	e.auth.mu.Lock()
	known := ent.exists && ent.verified != nil && hmac.Equal(ent.verified, mac)
	e.auth.mu.Unlock()
	if !known {
		if err := e.auth.acquire(ctx); err != nil {
			return auth.Login{}, err
		}
		err := bcrypt.CompareHashAndPassword(hash, []byte(password))
		e.auth.release()
		if err != nil || !ent.exists || ent.row.hash == "" {
			return auth.Login{}, bad
		}
		e.auth.mu.Lock()
		ent.verified = mac
		e.auth.mu.Unlock()
	}
	if !ent.row.login {
		return auth.Login{}, &auth.AuthenticationError{Username: username, Reason: username + " is not permitted to log in", Cause: auth.FailureNotPermitted}
	}
	return auth.Login{Role: username, Superuser: ent.row.superuser}, nil
}

// SetupAuth creates the superuser role admin with password when system_auth holds no role at
// all, as Cassandra creates its default superuser: once, cluster-wide. It writes with the
// timestamp 1, so that a node that did not see the roles yet and creates admin again never
// undoes a later ALTER or DROP of it. The node calls it at start, retrying until it succeeds
// (it needs a QUORUM of system_auth's replicas).
func (e *Executor) SetupAuth(ctx context.Context, password string) (created bool, err error) {
	if e.auth == nil {
		return false, errors.New("coordinator: SetupAuth without Config.Auth")
	}
	if password == "" {
		return false, errors.New("coordinator: the superuser password is empty")
	}
	rows, err := e.authRead(ctx, qSelectRoles, false)
	if err != nil {
		return false, fmt.Errorf("coordinator: reading system_auth.roles: %w", err)
	}
	if len(rows) > 0 {
		return false, nil
	}
	h, err := e.auth.hash(ctx, password)
	if err != nil {
		return false, fmt.Errorf("coordinator: superuser password: %w", err)
	}
	if err := e.authWrite(ctx, qInsertRole, 1, text(SuperuserRole), text(h), boolean(true), boolean(true)); err != nil {
		return false, fmt.Errorf("coordinator: creating the superuser role %s: %w", SuperuserRole, err)
	}
	e.auth.invalidate(SuperuserRole)
	return true, nil
}

// anonymous is the error for a statement without a logged-in role.
var errAnonymous = &auth.UnauthorizedError{Msg: "You have to be logged in and not anonymous to perform this request: authentication is on, log in with a username and password"}

// loggedIn returns the role ctx runs as and its cache entry.
func (e *Executor) loggedIn(ctx context.Context) (string, *roleEntry, error) {
	name, ok := auth.RoleFrom(ctx)
	if !ok || name == "" {
		return "", nil, errAnonymous
	}
	ent, err := e.role(ctx, name)
	if err != nil {
		return "", nil, err
	}
	if !ent.exists {
		return "", nil, &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s does not exist any more: it was dropped since it logged in", name)}
	}
	return name, ent, nil
}

// holds reports whether ent holds perm on r or on one of r's parents.
func (ent *roleEntry) holds(perm auth.Permission, r auth.Resource) bool {
	if ent.row.superuser {
		return true
	}
	for {
		if ent.perms[r]&perm == perm {
			return true
		}
		var ok bool
		if r, ok = r.Parent(); !ok {
			return false
		}
	}
}

// check returns an *auth.UnauthorizedError unless the role ctx runs as holds perm on r.
func (e *Executor) check(ctx context.Context, perm auth.Permission, r auth.Resource) error {
	name, ent, err := e.loggedIn(ctx)
	if err != nil {
		return err
	}
	if !ent.holds(perm, r) {
		return &auth.UnauthorizedError{Role: name, Permission: perm, Resource: r}
	}
	return nil
}

// isSystemKeyspace reports whether ks is one of the keyspaces of system tables ("system",
// "system_*"), which every logged-in role may read: drivers read them to connect.
func isSystemKeyspace(ks string) bool {
	const p = "system"
	return len(ks) >= len(p) && strings.EqualFold(ks[:len(p)], p) && (len(ks) == len(p) || ks[len(p)] == '_')
}

// topPartitionsTable is the system table of the cluster's hottest partitions (their keys, of
// every table), which only superusers may read, as the gRPC TopPartitions.
const topPartitionsTable = "top_partitions"

// tableResource returns the resource of the table tn names with keyspace as the current one;
// false when neither names a keyspace (the statement then fails on its own).
func tableResource(tn cql.TableName, keyspace string) (auth.Resource, bool) {
	ks := tn.Keyspace.Name
	if ks == "" {
		ks = keyspace
	}
	if ks == "" {
		return auth.Resource{}, false
	}
	return auth.TableResource(ks, tn.Name.Name), true
}

// authorize checks that the role ctx runs as may run stmt (Config.Auth): SELECT needs SELECT on
// the table, INSERT, UPDATE and DELETE need MODIFY (a BATCH's writes are checked in runBatch),
// CREATE KEYSPACE needs CREATE on ALL KEYSPACES, CREATE TABLE CREATE on its keyspace, ALTER
// TABLE (a per_partition_rate_limit among its options) ALTER on the table, DROP needs DROP on
// what it drops; a permission on a keyspace or on ALL KEYSPACES covers what lies under it.
// Reads of the system keyspaces (but system.top_partitions, for superusers, and system.top_clients,
// for superusers and roles with a permission on ALL SERVICE LEVELS), USE and DESCRIBE need
// only a login. The role statements check
// their own rules (executeAuth).
func (e *Executor) authorize(ctx context.Context, stmt cql.Statement, keyspace string) error {
	name, me, err := e.loggedIn(ctx)
	if err != nil {
		return err
	}
	var (
		perm auth.Permission
		r    auth.Resource
		ok   = true
	)
	switch st := stmt.(type) {
	case *cql.SelectStmt:
		r, ok = tableResource(st.Table, keyspace)
		if ok && isSystemKeyspace(r.Keyspace) {
			if r.Keyspace == "system" && r.Table == topPartitionsTable && !me.row.superuser {
				return &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s is not a superuser: only superusers read system.%s, which shows partition keys of every table", name, topPartitionsTable)}
			}
			if r.Keyspace == "system" && r.Table == systables.TableTopClients && !me.row.superuser && me.perms[auth.AllServiceLevels] == 0 {
				return &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s has no permission on %s: system.%s shows every role's spending, for superusers and roles with a permission on it (SELECT, say)", name, auth.AllServiceLevels, systables.TableTopClients)}
			}
			return nil
		}
		perm = auth.Select
	case *cql.InsertStmt:
		perm = auth.Modify
		r, ok = tableResource(st.Table, keyspace)
	case *cql.UpdateStmt:
		perm = auth.Modify
		r, ok = tableResource(st.Table, keyspace)
	case *cql.DeleteStmt:
		perm = auth.Modify
		r, ok = tableResource(st.Table, keyspace)
	case *cql.CreateKeyspaceStmt:
		perm, r = auth.Create, auth.AllKeyspaces
	case *cql.AlterKeyspaceStmt:
		perm, r = auth.Alter, auth.KeyspaceResource(st.Name.Name) // as Cassandra: ALTER on the keyspace
	case *cql.DropKeyspaceStmt:
		perm, r = auth.Drop, auth.KeyspaceResource(st.Name.Name)
	case *cql.CreateTableStmt:
		perm = auth.Create
		if r, ok = tableResource(st.Table, keyspace); ok {
			r.Table = ""
		}
	case *cql.AlterTableStmt:
		perm = auth.Alter
		r, ok = tableResource(st.Table, keyspace)
	case *cql.DropTableStmt:
		perm = auth.Drop
		r, ok = tableResource(st.Table, keyspace)
	case *cql.TruncateStmt:
		perm = auth.Modify // as Cassandra: TRUNCATE needs MODIFY on the table
		r, ok = tableResource(st.Table, keyspace)
	case *cql.CreateIndexStmt: // as Cassandra: ALTER on the table
		perm = auth.Alter
		tn := st.Table
		if tn.Keyspace.Name == "" {
			tn.Keyspace = st.Name.Keyspace
		}
		r, ok = tableResource(tn, keyspace)
	case *cql.DropIndexStmt: // ALTER on the index's table; nothing to check when there is none
		perm = auth.Alter
		resolved := *st
		e.schema.Schema().ResolveDropIndex(&resolved, keyspace)
		if resolved.Table.Name.Name == "" {
			return nil
		}
		r, ok = tableResource(resolved.Table, keyspace)
	case *cql.CreateTypeStmt, *cql.AlterTypeStmt, *cql.DropTypeStmt:
		// As Cassandra: CREATE, ALTER or DROP on the type's keyspace.
		perm = map[string]auth.Permission{"CREATE TYPE": auth.Create, "ALTER TYPE": auth.Alter, "DROP TYPE": auth.Drop}[schema.StatementName(stmt)]
		if r, ok = tableResource(typeName(stmt), keyspace); ok {
			r.Table = ""
		}
	default: // USE, DESCRIBE, BATCH (runBatch), the role statements (executeAuth)
		return nil
	}
	if !ok {
		return nil
	}
	return e.check(ctx, perm, r)
}

// mayWriteCached reports whether the role ctx runs as may write t according to the cache alone,
// without reading system_auth: AdmitPrepared, which runs on a connection's reader, takes its
// early path only then, and leaves every other case (no role, nothing fresh in the cache, a
// refusal) to Execute, which checks and reports.
func (e *Executor) mayWriteCached(ctx context.Context, t *schema.Table) bool {
	name, ok := auth.RoleFrom(ctx)
	if !ok || name == "" {
		return false
	}
	now := e.now()
	e.auth.mu.Lock()
	ent := e.auth.cache[name]
	e.auth.mu.Unlock()
	if ent == nil || !ent.exists || now.Sub(ent.loaded) >= e.auth.ttl || now.Before(ent.loaded) || ent.graph != e.roleGraph() {
		return false
	}
	return ent.holds(auth.Modify, auth.TableResource(t.Keyspace, t.Name))
}

// authorizeWrites checks MODIFY on the table of each of a batch's writes.
func (e *Executor) authorizeWrites(ctx context.Context, writes []*schema.Write) error {
	if e.auth == nil {
		return nil
	}
	for _, w := range writes {
		if err := e.check(ctx, auth.Modify, auth.TableResource(w.Table.Keyspace, w.Table.Name)); err != nil {
			return err
		}
	}
	return nil
}
