package catalog

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/schema"
)

func TestOptionsEnsureDefaults(t *testing.T) {
	limits := schema.Limits{MaxColumnsPerTable: schema.DefaultMaxColumnsPerTable,
		MaxTablesPerKeyspace: schema.DefaultMaxTablesPerKeyspace, MaxSchemaSize: schema.DefaultMaxSchemaSize}
	for _, tc := range []struct {
		in, out Options
	}{
		{Options{}, Options{Limits: limits, TombstoneGrace: DefaultTombstoneGrace}},
		{Options{TombstoneGrace: time.Minute, Limits: schema.Limits{MaxColumnsPerTable: 1, MaxTablesPerKeyspace: 2, MaxSchemaSize: 3}},
			Options{TombstoneGrace: time.Minute, Limits: schema.Limits{MaxColumnsPerTable: 1, MaxTablesPerKeyspace: 2, MaxSchemaSize: 3}}},
		{Options{Limits: schema.Limits{MaxSchemaSize: 9}},
			Options{TombstoneGrace: DefaultTombstoneGrace, Limits: schema.Limits{MaxColumnsPerTable: limits.MaxColumnsPerTable, MaxTablesPerKeyspace: limits.MaxTablesPerKeyspace, MaxSchemaSize: 9}}},
	} {
		got := tc.in
		if got.EnsureDefaults(); got != tc.out {
			t.Errorf("Options%+v.EnsureDefaults() = %+v, want %+v", tc.in, got, tc.out)
		}
		if twice := got; *twice.EnsureDefaults() != got {
			t.Errorf("EnsureDefaults twice = %+v, want once = %+v", twice, got)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Options%+v.Validate() = %v, want nil", got, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{TombstoneGrace: -time.Second}, "catalog: Options.TombstoneGrace (schema_tombstone_grace) is -1s, want a positive duration"},
		{Options{Limits: schema.Limits{MaxTablesPerKeyspace: -1}}, "schema: Limits.MaxTablesPerKeyspace (max_tables_per_keyspace) is -1, want 1 to 2147483647"},
	} {
		if err := tc.o.EnsureDefaults().Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("Options%+v.Validate() = %v, want %q", tc.o, err, tc.want)
		}
		if _, err := Open(Config{Dir: t.TempDir(), Options: tc.o}); err == nil || err.Error() != tc.want {
			t.Errorf("Open with Options%+v = %v, want %q", tc.o, err, tc.want)
		}
	}
}
