package shell

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// AuthKeyspace is the replicated system keyspace of roles and grants.
const AuthKeyspace = "system_auth"

// AuthReplicationFactor is system_auth's replication factor. Cassandra creates system_auth with
// RF 1 and asks operators to raise it; kvnode defines the keyspace in code (every node must be
// able to check a login before anyone could create it), so it is created with the RF Cassandra
// recommends for it: 3, or every node of a smaller cluster. Roles are written and read at
// QUORUM, so a cluster of three or more nodes keeps logins and role changes working with one
// node down; a read falls back to ONE when QUORUM is unavailable, so logins keep working with
// any one replica of the roles up.
const AuthReplicationFactor = 3

// The ids of system_auth's tables: fixed, far from the ids schema.TableIDFor derives (which are
// hashes; a collision is as unlikely as two tables colliding).
const (
	authRolesID       schema.TableID = 0xffff_ffff_ffff_a001
	authPermissionsID schema.TableID = 0xffff_ffff_ffff_a002
)

// AuthSchema returns the schema of system_auth, the same on every node:
//
//	roles (bucket int, role text, salted_hash text, is_superuser boolean, can_login boolean,
//	       PRIMARY KEY (bucket, role))
//	role_permissions (role text, resource text, permission text,
//	       PRIMARY KEY (role, resource, permission))
//
// Every role is a row of one partition of roles (bucket 0), so that listing the roles and
// knowing whether any exists is one single-partition read (the cluster has no range scans);
// roles are few. A grant is a row of its role's partition of role_permissions: GRANT inserts the
// row, REVOKE deletes it, DROP ROLE deletes the partition. The node resolves these tables by id
// beside the cluster's schema (replicas store and serve them as any table); they are not in the
// cluster's schema, DESCRIBE or system_schema.
func AuthSchema() *schema.Schema {
	s, err := schema.SystemKeyspace(AuthKeyspace, AuthReplicationFactor, []schema.SystemTable{
		{ID: authRolesID, CQL: "CREATE TABLE roles (bucket int, role text, salted_hash text, is_superuser boolean, can_login boolean, PRIMARY KEY (bucket, role))"},
		{ID: authPermissionsID, CQL: "CREATE TABLE role_permissions (role text, resource text, permission text, PRIMARY KEY (role, resource, permission))"},
	})
	if err != nil { // the definition is a constant: only a bug gets here
		panic(fmt.Sprintf("shell: system_auth schema: %v", err))
	}
	return s
}

// The statements of the auth store, bound to AuthSchema.
const (
	qSelectRoles      = "SELECT role, salted_hash, is_superuser, can_login FROM system_auth.roles WHERE bucket = 0"
	qSelectRole       = "SELECT role, salted_hash, is_superuser, can_login FROM system_auth.roles WHERE bucket = 0 AND role = ?"
	qInsertRole       = "INSERT INTO system_auth.roles (bucket, role, salted_hash, is_superuser, can_login) VALUES (0, ?, ?, ?, ?)"
	qDeleteRole       = "DELETE FROM system_auth.roles WHERE bucket = 0 AND role = ?"
	qSelectPerms      = "SELECT resource, permission FROM system_auth.role_permissions WHERE role = ?"
	qInsertPerm       = "INSERT INTO system_auth.role_permissions (role, resource, permission) VALUES (?, ?, ?)"
	qDeletePerm       = "DELETE FROM system_auth.role_permissions WHERE role = ? AND resource = ? AND permission = ?"
	qDeleteRolePerms  = "DELETE FROM system_auth.role_permissions WHERE role = ?"
	qUpdateRoleHash   = "UPDATE system_auth.roles SET salted_hash = ? WHERE bucket = 0 AND role = ?"
	qUpdateRoleSuper  = "UPDATE system_auth.roles SET is_superuser = ? WHERE bucket = 0 AND role = ?"
	qUpdateRoleLogin  = "UPDATE system_auth.roles SET can_login = ? WHERE bucket = 0 AND role = ?"
	authStoreQueryMax = 11 // the number of statements above
)

// authStore reads and writes system_auth through the executor's ordinary read and write paths.
type authStore struct {
	schema *schema.Schema
	stmts  map[string]cql.Statement
}

func newAuthStore() *authStore {
	st := &authStore{schema: AuthSchema(), stmts: make(map[string]cql.Statement, authStoreQueryMax)}
	for _, q := range []string{qSelectRoles, qSelectRole, qInsertRole, qDeleteRole, qSelectPerms, qInsertPerm, qDeletePerm, qDeleteRolePerms, qUpdateRoleHash, qUpdateRoleSuper, qUpdateRoleLogin} {
		s, err := cql.ParseStatement(q)
		if err != nil {
			panic(fmt.Sprintf("shell: system_auth statement %q: %v", q, err))
		}
		st.stmts[q] = s
	}
	return st
}

// roleRow is a row of system_auth.roles.
type roleRow struct {
	name      string
	hash      string // bcrypt; "" for a role without a password
	superuser bool
	login     bool
}

func text(s string) schema.BindValue { return schema.BindValue{Bytes: []byte(s)} }

