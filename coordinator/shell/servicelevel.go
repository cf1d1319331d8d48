package shell

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// The service-level statements (docs/cql.md, Service levels). CREATE, ALTER, DROP, ATTACH and
// DETACH SERVICE LEVEL, GRANT and REVOKE of roles, and DROP ROLE's forgetting of the role's level
// and grants go through the SchemaManager like DDL: agreed under schema.LevelsKey by a majority,
// announced, and answered once the cluster agrees, so that every node's Budgets answers with
// them from then on. They are checked against the agreed state (no dry run here), but for the
// roles they name, which live in system_auth and are checked here first.

// applyLevels agrees on a statement of the level state with the cluster, mapping its errors as
// executeDDL does.
func (e *Executor) applyLevels(ctx context.Context, stmt cql.Statement) (bool, []string, error) {
	changed, warnings, err := e.schema.ApplyDDL(ctx, stmt, "")
	var ie *coordinator.InvalidError
	switch {
	case err == nil:
		return changed, warnings, nil
	case errors.As(err, &ie):
		return false, nil, &coordinator.InvalidError{Pos: stmt.Pos(), Err: ie.Err}
	case errors.Is(err, schema.ErrExists), errors.Is(err, schema.ErrUnknownLevel):
		return false, nil, &coordinator.InvalidError{Pos: stmt.Pos(), Err: err}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return false, nil, err
	}
	return false, nil, fmt.Errorf("coordinator: %s: %w", schema.StatementName(stmt), err)
}

// levelsPermission checks that the role ctx runs as holds perm on ALL SERVICE LEVELS (any
// permission for perm 0); anyone may without authentication. It returns the role's name ("" without
// authentication).
func (e *Executor) levelsPermission(ctx context.Context, perm auth.Permission) (string, error) {
	if e.auth == nil {
		return "", nil
	}
	name, me, err := e.loggedIn(ctx)
	if err != nil {
		return "", err
	}
	if perm == 0 {
		if me.row.superuser || me.perms[auth.AllServiceLevels] != 0 {
			return name, nil
		}
		return name, &auth.UnauthorizedError{Role: name, Msg: fmt.Sprintf("User %s has no permission on %s: listing service levels needs one (SELECT, say), or being the role listed", name, auth.AllServiceLevels)}
	}
	if !me.holds(perm, auth.AllServiceLevels) {
		return name, &auth.UnauthorizedError{Role: name, Permission: perm, Resource: auth.AllServiceLevels}
	}
	return name, nil
}

// checkRoleTarget checks a statement's role target: authentication must be on (roles exist only
// then) and the role must exist.
func (e *Executor) checkRoleTarget(ctx context.Context, stmt cql.Statement, role cql.Ident) error {
	if e.auth == nil {
		return &coordinator.InvalidError{Pos: role.Pos(), Err: fmt.Errorf("%s of a role needs authentication (start the nodes with --authenticator password); without it, attach levels to client addresses: ADDRESS '10.0.0.7' or '10.0.0.0/24'", schema.StatementName(stmt))}
	}
	if err := checkRoleName(role); err != nil {
		return err
	}
	if _, ok, err := e.readRole(ctx, role.Name); err != nil {
		return err
	} else if !ok {
		return &coordinator.InvalidError{Pos: role.Pos(), Err: fmt.Errorf("role %s doesn't exist", role.Name)}
	}
	return nil
}

// executeLevels runs a service-level statement.
func (e *Executor) executeLevels(ctx context.Context, stmt cql.Statement) (coordinator.Result, error) {
	perm := auth.Alter // ALTER, ATTACH and DETACH
	switch st := stmt.(type) {
	case *cql.ListServiceLevelsStmt:
		return e.listLevels(ctx, st)
	case *cql.CreateServiceLevelStmt:
		perm = auth.Create
	case *cql.DropServiceLevelStmt:
		perm = auth.Drop
	}
	if _, err := e.levelsPermission(ctx, perm); err != nil {
		return coordinator.Result{}, err
	}
	switch st := stmt.(type) {
	case *cql.AttachServiceLevelStmt:
		if !st.Target.IsAddress {
			if err := e.checkRoleTarget(ctx, stmt, st.Target.Role); err != nil {
				return coordinator.Result{}, err
			}
		}
	case *cql.DetachServiceLevelStmt:
		// The role need not exist any more; without authentication no role can be attached.
		if !st.Target.IsAddress && e.auth == nil {
			return coordinator.Result{}, e.checkRoleTarget(ctx, stmt, st.Target.Role)
		}
	}
	_, warnings, err := e.applyLevels(ctx, stmt)
	if err != nil {
		return coordinator.Result{}, err
	}
	return coordinator.Result{Kind: coordinator.ResultVoid, Warnings: warnings}, nil
}

// grantRole runs GRANT role TO role and REVOKE role FROM role: only superusers may, and both
// roles must exist.
func (e *Executor) grantRole(ctx context.Context, st *cql.GrantRoleStmt, name string, me *roleEntry) (coordinator.Result, error) {
	if !me.row.superuser {
		return coordinator.Result{}, notSuperuser(name, "grant and revoke roles")
	}
	for _, r := range []cql.Ident{st.Role, st.Grantee} {
		if err := e.checkRoleTarget(ctx, st, r); err != nil {
			return coordinator.Result{}, err
		}
	}
	_, warnings, err := e.applyLevels(ctx, st)
	if err != nil {
		return coordinator.Result{}, err
	}
	return coordinator.Result{Kind: coordinator.ResultVoid, Warnings: warnings}, nil
}

