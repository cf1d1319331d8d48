package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"
)

// formatVersion is the first byte of an encoded schema.
const formatVersion = 1

// descendingBit marks a DESC clustering column in its type byte.
const descendingBit = 0x80

// flagShadow marks, in a table's flags, a rate limit in shadow mode.
const flagShadow = 2

// Digest identifies the content of a schema: two nodes whose digests are
// equal have the same schema (tombstones included).
type Digest [16]byte

// String returns the digest in hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

func digestOf(encoded []byte) Digest {
	sum := sha256.Sum256(encoded)
	return Digest(sum[:16])
}

// Digest returns the digest of s: the first 16 bytes of the SHA-256 of its
// encoding.
func (s *Schema) Digest() Digest {
	if s.encoded == nil { // the zero Schema
		return New().digest
	}
	return s.digest
}

// Encode returns the canonical encoding of s, for persistence and for
// transfer between nodes: equal schemas encode to equal bytes. Decode reads
// it back.
//
// Layout (format version 1; integers are unsigned varints unless noted,
// strings are a length and the bytes, a version is a signed varint
// timestamp and the node string):
//
//	byte 1
//	count, then per keyspace in name order:
//	    name, version, flags (1 = dropped, 2 = altered), replication factor,
//	    the version of the last ALTER KEYSPACE when the flags have 2
//	count, then per table in (keyspace, name) order:
//	    keyspace, name, id (8 bytes big-endian), keyspace version, version,
//	    flags (1 = dropped, 2 = rate limit in shadow mode); unless dropped:
//	    partition key count, clustering count, column count,
//	    per column (canonical order): name, type byte (with the bit
//	    descendingBit set for a DESC clustering column, and from format 11
//	    for a static column);
//	    max reads per second, max writes per second;
//	    gc_grace_seconds when the flags have gcGraceBit (0x80);
//	    speculative_retry when the flags have specRetryBit (0x40): its kind
//	    (a byte: 1 percentile, 2 fixed, 3 always, 4 none, 5 min, 6 max), then
//	    the percentile's float64 bits (8 bytes big-endian) and/or the fixed
//	    delay in milliseconds;
//	    the compatibility options set to other than their defaults when the
//	    flags have optionsBit (0x08): a count, then per option in name
//	    order its name and its value's canonical CQL text;
//	    default_time_to_live when the flags have defaultTTLBit (0x20);
//	    dropped columns and truncated_at when the flags have evolutionBit (0x10)
//	the GC horizon (a version timestamp), only when not zero
//
// The clustering order was added to version 1 without a version bump: a
// table with no DESC column encodes exactly as before (so its digest is
// unchanged, and a schema written before still decodes, as ASC), and a node
// that predates it rejects a DESC column as a bad type rather than read
// its rows in the wrong order. gc_grace_seconds was added the same way: a
// table at the default encodes as before, and an older node refuses the
// flag rather than ignore the option.
//
// speculative_retry was added the same way: a table at the default ('99p')
// encodes as before, and an older node refuses the flag.
//
// The compatibility options were added the same way: a table with none set encodes as
// before, and an older node refuses the flag.
//
// The GC horizon was added the same way: a schema that never purged a
// tombstone encodes as before, and an older node refuses the trailing bytes
// rather than bring purged tombstones back.
//
// The records of dropped columns and of the last TRUNCATE (flag evolutionBit, 0x10) were
// added the same way: see appendEvolution.
//
// ALTER KEYSPACE's version (keyspace flag 2) was added the same way: a keyspace never altered
// encodes as before, and a node that predates it refuses the flag (coordinators refuse ALTER
// KEYSPACE while such a node remains: Keyspace.FormatFeatures).
//
// The service levels, their attachments and the roles granted to roles (levelencoding.go) were
// added the same way: a schema without them encodes as before, and a node that predates them
// refuses the section (catalog refuses them while such a node remains: LevelFormatFeatures).
//
// A keyspace's rate_limit (keyspace flag 4, and 8 for shadow mode) was added the same way: its
// maximum reads and writes per second follow the keyspace's other fields.
//
// A keyspace's user-defined types (keyspace flag 16, data format 5) were added the same way:
// after its other fields, a count, then per type in name order its name, a count of fields and
// per field its name and canonical type name (see appendUserTypes).
//
// The shadow mode flag was added the same way: a table in the default
// (enforce) mode encodes as before, and a node that predates it rejects the
// flag rather than enforce a limit meant to be tried.
func (s *Schema) Encode() []byte {
	if s.encoded == nil {
		return New().Encode()
	}
	return bytes.Clone(s.encoded)
}

