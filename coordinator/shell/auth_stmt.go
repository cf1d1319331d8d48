package shell

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// maxRoleNameBytes bounds a role's name.
const maxRoleNameBytes = 256

// executeAuth runs a role or permission statement: CREATE, ALTER and DROP ROLE, GRANT, REVOKE,
// LIST ROLES and LIST PERMISSIONS. Without Config.Auth they are refused: there is no role to
// run them as, and grants that nothing checks would only mislead.
func (e *Executor) executeAuth(ctx context.Context, stmt cql.Statement, keyspace string) (coordinator.Result, error) {
	if e.auth == nil {
		return coordinator.Result{}, &coordinator.InvalidError{Pos: stmt.Pos(), Err: fmt.Errorf("%s needs authentication: start the nodes with --authenticator password", schema.StatementName(stmt))}
	}
	name, me, err := e.loggedIn(ctx)
	if err != nil {
		return coordinator.Result{}, err
	}
	switch st := stmt.(type) {
	case *cql.CreateRoleStmt:
		return e.createRole(ctx, st, name, me)
	case *cql.AlterRoleStmt:
		return e.alterRole(ctx, st, name, me)
	case *cql.DropRoleStmt:
		return e.dropRole(ctx, st, name, me)
	case *cql.GrantStmt:
		return e.grant(ctx, st, keyspace, name, me)
	case *cql.ListRolesStmt:
		return e.listRoles(ctx, st, name, me)
	case *cql.ListPermissionsStmt:
		return e.listPermissions(ctx, st, keyspace, name, me)
	case *cql.GrantRoleStmt:
		return e.grantRole(ctx, st, name, me)
	}
	return coordinator.Result{}, &coordinator.InvalidError{Pos: stmt.Pos(), Err: fmt.Errorf("%s is not a role statement", schema.StatementName(stmt))}
}

// notSuperuser is the error for a role statement only a superuser may run.
func notSuperuser(name, what string) error {
	return &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s is not a superuser: only superusers %s", name, what)}
}

// checkRoleName checks a role name from a statement.
func checkRoleName(x cql.Ident) error {
	switch {
	case x.Name == "":
		return &coordinator.InvalidError{Pos: x.Pos(), Err: errors.New("a role name must not be empty")}
	case len(x.Name) > maxRoleNameBytes:
		return &coordinator.InvalidError{Pos: x.Pos(), Err: fmt.Errorf("the role name is %d bytes long; the maximum is %d", len(x.Name), maxRoleNameBytes)}
	case !utf8.ValidString(x.Name):
		return &coordinator.InvalidError{Pos: x.Pos(), Err: errors.New("the role name is not valid UTF-8")}
	}
	return nil
}

// roleOptions are the options of CREATE ROLE and ALTER ROLE; nil fields were not given.
type roleOptions struct {
	password         *string
	login, superuser *bool
}

// parseRoleOptions reads PASSWORD (a string), LOGIN and SUPERUSER (booleans), each at most once.
func parseRoleOptions(opts []cql.Option) (roleOptions, error) {
	var ro roleOptions
	for _, o := range opts {
		lit, _ := o.Value.(*cql.Literal)
		bad := func(want string) error {
			found := "a map"
			if lit != nil {
				found = "a " + lit.Kind.String()
			}
			if lit != nil && lit.Kind == cql.LitBind {
				return &coordinator.InvalidError{Pos: o.Value.Pos(), Err: fmt.Errorf("option %s: bind markers are not supported in role statements; write the %s as a literal", o.Name.Name, want)}
			}
			return &coordinator.InvalidError{Pos: o.Value.Pos(), Err: fmt.Errorf("option %s must be %s, found %s", o.Name.Name, want, found)}
		}
		twice := &coordinator.InvalidError{Pos: o.Name.Pos(), Err: fmt.Errorf("option %s is given twice", o.Name.Name)}
		switch o.Name.Name {
		case "password":
			if lit == nil || lit.Kind != cql.LitString {
				return ro, bad("a string")
			}
			if ro.password != nil {
				return ro, twice
			}
			v := lit.Value
			ro.password = &v
		case "login", "superuser":
			if lit == nil || lit.Kind != cql.LitBoolean {
				return ro, bad("a boolean (true or false)")
			}
			v := lit.Value == "true"
			dst := &ro.login
			if o.Name.Name == "superuser" {
				dst = &ro.superuser
			}
			if *dst != nil {
				return ro, twice
			}
			*dst = &v
		default:
			return ro, &coordinator.InvalidError{Pos: o.Name.Pos(), Err: fmt.Errorf("unknown role option %s (valid: PASSWORD, LOGIN, SUPERUSER)", o.Name.Name)}
		}
	}
	if ro.password != nil {
		if *ro.password == "" {
			return ro, &coordinator.InvalidError{Err: errors.New("the password must not be empty")}
		}
		if len(*ro.password) > maxPasswordBytes {
			return ro, &coordinator.InvalidError{Err: fmt.Errorf("the password is %d bytes long; the maximum is %d (bcrypt reads no more)", len(*ro.password), maxPasswordBytes)}
		}
	}
	return ro, nil
}

