package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/schema"
)

// TestAlterKeyspaceAgreed: ALTER KEYSPACE goes through the keyspace's consensus like the other
// DDL: concurrent ALTERs all apply, one after the other, and every node ends with the same
// replication factor and the keyspace's tables, in the same incarnation. An ALTER racing a DROP
// either lands before it or fails as unknown; IF EXISTS then changes nothing.
func TestAlterKeyspaceAgreed(t *testing.T) {
	ids := []string{"n1", "n2", "n3"}
	h := newHarness(t, ids...)
	h.mu.Lock()
	h.formats = map[string]int{"n1": 2, "n2": 2, "n3": 2}
	h.mu.Unlock()
	h.mustDDL("n1", ksRF3)
	h.mustDDL("n2", "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	created, _ := h.node("n1").Schema().Keyspace("ks")

	stmts := map[string]string{}
	for i, id := range ids {
		stmts[id] = fmt.Sprintf("ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", i+1)
	}
	for id, err := range h.raceDDL(stmts) {
		if err != nil {
			t.Errorf("%s's ALTER KEYSPACE racing the others': %v, want success", id, err)
		}
	}
	h.sync()
	want, _ := h.node("n1").Schema().Keyspace("ks")
	for _, id := range ids {
		k, ok := h.node(id).Schema().Keyspace("ks")
		if !ok || k.ReplicationFactor != want.ReplicationFactor || k.Altered != want.Altered {
			t.Errorf("node %s holds keyspace %+v, want %+v", id, k, want)
		}
		if k.Version != created.Version {
			t.Errorf("node %s: ALTER KEYSPACE changed the keyspace's incarnation from %v to %v", id, created.Version, k.Version)
		}
		if _, ok := h.node(id).Schema().Table("ks", "t"); !ok {
			t.Errorf("node %s lost table ks.t to ALTER KEYSPACE", id)
		}
	}

	errs := h.raceDDL(map[string]string{
		"n1": "DROP KEYSPACE ks",
		"n2": "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
	})
	if errs["n1"] != nil {
		t.Fatalf("DROP KEYSPACE racing an ALTER: %v", errs["n1"])
	}
	if err := errs["n2"]; err != nil && !errors.Is(err, schema.ErrUnknownKeyspace) {
		t.Errorf("ALTER KEYSPACE racing a DROP: %v, want success or unknown keyspace", err)
	}
	h.sync()
	for _, id := range ids {
		if _, ok := h.node(id).Schema().Keyspace("ks"); ok {
			t.Errorf("node %s still has ks after DROP KEYSPACE", id)
		}
	}
	if changed, _, err := h.ddl("n3", "ALTER KEYSPACE IF EXISTS ks WITH durable_writes = true"); err != nil || changed {
		t.Errorf("ALTER KEYSPACE IF EXISTS on a dropped keyspace: changed %v, %v; want nothing", changed, err)
	}
	_, _, err := h.ddl("n3", "ALTER KEYSPACE ks WITH durable_writes = true")
	var ie *coordinator.InvalidError
	if !errors.As(err, &ie) || !errors.Is(err, schema.ErrUnknownKeyspace) {
		t.Errorf("ALTER KEYSPACE of a dropped keyspace: %T %v, want an invalid-statement unknown keyspace", err, err)
	}
	if _, _, err := h.ddl("n3", "ALTER KEYSPACE system WITH durable_writes = true"); !errors.As(err, &ie) || !strings.Contains(err.Error(), "not user-modifiable") {
		t.Errorf("ALTER KEYSPACE system: %v, want refused as not user-modifiable", err)
	}
}

// TestAlterKeyspaceNeedsFormat: a node of an older data format cannot decode an altered keyspace,
// so ALTER KEYSPACE is refused while one is a member, and passes once none is.
func TestAlterKeyspaceNeedsFormat(t *testing.T) {
	h := newHarness(t, "n1", "n2", "n3")
	h.mustDDL("n1", ksRF3)
	h.mu.Lock()
	h.formats = map[string]int{"n1": 2, "n2": 1, "n3": 2}
	h.mu.Unlock()
	const alter = "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
	before := h.node("n1").Digest()
	_, _, err := h.ddl("n1", alter)
	var ie *coordinator.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "ALTER KEYSPACE") || !strings.Contains(err.Error(), "n2") {
		t.Errorf("ALTER KEYSPACE with n2 on format 1: %v, want an invalid-statement error naming ALTER KEYSPACE and n2", err)
	}
	if h.node("n1").Digest() != before {
		t.Errorf("a refused ALTER KEYSPACE changed n1's schema")
	}
	h.mu.Lock()
	h.formats = map[string]int{"n1": 2, "n2": 2, "n3": 2}
	h.mu.Unlock()
	h.mustDDL("n1", alter)
}