func (s *Schema) encode() []byte {
	b := []byte{formatVersion}
	ks := make([]*Keyspace, 0, len(s.keyspaces))
	for _, k := range s.keyspaces {
		ks = append(ks, k)
	}
	sortKeyspaces(ks)
	b = binary.AppendUvarint(b, uint64(len(ks)))
	for _, k := range ks {
		b = appendKeyspace(b, k)
	}
	ts := s.sortedTables()
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		b = appendTable(b, t)
	}
	switch {
	case !s.sl.empty():
		b = binary.AppendUvarint(b, uint64(s.gcBefore))
		b = s.sl.encode(b)
	case s.gcBefore > 0:
		b = binary.AppendUvarint(b, uint64(s.gcBefore))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendType appends t's code (see typeCodes) with the bits of flags set, then, for a parametric
// type, its name.
func appendType(b []byte, t Type, flags byte) []byte {
	code := typeCode(t)
	b = append(b, code|flags)
	if code == codeParametric {
		b = appendString(b, string(t))
	}
	return b
}

// typeOf returns the type of code, reading a parametric type's name; TypeInvalid for an unknown
// code or a name that is no type in canonical form (the caller refuses it).
func (d *decoder) typeOf(code byte) Type {
	if code != codeParametric {
		return typeOfCode(code)
	}
	name := d.string()
	if d.err != nil {
		return TypeInvalid
	}
	t, err := parseParametric(name)
	if err != nil || string(t) != name {
		return TypeInvalid
	}
	return t
}

func appendVersion(b []byte, v Version) []byte {
	b = binary.AppendVarint(b, v.Timestamp)
	return appendString(b, v.Node)
}

func flags(dropped bool) byte {
	if dropped {
		return 1
	}
	return 0
}

// keyspaceAlteredBit marks, in a keyspace's flags, a keyspace altered by ALTER KEYSPACE: its
// Altered version follows the replication factor.
const keyspaceAlteredBit = 2

func appendKeyspace(b []byte, k *Keyspace) []byte {
	b = appendString(b, k.Name)
	b = appendVersion(b, k.Version)
	f := flags(k.dropped)
	altered := !k.dropped && k.Altered != (Version{})
	if altered {
		f |= keyspaceAlteredBit
	}
	limited := !k.dropped && !k.RateLimit.IsZero()
	if limited {
		f |= keyspaceRateLimitBit
		if k.RateLimit.Mode == Shadow {
			f |= keyspaceShadowBit
		}
	}
	typed := !k.dropped && len(k.userTypes) > 0
	if typed {
		f |= keyspaceTypesBit
	}
	perDC := !k.dropped && len(k.DataCenters) > 0
	if perDC {
		f |= keyspaceDataCentersBit
	}
	b = append(b, f)
	b = binary.AppendUvarint(b, uint64(k.ReplicationFactor))
	if altered {
		b = appendVersion(b, k.Altered)
	}
	if limited {
		b = binary.AppendUvarint(b, uint64(k.RateLimit.MaxReadsPerSecond))
		b = binary.AppendUvarint(b, uint64(k.RateLimit.MaxWritesPerSecond))
	}
	if typed {
		b = appendUserTypes(b, k)
	}
	if perDC {
		b = binary.AppendUvarint(b, uint64(len(k.DataCenters)))
		for _, f := range k.DataCenters {
			b = appendString(b, f.DC)
			b = binary.AppendUvarint(b, uint64(f.RF))
		}
	}
	return b
}

// keyspaceDataCentersBit marks, in a keyspace's flags, a keyspace under NetworkTopologyStrategy:
// after its other fields, a count, then per data center in name order its name and replication
// factor, which add up to the keyspace's replication factor (data format FormatNTS).
const keyspaceDataCentersBit = 32

// keyspaceRateLimitBit marks, in a keyspace's flags, a keyspace with a rate_limit: its reads and
// writes per second follow; keyspaceShadowBit marks the limit in shadow mode.
const (
	keyspaceRateLimitBit = 4
	keyspaceShadowBit    = 8
)

func appendTable(b []byte, t *Table) []byte {
	b = appendString(b, t.Keyspace)
	b = appendString(b, t.Name)
	b = binary.BigEndian.AppendUint64(b, uint64(t.ID))
	b = appendVersion(b, t.KeyspaceVersion)
	b = appendVersion(b, t.Version)
	f := flags(t.dropped)
	if t.gcGraceSet {
		f |= gcGraceBit
	}
	if t.specRetrySet {
		f |= specRetryBit
	}
	if len(t.options) > 0 && !t.dropped {
		f |= optionsBit
	}
	if t.defaultTTL != 0 {
		f |= defaultTTLBit
	}
	if !t.dropped && t.RateLimit.Mode == Shadow {
		f |= flagShadow
	}
	if !t.dropped && t.hasEvolution() {
		f |= evolutionBit
	}
	if !t.dropped && len(t.indexes) > 0 {
		f |= indexesBit
	}
	b = append(b, f)
	if t.dropped {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(t.PartitionKey)))
	b = binary.AppendUvarint(b, uint64(len(t.Clustering)))
	b = binary.AppendUvarint(b, uint64(len(t.Columns)))
	for _, c := range t.Columns {
		b = appendString(b, c.Name)
		var desc byte
		if c.Descending || c.Static {
			desc = descendingBit // on a regular column: static (format 11)
		}
		b = appendType(b, c.Type, desc)
	}
	b = binary.AppendUvarint(b, uint64(t.RateLimit.MaxReadsPerSecond))
	b = binary.AppendUvarint(b, uint64(t.RateLimit.MaxWritesPerSecond))
	if t.gcGraceSet {
		b = binary.AppendUvarint(b, uint64(t.gcGrace))
	}
	if t.specRetrySet {
		b = append(b, byte(t.specRetry.Kind))
		switch t.specRetry.Kind {
		case SpeculatePercentile:
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(t.specRetry.Percentile))
		case SpeculateFixed:
			b = binary.AppendUvarint(b, uint64(t.specRetry.Delay/time.Millisecond))
		case SpeculateMin, SpeculateMax:
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(t.specRetry.Percentile))
			b = binary.AppendUvarint(b, uint64(t.specRetry.Delay/time.Millisecond))
		}
	}
	if len(t.options) > 0 {
		names := t.setOptions()
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, n := range names {
			b = appendString(b, n)
			b = appendString(b, t.options[n].CQL())
		}
	}
	if t.defaultTTL != 0 {
		b = binary.AppendUvarint(b, uint64(t.defaultTTL))
	}
	if t.hasEvolution() {
		b = appendEvolution(b, t)
	}
	if len(t.indexes) > 0 {
		b = appendIndexes(b, t)
	}
	return b
}

