package cluster

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvnode/kvnode/internal/atomicfile"
)

const (
	nodeIDFile = "node_id"
	peersFile  = "peers.json"
	// maxNodeIDLen keeps node ids well inside memberlist's 512-byte metadata and its name limits.
	maxNodeIDLen = 64
)

// NewNodeID returns a fresh random node id in UUID version 4 form.
func NewNodeID() (NodeID, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cluster: generate node id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return NodeID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])), nil
}

// validateNodeID reports why id cannot be a node id, or nil: it must be 1..64 bytes of ASCII letters,
// digits, '-', '_' or '.'.
func validateNodeID(id NodeID) error {
	if len(id) == 0 {
		return errors.New("node id is empty")
	}
	if len(id) > maxNodeIDLen {
		return fmt.Errorf("node id is %d bytes, the limit is %d", len(id), maxNodeIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("node id %q has byte %#x at offset %d; allowed are letters, digits, '-', '_' and '.'", id, c, i)
		}
	}
	return nil
}

// LoadOrCreateNodeID returns the node id persisted in dir, creating and persisting one when there is
// none. want, when not empty, is the id the operator configured: it is persisted on first start and
// must match the persisted id afterwards. Start takes the id so; a node that needs its id before its
// membership starts (to address calls to itself) calls it with Config.DataDir.
func LoadOrCreateNodeID(dir string, want NodeID) (NodeID, error) {
	path := filepath.Join(dir, nodeIDFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := NodeID(strings.TrimSuffix(string(data), "\n"))
		if verr := validateNodeID(id); verr != nil {
			return "", fmt.Errorf("cluster: node id file %s is corrupt: %v", path, verr)
		}
		if want != "" && want != id {
			return "", fmt.Errorf("cluster: configured node id %q differs from %q persisted in %s; a node keeps its id for life (use a new data directory for a new node)", want, id, path)
		}
		return id, nil
	case errors.Is(err, fs.ErrNotExist):
	default:
		return "", fmt.Errorf("cluster: read node id: %w", err)
	}

	id := want
	if id == "" {
		if id, err = NewNodeID(); err != nil {
			return "", err
		}
	} else if verr := validateNodeID(id); verr != nil {
		return "", fmt.Errorf("cluster: configured %v", verr)
	}
	if err := atomicfile.Write(path, []byte(string(id)+"\n")); err != nil {
		return "", fmt.Errorf("cluster: persist node id: %w", err)
	}
	return id, nil
}