func (e *Executor) createRole(ctx context.Context, st *cql.CreateRoleStmt, name string, me *roleEntry) (coordinator.Result, error) {
	if !me.row.superuser {
		return coordinator.Result{}, notSuperuser(name, "create, alter and drop roles")
	}
	if err := checkRoleName(st.Role); err != nil {
		return coordinator.Result{}, err
	}
	ro, err := parseRoleOptions(st.Options)
	if err != nil {
		return coordinator.Result{}, err
	}
	if _, exists, err := e.readRole(ctx, st.Role.Name); err != nil {
		return coordinator.Result{}, err
	} else if exists {
		if st.IfNotExists {
			return coordinator.Result{}, nil
		}
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Role.Pos(), Err: fmt.Errorf("role %s already exists", st.Role.Name)}
	}
	row := roleRow{name: st.Role.Name} // Cassandra's defaults: LOGIN = false, SUPERUSER = false
	if ro.login != nil {
		row.login = *ro.login
	}
	if ro.superuser != nil {
		row.superuser = *ro.superuser
	}
	hash := schema.BindValue{} // null: a role without a password cannot log in
	if ro.password != nil {
		h, err := e.auth.hash(ctx, *ro.password)
		if err != nil {
			return coordinator.Result{}, err
		}
		hash = text(h)
	}
	if err := e.authWrite(ctx, qInsertRole, e.nextTimestamp(), text(row.name), hash, boolean(row.superuser), boolean(row.login)); err != nil {
		return coordinator.Result{}, err
	}
	e.auth.invalidate(row.name)
	return coordinator.Result{}, nil
}

func (e *Executor) alterRole(ctx context.Context, st *cql.AlterRoleStmt, name string, me *roleEntry) (coordinator.Result, error) {
	if err := checkRoleName(st.Role); err != nil {
		return coordinator.Result{}, err
	}
	ro, err := parseRoleOptions(st.Options)
	if err != nil {
		return coordinator.Result{}, err
	}
	self := st.Role.Name == name
	switch {
	case !me.row.superuser && (!self || ro.login != nil || ro.superuser != nil):
		return coordinator.Result{}, notSuperuser(name, "alter other roles and LOGIN or SUPERUSER (a role may change its own PASSWORD)")
	case self && ro.superuser != nil:
		return coordinator.Result{}, &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s may not alter its own superuser status", name)}
	}
	if _, exists, err := e.readRole(ctx, st.Role.Name); err != nil {
		return coordinator.Result{}, err
	} else if !exists {
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Role.Pos(), Err: fmt.Errorf("role %s doesn't exist", st.Role.Name)}
	}
	ts := e.nextTimestamp()
	if ro.password != nil {
		h, err := e.auth.hash(ctx, *ro.password)
		if err != nil {
			return coordinator.Result{}, err
		}
		if err := e.authWrite(ctx, qUpdateRoleHash, ts, text(h), text(st.Role.Name)); err != nil {
			return coordinator.Result{}, err
		}
	}
	if ro.superuser != nil {
		if err := e.authWrite(ctx, qUpdateRoleSuper, ts, boolean(*ro.superuser), text(st.Role.Name)); err != nil {
			return coordinator.Result{}, err
		}
	}
	if ro.login != nil {
		if err := e.authWrite(ctx, qUpdateRoleLogin, ts, boolean(*ro.login), text(st.Role.Name)); err != nil {
			return coordinator.Result{}, err
		}
	}
	e.auth.invalidate(st.Role.Name)
	return coordinator.Result{}, nil
}

