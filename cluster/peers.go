package cluster

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/kvnode/kvnode/internal/atomicfile"
)

// peerRecord is what a node knows and persists about a ring member, itself included.
type peerRecord struct {
	ID         NodeID `json:"id"`
	RPCAddr    string `json:"rpc_addr,omitempty"`
	GossipAddr string `json:"gossip_addr,omitempty"`
	NumTokens  int    `json:"num_tokens"`
	// NativeAddr, DataCenter and Rack are what drivers read from system.peers (empty when the
	// member runs a release that does not gossip them).
	NativeAddr string `json:"native_addr,omitempty"`
	DataCenter string `json:"dc,omitempty"`
	Rack       string `json:"rack,omitempty"`
	// State is the member's state in the ring (omitted, hence normal, in records persisted before
	// states existed).
	State NodeState `json:"state,omitempty"`
	// Updated is when (unix nanoseconds, by the clock of the node that saw it live) this information was
	// last confirmed; between nodes the newer record wins.
	Updated int64 `json:"updated"`
}

// Removal records an operator's RemoveNode: the id never re-enters the ring.
type Removal struct {
	ID NodeID `json:"id"`
	At int64  `json:"at"` // unix nanoseconds
}

// peerFileV1 is the persisted form of the peer table.
type peerFileV1 struct {
	Version int          `json:"version"`
	Peers   []peerRecord `json:"peers"`
	Removed []Removal    `json:"removed,omitempty"`
}

// gossipState is what a node sends in memberlist's push/pull exchange (anti-entropy): its peer table,
// removals, and schema snapshot.
type gossipState struct {
	Version int          `json:"version"`
	From    NodeID       `json:"from"`
	Peers   []peerRecord `json:"peers"`
	Removed []Removal    `json:"removed,omitempty"`
	Schema  []byte       `json:"schema,omitempty"`
	// Formats holds the data format version of the sender and of each member whose version it
	// knows (dataformat.go). Releases before data format versions send none and ignore it.
	Formats map[NodeID]int `json:"formats,omitempty"`
	// Availability is whether the sender can take writes (availability.go). Releases before it
	// send none and ignore it.
	Availability *Availability `json:"availability,omitempty"`
}

func loadPeers(dir string) (peerFileV1, error) {
	path := filepath.Join(dir, peersFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return peerFileV1{Version: 1}, nil
	}
	if err != nil {
		return peerFileV1{}, fmt.Errorf("cluster: read known peers: %w", err)
	}
	var pf peerFileV1
	if err := json.Unmarshal(data, &pf); err != nil {
		return peerFileV1{}, fmt.Errorf("cluster: known peers file %s is corrupt: %v", path, err)
	}
	if pf.Version != 1 {
		return peerFileV1{}, fmt.Errorf("cluster: known peers file %s has version %d, want 1", path, pf.Version)
	}
	for _, p := range pf.Peers {
		if err := validateNodeID(p.ID); err != nil {
			return peerFileV1{}, fmt.Errorf("cluster: known peers file %s is corrupt: %v", path, err)
		}
		if p.NumTokens < 1 || p.NumTokens > MaxNumTokens {
			return peerFileV1{}, fmt.Errorf("cluster: known peers file %s is corrupt: node %s has num_tokens %d", path, p.ID, p.NumTokens)
		}
	}
	return pf, nil
}

func savePeers(dir string, pf peerFileV1) error {
	slices.SortFunc(pf.Peers, func(a, b peerRecord) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(pf.Removed, func(a, b Removal) int { return cmp.Compare(a.ID, b.ID) })
	data, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, peersFile), append(data, '\n')); err != nil {
		return fmt.Errorf("cluster: persist known peers: %w", err)
	}
	return nil
}
