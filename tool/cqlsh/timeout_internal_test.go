package cqlsh

import (
	"testing"
	"time"
)

// TestSchemaChangesWaitForAgreement: a schema change gets --timeout plus the time a node may wait
// for the others to agree on it before it answers; other statements get --timeout.
func TestSchemaChangesWaitForAgreement(t *testing.T) {
	s := &session{timeout: 3 * time.Second}
	for text, want := range map[string]time.Duration{
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}": 13 * time.Second,
		"  alter table k.t ADD v int":    13 * time.Second,
		"DROP TABLE k.t":                 13 * time.Second,
		"truncate k.t":                   13 * time.Second,
		"SELECT * FROM k.t":              3 * time.Second,
		"INSERT INTO k.t (k) VALUES (1)": 3 * time.Second,
		"":                               3 * time.Second,
	} {
		if got := s.statementTimeout(statement{Text: text}); got != want {
			t.Errorf("statementTimeout(%q) = %v, want %v", text, got, want)
		}
	}
}
