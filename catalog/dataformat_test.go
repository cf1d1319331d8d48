package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

// TestDDLNeedsFormat: while a member gossips a data format before 2 (or none: a release before
// data format versions), DDL that gives a table what such a member cannot decode is refused with
// an invalid-statement error naming the feature and the member, and changes nothing; DDL those
// members read still passes. Once every member reports format 2, the same statements pass.
func TestDDLNeedsFormat(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mu.Lock()
	h.formats = map[string]int{"n1": 2, "n2": 1} // n3 reports none
	h.mu.Unlock()
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n1", "CREATE TABLE ks.t (k int PRIMARY KEY, v int, w int)")
	h.mustDDL("n1", "ALTER TABLE ks.t ADD x int")
	h.mustDDL("n2", "CREATE TABLE ks.u (k int PRIMARY KEY) WITH gc_grace_seconds = 3600")

	refused := []struct{ stmt, feature string }{
		{"CREATE TABLE ks.ttl (k int PRIMARY KEY) WITH default_time_to_live = 60", "default_time_to_live"},
		{"ALTER TABLE ks.t WITH default_time_to_live = 60", "default_time_to_live"},
		{"ALTER TABLE ks.t WITH comment = 'hello'", "table options comment"},
		{"ALTER TABLE ks.t WITH speculative_retry = 'MIN(99p,50ms)'", "speculative_retry MIN or MAX"},
		{"ALTER TABLE ks.t DROP w", "dropped columns"},
		{"TRUNCATE ks.t", "TRUNCATE"},
	}
	for _, r := range refused {
		before := h.node("n1").Digest()
		_, _, err := h.ddl("n1", r.stmt)
		var ie *coordinator.InvalidError
		if err == nil || !strings.Contains(err.Error(), r.feature) || !strings.Contains(err.Error(), "n2, n3") ||
			!strings.Contains(err.Error(), "data format 2") {
			t.Errorf("%s with n2 on format 1 and n3 reporting none: %v, want an error naming %s, data format 2 and n2, n3", r.stmt, err, r.feature)
		} else if !errors.As(err, &ie) {
			t.Errorf("%s: %T %v, want a *coordinator.InvalidError", r.stmt, err, err)
		}
		if after := h.node("n1").Digest(); after != before {
			t.Errorf("%s was refused but changed n1's schema", r.stmt)
		}
	}

	h.mu.Lock()
	h.formats = map[string]int{"n1": 2, "n2": 2, "n3": 2}
	h.mu.Unlock()
	for _, r := range refused {
		h.mustDDL("n1", r.stmt)
	}
}