// gcGraceBit, in a table's flags byte, says that the table's gc_grace_seconds is not the default
// and follows its rate limit (see Encode).
const gcGraceBit = 0x80

// specRetryBit, in a table's flags byte, says that the table's speculative_retry is not the
// default and follows its gc_grace_seconds, if any (see Encode).
const specRetryBit = 0x40

// optionsBit, in a table's flags byte, says that compatibility options other than their
// defaults follow its speculative_retry, if any (see Encode).
const optionsBit = 0x08

// defaultTTLBit, in a table's flags byte, says that the table has a default_time_to_live, which
// follows its compatibility options, if any (see Encode). A table without one encodes as before.
const defaultTTLBit = 0x20

// errTruncated is the error for input that ends too early.
var errTruncated = errors.New("truncated")

// decoder reads an encoding; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad or truncated varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad or truncated varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errTruncated
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = errTruncated
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) version() Version {
	ts := d.varint()
	return Version{Timestamp: ts, Node: d.string()}
}

// count reads a count of items that take at least one byte each.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("count %d exceeds the %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

// dataCenters reads the replication factors per data center of keyspace k, whose replication
// factor is rf (keyspaceDataCentersBit).
func (d *decoder) dataCenters(k *Keyspace, rf uint64) error {
	n := d.count()
	sum := uint64(0)
	for i := 0; i < n && d.err == nil; i++ {
		f := DCFactor{DC: d.string()}
		r := d.uvarint()
		if d.err != nil {
			break
		}
		if err := checkDataCenterName(f.DC); err != nil {
			return fmt.Errorf("keyspace %q: %w", k.Name, err)
		}
		if r == 0 || r > 1<<31-1 {
			return fmt.Errorf("keyspace %q: data center %q has replication factor %d", k.Name, f.DC, r)
		}
		if i > 0 && f.DC <= k.DataCenters[i-1].DC {
			return fmt.Errorf("keyspace %q: data center %q is out of order", k.Name, f.DC)
		}
		f.RF, sum = int(r), sum+r
		k.DataCenters = append(k.DataCenters, f)
	}
	if d.err == nil && (n == 0 || sum != rf) {
		return fmt.Errorf("keyspace %q: its data centers' replication factors add up to %d, not its %d", k.Name, sum, rf)
	}
	return nil
}

