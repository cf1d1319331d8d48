package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
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
