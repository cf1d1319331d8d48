package shell_test

import (
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
)

func TestOptionsEnsureDefaults(t *testing.T) {
	defaults := shell.Options{
		WriteTimeout: shell.DefaultWriteTimeout, ReadTimeout: shell.DefaultReadTimeout,
		MaxMutationSize: shell.DefaultMaxMutationSize, MaxStatementSize: shell.DefaultMaxStatementSize,
		MaxTimestampAhead: shell.DefaultMaxTimestampAhead, PropagationInterval: coordinator.DefaultPropagationInterval,
		ReadPageBytes: shell.DefaultReadPageBytes, TombstoneWarnThreshold: shell.DefaultTombstoneWarnThreshold,
		PartitionKeysInSelect: shell.DefaultPartitionKeysInSelect, InSelectCartesianProduct: shell.DefaultInSelectCartesianProduct,
	}
	set := shell.Options{WriteTimeout: time.Second, ReadTimeout: time.Minute, MaxMutationSize: 3, MaxStatementSize: 4,
		MaxTimestampAhead: time.Hour, Learning: true, PropagationInterval: time.Millisecond, ReadPageBytes: 5, TombstoneWarnThreshold: -1,
		PartitionKeysInSelect: 7, InSelectCartesianProduct: -1}
	for _, tc := range []struct {
		name    string
		in, out shell.Options
	}{
		{"zero", shell.Options{}, defaults},
		{"all set", set, set},
		{"one set", shell.Options{WriteTimeout: time.Minute}, func() shell.Options { o := defaults; o.WriteTimeout = time.Minute; return o }()},
	} {
		got := tc.in
		if got.EnsureDefaults(); got != tc.out {
			t.Errorf("%s: EnsureDefaults() = %+v, want %+v", tc.name, got, tc.out)
		}
		if twice := got; *twice.EnsureDefaults() != got {
			t.Errorf("%s: EnsureDefaults twice = %+v, want once = %+v", tc.name, twice, got)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", tc.name, err)
		}
	}
}
