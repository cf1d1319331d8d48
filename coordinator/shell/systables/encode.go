package systables

import (
	"crypto/sha1"
	"encoding/binary"
	"math"
	"net/netip"
	"slices"
	"strconv"

	"github.com/kvnode/kvnode/schema"
)

// UUID is a 16-byte RFC 4122 UUID, the value of the uuid columns (host_id, schema_version, id).
type UUID = schema.UUID

// Namespaces of the name-based (version 5, SHA-1) UUIDs this package derives, 16 bytes each. They
// are fixed forever: changing one changes every derived id.
const (
	nsHostID        = "kvnode/host_id\x00\x01"
	nsSchemaVersion = "kvnode/schema\x00\x00\x02"
	nsTableID       = "kvnode/table\x00\x00\x00\x03"
)

// nameUUID returns the version 5 (SHA-1, name-based) UUID of name in namespace ns (RFC 4122 §4.3).
func nameUUID(ns string, name []byte) UUID {
	h := sha1.New()
	h.Write([]byte(ns))
	h.Write(name)
	var u UUID
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return u
}

// HostID returns the host_id drivers see for a node: the node id itself when it is a UUID (kvnode
// generates ids in UUID version 4 form), else the version 5 UUID of the id's bytes in a fixed
// kvnode namespace, so that an operator-chosen id such as "node-a" still maps to one stable
// host_id on every node and across restarts.
func HostID(nodeID string) UUID {
	if u, err := schema.ParseUUID(nodeID); err == nil {
		return u
	}
	return nameUUID(nsHostID, []byte(nodeID))
}

// SchemaVersion returns the schema_version UUID of a schema digest (the hex digest every node
// gossips): the version 5 UUID of the digest in a fixed kvnode namespace. Nodes with the same
// schema have the same digest, hence the same version; every schema change changes the digest.
// ok is false for an empty digest (a peer not seen live since this node started).
func SchemaVersion(digest string) (UUID, bool) {
	if digest == "" {
		return UUID{}, false
	}
	return nameUUID(nsSchemaVersion, []byte(digest)), true
}

// tableUUID is a table's id column: the version 5 UUID of its keyspace, name and kvnode table id,
// the same on every node and new for a table dropped and created again.
func tableUUID(keyspace, name string, id uint64) UUID {
	b := make([]byte, 0, len(keyspace)+len(name)+2+20)
	b = append(b, keyspace...)
	b = append(b, 0)
	b = append(b, name...)
	b = append(b, 0)
	b = strconv.AppendUint(b, id, 10)
	return nameUUID(nsTableID, b)
}

// The encodings below are the native protocol v4's, which are the schema's canonical encodings of
// these types.

func encUUID(u UUID) []byte { return slices.Clone(u[:]) }

func encInet(a netip.Addr) []byte {
	if !a.IsValid() {
		return nil
	}
	return a.Unmap().AsSlice()
}

func encText(s string) []byte { return []byte(s) }

func encInt(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func encBool(v bool) []byte {
	if v {
		return []byte{1}
	}
	return []byte{0}
}

func encDouble(v float64) []byte {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(v))
}

// encTextSet encodes a set<text>: the elements sorted (as a set is) and deduplicated, each
// as a [int length][bytes], after an int count.
func encTextSet(elems []string) []byte {
	s := slices.Clone(elems)
	slices.Sort(s)
	s = slices.Compact(s)
	return encTextList(s)
}

// encTextList encodes a list<text> in the given order.
func encTextList(elems []string) []byte {
	n := 4
	for _, e := range elems {
		n += 4 + len(e)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
	for _, e := range elems {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// kv is one entry of a map value.
type kv struct{ k, v string }

// encMap encodes a map<text,text> or map<text,blob> (the value's bytes as they are): entries
// sorted by key, as CQL maps are.
func encMap(entries ...kv) []byte {
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b kv) int {
		switch {
		case a.k < b.k:
			return -1
		case a.k > b.k:
			return 1
		}
		return 0
	})
	b := binary.BigEndian.AppendUint32(nil, uint32(len(es)))
	for _, e := range es {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.k)))
		b = append(b, e.k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.v)))
		b = append(b, e.v...)
	}
	return b
}
