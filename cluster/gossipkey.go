package cluster

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/memberlist"
)

// LoadGossipKeys reads a gossip key file (node.SecurityOptions.GossipKeyFile): one base64 key per line, of
// 16, 24 or 32 bytes (AES-128, -192 or -256), the first the primary key that encrypts and the
// others accepted for decryption. Blank lines and lines starting with # are skipped. Every
// error names the file and the line.
func LoadGossipKeys(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip key file: %w", err)
	}
	var keys [][]byte
	lines := map[string]int{} // key → its line, to name duplicates
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("cluster: gossip key file %s line %d: not a base64 key: %v", path, i+1, err)
		}
		if n := len(key); n != 16 && n != 24 && n != 32 {
			return nil, fmt.Errorf("cluster: gossip key file %s line %d: the key is %d bytes, want 16, 24 or 32 (AES-128, -192 or -256)", path, i+1, n)
		}
		if prev, dup := lines[string(key)]; dup {
			return nil, fmt.Errorf("cluster: gossip key file %s line %d: the key repeats line %d", path, i+1, prev)
		}
		lines[string(key)] = i + 1
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("cluster: gossip key file %s holds no key: want one base64 key per line, the first the primary one", path)
	}
	return keys, nil
}

// NewGossipKeyring reads the gossip key file into a keyring, the first key primary.
func NewGossipKeyring(path string) (*memberlist.Keyring, error) {
	keys, err := LoadGossipKeys(path)
	if err != nil {
		return nil, err
	}
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip key file %s: %w", path, err)
	}
	return kr, nil
}

// ReloadGossipKeys makes kr hold exactly the keys of the file, with its first key primary, and
// reports whether anything changed. New keys are installed before the primary changes, and
// keys are removed only after, so that gossip keeps decrypting throughout a rotation.
func ReloadGossipKeys(kr *memberlist.Keyring, path string) (changed bool, err error) {
	keys, err := LoadGossipKeys(path)
	if err != nil {
		return false, err
	}
	installed := kr.GetKeys()
	has := func(set [][]byte, k []byte) bool {
		for _, s := range set {
			if bytes.Equal(s, k) {
				return true
			}
		}
		return false
	}
	for _, k := range keys {
		if !has(installed, k) {
			if err := kr.AddKey(k); err != nil {
				return changed, fmt.Errorf("cluster: gossip key file %s: %w", path, err)
			}
			changed = true
		}
	}
	if !bytes.Equal(kr.GetPrimaryKey(), keys[0]) {
		if err := kr.UseKey(keys[0]); err != nil {
			return changed, fmt.Errorf("cluster: gossip key file %s: %w", path, err)
		}
		changed = true
	}
	var errs []error
	for _, k := range installed {
		if !has(keys, k) {
			if err := kr.RemoveKey(k); err != nil {
				errs = append(errs, err)
				continue
			}
			changed = true
		}
	}
	if len(errs) > 0 {
		return changed, fmt.Errorf("cluster: gossip key file %s: %w", path, errors.Join(errs...))
	}
	return changed, nil
}
