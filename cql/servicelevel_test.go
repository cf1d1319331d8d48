package cql

import (
	"reflect"
	"testing"
)

func TestParseServiceLevelStatements(t *testing.T) {
	tests := []struct {
		src, want string // want "" means src is canonical
	}{
		{"CREATE SERVICE LEVEL sl WITH max_reads_per_second = 100 AND max_writes_per_second = 50", ""},
		{"create service_level if not exists 'Gold' with mode = 'shadow' and timeout = 500MS", "CREATE SERVICE LEVEL IF NOT EXISTS \"Gold\" WITH mode = 'shadow' AND timeout = 500ms"},
		{"CREATE SERVICE LEVEL sl", ""},
		{"ALTER SERVICE LEVEL sl WITH max_reads_per_second = NULL AND workload_type = 'interactive'", ""},
		{"DROP SERVICE LEVEL IF EXISTS sl", ""},
		{"ATTACH SERVICE LEVEL sl TO alice", ""},
		{"ATTACH SERVICE_LEVEL sl TO 'Bob'", "ATTACH SERVICE LEVEL sl TO \"Bob\""},
		{"ATTACH SERVICE LEVEL sl TO ADDRESS '10.0.0.0/24'", ""},
		{"DETACH SERVICE LEVEL FROM alice", ""},
		{"detach service level from address '::1'", "DETACH SERVICE LEVEL FROM ADDRESS '::1'"},
		{"LIST SERVICE LEVEL sl", ""},
		{"LIST ALL SERVICE LEVELS", ""},
		{"list all service_levels", "LIST ALL SERVICE LEVELS"},
		{"LIST ATTACHED SERVICE LEVEL OF alice", ""},
		{"LIST ATTACHED SERVICE LEVEL OF ADDRESS '10.0.0.7'", ""},
		{"LIST ALL ATTACHED SERVICE LEVELS", ""},
		{"LIST EFFECTIVE SERVICE LEVEL OF alice", ""},
		{"GRANT org TO alice", ""},
		{"REVOKE 'Org' FROM alice", "REVOKE \"Org\" FROM alice"},
		{"GRANT ALTER ON ALL SERVICE LEVELS TO dba", ""},
		{"LIST ALL PERMISSIONS ON ALL SERVICE_LEVELS OF dba", "LIST ALL PERMISSIONS ON ALL SERVICE LEVELS OF dba"},
		{"LIST ALL PERMISSIONS OF dba", ""},
	}
	for _, tt := range tests {
		st, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tt.src, err)
			continue
		}
		want := tt.want
		if want == "" {
			want = tt.src
		}
		if got := Format(st); got != want {
			t.Errorf("Format(ParseStatement(%q)) = %q, want %q", tt.src, got, want)
		}
		again, err := ParseStatement(Format(st))
		if err != nil || !reflect.DeepEqual(Format(again), Format(st)) {
			t.Errorf("%q does not survive a round trip: %v", tt.src, err)
		}
	}
	st, _ := ParseStatement("ATTACH SERVICE LEVEL sl TO ADDRESS '10.0.0.7'")
	a := st.(*AttachServiceLevelStmt)
	if !a.Target.IsAddress || a.Target.Address != "10.0.0.7" || a.Target.Pos().Col != 36 {
		t.Errorf("ATTACH ... ADDRESS target = %+v at %v, want address 10.0.0.7 at column 36", a.Target, a.Target.Pos())
	}
}

func TestParseServiceLevelInvalid(t *testing.T) {
	tests := []struct{ src, want string }{
		{"CREATE SERVICE sl", "1:16: expected 'LEVEL', found identifier sl"},
		{"CREATE SERVICE LEVEL", "1:21: expected service level name, found end of input"},
		{"CREATE SERVICE LEVEL ''", "1:22: a service level name must not be empty"},
		{"CREATE SERVICE LEVEL sl WITH", "1:29: expected service level option, found end of input"},
		{"CREATE SERVICE LEVEL sl WITH a 1", "1:32: expected '=', found integer 1"},
		{"ALTER SERVICE LEVEL sl", "1:23: expected 'WITH', found end of input"},
		{"DROP SERVICE LEVEL IF sl", "1:23: expected 'EXISTS', found identifier sl"},
		{"ATTACH sl TO alice", "1:8: expected 'SERVICE LEVEL', found identifier sl"},
		{"ATTACH SERVICE LEVEL sl alice", "1:25: expected 'TO', found identifier alice"},
		{"ATTACH SERVICE LEVEL sl TO ADDRESS 10", "1:36: expected a client address or CIDR block as a string, such as '10.0.0.7' or '10.0.0.0/24', found integer 10"},
		{"DETACH SERVICE LEVEL sl FROM alice", "1:22: expected 'FROM', found identifier sl"},
		{"LIST ATTACHED SERVICE LEVEL alice", "1:29: expected 'OF', found identifier alice"},
		{"LIST EFFECTIVE SERVICE LEVEL OF ADDRESS '1.2.3.4'", "1:41: expected ';' or end of input, found string '1.2.3.4'"},
		{"LIST ALL ATTACHED SERVICE", "1:26: expected 'LEVELS', found end of input"},
		{"GRANT org alice", "1:11: expected 'TO', found identifier alice"},
		{"GRANT READ ON ks.t TO alice", "1:7: expected permission (SELECT, MODIFY, ALTER, CREATE, DROP, AUTHORIZE or ALL PERMISSIONS), found identifier READ"},
		{"REVOKE org TO alice", "1:12: expected 'FROM', found identifier TO"},
	}
	for _, tt := range tests {
		_, err := ParseStatement(tt.src)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseStatement(%q) error = %v, want %q", tt.src, err, tt.want)
		}
	}
}
