package auth

import (
	"context"
	"testing"
)

func TestResources(t *testing.T) {
	for _, r := range []Resource{AllKeyspaces, KeyspaceResource("ks"), TableResource("ks", "t")} {
		got, err := ParseResourceKey(r.Key())
		if err != nil || got != r {
			t.Errorf("ParseResourceKey(%q) = %v, %v; want %v", r.Key(), got, err, r)
		}
	}
	for _, key := range []string{"", "roles/x", "data/", "data//t", "data/ks/t/x"} {
		if _, err := ParseResourceKey(key); err == nil {
			t.Errorf("ParseResourceKey(%q) succeeded, want an error", key)
		}
	}
	tbl := TableResource("ks", "t")
	for _, tt := range []struct {
		r, o Resource
		want bool
	}{
		{tbl, tbl, true}, {tbl, KeyspaceResource("ks"), true}, {tbl, AllKeyspaces, true},
		{tbl, KeyspaceResource("other"), false}, {KeyspaceResource("ks"), tbl, false}, {AllKeyspaces, KeyspaceResource("ks"), false},
	} {
		if got := tt.r.Within(tt.o); got != tt.want {
			t.Errorf("%v.Within(%v) = %v, want %v", tt.r, tt.o, got, tt.want)
		}
	}
	if got := tbl.String(); got != "<table ks.t>" {
		t.Errorf("String() = %q, want <table ks.t>", got)
	}
	if tbl.Applicable()&Create != 0 || KeyspaceResource("ks").Applicable() != All {
		t.Error("CREATE must apply to keyspaces and ALL KEYSPACES only")
	}
}

func TestPermissions(t *testing.T) {
	if got := All.String(); got != "ALL PERMISSIONS" {
		t.Errorf("All.String() = %q", got)
	}
	if got := (Select | Alter).String(); got != "ALTER, SELECT" {
		t.Errorf("(Select|Alter).String() = %q, want ALTER, SELECT", got)
	}
	for _, name := range All.Names() {
		p, err := ParsePermission(name)
		if err != nil || p.String() != name {
			t.Errorf("ParsePermission(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := ParsePermission("EXECUTE"); err == nil {
		t.Error("ParsePermission(EXECUTE) succeeded, want an error")
	}
}

func TestRoleContext(t *testing.T) {
	if _, ok := RoleFrom(context.Background()); ok {
		t.Error("RoleFrom(Background) reports a role")
	}
	if r, ok := RoleFrom(WithRole(context.Background(), "alice")); !ok || r != "alice" {
		t.Errorf("RoleFrom(WithRole(alice)) = %q, %v", r, ok)
	}
}