func boolean(b bool) schema.BindValue {
	if b {
		return schema.BindValue{Bytes: []byte{1}}
	}
	return schema.BindValue{Bytes: []byte{0}}
}

// authWrite applies one of the store's writes at QUORUM with timestamp ts.
func (e *Executor) authWrite(ctx context.Context, q string, ts int64, values ...schema.BindValue) error {
	st := e.auth.store
	w, err := st.schema.BindWrite(st.stmts[q], "", values)
	if err != nil {
		return fmt.Errorf("shell: system_auth write %q: %w", q, err)
	}
	var keyBuf [64]byte
	token := partitioner.Token(partitioner.AppendKey(keyBuf[:0], w.PartitionKey))
	now := e.now()
	dl := deadline(ctx, now, e.writeTimeout)
	return e.writePartition(ctx, w.Table, schema.Simple(AuthReplicationFactor), token, partitionWrite{w: w, ts: ts, now: now.Unix()}, coordinator.Quorum, now, dl)
}

// authRead runs one of the store's reads and returns its rows: at QUORUM, or at ONE when QUORUM
// is unavailable and fallback is set.
func (e *Executor) authRead(ctx context.Context, q string, fallback bool, values ...schema.BindValue) ([][][]byte, error) {
	st := e.auth.store
	r, err := st.schema.BindRead(st.stmts[q].(*cql.SelectStmt), "", values)
	if err != nil {
		return nil, fmt.Errorf("shell: system_auth read %q: %w", q, err)
	}
	var keyBuf [64]byte
	spec := readSpec{
		table:      r.Table,
		pk:         r.PartitionKey,
		token:      partitioner.Token(partitioner.AppendKey(keyBuf[:0], r.PartitionKey)),
		clustering: r.Clustering,
		rf:         schema.Simple(AuthReplicationFactor),
		cl:         coordinator.Quorum,
	}
	now := e.now()
	rows, _, err := e.read(ctx, spec, now, deadline(ctx, now, e.readTimeout))
	var ue *coordinator.UnavailableError
	if fallback && errors.As(err, &ue) {
		spec.cl = coordinator.One
		now = e.now()
		rows, _, err = e.read(ctx, spec, now, deadline(ctx, now, e.readTimeout))
	}
	if err != nil {
		return nil, err
	}
	res, err := rowsResult(r, rows, e.now().Unix())
	if err != nil {
		return nil, err
	}
	return res.Rows.Values, nil
}

func decodeRole(v [][]byte) roleRow {
	return roleRow{name: string(v[0]), hash: string(v[1]), superuser: len(v[2]) == 1 && v[2][0] != 0, login: len(v[3]) == 1 && v[3][0] != 0}
}

// readRoles returns every role, in name order.
func (e *Executor) readRoles(ctx context.Context) ([]roleRow, error) {
	rows, err := e.authRead(ctx, qSelectRoles, true)
	if err != nil {
		return nil, err
	}
	out := make([]roleRow, len(rows))
	for i, v := range rows {
		out[i] = decodeRole(v)
	}
	return out, nil
}

// readRole returns the role named name; false when there is none.
func (e *Executor) readRole(ctx context.Context, name string) (roleRow, bool, error) {
	rows, err := e.authRead(ctx, qSelectRole, true, text(name))
	if err != nil || len(rows) == 0 {
		return roleRow{}, false, err
	}
	return decodeRole(rows[0]), true, nil
}

// readPermissions returns the permissions granted to role, by resource.
func (e *Executor) readPermissions(ctx context.Context, role string) (map[auth.Resource]auth.Permission, error) {
	rows, err := e.authRead(ctx, qSelectPerms, true, text(role))
	if err != nil {
		return nil, err
	}
	perms := make(map[auth.Resource]auth.Permission, len(rows))
	for _, v := range rows {
		r, err := auth.ParseResourceKey(string(v[0]))
		if err != nil {
			e.logger.Warn("ignoring a malformed grant in system_auth.role_permissions", "role", role, "err", err)
			continue
		}
		p, err := auth.ParsePermission(string(v[1]))
		if err != nil {
			e.logger.Warn("ignoring a malformed grant in system_auth.role_permissions", "role", role, "err", err)
			continue
		}
		perms[r] |= p
	}
	return perms, nil
}

// grant is one permission on one resource, as LIST PERMISSIONS shows it.
type grant struct {
	role     string
	resource auth.Resource
	perm     auth.Permission
}

// sortedGrants returns role's grants in perms ordered by resource (its key) and permission.
func sortedGrants(role string, perms map[auth.Resource]auth.Permission) []grant {
	var out []grant
	for r, ps := range perms {
		for _, name := range ps.Names() {
			p, _ := auth.ParsePermission(name)
			out = append(out, grant{role: role, resource: r, perm: p})
		}
	}
	order := func(p auth.Permission) int {
		for i, name := range (auth.All).Names() {
			if q, _ := auth.ParsePermission(name); q == p {
				return i
			}
		}
		return 0
	}
	sort.Slice(out, func(i, j int) bool {
		if ki, kj := out[i].resource.Key(), out[j].resource.Key(); ki != kj {
			return ki < kj
		}
		return order(out[i].perm) < order(out[j].perm)
	})
	return out
}
