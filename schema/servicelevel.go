package schema

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// LevelsKey is the reserved name under which schema consensus agrees on the service levels,
// their attachments and the roles granted to roles: one register for all of them, as a keyspace
// is one register for its tables. It is a system name, so no keyspace can have it.
const LevelsKey = "system_service_levels"

// ErrUnknownLevel wraps "unknown service level sl".
var ErrUnknownLevel = errors.New("unknown service level")

// The options of CREATE and ALTER SERVICE LEVEL.
const (
	LevelMaxReads     = KeyMaxReads
	LevelMaxWrites    = KeyMaxWrites
	LevelMode         = KeyMode
	LevelTimeout      = "timeout"
	LevelWorkloadType = "workload_type"
)

// ServiceLevel is a service level: rates shared, cluster-wide, by every request of every role
// and client address it is attached to. Values reachable from a *Schema are shared and must not
// be modified.
type ServiceLevel struct {
	Name  string
	Limit RateLimit
	// Version is the version of the level's last CREATE, ALTER or DROP.
	Version Version

	dropped bool
}

// Attachment attaches a service level to a role or to the client addresses of a prefix.
type Attachment struct {
	// Role is the role attached to; "" for an address attachment.
	Role string
	// Prefix is the address block attached to (a single address is a /32 or /128); invalid
	// for a role attachment.
	Prefix netip.Prefix
	// Level is the level's name; "" for a tombstone.
	Level   string
	Version Version

	dropped bool
}

// key is the attachment's name in the schema: "r" and the role, or "a" and the prefix.
func (a *Attachment) key() string {
	if a.Role != "" {
		return "r" + a.Role
	}
	return "a" + a.Prefix.String()
}

// Target returns how statements and listings name what a is attached to: the role, or ADDRESS
// 'prefix'.
func (a *Attachment) Target() string {
	if a.Role != "" {
		return a.Role
	}
	return "ADDRESS " + cql.QuoteString(a.Prefix.String())
}

// RoleGrant is GRANT Role TO Member: Member holds Role (its service levels, as Cassandra's
// member inherits).
type RoleGrant struct {
	Role, Member string
	Version      Version

	dropped bool
}

func (g *RoleGrant) key() string { return g.Role + "\x00" + g.Member }

// levelState is the part of a schema agreed under LevelsKey. Its maps are owned by the Schema
// (copied on change).
type levelState struct {
	levels  map[string]*ServiceLevel
	attach  map[string]*Attachment
	grants  map[string]*RoleGrant
	changed Version // the version of the last change to any of them: the register's version
}

func (l *levelState) empty() bool {
	return len(l.levels) == 0 && len(l.attach) == 0 && len(l.grants) == 0 && l.changed == (Version{})
}

func (l *levelState) clone() levelState {
	return levelState{levels: mapsClone(l.levels), attach: mapsClone(l.attach), grants: mapsClone(l.grants), changed: l.changed}
}