// keyspaceFlags reads a keyspace's flags: dropped (and nothing else), altered
// (keyspaceAlteredBit), rate-limited (keyspaceRateLimitBit, with keyspaceShadowBit).
func (d *decoder) keyspaceFlags() byte {
	f := d.byte()
	all := byte(1 | keyspaceAlteredBit | keyspaceRateLimitBit | keyspaceShadowBit | keyspaceTypesBit | keyspaceDataCentersBit)
	if f&^all != 0 || (f&1 != 0 && f != 1) || (f&keyspaceShadowBit != 0 && f&keyspaceRateLimitBit == 0) {
		d.fail("unknown flags %#x", f)
	}
	return f
}

// Decode reads a schema that Encode produced. Malformed input is an error,
// never a panic; so is an encoding that Encode would not produce (unsorted
// entries, a table outside its keyspace, non-minimal integers).
func Decode(b []byte) (*Schema, error) {
	s, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("schema: decode: %w", err)
	}
	return s, nil
}

func decode(b []byte) (*Schema, error) {
	d := &decoder{b: b}
	if v := d.byte(); d.err == nil && v != formatVersion {
		return nil, fmt.Errorf("unknown format version %d (this node reads %d)", v, formatVersion)
	}
	keyspaces := make(map[string]*Keyspace)
	prevName := ""
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		k := &Keyspace{Name: d.string(), Version: d.version()}
		f := d.keyspaceFlags()
		k.dropped = f&1 != 0
		rf := d.uvarint()
		if f&keyspaceAlteredBit != 0 {
			if k.Altered = d.version(); d.err == nil && k.Altered.Compare(k.Version) <= 0 {
				return nil, fmt.Errorf("keyspace %q was altered at %v, not after its creation at %v", k.Name, k.Altered, k.Version)
			}
		}
		if f&keyspaceRateLimitBit != 0 {
			r, w := d.uvarint(), d.uvarint()
			if d.err == nil && (r > MaxLimit || w > MaxLimit || r == 0 && w == 0) {
				return nil, fmt.Errorf("keyspace %q: rate limit %d/%d is out of range", k.Name, r, w)
			}
			k.RateLimit = RateLimit{MaxReadsPerSecond: uint32(r), MaxWritesPerSecond: uint32(w)}
			if f&keyspaceShadowBit != 0 {
				k.RateLimit.Mode = Shadow
			}
		}
		if f&keyspaceTypesBit != 0 {
			if err := d.userTypes(k); err != nil {
				return nil, err
			}
		}
		if f&keyspaceDataCentersBit != 0 {
			if err := d.dataCenters(k, rf); err != nil {
				return nil, err
			}
		}
		if d.err != nil {
			break
		}
		if i > 0 && k.Name <= prevName {
			return nil, fmt.Errorf("keyspace %q is out of order", k.Name)
		}
		prevName = k.Name
		if err := checkName("keyspace", k.Name); err != nil {
			return nil, err
		}
		switch {
		case k.dropped && rf != 0:
			return nil, fmt.Errorf("dropped keyspace %q has a replication factor", k.Name)
		case !k.dropped && (rf == 0 || rf > 1<<31-1):
			return nil, fmt.Errorf("keyspace %q has replication factor %d", k.Name, rf)
		}
		k.ReplicationFactor = int(rf)
		keyspaces[k.Name] = k
	}
	tables := make(map[tableKey]*Table)
	var prev *Table
	for i, n := 0, d.count(); i < n && d.err == nil; i++ {
		t, err := decodeTable(d)
		if err != nil || d.err != nil {
			if err == nil {
				err = d.err
			}
			return nil, err
		}
		if prev != nil && compareTableNames(prev, t) >= 0 {
			return nil, fmt.Errorf("table %q.%q is out of order", t.Keyspace, t.Name)
		}
		prev = t
		k, ok := keyspaces[t.Keyspace]
		if !ok || k.dropped || k.Version != t.KeyspaceVersion {
			return nil, fmt.Errorf("table %q.%q does not belong to a live keyspace", t.Keyspace, t.Name)
		}
		tables[tableKey{t.Keyspace, t.Name}] = t
	}
	if d.err != nil {
		return nil, d.err
	}
	var gcBefore uint64
	if len(d.b) > 0 {
		if gcBefore = d.uvarint(); d.err == nil && gcBefore > math.MaxInt64 {
			return nil, fmt.Errorf("GC horizon %d out of range", gcBefore)
		}
	}
	var levels levelState
	if len(d.b) > 0 && d.err == nil {
		var err error
		if levels, err = decodeLevels(d); err != nil {
			return nil, err
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) > 0 {
		return nil, fmt.Errorf("%d bytes after the end", len(d.b))
	}
	s := finishLevels(keyspaces, tables, levels, int64(gcBefore))
	if !bytes.Equal(s.encoded, b) {
		return nil, errors.New("not in canonical form")
	}
	return s, nil
}

