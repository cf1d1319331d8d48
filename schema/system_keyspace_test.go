package schema

import (
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// TestSystemKeyspace checks that a code-defined system keyspace binds reads and writes like any
// keyspace, keeps its fixed ids, and refuses names and definitions that are not valid.
func TestSystemKeyspace(t *testing.T) {
	s, err := SystemKeyspace("system_auth", 3, []SystemTable{
		{CQL: "CREATE TABLE roles (role text PRIMARY KEY, salted_hash text)", ID: 0xfff1},
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, ok := s.TableByID(0xfff1)
	if !ok || tbl.Keyspace != "system_auth" || tbl.Name != "roles" {
		t.Fatalf("TableByID(0xfff1) = %v, %v, want system_auth.roles", tbl, ok)
	}
	if ks, ok := s.Keyspace("system_auth"); !ok || ks.ReplicationFactor != 3 {
		t.Fatalf("Keyspace(system_auth) = %v, %v, want RF 3", ks, ok)
	}
	ins, _ := cql.ParseStatement("INSERT INTO system_auth.roles (role, salted_hash) VALUES (?, ?)")
	w, err := s.BindWrite(ins, "", []BindValue{{Bytes: []byte("alice")}, {Bytes: []byte("h")}})
	if err != nil || w.Table != tbl {
		t.Fatalf("BindWrite: %v (table %v)", err, w)
	}
	sel, _ := cql.ParseStatement("SELECT salted_hash FROM system_auth.roles WHERE role = ?")
	if _, err := s.BindRead(sel.(*cql.SelectStmt), "", []BindValue{{Bytes: []byte("alice")}}); err != nil {
		t.Fatalf("BindRead: %v", err)
	}
	for _, tt := range []struct {
		name   string
		tables []SystemTable
		want   string
	}{
		{"auth", nil, "is not a system keyspace name"},
		{"system_auth", []SystemTable{{CQL: "SELECT * FROM t", ID: 1}}, "is not a CREATE TABLE"},
		{"system_auth", []SystemTable{{CQL: "CREATE TABLE t (k int PRIMARY KEY)", ID: 1}, {CQL: "CREATE TABLE u (k int PRIMARY KEY)", ID: 1}}, "table id 1 is used twice"},
		{"system_auth", []SystemTable{{CQL: "CREATE TABLE t (k int PRIMARY KEY)", ID: 0}}, "table id 0 is not valid"},
	} {
		if _, err := SystemKeyspace(tt.name, 1, tt.tables); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SystemKeyspace(%s, %v) error = %v, want one saying %q", tt.name, tt.tables, err, tt.want)
		}
	}
}