// The columns of the LIST statements: ScyllaDB's, then kvnode's (docs/cql.md).
var (
	levelColumns = []coordinator.RowColumn{
		{Name: "service_level", Type: schema.TypeText}, {Name: "timeout", Type: schema.TypeText},
		{Name: "workload_type", Type: schema.TypeText},
		{Name: "max_reads_per_second", Type: schema.TypeInt}, {Name: "max_writes_per_second", Type: schema.TypeInt},
		{Name: "mode", Type: schema.TypeText},
	}
	attachedColumns = []coordinator.RowColumn{
		{Name: "role", Type: schema.TypeText}, {Name: "service_level", Type: schema.TypeText},
		{Name: "address", Type: schema.TypeText},
	}
	effectiveColumns = []coordinator.RowColumn{
		{Name: "service_level", Type: schema.TypeText}, {Name: "attached_to", Type: schema.TypeText},
		{Name: "distance", Type: schema.TypeInt},
		{Name: "max_reads_per_second", Type: schema.TypeInt}, {Name: "max_writes_per_second", Type: schema.TypeInt},
		{Name: "mode", Type: schema.TypeText},
	}
)

// limitValue is a limit as an int column: null for none.
func limitValue(n uint32) []byte {
	if n == 0 {
		return nil
	}
	return binary.BigEndian.AppendUint32(nil, n)
}

func levelRow(l *schema.ServiceLevel) [][]byte {
	return [][]byte{[]byte(l.Name), nil, []byte("interactive"), limitValue(l.Limit.MaxReadsPerSecond), limitValue(l.Limit.MaxWritesPerSecond), []byte(l.Limit.Mode.String())}
}

func attachedRow(a *schema.Attachment) [][]byte {
	if a.Role != "" {
		return [][]byte{[]byte(a.Role), []byte(a.Level), nil}
	}
	return [][]byte{nil, []byte(a.Level), []byte(a.Prefix.String())}
}

// listLevels answers the LIST statements of service levels.
func (e *Executor) listLevels(ctx context.Context, st *cql.ListServiceLevelsStmt) (coordinator.Result, error) {
	s := e.schema.Schema()
	ofSelf := func() bool {
		role, ok := auth.RoleFrom(ctx)
		return ok && !st.Target.IsAddress && st.Target.Role.Name == role
	}
	if e.auth == nil || !(st.Kind == cql.ListAttached || st.Kind == cql.ListEffective) || !ofSelf() {
		if _, err := e.levelsPermission(ctx, 0); err != nil {
			return coordinator.Result{}, err
		}
	} else if _, _, err := e.loggedIn(ctx); err != nil {
		return coordinator.Result{}, err
	}
	rows := &coordinator.Rows{}
	switch st.Kind {
	case cql.ListLevel:
		l, ok := s.Level(st.Level.Name)
		if !ok {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Level.Pos(), Err: fmt.Errorf("%w %s", schema.ErrUnknownLevel, cql.QuoteIdent(st.Level.Name))}
		}
		rows.Columns, rows.Values = levelColumns, [][][]byte{levelRow(l)}
	case cql.ListAllLevels:
		rows.Columns = levelColumns
		for _, l := range s.Levels() {
			rows.Values = append(rows.Values, levelRow(l))
		}
	case cql.ListAllAttached:
		rows.Columns = attachedColumns
		for _, a := range s.Attachments() {
			rows.Values = append(rows.Values, attachedRow(a))
		}
	case cql.ListAttached:
		rows.Columns = attachedColumns
		if !st.Target.IsAddress {
			if l, ok := s.RoleAttachment(st.Target.Role.Name); ok {
				rows.Values = append(rows.Values, [][]byte{[]byte(st.Target.Role.Name), []byte(l.Name), nil})
			}
			break
		}
		p, err := schema.ParseAddressTarget(st.Target.Address)
		if err != nil {
			return coordinator.Result{}, &coordinator.InvalidError{Pos: st.Target.Pos(), Err: err}
		}
		if strings.Contains(st.Target.Address, "/") {
			// A block: its own attachment.
			if l, ok := s.AddressAttachment(p); ok {
				rows.Values = append(rows.Values, [][]byte{nil, []byte(l.Name), []byte(p.String())})
			}
			break
		}
		// One address: every block that holds it, most specific first (the order Budgets uses).
		for _, a := range s.AddressLevels(p.Addr()) {
			rows.Values = append(rows.Values, attachedRow(a))
		}
	case cql.ListEffective:
		if e.auth != nil {
			if err := e.checkRoleTarget(ctx, st, st.Target.Role); err != nil {
				return coordinator.Result{}, err
			}
		}
		rows.Columns = effectiveColumns
		for _, el := range s.EffectiveLevels(st.Target.Role.Name) {
			l := el.Level
			rows.Values = append(rows.Values, [][]byte{[]byte(l.Name), []byte(el.Role), binary.BigEndian.AppendUint32(nil, uint32(el.Distance)),
				limitValue(l.Limit.MaxReadsPerSecond), limitValue(l.Limit.MaxWritesPerSecond), []byte(l.Limit.Mode.String())})
		}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows}, nil
}

// addressOf is the client address the budgets of ctx are resolved for: none when no level is
// attached to an address (so that the cache keeps one entry per role, not per client).
func addressOf(ctx context.Context, s *schema.Schema) netip.Addr {
	if !s.HasAddressLevels() {
		return netip.Addr{}
	}
	a, _ := auth.ClientFrom(ctx)
	return a
}