// TestLevelsNeedFormat: while a member gossips a data format before schema.FormatLevels, service
// levels, role grants and keyspace rate limits are refused naming the member; once every member
// reports it, they are agreed, and every node's schema holds them when the statement returns.
func TestLevelsNeedFormat(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mu.Lock()
	h.formats = map[string]int{"n1": 3, "n2": 3, "n3": 2}
	h.mu.Unlock()
	h.mustDDL("n1", ksRF3)
	for _, stmt := range []string{
		"CREATE SERVICE LEVEL gold WITH max_reads_per_second = 10",
		"GRANT a TO b",
		"ALTER KEYSPACE ks WITH rate_limit = {'max_writes_per_second': 5}",
	} {
		_, _, err := h.ddl("n1", stmt)
		var ie *coordinator.InvalidError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "nodes n3 still run") || !strings.Contains(err.Error(), "data format 3") {
			t.Errorf("%s with n3 on format 2: %v, want an invalid-statement error naming n3 and data format 3", stmt, err)
		}
	}
	h.mu.Lock()
	h.formats = map[string]int{"n1": 3, "n2": 3, "n3": 3}
	h.mu.Unlock()
	h.mustDDL("n1", "CREATE SERVICE LEVEL gold WITH max_reads_per_second = 10")
	h.mustDDL("n2", "ATTACH SERVICE LEVEL gold TO alice")
	h.mustDDL("n3", "ALTER KEYSPACE ks WITH rate_limit = {'max_writes_per_second': 5}")
	for _, id := range []string{"n1", "n2", "n3"} {
		s := h.node(id).Schema()
		l, ok := s.RoleAttachment("alice")
		k, _ := s.Keyspace("ks")
		if !ok || l.Name != "gold" || l.Limit.MaxReadsPerSecond != 10 || k.RateLimit.MaxWritesPerSecond != 5 {
			t.Errorf("%s: alice's level %v %v, keyspace limit %+v; want gold at 10 reads/s and 5 writes/s", id, l, ok, k.RateLimit)
		}
	}
	// Every node holds each change once its statement returned (announced and agreed); a change
	// through another node is serialised by the one register: both land.
	h.mustDDL("n3", "GRANT org TO alice")
	h.mustDDL("n1", "ALTER SERVICE LEVEL gold WITH mode = 'shadow'")
	for _, id := range []string{"n1", "n2", "n3"} {
		s := h.node(id).Schema()
		if g := s.GrantedRoles("alice"); len(g) != 1 || g[0] != "org" {
			t.Errorf("%s: roles granted to alice %v, want [org]", id, g)
		}
		if l, _ := s.Level("gold"); l.Limit.Mode.String() != "shadow" {
			t.Errorf("%s: gold's mode %v, want shadow", id, l.Limit.Mode)
		}
	}
}

// TestTypesNeedFormat: while a member gossips a data format before schema.FormatTypes, a table
// with a column of a type added with it (CREATE TABLE or ALTER TABLE ADD) is refused naming the
// column, the format and the member, and changes nothing; once every member reports the format,
// the same statements pass.
func TestTypesNeedFormat(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mu.Lock()
	h.formats = map[string]int{"n1": schema.FormatTypes, "n2": schema.FormatTypes, "n3": schema.FormatTypes - 1}
	h.mu.Unlock()
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n1", "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	refused := []struct{ stmt, feature string }{
		{"CREATE TABLE ks.d (k int PRIMARY KEY, d duration)", "column d of type duration"},
		{"ALTER TABLE ks.t ADD e duration", "column e of type duration"},
	}
	for _, r := range refused {
		before := h.node("n1").Digest()
		_, _, err := h.ddl("n1", r.stmt)
		var ie *coordinator.InvalidError
		if err == nil || !strings.Contains(err.Error(), r.feature) || !strings.Contains(err.Error(), "nodes n3 still run") ||
			!strings.Contains(err.Error(), fmt.Sprintf("data format %d", schema.FormatTypes)) {
			t.Errorf("%s with n3 on an older format: %v, want an error naming %s, data format %d and n3", r.stmt, err, r.feature, schema.FormatTypes)
		} else if !errors.As(err, &ie) {
			t.Errorf("%s: %T %v, want a *coordinator.InvalidError", r.stmt, err, err)
		}
		if after := h.node("n1").Digest(); after != before {
			t.Errorf("%s was refused but changed n1's schema", r.stmt)
		}
	}
	h.mu.Lock()
	h.formats = map[string]int{"n1": schema.FormatTypes, "n2": schema.FormatTypes, "n3": schema.FormatTypes}
	h.mu.Unlock()
	for _, r := range refused {
		h.mustDDL("n1", r.stmt)
	}
}

