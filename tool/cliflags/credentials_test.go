package cliflags

import (
	"strings"
	"testing"
)

func TestCredentials(t *testing.T) {
	for _, tt := range []struct {
		user, pass string
		set        bool
		env        string
		wantUser   string
		wantPass   string
		wantErr    string
	}{
		{"", "", false, "", "", "", ""},
		{"", "", false, "ignored", "", "", ""},
		{"alice", "", false, "envpw", "alice", "envpw", ""},
		{"alice", "flagpw", true, "envpw", "alice", "flagpw", ""},
		{"alice", "", false, "", "", "", "--username alice needs a password: set KVNODE_PASSWORD"},
		{"alice", "", true, "envpw", "", "", "--username alice needs a password"},
		{"", "pw", true, "", "", "", "--password needs --username"},
	} {
		u, p, err := Credentials(tt.user, tt.pass, tt.set, tt.env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Credentials(%q, %q, %v, %q) error = %v, want %q", tt.user, tt.pass, tt.set, tt.env, err, tt.wantErr)
			}
			continue
		}
		if err != nil || u != tt.wantUser || p != tt.wantPass {
			t.Errorf("Credentials(%q, %q, %v, %q) = %q, %q, %v; want %q, %q", tt.user, tt.pass, tt.set, tt.env, u, p, err, tt.wantUser, tt.wantPass)
		}
	}
}
