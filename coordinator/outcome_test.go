package coordinator

import (
	"errors"
	"io"
	"testing"
	"time"
)

func TestOutcomeErr(t *testing.T) {
	tests := []struct {
		name    string
		outcome Outcome
		want    string
	}{
		{
			"rate limited by the coordinator",
			RateLimited{Op: OpWrite, RejectedBy: RejectedByCoordinator, Limit: 50, Count: 140, RetryAfter: 1200 * time.Millisecond},
			"rate limit exceeded for writes on ks.tbl (limit 50/s), rejected by coordinator; retry after 1.2s",
		},
		{
			"rate limited by replicas, hint rounded to milliseconds",
			RateLimited{Op: OpRead, RejectedBy: RejectedByReplicas, Limit: 100, RetryAfter: 345678 * time.Microsecond},
			"rate limit exceeded for reads on ks.tbl (limit 100/s), rejected by replicas; retry after 346ms",
		},
		{
			"rate limited without a hint",
			RateLimited{Op: OpRead, RejectedBy: RejectedByReplicas, Limit: 100},
			"rate limit exceeded for reads on ks.tbl (limit 100/s), rejected by replicas",
		},
		{
			"unavailable",
			Unavailable{Consistency: Quorum, Live: 1, Required: 2},
			"cannot achieve consistency level QUORUM: 1 replica live, 2 required",
		},
		{
			"unavailable with none live",
			Unavailable{Consistency: One, Live: 0, Required: 1},
			"cannot achieve consistency level ONE: 0 replicas live, 1 required",
		},
		{
			"write timeout counts acks",
			Timeout{Op: OpWrite, Consistency: Quorum, Received: 1, Required: 2},
			"write timed out at QUORUM: 1 of 2 required acks received",
		},
		{
			"read timeout counts responses",
			Timeout{Op: OpRead, Consistency: All, Received: 2, Required: 3},
			"read timed out at ALL: 2 of 3 required responses received",
		},
		{
			"failure",
			Failed{Op: OpWrite, Consistency: All, Received: 2, Required: 3, Failures: 1, Cause: io.ErrUnexpectedEOF},
			"write failed at ALL: 1 replica failed, 2 of 3 required acks received: unexpected EOF",
		},
	}
	for _, tt := range tests {
		err := tt.outcome.Err("ks", "tbl")
		if err == nil {
			t.Errorf("%s: Err = nil, want %q", tt.name, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%s: Err = %q, want %q", tt.name, err, tt.want)
		}
	}
	if err := (Success{Op: OpWrite, Acks: 2}).Err("ks", "tbl"); err != nil {
		t.Errorf("Success.Err = %v, want nil", err)
	}
}

func TestRateLimitErrorFields(t *testing.T) {
	err := RateLimited{Op: OpWrite, RejectedBy: RejectedByReplicas, Limit: 50, Count: 300, RetryAfter: time.Second}.Err("ks", "tbl")
	var rl *RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("RateLimited.Err = %T, want *RateLimitError", err)
	}
	want := RateLimitError{Keyspace: "ks", Table: "tbl", Op: OpWrite, RejectedBy: RejectedByReplicas, Limit: 50, Count: 300, RetryAfter: time.Second}
	if *rl != want {
		t.Errorf("RateLimited.Err = %+v, want %+v", *rl, want)
	}
	noKeyspace := &RateLimitError{Table: "tbl", Op: OpRead, RejectedBy: RejectedByCoordinator, Limit: 1}
	if got, want := noKeyspace.Error(), "rate limit exceeded for reads on tbl (limit 1/s), rejected by coordinator"; got != want {
		t.Errorf("RateLimitError without keyspace = %q, want %q", got, want)
	}
}

func TestRateLimitErrorNamesItsScope(t *testing.T) {
	for _, tt := range []struct {
		err  *RateLimitError
		want string
	}{
		{&RateLimitError{Keyspace: "ks", Table: "t", Op: OpWrite, RejectedBy: RejectedByCoordinator, Scope: ScopeServiceLevel, ScopeName: "gold", Limit: 100, RetryAfter: 1200 * time.Millisecond},
			"rate limit exceeded for writes of service level gold (limit 100/s across the cluster), rejected by coordinator; retry after 1.2s"},
		{&RateLimitError{Keyspace: "ks", Table: "t", Op: OpRead, RejectedBy: RejectedByCoordinator, Scope: ScopeKeyspace, ScopeName: "ks", Limit: 7, RetryAfter: 40 * time.Millisecond},
			"rate limit exceeded for reads of keyspace ks (limit 7/s across the cluster), rejected by coordinator; retry after 40ms"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	for s, want := range map[Scope]string{ScopePartition: "partition", ScopeServiceLevel: "service_level", ScopeKeyspace: "keyspace", 9: "Scope(9)"} {
		if s.String() != want {
			t.Errorf("Scope(%d).String() = %q, want %q", uint8(s), s.String(), want)
		}
	}
}

func TestFailureErrorUnwraps(t *testing.T) {
	err := Failed{Op: OpRead, Consistency: One, Required: 1, Failures: 1, Cause: io.ErrUnexpectedEOF}.Err("ks", "tbl")
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF) = false, want true", err)
	}
	var fe *FailureError
	if !errors.As(err, &fe) || fe.Failures != 1 {
		t.Errorf("errors.As(%v, *FailureError) = %v with %+v, want true with Failures=1", err, fe != nil, fe)
	}
}
