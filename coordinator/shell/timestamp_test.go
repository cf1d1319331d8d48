package shell_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/coordinator/shell"
)

// TestUsingTimestampBound checks that a client timestamp more than the bound ahead of the
// coordinator's clock is refused before any replica is contacted, in every statement that takes
// one, and that a timestamp exactly at the bound is stored as given.
func TestUsingTimestampBound(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxAhead time.Duration // configured; 0: the default
		limit    time.Duration // in effect
	}{
		{"default", 0, shell.DefaultMaxTimestampAhead},
		{"configured", 90 * time.Second, 90 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, options{maxAhead: tt.maxAhead})
			c.must(schemaRF3...)
			c.must("INSERT INTO t (k, c, v) VALUES ('a', 1, 'x')", "INSERT INTO t (k, c, v) VALUES ('a', 2, 'y')")
			now := c.clock.Now().UnixMicro() // the clock stands still
			atLimit := now + tt.limit.Microseconds()
			// Each statement, with %d for its timestamp, and the column of the timestamp.
			stmts := []struct {
				stmt string
				col  int
			}{
				{"INSERT INTO t (k, c, v) VALUES ('b', 1, 'x') USING TIMESTAMP %d", 62},
				{"UPDATE t USING TIMESTAMP %d SET v = 'u' WHERE k = 'b' AND c = 1", 26},
				{"DELETE v FROM t USING TIMESTAMP %d WHERE k = 'b' AND c = 1", 33},
				{"DELETE FROM t USING TIMESTAMP %d WHERE k = 'b' AND c = 1", 31},
				{"DELETE FROM t USING TIMESTAMP %d WHERE k = 'b'", 31},
				{"DELETE FROM t USING TIMESTAMP %d WHERE k = 'a' AND c >= 1", 31},
			}
			for _, s := range stmts {
				for _, ts := range []int64{atLimit + 1, math.MaxInt64} {
					stmt := fmt.Sprintf(s.stmt, ts)
					before := c.transport.totalCalls()
					_, err := c.exec("n1", all, stmt)
					var want string
					if ts == math.MaxInt64 {
						want = fmt.Sprintf("1:%d: USING TIMESTAMP 9223372036854775807 is %d years ahead of this coordinator's clock; the limit is %v (max_timestamp_ahead; timestamps are microseconds since the Unix epoch)",
							s.col, (math.MaxInt64-now)/(365*24*3600*1e6), tt.limit)
					} else {
						want = fmt.Sprintf("1:%d: USING TIMESTAMP %d is %v ahead of this coordinator's clock; the limit is %v (max_timestamp_ahead; timestamps are microseconds since the Unix epoch)",
							s.col, ts, tt.limit+time.Microsecond, tt.limit)
					}
					var ie *coordinator.InvalidError
					if !errors.As(err, &ie) || err.Error() != want {
						t.Errorf("%s: %v, want an *InvalidError %q", stmt, err, want)
					}
					if calls := c.transport.totalCalls() - before; calls != 0 {
						t.Errorf("%s was refused after %d replica calls, want none", stmt, calls)
					}
				}
			}
			// At the bound exactly, and in the past (negative timestamps too, as in Cassandra and
			// ScyllaDB), the timestamp is taken as given.
			for _, ts := range []int64{atLimit, now, 1, -1, math.MinInt64 + 1} {
				stmt := fmt.Sprintf("INSERT INTO t (k, c) VALUES ('c', 1) USING TIMESTAMP %d", ts)
				if _, err := c.exec("n2", all, stmt); err != nil {
					t.Errorf("%s: %v, want it accepted", stmt, err)
					continue
				}
				c.transport.mu.Lock()
				m := c.transport.mutated[len(c.transport.mutated)-1]
				c.transport.mu.Unlock()
				if got := *m.Mutation.Rows[0].Marker; got != ts {
					t.Errorf("%s wrote at %d, want %d", stmt, got, ts)
				}
			}
			// The row written at the bound is still there: nothing was refused half-way.
			if got, err := c.query("n3", all, "SELECT k, c FROM t WHERE k = 'c'"); err != nil || len(got) != 1 {
				t.Errorf("the row written at the bound: %q, %v; want it", got, err)
			}
		})
	}
}

// TestUsingTimestampBoundFollowsTheClock checks that the bound is measured from the clock at
// the time of the write, not at startup.
func TestUsingTimestampBoundFollowsTheClock(t *testing.T) {
	c := newCluster(t, options{maxAhead: time.Minute})
	c.must(schemaRF3...)
	ts := c.clock.Now().Add(2 * time.Minute).UnixMicro()
	stmt := fmt.Sprintf("INSERT INTO t (k, c) VALUES ('a', 1) USING TIMESTAMP %d", ts)
	if _, err := c.exec("n1", one, stmt); err == nil {
		t.Fatalf("%s two minutes ahead with a one-minute bound: accepted, want refused", stmt)
	}
	c.clock.Advance(time.Minute)
	if _, err := c.exec("n1", one, stmt); err != nil {
		t.Errorf("%s one minute later: %v, want it accepted", stmt, err)
	}
}

func TestFormatAheadInErrors(t *testing.T) {
	c := newCluster(t, options{maxAhead: time.Millisecond})
	c.must(schemaRF3...)
	now := c.clock.Now().UnixMicro()
	const day = 24 * 3600 * int64(1e6)
	for _, tt := range []struct {
		ahead int64 // µs
		want  string
	}{
		{1001, "1.001ms"},
		{2*day - 1, "47h59m59.999999s"},
		{2 * day, "2 days"},
		{730*day - 1, "729 days"},
		{730 * day, "2 years"},
	} {
		stmt := fmt.Sprintf("INSERT INTO t (k, c) VALUES ('a', 1) USING TIMESTAMP %d", now+tt.ahead)
		_, err := c.exec("n1", one, stmt)
		want := fmt.Sprintf("1:54: USING TIMESTAMP %d is %s ahead of this coordinator's clock; the limit is 1ms (max_timestamp_ahead; timestamps are microseconds since the Unix epoch)", now+tt.ahead, tt.want)
		if err == nil || err.Error() != want {
			t.Errorf("%d µs ahead: %v, want %q", tt.ahead, err, want)
		}
	}
}
