package schema

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
)

// The level state's section of an encoded schema (see Encode), after the GC horizon, which is
// then written even when 0:
//
//	the version of the last change to the level state
//	count, then per service level in name order:
//	    name, version, flags (1 = dropped, 2 = shadow mode); unless dropped: max reads per
//	    second, max writes per second
//	count, then per attachment in (kind, target) order:
//	    kind (a byte: 'r' role, 'a' address), target (the role, or the prefix's text), version,
//	    flags (1 = detached); unless detached: the level's name
//	count, then per role grant in (role, member) order:
//	    role, member, version, flags (1 = revoked)
//
// A node that predates the section refuses it: a GC horizon of 0, or bytes after the horizon,
// are errors to it, so it never silently drops a level.

const (
	levelDropped = 1
	levelShadow  = 2
)

func appendLevel(b []byte, l *ServiceLevel) []byte {
	b = appendString(b, l.Name)
	b = appendVersion(b, l.Version)
	var f byte
	if l.dropped {
		f |= levelDropped
	} else if l.Limit.Mode == Shadow {
		f |= levelShadow
	}
	b = append(b, f)
	if !l.dropped {
		b = binary.AppendUvarint(b, uint64(l.Limit.MaxReadsPerSecond))
		b = binary.AppendUvarint(b, uint64(l.Limit.MaxWritesPerSecond))
	}
	return b
}

func appendAttachment(b []byte, a *Attachment) []byte {
	k := a.key()
	b = append(b, k[0])
	b = appendString(b, k[1:])
	b = appendVersion(b, a.Version)
	if a.dropped {
		return append(b, levelDropped)
	}
	b = append(b, 0)
	return appendString(b, a.Level)
}

func appendGrant(b []byte, g *RoleGrant) []byte {
	b = appendString(b, g.Role)
	b = appendString(b, g.Member)
	b = appendVersion(b, g.Version)
	if g.dropped {
		return append(b, levelDropped)
	}
	return append(b, 0)
}

func (l *levelState) encode(b []byte) []byte {
	b = appendVersion(b, l.changed)
	b = binary.AppendUvarint(b, uint64(len(l.levels)))
	for _, k := range sortedKeys(l.levels) {
		b = appendLevel(b, l.levels[k])
	}
	b = binary.AppendUvarint(b, uint64(len(l.attach)))
	for _, k := range sortedKeys(l.attach) {
		b = appendAttachment(b, l.attach[k])
	}
	b = binary.AppendUvarint(b, uint64(len(l.grants)))
	for _, k := range sortedKeys(l.grants) {
		b = appendGrant(b, l.grants[k])
	}
	return b
}

// decodeLevels reads the level state's section; the caller checks canonical form (order,
// minimal integers) by encoding the result again.
func decodeLevels(d *decoder) (levelState, error) {
	l := levelState{levels: map[string]*ServiceLevel{}, attach: map[string]*Attachment{}, grants: map[string]*RoleGrant{}}
	l.changed = d.version()
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		x := &ServiceLevel{Name: d.string(), Version: d.version()}
		f := d.byte()
		if d.err != nil {
			break
		}
		if f > levelShadow {
			return l, fmt.Errorf("service level %q: unknown flags %#x", x.Name, f)
		}
		x.dropped = f&levelDropped != 0
		if !x.dropped {
			r, w := d.uvarint(), d.uvarint()
			if r > MaxLimit || w > MaxLimit {
				return l, fmt.Errorf("service level %q: limit %d/%d is too large", x.Name, r, w)
			}
			x.Limit = RateLimit{MaxReadsPerSecond: uint32(r), MaxWritesPerSecond: uint32(w)}
			if f&levelShadow != 0 {
				x.Limit.Mode = Shadow
			}
		}
		if err := checkName("service level", x.Name); err != nil && d.err == nil {
			return l, err
		}
		if _, dup := l.levels[x.Name]; dup {
			return l, fmt.Errorf("service level %q is listed twice", x.Name)
		}
		l.levels[x.Name] = x
	}
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		kind, target := d.byte(), d.string()
		x := &Attachment{Version: d.version()}
		f := d.byte()
		if d.err != nil {
			break
		}
		switch kind {
		case 'r':
			if target == "" {
				return l, fmt.Errorf("an attachment to an empty role name")
			}
			x.Role = target
		case 'a':
			p, err := netip.ParsePrefix(target)
			if err != nil || p != p.Masked() || p.Addr().Is4In6() || p.String() != target {
				return l, fmt.Errorf("an attachment to malformed address block %q", target)
			}
			x.Prefix = p
		default:
			return l, fmt.Errorf("an attachment of unknown kind %#x", kind)
		}
		switch f {
		case 0:
			x.Level = d.string()
			if err := checkName("service level", x.Level); err != nil && d.err == nil {
				return l, err
			}
		case levelDropped:
			x.dropped = true
		default:
			return l, fmt.Errorf("attachment to %q: unknown flags %#x", target, f)
		}
		if _, dup := l.attach[x.key()]; dup {
			return l, fmt.Errorf("attachment to %q is listed twice", target)
		}
		l.attach[x.key()] = x
	}
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		x := &RoleGrant{Role: d.string(), Member: d.string(), Version: d.version()}
		f := d.byte()
		if d.err != nil {
			break
		}
		if f > levelDropped || x.Role == "" || x.Member == "" || x.Role == x.Member {
			return l, fmt.Errorf("malformed grant of role %q to %q", x.Role, x.Member)
		}
		x.dropped = f == levelDropped
		if _, dup := l.grants[x.key()]; dup {
			return l, fmt.Errorf("grant of role %q to %q is listed twice", x.Role, x.Member)
		}
		l.grants[x.key()] = x
	}
	return l, d.err
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
