package cql

import (
	"testing"
)

// TestParseAuthStatements checks that the role and permission statements parse, format to their
// canonical text, and that the canonical text parses back to the same tree.
func TestParseAuthStatements(t *testing.T) {
	tests := []struct{ src, want string }{
		{"CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true AND SUPERUSER = false", "CREATE ROLE alice WITH password = 'pw' AND login = true AND superuser = false"},
		{"create role if not exists 'Bob' with password = 'it''s'", `CREATE ROLE IF NOT EXISTS "Bob" WITH password = 'it''s'`},
		{"CREATE ROLE r", ""},
		{"ALTER ROLE alice WITH PASSWORD = 'new'", "ALTER ROLE alice WITH password = 'new'"},
		{"DROP ROLE alice", ""},
		{"DROP ROLE IF EXISTS \"Alice\"", `DROP ROLE IF EXISTS "Alice"`},
		{"GRANT SELECT ON KEYSPACE ks TO alice", ""},
		{"grant modify on ks.t to alice", "GRANT MODIFY ON TABLE ks.t TO alice"},
		{"GRANT ALL ON ALL KEYSPACES TO alice", "GRANT ALL PERMISSIONS ON ALL KEYSPACES TO alice"},
		{"GRANT ALL PERMISSIONS ON TABLE t TO alice", ""},
		{"REVOKE ALTER ON TABLE ks.t FROM alice", ""},
		{"REVOKE authorize ON KEYSPACE ks FROM 'alice'", "REVOKE AUTHORIZE ON KEYSPACE ks FROM alice"},
		{"GRANT CREATE ON ALL KEYSPACES TO r", ""},
		{"GRANT DROP ON KEYSPACE ks TO r", ""},
		{"LIST ROLES", ""},
		{"LIST ROLES OF alice", ""},
		{"LIST PERMISSIONS", "LIST ALL PERMISSIONS"},
		{"LIST ALL PERMISSIONS OF alice", ""},
		{"LIST ALL", "LIST ALL PERMISSIONS"},
		{"LIST SELECT ON KEYSPACE ks OF alice", "LIST SELECT PERMISSION ON KEYSPACE ks OF alice"},
		{"LIST MODIFY PERMISSION ON ALL KEYSPACES", ""},
	}
	for _, tt := range tests {
		want := tt.want
		if want == "" {
			want = tt.src
		}
		s, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tt.src, err)
			continue
		}
		if got := Format(s); got != want {
			t.Errorf("Format(ParseStatement(%q)) = %q, want %q", tt.src, got, want)
			continue
		}
		again, err := ParseStatement(want)
		if err != nil {
			t.Errorf("ParseStatement(%q) (canonical): %v", want, err)
			continue
		}
		if !equalIgnoringPos(s, again) {
			t.Errorf("the canonical text %q parses to a different tree:\n%s\nwant:\n%s", want, dump(again), dump(s))
		}
	}
}

// TestParseAuthStatementsInvalid checks the errors of malformed role and permission statements,
// and that the words of those statements stay usable as names elsewhere.
func TestParseAuthStatementsInvalid(t *testing.T) {
	tests := []struct{ src, want string }{
		{"CREATE USER bob", "1:8: CREATE USER is not supported: use CREATE ROLE"},
		{"CREATE ROLE", "1:12: expected role name, found end of input"},
		{"CREATE ROLE ''", "1:13: a role name must not be empty"},
		{"ALTER ROLE alice", "1:17: expected 'WITH', found end of input"},
		{"GRANT SELECT ks TO alice", "1:14: expected 'ON', found identifier ks"},
		{"GRANT EXECUTE ON ALL KEYSPACES TO alice", "1:7: permission EXECUTE is not supported (valid: SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE, ALL PERMISSIONS)"},
		{"GRANT READ ON ks.t TO alice", "1:7: expected permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS), found identifier READ"},
		{"GRANT SELECT ON ALL ROLES TO alice", "1:21: resource ALL ROLES is not supported: permissions are granted on ALL KEYSPACES, KEYSPACE ks or TABLE ks.t"},
		{"GRANT SELECT ON ROLE bob TO alice", "1:17: resource ROLE is not supported: permissions are granted on ALL KEYSPACES, KEYSPACE ks or TABLE ks.t"},
		{"GRANT SELECT ON KEYSPACE ks FROM alice", "1:29: expected 'TO', found 'FROM'"},
		{"REVOKE SELECT ON KEYSPACE ks TO alice", "1:30: expected 'FROM', found identifier TO"},
		{"LIST", "1:5: expected permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS), found end of input"},
		{"LIST ROLES OF", "1:14: expected role name, found end of input"},
		{"GRANT", "1:6: expected permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS), found end of input"},
	}
	for _, tt := range tests {
		_, err := ParseStatement(tt.src)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseStatement(%q) error = %v, want %q", tt.src, err, tt.want)
		}
	}
	for _, src := range []string{
		"CREATE TABLE t (role text PRIMARY KEY, password text, login boolean, list int, grant int, permissions text)",
		"SELECT role, password, list FROM t WHERE role = 'x'",
		"INSERT INTO roles (role) VALUES ('x')",
	} {
		if _, err := ParseStatement(src); err != nil {
			t.Errorf("ParseStatement(%q): %v (the words of the role statements must stay usable as names)", src, err)
		}
	}
}