func (e *Executor) dropRole(ctx context.Context, st *cql.DropRoleStmt, name string, me *roleEntry) (coordinator.Result, error) {
	if !me.row.superuser {
		return coordinator.Result{}, notSuperuser(name, "create, alter and drop roles")
	}
	if err := checkRoleName(st.Role); err != nil {
		return coordinator.Result{}, err
	}
	if st.Role.Name == name {
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Role.Pos(), Err: fmt.Errorf("role %s is the role of this login: it cannot drop itself", name)}
	}
	if _, exists, err := e.readRole(ctx, st.Role.Name); err != nil {
		return coordinator.Result{}, err
	} else if !exists {
		// A DROP whose clean-up of the role's level and grants failed is finished by running it
		// again: the role is gone, what named it goes now.
		if changed, warnings, err := e.applyLevels(ctx, st); err != nil || changed {
			return coordinator.Result{Warnings: warnings}, err
		}
		if st.IfExists {
			return coordinator.Result{}, nil
		}
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Role.Pos(), Err: fmt.Errorf("role %s doesn't exist", st.Role.Name)}
	}
	ts := e.nextTimestamp()
	if err := e.authWrite(ctx, qDeleteRolePerms, ts, text(st.Role.Name)); err != nil {
		return coordinator.Result{}, err
	}
	if err := e.authWrite(ctx, qDeleteRole, ts, text(st.Role.Name)); err != nil {
		return coordinator.Result{}, err
	}
	e.auth.invalidate(st.Role.Name)
	// The role's service level and its grants of roles go with it, agreed like DDL.
	if _, warnings, err := e.applyLevels(ctx, st); err != nil {
		return coordinator.Result{}, fmt.Errorf("coordinator: role %s was dropped, but forgetting its service level and role grants failed (run DROP ROLE again): %w", st.Role.Name, err)
	} else if len(warnings) > 0 {
		return coordinator.Result{Warnings: warnings}, nil
	}
	return coordinator.Result{}, nil
}

// resource resolves a statement's resource against the schema; with mustExist an unknown
// keyspace or table is an error.
func (e *Executor) resource(rn cql.ResourceName, keyspace string, mustExist bool) (auth.Resource, error) {
	s := e.schema.Schema()
	switch rn.Kind {
	case cql.ResourceAllKeyspaces:
		return auth.AllKeyspaces, nil
	case cql.ResourceAllServiceLevels:
		return auth.AllServiceLevels, nil
	case cql.ResourceKeyspace:
		r := auth.KeyspaceResource(rn.Keyspace.Name)
		if _, ok := s.Keyspace(r.Keyspace); mustExist && !ok {
			return r, &coordinator.InvalidError{Pos: rn.Pos(), Err: fmt.Errorf("resource %s doesn't exist", r)}
		}
		return r, nil
	}
	r, ok := tableResource(rn.Table, keyspace)
	if !ok {
		return r, &coordinator.InvalidError{Pos: rn.Pos(), Err: fmt.Errorf("no keyspace for table %s: USE a keyspace or write TABLE keyspace.%s", rn.Table.Name.Name, rn.Table.Name.Name)}
	}
	if _, ok := s.Table(r.Keyspace, r.Table); mustExist && !ok {
		return r, &coordinator.InvalidError{Pos: rn.Pos(), Err: fmt.Errorf("resource %s doesn't exist", r)}
	}
	return r, nil
}

// permissionsOf returns the permissions a statement names on r: ALL is every permission r
// takes; a permission r does not take is an error.
func permissionsOf(name string, r auth.Resource, pos cql.Pos) (auth.Permission, error) {
	if name == "ALL" {
		return r.Applicable(), nil
	}
	p, err := auth.ParsePermission(name)
	if err != nil {
		return 0, &coordinator.InvalidError{Pos: pos, Err: err}
	}
	if p&r.Applicable() == 0 {
		return 0, &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("permission %s does not apply to %s (grant CREATE on the keyspace, for its tables)", p, r)}
	}
	return p, nil
}

