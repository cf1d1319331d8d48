package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// MaxMetaSize is memberlist's limit on a node's metadata. memberlist panics on longer metadata, so the
// cluster checks it first and returns [ErrMetaTooLarge].
const MaxMetaSize = memberlist.MetaMaxSize

// ErrMetaTooLarge reports node metadata (node id, addresses, schema digest, data center, rack) over
// [MaxMetaSize] bytes.
var ErrMetaTooLarge = errors.New("cluster: node metadata too large")

// Metadata format versions. Version 1 carried the node id, RPC address and schema digest; version 2
// adds the native protocol address, data center and rack that drivers read from system.peers.
// Version 3 appends the node's state (one byte, a NodeState). Version 4 appends a flags byte
// (metaUnrepaired). Nodes write version 3 while they have no flag set, version 4 otherwise, and
// read all four, so a cluster can be upgraded one node at a time (a version 1 node is reported
// with no native address and the default data center and rack; a version 1 or 2 node is normal).
// A node of an older release ignores, with a warning, the metadata of a node that is unrepaired.
const (
	metaVersion1 = 1
	metaVersion2 = 2
	metaVersion3 = 3
	metaVersion  = 4
)

// Flags of version 4 metadata.
const (
	// metaUnrepaired: the node started despite a corrupt write-ahead log and counts toward no
	// read consistency level until a repair run on it completes.
	metaUnrepaired = 1 << 0

	metaFlags = metaUnrepaired // the flags a node knows
)

// nodeMeta is what a node gossips about itself in memberlist's node metadata.
type nodeMeta struct {
	ID           NodeID
	RPCAddr      string
	SchemaDigest string
	NumTokens    int
	// NativeAddr is the host:port where the node serves the CQL native protocol ("" when it does
	// not, or not yet).
	NativeAddr string
	DataCenter string
	Rack       string
	// State is the node's state in the ring.
	State NodeState
	// Unrepaired is set while the node must not serve reads (metaUnrepaired).
	Unrepaired bool
}

// encode returns the metadata's wire form: a version byte, uvarint num_tokens, then id, RPC address,
// schema digest, native address, data center and rack, each as a uvarint length and bytes, then the
// state byte, then (version 4) the flags byte.
func (m nodeMeta) encode() ([]byte, error) {
	if m.State > maxNodeState {
		return nil, fmt.Errorf("cluster: node state %d is not a state", m.State)
	}
	fields := [...]string{string(m.ID), m.RPCAddr, m.SchemaDigest, m.NativeAddr, m.DataCenter, m.Rack}
	n := 3 + binary.MaxVarintLen64
	for _, s := range fields {
		n += binary.MaxVarintLen64 + len(s)
	}
	var flags byte
	if m.Unrepaired {
		flags |= metaUnrepaired
	}
	version := byte(metaVersion3)
	if flags != 0 {
		version = metaVersion
	}
	b := make([]byte, 0, n)
	b = append(b, version)
	b = binary.AppendUvarint(b, uint64(m.NumTokens))
	for _, s := range fields {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, byte(m.State))
	if version == metaVersion {
		b = append(b, flags)
	}
	if len(b) > MaxMetaSize {
		return nil, fmt.Errorf("%w: %d bytes, memberlist's limit is %d (node id %d bytes, rpc address %d bytes, schema digest %d bytes, native address %d bytes, data center %d bytes, rack %d bytes)",
			ErrMetaTooLarge, len(b), MaxMetaSize, len(m.ID), len(m.RPCAddr), len(m.SchemaDigest), len(m.NativeAddr), len(m.DataCenter), len(m.Rack))
	}
	return b, nil
}

func decodeMeta(b []byte) (nodeMeta, error) {
	var m nodeMeta
	if len(b) == 0 {
		return m, errors.New("no metadata")
	}
	var fields []string
	switch b[0] {
	case metaVersion1:
		fields = make([]string, 3)
	case metaVersion2, metaVersion3, metaVersion:
		fields = make([]string, 6)
	default:
		return m, fmt.Errorf("metadata version %d, want %d to %d", b[0], metaVersion1, metaVersion)
	}
	version := b[0]
	b = b[1:]
	nt, n := binary.Uvarint(b)
	if n <= 0 || nt > MaxNumTokens {
		return m, errors.New("bad num_tokens in metadata")
	}
	m.NumTokens = int(nt)
	b = b[n:]
	for i := range fields {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return m, fmt.Errorf("truncated metadata field %d", i)
		}
		fields[i] = string(b[n : n+int(l)])
		b = b[n+int(l):]
	}
	if version >= metaVersion3 {
		if len(b) == 0 {
			return m, errors.New("truncated metadata: no node state")
		}
		if NodeState(b[0]) > maxNodeState {
			return m, fmt.Errorf("metadata names node state %d, the largest is %d", b[0], maxNodeState)
		}
		m.State = NodeState(b[0])
		b = b[1:]
	}
	if version >= metaVersion {
		if len(b) == 0 {
			return m, errors.New("truncated metadata: no flags")
		}
		if b[0]&^metaFlags != 0 {
			return m, fmt.Errorf("metadata sets flags %#x this release does not know", b[0]&^metaFlags)
		}
		m.Unrepaired = b[0]&metaUnrepaired != 0
		b = b[1:]
	}
	if len(b) != 0 {
		return m, fmt.Errorf("%d trailing bytes in metadata", len(b))
	}
	m.ID, m.RPCAddr, m.SchemaDigest = NodeID(fields[0]), fields[1], fields[2]
	if len(fields) == 6 {
		m.NativeAddr, m.DataCenter, m.Rack = fields[3], fields[4], fields[5]
	}
	if err := validateNodeID(m.ID); err != nil {
		return m, err
	}
	return m, nil
}