func mapsClone[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// levelIndex is what finish derives from a levelState for the resolver.
type levelIndex struct {
	// granted maps a role to the roles granted to it, sorted by name.
	granted map[string][]string
	// addresses are the live address attachments, most specific prefix first.
	addresses []*Attachment
	// budgets reports whether any request can be held by a level or a keyspace limit: a live
	// attachment of a level with a limit, or a keyspace with a rate_limit.
	budgets bool
}

func (s *Schema) indexLevels() {
	ix := levelIndex{granted: map[string][]string{}}
	for _, g := range s.sl.grants {
		if !g.dropped {
			ix.granted[g.Member] = append(ix.granted[g.Member], g.Role)
		}
	}
	for _, rs := range ix.granted {
		slices.Sort(rs)
	}
	for _, a := range s.sl.attach {
		if a.dropped {
			continue
		}
		l, ok := s.Level(a.Level)
		if ok && !l.Limit.IsZero() {
			ix.budgets = true
		}
		if a.Role == "" && ok {
			ix.addresses = append(ix.addresses, a)
		}
	}
	slices.SortFunc(ix.addresses, func(a, b *Attachment) int {
		if c := cmp.Compare(b.Prefix.Bits(), a.Prefix.Bits()); c != 0 {
			return c
		}
		return cmp.Compare(a.Prefix.String(), b.Prefix.String())
	})
	for _, k := range s.keyspaces {
		if !k.dropped && !k.RateLimit.IsZero() {
			ix.budgets = true
		}
	}
	s.lix = ix
}

// HasBudgets reports whether any request can be held by a service level or a keyspace's
// rate_limit: false lets the request path skip resolving them. It is O(1).
func (s *Schema) HasBudgets() bool { return s.lix.budgets }

// HasAddressLevels reports whether a level is attached to any client address.
func (s *Schema) HasAddressLevels() bool { return len(s.lix.addresses) > 0 }

// Level returns the live service level named name.
func (s *Schema) Level(name string) (*ServiceLevel, bool) {
	l, ok := s.sl.levels[name]
	if !ok || l.dropped {
		return nil, false
	}
	return l, true
}

// Levels returns the live service levels, sorted by name.
func (s *Schema) Levels() []*ServiceLevel {
	var ls []*ServiceLevel
	for _, l := range s.sl.levels {
		if !l.dropped {
			ls = append(ls, l)
		}
	}
	slices.SortFunc(ls, func(a, b *ServiceLevel) int { return cmp.Compare(a.Name, b.Name) })
	return ls
}

// Attachments returns the live attachments of live levels: roles sorted by name, then
// addresses sorted by prefix text.
func (s *Schema) Attachments() []*Attachment {
	var as []*Attachment
	for _, a := range s.sl.attach {
		if _, ok := s.Level(a.Level); ok && !a.dropped {
			as = append(as, a)
		}
	}
	slices.SortFunc(as, func(a, b *Attachment) int { return cmp.Compare(a.key(), b.key()) })
	return as
}

// RoleAttachment returns the level attached to role, if any.
func (s *Schema) RoleAttachment(role string) (*ServiceLevel, bool) {
	a, ok := s.sl.attach["r"+role]
	if !ok || a.dropped {
		return nil, false
	}
	return s.Level(a.Level)
}

// AddressAttachment returns the level attached to exactly prefix p, if any.
func (s *Schema) AddressAttachment(p netip.Prefix) (*ServiceLevel, bool) {
	a, ok := s.sl.attach["a"+p.String()]
	if !ok || a.dropped {
		return nil, false
	}
	return s.Level(a.Level)
}

// GrantedRoles returns the roles granted to role directly, sorted by name.
func (s *Schema) GrantedRoles(role string) []string { return s.lix.granted[role] }

// AllGrantedRoles returns every role granted to role, directly or through other roles,
// breadth-first (ties by name), role itself excluded.
func (s *Schema) AllGrantedRoles(role string) []string {
	var out []string
	s.walkGranted(role, func(r string, _ int) { out = append(out, r) })
	return out
}

// walkGranted calls visit with every role granted to role, directly or through other roles,
// and its distance (1: granted to role itself), breadth-first, each distance's roles by name;
// role itself is not visited.
func (s *Schema) walkGranted(role string, visit func(r string, distance int)) {
	seen := map[string]bool{role: true}
	frontier := []string{role}
	for d := 1; len(frontier) > 0; d++ {
		var next []string
		for _, r := range frontier {
			for _, g := range s.lix.granted[r] {
				if !seen[g] {
					seen[g] = true
					next = append(next, g)
				}
			}
		}
		slices.Sort(next)
		for _, r := range next {
			visit(r, d)
		}
		frontier = next
	}
}

// EffectiveLevel is one level of a role's chain: the level, the role it is attached to, and how
// many grants away from the role that is (0: the role's own attachment).
type EffectiveLevel struct {
	Level    *ServiceLevel
	Role     string
	Distance int
}

// EffectiveLevels returns the chain of levels that hold role's requests, nearest first: its
// own attachment, then those of the roles granted to it breadth-first, each distance's roles by
// name; a level reached twice is listed once, where first reached.
func (s *Schema) EffectiveLevels(role string) []EffectiveLevel {
	var out []EffectiveLevel
	seenLevel := map[string]bool{}
	add := func(r string, d int) {
		if l, ok := s.RoleAttachment(r); ok && !seenLevel[l.Name] {
			seenLevel[l.Name] = true
			out = append(out, EffectiveLevel{Level: l, Role: r, Distance: d})
		}
	}
	add(role, 0)
	s.walkGranted(role, add)
	return out
}

// AddressLevels returns the levels attached to the prefixes holding addr, most specific prefix
// first (ties by prefix text), each level once.
func (s *Schema) AddressLevels(addr netip.Addr) []*Attachment {
	addr = addr.Unmap()
	var out []*Attachment
	for _, a := range s.lix.addresses {
		if a.Prefix.Contains(addr) && !slices.ContainsFunc(out, func(o *Attachment) bool { return o.Level == a.Level }) {
			out = append(out, a)
		}
	}
	return out
}

// ParseAddressTarget reads the text of ADDRESS '...': an IPv4 or IPv6 address (a /32 or /128)
// or a CIDR block whose host bits are zero. An IPv4-mapped IPv6 address is its IPv4 address.
func ParseAddressTarget(text string) (netip.Prefix, error) {
	if !strings.Contains(text, "/") {
		a, err := netip.ParseAddr(text)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("address %s is not an IPv4 or IPv6 address nor a CIDR block such as '10.0.0.0/24'", cql.QuoteString(text))
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(text)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address %s is not a CIDR block such as '10.0.0.0/24' (%v)", cql.QuoteString(text), err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("address %s is an IPv4-mapped IPv6 block; write the IPv4 block", cql.QuoteString(text))
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("address %s has bits set after its /%d prefix; write %s", cql.QuoteString(text), p.Bits(), cql.QuoteString(m.String()))
	}
	return p, nil
}

// levelOptions are the options of CREATE and ALTER SERVICE LEVEL; a nil field was not given,
// and a clear* field says the option was set to null.
type levelOptions struct {
	reads, writes           *uint32
	clearReads, clearWrites bool
	mode                    *LimitMode
}

// parseLevelOptions reads and checks a service level's options; each error names the option
// and its value.
func parseLevelOptions(opts []cql.Option) (levelOptions, error) {
	var o levelOptions
	seen := map[string]bool{}
	for _, opt := range opts {
		name := opt.Name.Name
		if seen[name] {
			return o, fmt.Errorf("option %s is given twice", name)
		}
		seen[name] = true
		lit, _ := opt.Value.(*cql.Literal)
		isNull := lit != nil && lit.Kind == cql.LitNull
		switch name {
		case LevelMaxReads, LevelMaxWrites:
			dst, clr := &o.reads, &o.clearReads
			if name == LevelMaxWrites {
				dst, clr = &o.writes, &o.clearWrites
			}
			if isNull {
				*clr = true
				continue
			}
			n, err := positiveInt(opt.Value, MaxLimit, "a limit is a positive integer (null or leaving it out means no limit)")
			if err != nil {
				return o, fmt.Errorf("%s = %w", name, err)
			}
			v := uint32(n)
			*dst = &v
		case LevelMode:
			m, err := parseLimitMode(opt.Value)
			if err != nil {
				return o, fmt.Errorf("%s = %w", name, err)
			}
			o.mode = &m
		case LevelTimeout:
			return o, fmt.Errorf("option %s = %s is not supported yet: kvnode has no per-role request timeout (give USING TIMEOUT per statement)", name, describeValue(opt.Value))
		case LevelWorkloadType:
			if lit == nil || lit.Kind != cql.LitString || (lit.Value != "interactive" && lit.Value != "batch") {
				return o, fmt.Errorf("%s = %s is not a workload type; write 'interactive'", name, describeValue(opt.Value))
			}
			if lit.Value == "batch" {
				return o, fmt.Errorf("%s = 'batch' is not supported yet: node admission does not shed batch workloads first; every level is 'interactive'", name)
			}
		case "shares":
			return o, errors.New("option shares is not supported: it is ScyllaDB Enterprise's CPU scheduling, and kvnode's levels set rates (max_reads_per_second, max_writes_per_second)")
		default:
			return o, fmt.Errorf("unknown service level option %s (valid: %s, %s, %s, %s)", cql.QuoteIdent(name), LevelMaxReads, LevelMaxWrites, LevelMode, LevelWorkloadType)
		}
	}
	return o, nil
}

// applyTo returns limit with o's changes.
func (o levelOptions) applyTo(limit RateLimit) RateLimit {
	if o.reads != nil {
		limit.MaxReadsPerSecond = *o.reads
	}
	if o.clearReads {
		limit.MaxReadsPerSecond = 0
	}
	if o.writes != nil {
		limit.MaxWritesPerSecond = *o.writes
	}
	if o.clearWrites {
		limit.MaxWritesPerSecond = 0
	}
	if o.mode != nil {
		limit.Mode = *o.mode
	}
	return limit
}

// withLevels returns a schema of s's keyspaces and tables with level state l.
func (s *Schema) withLevels(l levelState) *Schema {
	ks, ts := s.clone()
	return finishLevels(ks, ts, l, s.gcBefore)
}

// isLevelStatement reports whether stmt is agreed under LevelsKey.
func isLevelStatement(stmt cql.Statement) bool {
	switch stmt.(type) {
	case *cql.CreateServiceLevelStmt, *cql.AlterServiceLevelStmt, *cql.DropServiceLevelStmt,
		*cql.AttachServiceLevelStmt, *cql.DetachServiceLevelStmt, *cql.GrantRoleStmt, *cql.DropRoleStmt:
		return true
	}
	return false
}

// applyLevels applies a statement agreed under LevelsKey. DROP ROLE forgets the role's
// attachment and grants (its row in system_auth is the shell's business).
func (s *Schema) applyLevels(stmt cql.Statement, c Change) (*Schema, error) {
	l := s.sl.clone()
	v := after(c.Version, l.changed)
	l.changed = v
	switch st := stmt.(type) {
	case *cql.CreateServiceLevelStmt:
		name := st.Name.Name
		if err := checkName("service level", name); err != nil {
			return nil, err
		}
		if _, ok := s.Level(name); ok {
			if st.IfNotExists {
				return s, nil
			}
			return nil, fmt.Errorf("service level %s %w", cql.QuoteIdent(name), ErrExists)
		}
		o, err := parseLevelOptions(st.Options)
		if err != nil {
			return nil, fmt.Errorf("service level %s: %w", cql.QuoteIdent(name), err)
		}
		l.levels[name] = &ServiceLevel{Name: name, Limit: o.applyTo(RateLimit{}), Version: v}
	case *cql.AlterServiceLevelStmt:
		name := st.Name.Name
		prev, ok := s.Level(name)
		if !ok {
			return nil, fmt.Errorf("%w %s", ErrUnknownLevel, cql.QuoteIdent(name))
		}
		o, err := parseLevelOptions(st.Options)
		if err != nil {
			return nil, fmt.Errorf("service level %s: %w", cql.QuoteIdent(name), err)
		}
		l.levels[name] = &ServiceLevel{Name: name, Limit: o.applyTo(prev.Limit), Version: v}
	case *cql.DropServiceLevelStmt:
		name := st.Name.Name
		if _, ok := s.Level(name); !ok {
			if st.IfExists {
				return s, nil
			}
			return nil, fmt.Errorf("%w %s", ErrUnknownLevel, cql.QuoteIdent(name))
		}
		l.levels[name] = &ServiceLevel{Name: name, Version: v, dropped: true}
		for k, a := range l.attach {
			if !a.dropped && a.Level == name {
				l.attach[k] = &Attachment{Role: a.Role, Prefix: a.Prefix, Version: v, dropped: true}
			}
		}
	case *cql.AttachServiceLevelStmt:
		name := st.Level.Name
		if _, ok := s.Level(name); !ok {
			return nil, fmt.Errorf("%w %s", ErrUnknownLevel, cql.QuoteIdent(name))
		}
		a, err := attachment(st.Target)
		if err != nil {
			return nil, err
		}
		a.Level, a.Version = name, v
		l.attach[a.key()] = a
	case *cql.DetachServiceLevelStmt:
		a, err := attachment(st.Target)
		if err != nil {
			return nil, err
		}
		prev, ok := l.attach[a.key()]
		if !ok || prev.dropped {
			return nil, fmt.Errorf("no service level is attached to %s", a.Target())
		}
		a.Version, a.dropped = v, true
		l.attach[a.key()] = a
	case *cql.GrantRoleStmt:
		role, member := st.Role.Name, st.Grantee.Name
		g := &RoleGrant{Role: role, Member: member, Version: v}
		prev, granted := l.grants[g.key()]
		granted = granted && !prev.dropped
		if st.Revoke {
			if !granted {
				return nil, fmt.Errorf("%s is not a member of %s", member, role)
			}
			g.dropped = true
		} else {
			// Cassandra's checks: neither may already hold the other, a role itself included.
			if member == role || granted || slices.Contains(s.AllGrantedRoles(member), role) {
				return nil, fmt.Errorf("%s is a member of %s", member, role)
			}
			if slices.Contains(s.AllGrantedRoles(role), member) {
				return nil, fmt.Errorf("%s is a member of %s", role, member)
			}
		}
		l.grants[g.key()] = g
	case *cql.DropRoleStmt:
		role := st.Role.Name
		changed := false
		if a, ok := l.attach["r"+role]; ok && !a.dropped {
			l.attach["r"+role] = &Attachment{Role: role, Version: v, dropped: true}
			changed = true
		}
		for k, g := range l.grants {
			if !g.dropped && (g.Role == role || g.Member == role) {
				l.grants[k] = &RoleGrant{Role: g.Role, Member: g.Member, Version: v, dropped: true}
				changed = true
			}
		}
		if !changed {
			return s, nil
		}
	default:
		return nil, fmt.Errorf("%s is not a service level statement", StatementName(stmt))
	}
	return s.withLevels(l), nil
}

// attachment returns the (unversioned) attachment of a statement's target.
func attachment(t cql.LevelTarget) (*Attachment, error) {
	if !t.IsAddress {
		if t.Role.Name == "" {
			return nil, errors.New("a role name must not be empty")
		}
		return &Attachment{Role: t.Role.Name}, nil
	}
	p, err := ParseAddressTarget(t.Address)
	if err != nil {
		return nil, err
	}
	return &Attachment{Prefix: p}, nil
}

// mergeLevels merges two level states last writer wins per entry, as Merge does keyspaces;
// stale reports an entry of side i (0 for a, 1 for b) older than a horizon that side has not
// seen, of a name the other side lacks.
func mergeLevels(a, b *levelState, stale func(side int, v Version, inOther bool) bool) levelState {
	out := levelState{levels: map[string]*ServiceLevel{}, attach: map[string]*Attachment{}, grants: map[string]*RoleGrant{}, changed: a.changed}
	if b.changed.Compare(a.changed) > 0 {
		out.changed = b.changed
	}
	sides := [2]*levelState{a, b}
	for i, p := range sides {
		o := sides[1-i]
		for k, x := range p.levels {
			if _, in := o.levels[k]; stale(i, x.Version, in) {
				continue
			}
			if cur, ok := out.levels[k]; !ok || compareEntries(x.Version, cur.Version, appendLevel(nil, x), appendLevel(nil, cur)) > 0 {
				out.levels[k] = x
			}
		}
		for k, x := range p.attach {
			if _, in := o.attach[k]; stale(i, x.Version, in) {
				continue
			}
			if cur, ok := out.attach[k]; !ok || compareEntries(x.Version, cur.Version, appendAttachment(nil, x), appendAttachment(nil, cur)) > 0 {
				out.attach[k] = x
			}
		}
		for k, x := range p.grants {
			if _, in := o.grants[k]; stale(i, x.Version, in) {
				continue
			}
			if cur, ok := out.grants[k]; !ok || compareEntries(x.Version, cur.Version, appendGrant(nil, x), appendGrant(nil, cur)) > 0 {
				out.grants[k] = x
			}
		}
	}
	return out
}

func compareEntries(va, vb Version, ea, eb []byte) int {
	if c := va.Compare(vb); c != 0 {
		return c
	}
	return bytes.Compare(ea, eb)
}

// dropTombstones deletes the level state's tombstones older than before.
func (l *levelState) dropTombstones(before int64) {
	for k, x := range l.levels {
		if x.dropped && x.Version.Timestamp < before {
			delete(l.levels, k)
		}
	}
	for k, x := range l.attach {
		if x.dropped && x.Version.Timestamp < before {
			delete(l.attach, k)
		}
	}
	for k, x := range l.grants {
		if x.dropped && x.Version.Timestamp < before {
			delete(l.grants, k)
		}
	}
}

func (l *levelState) tombstoneVersions() []Version {
	var vs []Version
	for _, x := range l.levels {
		if x.dropped {
			vs = append(vs, x.Version)
		}
	}
	for _, x := range l.attach {
		if x.dropped {
			vs = append(vs, x.Version)
		}
	}
	for _, x := range l.grants {
		if x.dropped {
			vs = append(vs, x.Version)
		}
	}
	return vs
}

// LevelFormatFeatures returns the names of the level state's features that a node of a data format
// before FormatLevels cannot decode: any entry at all.
func (s *Schema) LevelFormatFeatures() []string {
	if s.sl.empty() {
		return nil
	}
	return []string{"service levels, their attachments or roles granted to roles"}
}