func (e *Executor) grant(ctx context.Context, st *cql.GrantStmt, keyspace, name string, me *roleEntry) (coordinator.Result, error) {
	if err := checkRoleName(st.Role); err != nil {
		return coordinator.Result{}, err
	}
	r, err := e.resource(st.Resource, keyspace, !st.Revoke)
	if err != nil {
		return coordinator.Result{}, err
	}
	perms, err := permissionsOf(st.Permission, r, st.Start)
	if err != nil {
		return coordinator.Result{}, err
	}
	// As in Cassandra: granting or revoking needs AUTHORIZE on the resource and each of the
	// permissions granted or revoked.
	if !me.holds(auth.Authorize, r) {
		return coordinator.Result{}, &auth.UnauthorizedError{Role: name, Permission: auth.Authorize, Resource: r}
	}
	if !me.holds(perms, r) {
		for _, n := range perms.Names() {
			if p, _ := auth.ParsePermission(n); !me.holds(p, r) {
				return coordinator.Result{}, &auth.UnauthorizedError{Role: name, Permission: p, Resource: r}
			}
		}
	}
	if _, exists, err := e.readRole(ctx, st.Role.Name); err != nil {
		return coordinator.Result{}, err
	} else if !exists {
		return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Role.Pos(), Err: fmt.Errorf("role %s doesn't exist", st.Role.Name)}
	}
	if err := e.writeGrants(ctx, st.Role.Name, r, perms, st.Revoke); err != nil {
		return coordinator.Result{}, err
	}
	return coordinator.Result{}, nil
}

// writeGrants grants (or with revoke, revokes) perms on r to role.
func (e *Executor) writeGrants(ctx context.Context, role string, r auth.Resource, perms auth.Permission, revoke bool) error {
	ts := e.nextTimestamp()
	for _, p := range perms.Names() {
		var err error
		if revoke {
			err = e.authWrite(ctx, qDeletePerm, ts, text(role), text(r.Key()), text(p))
		} else {
			err = e.authWrite(ctx, qInsertPerm, ts, text(role), text(r.Key()), text(p))
		}
		if err != nil {
			return err
		}
	}
	e.auth.invalidate(role)
	return nil
}

// listedRoles returns the roles a LIST statement shows: of, when given (it must exist), else
// every role; a role that is not a superuser may list only itself.
func (e *Executor) listedRoles(ctx context.Context, of *cql.Ident, name string, me *roleEntry, what string) ([]roleRow, error) {
	switch {
	case of != nil && !me.row.superuser && of.Name != name:
		return nil, &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s is not a superuser: it may list only its own %s", name, what)}
	case of == nil && !me.row.superuser:
		return []roleRow{me.row}, nil
	case of != nil:
		row, ok, err := e.readRole(ctx, of.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &coordinator.InvalidError{Pos: of.Pos(), Err: fmt.Errorf("role %s doesn't exist", of.Name)}
		}
		return []roleRow{row}, nil
	}
	return e.readRoles(ctx)
}

func (e *Executor) listRoles(ctx context.Context, st *cql.ListRolesStmt, name string, me *roleEntry) (coordinator.Result, error) {
	roles, err := e.listedRoles(ctx, st.Of, name, me, "role")
	if err != nil {
		return coordinator.Result{}, err
	}
	if st.Of != nil && len(roles) == 1 {
		// As Cassandra: LIST ROLES OF r lists r and every role granted to it, directly or not.
		for _, g := range e.schema.Schema().AllGrantedRoles(roles[0].name) {
			row, ok, err := e.readRole(ctx, g)
			if err != nil {
				return coordinator.Result{}, err
			}
			if ok {
				roles = append(roles, row)
			}
		}
	}
	rows := &coordinator.Rows{Keyspace: AuthKeyspace, Table: "roles", Columns: []coordinator.RowColumn{
		{Name: "role", Type: schema.TypeText}, {Name: "super", Type: schema.TypeBoolean}, {Name: "login", Type: schema.TypeBoolean},
	}}
	for _, r := range roles {
		rows.Values = append(rows.Values, [][]byte{[]byte(r.name), boolean(r.superuser).Bytes, boolean(r.login).Bytes})
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}, nil
}

