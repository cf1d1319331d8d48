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

// ErrMetaTooLarge reports node metadata (node id, RPC address, schema digest) over [MaxMetaSize] bytes.
var ErrMetaTooLarge = errors.New("cluster: node metadata too large")

const metaVersion = 1

// nodeMeta is what a node gossips about itself in memberlist's node metadata.
type nodeMeta struct {
	ID           NodeID
	RPCAddr      string
	SchemaDigest string
	NumTokens    int
}

// encode returns the metadata's wire form: a version byte, uvarint num_tokens, then id, RPC address and
// schema digest, each as a uvarint length and bytes.
func (m nodeMeta) encode() ([]byte, error) {
	b := make([]byte, 0, 1+binary.MaxVarintLen64*4+len(m.ID)+len(m.RPCAddr)+len(m.SchemaDigest))
	b = append(b, metaVersion)
	b = binary.AppendUvarint(b, uint64(m.NumTokens))
	for _, s := range []string{string(m.ID), m.RPCAddr, m.SchemaDigest} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if len(b) > MaxMetaSize {
		return nil, fmt.Errorf("%w: %d bytes, memberlist's limit is %d (node id %d bytes, rpc address %d bytes, schema digest %d bytes)",
			ErrMetaTooLarge, len(b), MaxMetaSize, len(m.ID), len(m.RPCAddr), len(m.SchemaDigest))
	}
	return b, nil
}

func decodeMeta(b []byte) (nodeMeta, error) {
	var m nodeMeta
	if len(b) == 0 {
		return m, errors.New("no metadata")
	}
	if b[0] != metaVersion {
		return m, fmt.Errorf("metadata version %d, want %d", b[0], metaVersion)
	}
	b = b[1:]
	nt, n := binary.Uvarint(b)
	if n <= 0 || nt > maxNumTokens {
		return m, errors.New("bad num_tokens in metadata")
	}
	m.NumTokens = int(nt)
	b = b[n:]
	var fields [3]string
	for i := range fields {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return m, fmt.Errorf("truncated metadata field %d", i)
		}
		fields[i] = string(b[n : n+int(l)])
		b = b[n+int(l):]
	}
	if len(b) != 0 {
		return m, fmt.Errorf("%d trailing bytes in metadata", len(b))
	}
	m.ID, m.RPCAddr, m.SchemaDigest = NodeID(fields[0]), fields[1], fields[2]
	if err := validateNodeID(m.ID); err != nil {
		return m, err
	}
	return m, nil
}