func decodeTable(d *decoder) (*Table, error) {
	t := &Table{Keyspace: d.string(), Name: d.string(), ID: TableID(d.uint64())}
	t.KeyspaceVersion = d.version()
	t.Version = d.version()
	f := d.byte()
	// A dropped table carries no other flag.
	if d.err == nil && (f&^(1|gcGraceBit|flagShadow|specRetryBit|optionsBit|defaultTTLBit|evolutionBit|indexesBit) != 0 || (f&1 != 0 && f != 1)) {
		d.fail("unknown table flags %#x", f)
	}
	t.dropped, t.gcGraceSet, t.specRetrySet = f&1 != 0, f&gcGraceBit != 0, f&specRetryBit != 0
	if d.err != nil {
		return nil, d.err
	}
	if err := checkName("table", t.Name); err != nil {
		return nil, err
	}
	if t.ID == 0 {
		return nil, fmt.Errorf("table %q.%q has id 0", t.Keyspace, t.Name)
	}
	if t.dropped {
		return t, nil
	}
	npk, nck, ncols := d.uvarint(), d.uvarint(), d.count()
	if d.err != nil {
		return nil, d.err
	}
	if npk == 0 || npk > uint64(ncols) || nck > uint64(ncols)-npk {
		return nil, fmt.Errorf("table %q.%q has %d columns, %d in the partition key and %d clustering", t.Keyspace, t.Name, ncols, npk, nck)
	}
	cols := make([]Column, ncols)
	seen := make(map[string]bool, ncols)
	for i := range cols {
		c := Column{Name: d.string(), Index: i}
		typ := d.byte()
		if d.err != nil {
			return nil, d.err
		}
		c.Type = d.typeOf(typ &^ descendingBit)
		if d.err != nil {
			return nil, d.err
		}
		switch {
		case uint64(i) < npk:
			c.Kind = PartitionKeyColumn
		case uint64(i) < npk+nck:
			c.Kind = ClusteringColumn
			c.Descending = typ&descendingBit != 0
		default:
			c.Kind = RegularColumn
			c.Static = typ&descendingBit != 0 && nck > 0
			if prev := cols[i-1]; prev.Kind == RegularColumn && prev.Name >= c.Name {
				return nil, fmt.Errorf("table %q.%q: regular column %q is out of order", t.Keyspace, t.Name, c.Name)
			}
		}
		if c.Name == "" || seen[c.Name] || !c.Type.Valid() || (typ&descendingBit != 0 && c.Kind != ClusteringColumn && !c.Static) {
			return nil, fmt.Errorf("table %q.%q: bad column %q of type %d", t.Keyspace, t.Name, c.Name, typ)
		}
		seen[c.Name] = true
		cols[i] = c
	}
	reads, writes := d.uvarint(), d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if reads > MaxLimit || writes > MaxLimit {
		return nil, fmt.Errorf("table %q.%q: rate limit %d/%d is too large", t.Keyspace, t.Name, reads, writes)
	}
	t.RateLimit = RateLimit{MaxReadsPerSecond: uint32(reads), MaxWritesPerSecond: uint32(writes)}
	if f&flagShadow != 0 {
		t.RateLimit.Mode = Shadow
	}
	if t.gcGraceSet {
		g := d.uvarint()
		if d.err != nil {
			return nil, d.err
		}
		if g > MaxGCGraceSeconds || g == DefaultGCGraceSeconds {
			return nil, fmt.Errorf("table %q.%q: gc_grace_seconds %d is out of range or the default", t.Keyspace, t.Name, g)
		}
		t.gcGrace = uint32(g)
	}
	if t.specRetrySet {
		r := SpeculativeRetry{Kind: SpeculativeKind(d.byte())}
		switch r.Kind {
		case SpeculatePercentile:
			r.Percentile = math.Float64frombits(d.uint64())
		case SpeculateFixed, SpeculateMin, SpeculateMax:
			if r.Kind != SpeculateFixed {
				r.Percentile = math.Float64frombits(d.uint64())
			}
			if ms := d.uvarint(); ms <= uint64(MaxSpeculativeDelay/time.Millisecond) {
				r.Delay = time.Duration(ms) * time.Millisecond
			} else {
				r.Delay = -1 // out of range: invalid below
			}
		}
		if d.err != nil {
			return nil, d.err
		}
		if !r.valid() || r == DefaultSpeculativeRetry() {
			return nil, fmt.Errorf("table %q.%q: speculative_retry %v is invalid or the default", t.Keyspace, t.Name, r)
		}
		t.specRetry = r
	}
	if f&optionsBit != 0 {
		if err := decodeOptions(d, t); err != nil {
			return nil, err
		}
	}
	if f&defaultTTLBit != 0 {
		n := d.uvarint()
		if d.err != nil {
			return nil, d.err
		}
		if n == 0 || n > MaxTTL {
			return nil, fmt.Errorf("table %q.%q: default_time_to_live %d is out of range", t.Keyspace, t.Name, n)
		}
		t.defaultTTL = int32(n)
	}
	if f&evolutionBit != 0 {
		if err := decodeEvolution(d, t); err != nil {
			return nil, err
		}
	}
	if f&indexesBit != 0 {
		if err := decodeIndexes(d, t, cols); err != nil {
			return nil, err
		}
	}
	t.setColumns(cols, int(npk), int(nck))
	return t, nil
}

// decodeOptions reads the compatibility options of t (see Encode): each known, once, in name
// order, not its default, and its value canonical and valid.
func decodeOptions(d *decoder, t *Table) error {
	n := d.count()
	if d.err != nil {
		return d.err
	}
	if n == 0 {
		return fmt.Errorf("table %q.%q: an empty list of options", t.Keyspace, t.Name)
	}
	t.options = make(map[string]OptionValue, n)
	prev := ""
	for range n {
		name, text := d.string(), d.string()
		if d.err != nil {
			return d.err
		}
		if name <= prev {
			return fmt.Errorf("table %q.%q: option %q is out of order", t.Keyspace, t.Name, name)
		}
		prev = name
		v, err := parseOptionText(name, text)
		if err != nil {
			return fmt.Errorf("table %q.%q: %w", t.Keyspace, t.Name, err)
		}
		if v.equal(compatOptions[name].def) {
			return fmt.Errorf("table %q.%q: option %s is its default", t.Keyspace, t.Name, name)
		}
		t.options[name] = v
	}
	return nil
}