func (e *Executor) listPermissions(ctx context.Context, st *cql.ListPermissionsStmt, keyspace, name string, me *roleEntry) (coordinator.Result, error) {
	var (
		on   auth.Resource
		onOK bool
	)
	if st.Resource != nil {
		r, err := e.resource(*st.Resource, keyspace, false)
		if err != nil {
			return coordinator.Result{}, err
		}
		on, onOK = r, true
	}
	filter := auth.All
	if st.Permission != "ALL" {
		p, err := auth.ParsePermission(st.Permission)
		if err != nil {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Start, Err: err}
		}
		filter = p
	}
	roles, err := e.listedRoles(ctx, st.Of, name, me, "permissions")
	if err != nil {
		return coordinator.Result{}, err
	}
	rows := &coordinator.Rows{Keyspace: AuthKeyspace, Table: "role_permissions", Columns: []coordinator.RowColumn{
		{Name: "role", Type: schema.TypeText}, {Name: "username", Type: schema.TypeText},
		{Name: "resource", Type: schema.TypeText}, {Name: "permission", Type: schema.TypeText},
	}}
	for _, r := range roles {
		perms, err := e.readPermissions(ctx, r.name)
		if err != nil {
			return coordinator.Result{}, err
		}
		for _, g := range sortedGrants(r.name, perms) {
			// ON r lists the grants that apply to r: on it and on its parents.
			if g.perm&filter == 0 || (onOK && !on.Within(g.resource)) {
				continue
			}
			rows.Values = append(rows.Values, [][]byte{[]byte(g.role), []byte(g.role), []byte(g.resource.String()), []byte(g.perm.String())})
		}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}, nil
}

// afterDDL keeps grants in step with a schema statement that changed the schema, as Cassandra
// does: the creator of a keyspace or table gets every permission on it (a superuser needs
// none), and the grants on a dropped keyspace or table (and its tables) are revoked from every
// role, so that a keyspace created again under the same name starts with none. It returns
// warnings for what it could not do; the schema change itself stands.
func (e *Executor) afterDDL(ctx context.Context, stmt cql.Statement, keyspace string, res coordinator.Result) []string {
	if e.auth == nil || res.Kind != coordinator.ResultSchemaChange {
		return nil
	}
	var r auth.Resource
	switch st := stmt.(type) {
	case *cql.CreateKeyspaceStmt:
		r = auth.KeyspaceResource(st.Name.Name)
	case *cql.CreateTableStmt:
		r, _ = tableResource(st.Table, keyspace)
	case *cql.DropKeyspaceStmt:
		r = auth.KeyspaceResource(st.Name.Name)
	case *cql.DropTableStmt:
		r, _ = tableResource(st.Table, keyspace)
	default:
		return nil
	}
	switch stmt.(type) {
	case *cql.CreateKeyspaceStmt, *cql.CreateTableStmt:
		name, me, err := e.loggedIn(ctx)
		if err != nil || me.row.superuser {
			return nil
		}
		if err := e.writeGrants(ctx, name, r, r.Applicable(), false); err != nil {
			return []string{fmt.Sprintf("%s was created but granting its permissions to its creator %s failed: %v", r, name, err)}
		}
		return nil
	}
	if err := e.revokeAllOn(ctx, r); err != nil {
		return []string{fmt.Sprintf("%s was dropped but revoking the permissions granted on it failed (REVOKE them): %v", r, err)}
	}
	return nil
}

// revokeAllOn revokes every grant on r and on what lies under it, from every role.
func (e *Executor) revokeAllOn(ctx context.Context, r auth.Resource) error {
	roles, err := e.readRoles(ctx)
	if err != nil {
		return err
	}
	for _, role := range roles {
		perms, err := e.readPermissions(ctx, role.name)
		if err != nil {
			return err
		}
		for res, p := range perms {
			if res.Within(r) {
				if err := e.writeGrants(ctx, role.name, res, p, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
