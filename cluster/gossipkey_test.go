package cluster

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKeys(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func key(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func TestLoadGossipKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gossip.keys")
	writeKeys(t, path, "# the primary key first", b64(key(1, 32)), "", "  "+b64(key(2, 16))+"  ", b64(key(3, 24)))
	keys, err := LoadGossipKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || !bytes.Equal(keys[0], key(1, 32)) || !bytes.Equal(keys[1], key(2, 16)) || !bytes.Equal(keys[2], key(3, 24)) {
		t.Errorf("LoadGossipKeys = %x, want the three keys in file order", keys)
	}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"no key", []string{"# nothing", ""}, "holds no key"},
		{"not base64", []string{b64(key(1, 32)), "not*base64"}, "line 2: not a base64 key"},
		{"a short key", []string{b64(key(1, 8))}, "line 1: the key is 8 bytes, want 16, 24 or 32"},
		{"a duplicate", []string{b64(key(1, 32)), b64(key(2, 32)), b64(key(1, 32))}, "line 3: the key repeats line 1"},
	} {
		writeKeys(t, path, c.lines...)
		if _, err := LoadGossipKeys(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadGossipKeys with %s = %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
	if _, err := LoadGossipKeys(path + ".missing"); err == nil {
		t.Error("LoadGossipKeys of a missing file succeeded")
	}
}

// TestReLoadGossipKeysRotates walks the rotation docs/operations.md describes through the file.
func TestReLoadGossipKeysRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gossip.keys")
	oldK, newK := key(1, 32), key(2, 32)
	writeKeys(t, path, b64(oldK))
	kr, err := NewGossipKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var parts []string
		for _, k := range kr.GetKeys() {
			s := string('0' + k[0])
			if bytes.Equal(k, kr.GetPrimaryKey()) {
				s += "*"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " ")
	}
	for _, step := range []struct {
		lines       []string
		changed     bool
		want, error string
	}{
		{[]string{b64(oldK)}, false, "1*", ""},
		{[]string{b64(oldK), b64(newK)}, true, "1* 2", ""},             // 1. add the new key everywhere
		{[]string{b64(newK), b64(oldK)}, true, "2* 1", ""},             // 2. make it primary everywhere
		{[]string{b64(newK)}, true, "2*", ""},                          // 3. remove the old one
		{[]string{"garbage"}, false, "2*", "line 1: not a base64 key"}, // a bad file changes nothing
		{[]string{b64(key(3, 16))}, true, "3*", ""},                    // a straight replacement works too
	} {
		writeKeys(t, path, step.lines...)
		changed, err := ReloadGossipKeys(kr, path)
		if changed != step.changed || (err == nil) != (step.error == "") || err != nil && !strings.Contains(err.Error(), step.error) {
			t.Errorf("reload of %v = %v, %v; want changed %v, error %q", step.lines, changed, err, step.changed, step.error)
		}
		if got := state(); got != step.want {
			t.Errorf("after the reload of %v the keyring holds %s, want %s", step.lines, got, step.want)
		}
	}
}