// TestUserTypesNeedFormat: while a member gossips a data format before schema.FormatUDT, CREATE
// TYPE is refused naming the format and the member; once every member reports it, user types
// are agreed like the other changes of a keyspace: every node has them, ALTER TYPE rewrites the
// tables that use the type, and DROP TYPE is refused while a table uses it.
func TestUserTypesNeedFormat(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mu.Lock()
	h.formats = map[string]int{"n1": schema.FormatUDT, "n2": schema.FormatUDT, "n3": schema.FormatUDT - 1}
	h.mu.Unlock()
	h.mustDDL("n1", ksRF3)
	const create = "CREATE TYPE ks.address (street text, zip int)"
	before := h.node("n1").Digest()
	_, _, err := h.ddl("n1", create)
	var ie *coordinator.InvalidError
	if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "user-defined types") || !strings.Contains(err.Error(), "nodes n3 still run") ||
		!strings.Contains(err.Error(), fmt.Sprintf("data format %d", schema.FormatUDT)) {
		t.Errorf("CREATE TYPE with n3 on an older format: %v, want an invalid-statement error naming data format %d and n3", err, schema.FormatUDT)
	}
	if after := h.node("n1").Digest(); after != before {
		t.Error("the refused CREATE TYPE changed n1's schema")
	}
	h.mu.Lock()
	h.formats = map[string]int{"n1": schema.FormatUDT, "n2": schema.FormatUDT, "n3": schema.FormatUDT}
	h.mu.Unlock()
	h.mustDDL("n1", create)
	h.mustDDL("n2", "CREATE TABLE ks.u (k int PRIMARY KEY, a frozen<address>)")
	h.mustDDL("n3", "ALTER TYPE ks.address ADD city text")
	for _, n := range []string{"n1", "n2", "n3"} {
		s := h.node(n).Schema()
		k, ok := s.Keyspace("ks")
		tb, tok := s.Table("ks", "u")
		if !ok || !tok || len(k.UserTypes()) != 1 || len(k.UserTypes()[0].FieldNames) != 3 ||
			tb.Columns[1].Type != "frozen<udt<ks.address, street text, zip int, city text>>" {
			t.Errorf("%s after agreement: keyspace %v, table %v", n, ok, tok)
		}
	}
	if _, _, err := h.ddl("n1", "DROP TYPE ks.address"); err == nil || !strings.Contains(err.Error(), "still used by table ks.u") {
		t.Errorf("DROP TYPE of a type in use: %v, want a refusal naming the table", err)
	}
}

// TestUserTypeKeysNeedFormat: while a member gossips a data format before schema.FormatUDTKeys
// (and after schema.FormatUDT), a table with a user type in its primary key is refused naming
// the column, data format 6 and the member, while one with a user type as a regular column
// passes; a member below both formats is named with the newest format the table needs. Once
// every member reports the format, the table is agreed.
func TestUserTypeKeysNeedFormat(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	setFormats := func(n2, n3 int) {
		h.mu.Lock()
		h.formats = map[string]int{"n1": schema.FormatUDTKeys, "n2": n2, "n3": n3}
		h.mu.Unlock()
	}
	setFormats(schema.FormatUDTKeys, schema.FormatUDTKeys-1)
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n1", "CREATE TYPE ks.point (x int, y int)")
	h.mustDDL("n1", "CREATE TABLE ks.plain (k int PRIMARY KEY, p frozen<point>)")
	const create = "CREATE TABLE ks.keyed (k int, p frozen<point>, v int, PRIMARY KEY (k, p))"
	for _, c := range []struct {
		n2, n3 int
		want   string
	}{
		{schema.FormatUDTKeys, schema.FormatUDTKeys - 1, "nodes n3 still run"},
		{schema.FormatUDT - 1, schema.FormatUDTKeys - 1, "nodes n2, n3 still run"},
	} {
		setFormats(c.n2, c.n3)
		before := h.node("n1").Digest()
		_, _, err := h.ddl("n1", create)
		var ie *coordinator.InvalidError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "primary key column p of type frozen<point>") ||
			!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("data format %d", schema.FormatUDTKeys)) {
			t.Errorf("%s with n2, n3 on formats %d, %d: %v, want an invalid-statement error naming the column, data format %d and %q",
				create, c.n2, c.n3, err, schema.FormatUDTKeys, c.want)
		}
		if after := h.node("n1").Digest(); after != before {
			t.Error("the refused CREATE TABLE changed n1's schema")
		}
	}
	setFormats(schema.FormatUDTKeys, schema.FormatUDTKeys)
	h.mustDDL("n2", create)
}
