package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocql/gocql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/client"
)

// These tests run the scheduler and workers under testing/synctest: time is fake and advances
// only when every goroutine waits, so rates, latencies and per-second buckets are exact.

// runFake runs cfg against the table ks.<table> of testDDL with execs as coordinators.
func runFake(t *testing.T, ctx context.Context, cfg Config, table string, progress *bytes.Buffer, execs ...*fakeExec) *Summary {
	t.Helper()
	wl, err := newWorkload(testTable(t, testSchema(t), table), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := make([]executor, len(execs))
	for i, e := range execs {
		ex[i] = e
	}
	g := &grpcSender{cfg: cfg, execs: ex}
	var w bytes.Buffer
	if progress == nil {
		progress = &w
	}
	return run(ctx, cfg, wl, g, progress)
}

func testConfig(rate float64, concurrency int, d time.Duration) Config {
	cfg := DefaultConfig()
	cfg.Protocol, cfg.Coordinator = ProtocolGRPC, RoundRobin
	cfg.Table = "ks.kv"
	cfg.Rate, cfg.Concurrency, cfg.Duration = rate, concurrency, d
	return cfg
}

// checkTotals checks the identities every Summary must satisfy.
func checkTotals(t *testing.T, s *Summary) {
	t.Helper()
	if got := s.Accepted + s.Rejected() + s.Failed(); got != s.Offered {
		t.Errorf("accepted %d + rejected %d + errors %d = %d, want offered %d", s.Accepted, s.Rejected(), s.Failed(), got, s.Offered)
	}
	if s.Hot.Accepted+s.Cold.Accepted != s.Accepted {
		t.Errorf("hot accepted %d + cold accepted %d != accepted %d", s.Hot.Accepted, s.Cold.Accepted, s.Accepted)
	}
	if s.Hot.Rejected+s.Cold.Rejected != s.Rejected() {
		t.Errorf("hot rejected %d + cold rejected %d != rejected %d", s.Hot.Rejected, s.Cold.Rejected, s.Rejected())
	}
	var sum int64
	for _, v := range s.Hot.AcceptedPerSecond {
		sum += v
	}
	if sum != s.Hot.Accepted {
		t.Errorf("hot accepted_per_second %v sums to %d, want hot accepted %d", s.Hot.AcceptedPerSecond, sum, s.Hot.Accepted)
	}
	if want := int(math.Ceil(s.DurationS)); len(s.Hot.AcceptedPerSecond) != want {
		t.Errorf("hot accepted_per_second has %d entries for a %.3f s run, want %d", len(s.Hot.AcceptedPerSecond), s.DurationS, want)
	}
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*want }

func TestOpenLoopIssuesExactlyRateTimesDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exec := &fakeExec{latency: time.Millisecond}
		start := time.Now()
		s := runFake(t, context.Background(), testConfig(200, 4, 2*time.Second), "kv", nil, exec)
		checkTotals(t, s)
		if s.Offered != 400 || s.Accepted != 400 || exec.count() != 400 {
			t.Errorf("--rate 200 for 2s offered %d, accepted %d, sent %d; want 400 each", s.Offered, s.Accepted, exec.count())
		}
		// the last operation is due at 1.995 s and takes 1 ms
		if got := time.Since(start); got != 1996*time.Millisecond {
			t.Errorf("the run took %v of fake time, want 1.996s (last start at 1.995s + 1ms)", got)
		}
		if s.DurationS != 2 || !within(s.LatencyMS.P50, 1, 0.01) || !within(s.LatencyMS.P999, 1, 0.01) {
			t.Errorf("duration %v s, p50 %v ms, p99.9 %v ms; want 2 s and 1 ms (the service time)", s.DurationS, s.LatencyMS.P50, s.LatencyMS.P999)
		}
	})
}

func TestOpenLoopLatencyCountsFromIntendedStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One worker serving 100 ops/s is offered 150 ops/s: operations queue, and their
		// latency must include the wait (no coordinated omission).
		open := runFake(t, context.Background(), testConfig(150, 1, time.Second), "kv", nil, &fakeExec{latency: 10 * time.Millisecond})
		checkTotals(t, open)
		if open.Offered != 150 || open.Accepted != 150 {
			t.Errorf("offered %d, accepted %d; want 150 and 150 (the backlog drains within DrainTimeout)", open.Offered, open.Accepted)
		}
		// operation n starts at 10n ms, not at its intended 6.67n ms: the last one (n=149) is due
		// at 993 ms and finishes at 1500 ms.
		if open.LatencyMS.P999 < 490 || open.LatencyMS.P999 > 520 {
			t.Errorf("open-loop p99.9 = %v ms, want about 507 ms (queueing included)", open.LatencyMS.P999)
		}
		closed := runFake(t, context.Background(), testConfig(0, 1, time.Second), "kv", nil, &fakeExec{latency: 10 * time.Millisecond})
		checkTotals(t, closed)
		if !within(closed.LatencyMS.P999, 10, 0.01) || closed.Offered != 100 {
			t.Errorf("closed loop: p99.9 = %v ms over %d ops, want 10 ms over 100 (one worker, 10 ms each, 1 s)", closed.LatencyMS.P999, closed.Offered)
		}
	})
}

func TestOpenLoopDropsWhenTheQueueIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One worker taking 1 s per operation, offered 100 ops/s for 3 s: the queue (one second
		// of load, 100 operations) fills, later operations are dropped, and what is still queued
		// after DrainTimeout is cancelled.
		start := time.Now()
		s := runFake(t, context.Background(), testConfig(100, 1, 3*time.Second), "kv", nil, &fakeExec{latency: time.Second})
		checkTotals(t, s)
		if s.Offered != 300 {
			t.Errorf("offered %d, want 300", s.Offered)
		}
		if s.Errors[ErrorDropped] == 0 || s.Errors[ErrorCanceled] == 0 {
			t.Errorf("errors = %v, want both dropped and canceled operations", s.Errors)
		}
		// the worker completes one per second until 3 s + DrainTimeout
		if want := int64(3 + DrainTimeout/time.Second); s.Accepted != want {
			t.Errorf("accepted %d, want %d (one per second until the drain timeout)", s.Accepted, want)
		}
		if got := time.Since(start); got != 3*time.Second+DrainTimeout {
			t.Errorf("the run took %v, want Duration + DrainTimeout = %v", got, 3*time.Second+DrainTimeout)
		}
	})
}

func TestClosedLoopRunsEachWorkerBackToBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(0, 3, time.Second)
		cfg.Hot = 1
		s := runFake(t, context.Background(), cfg, "kv", nil, &fakeExec{latency: 10 * time.Millisecond})
		checkTotals(t, s)
		if s.Offered != 300 || s.Accepted != 300 || s.Hot.Accepted != 300 {
			t.Errorf("3 workers × 1 s / 10 ms: offered %d, accepted %d, hot accepted %d; want 300 each", s.Offered, s.Accepted, s.Hot.Accepted)
		}
		if !within(s.LatencyMS.P50, 10, 0.01) {
			t.Errorf("p50 = %v ms, want 10", s.LatencyMS.P50)
		}
	})
}

func TestHotAcceptedPerSecondBucketsByCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(0, 1, 3*time.Second)
		cfg.Hot = 1
		s := runFake(t, context.Background(), cfg, "kv", nil, &fakeExec{latency: 10 * time.Millisecond})
		checkTotals(t, s)
		// completions at 10, 20, ..., 3000 ms: 99 in [0,1), 100 in [1,2), 100 in [2,3), and the
		// one at exactly 3 s counts in the last second
		want := []int64{99, 100, 101}
		if fmt.Sprint(s.Hot.AcceptedPerSecond) != fmt.Sprint(want) {
			t.Errorf("hot accepted_per_second = %v, want %v", s.Hot.AcceptedPerSecond, want)
		}
	})
}

func TestCancelReturnsWhatRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		cfg := testConfig(0, 2, 10*time.Second)
		s := runFake(t, ctx, cfg, "kv", nil, &fakeExec{latency: 300 * time.Millisecond})
		checkTotals(t, s)
		// each worker completes operations at 0.3, 0.6, ..., 2.4 s; the one due at 2.7 s is cancelled
		if s.Accepted != 16 || s.Errors[ErrorCanceled] != 2 || s.Offered != 18 {
			t.Errorf("cancelled at 2.5 s: offered %d, accepted %d, errors %v; want 18, 16, canceled 2", s.Offered, s.Accepted, s.Errors)
		}
		if s.DurationS != 2.5 {
			t.Errorf("duration_s = %v, want 2.5 (the run was cancelled then)", s.DurationS)
		}
	})
}

func TestRoundRobinRotatesAndFixedSticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			coord Coordinator
			want  func(a, b, total int) bool
		}{
			{RoundRobin, func(a, b, total int) bool { return a+b == total && a-b <= 1 && b-a <= 1 }},
			{Fixed, func(a, b, total int) bool { return a == total && b == 0 }},
		} {
			a, b := &fakeExec{latency: time.Millisecond}, &fakeExec{latency: time.Millisecond}
			cfg := testConfig(0, 3, time.Second)
			cfg.Coordinator = tc.coord
			s := runFake(t, context.Background(), cfg, "kv", nil, a, b)
			if !tc.want(a.count(), b.count(), int(s.Offered)) {
				t.Errorf("--coordinator %s: the two nodes got %d and %d of %d operations", tc.coord, a.count(), b.count(), s.Offered)
			}
		}
	})
}

func TestPlainProgressPrintsALinePerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		s := runFake(t, context.Background(), testConfig(100, 2, 3*time.Second), "kv", &out, &fakeExec{latency: time.Millisecond})
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) < 3 {
			t.Fatalf("a 3 s run printed %d progress lines, want a line per second and a final one:\n%s", len(lines), out.String())
		}
		// the operation due at exactly 1 s may be offered before or after the line is printed
		if !strings.HasPrefix(lines[0], "bench:   1.0s/3s") || !regexp.MustCompile(`offered 10[01] `).MatchString(lines[0]) {
			t.Errorf("first progress line %q, want it at 1.0s with offered 100 or 101", lines[0])
		}
		last := lines[len(lines)-1]
		if !strings.Contains(last, "done") || !strings.Contains(last, fmt.Sprintf("accepted %d", s.Accepted)) {
			t.Errorf("final progress line %q, want it marked done with accepted %d", last, s.Accepted)
		}
		if strings.Contains(out.String(), "\r") {
			t.Errorf("progress to a non-terminal contains \\r: %q", out.String())
		}
	})
}

func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		err      error
		canceled bool
		want     string
	}{
		{&client.UnavailableError{}, false, ErrorUnavailable},
		{&client.TimeoutError{}, false, ErrorTimeout},
		{&client.FailureError{}, false, ErrorFailed},
		{&client.InvalidError{}, false, ErrorInvalid},
		{fmt.Errorf("kvnode: %w", context.Canceled), false, ErrorCanceled},
		{&client.TimeoutError{}, true, ErrorCanceled},
		{fmt.Errorf("kvnode: %w", status.Error(codes.Internal, "boom")), false, "grpc_internal"},
		{fmt.Errorf("kvnode: %w", status.Error(codes.Unavailable, "connection refused")), false, "grpc_unavailable"},
		{status.Error(codes.DeadlineExceeded, "slow"), false, "grpc_deadline_exceeded"},
		{fmt.Errorf("kvnode: %w", status.Error(codes.ResourceExhausted, "overloaded")), false, ErrorOverloaded},
		{errors.New("something else"), false, ErrorOther},
	} {
		if got := errorKind(tc.err, tc.canceled); got != tc.want {
			t.Errorf("errorKind(%v, canceled=%v) = %q, want %q", tc.err, tc.canceled, got, tc.want)
		}
	}
}

// requestError is a native ERROR as gocql returns it (gocql.RequestError).
type requestError struct{ code int }

func (e requestError) Code() int       { return e.code }
func (e requestError) Message() string { return "m" }
func (e requestError) Error() string   { return fmt.Sprintf("error 0x%04x", e.code) }

// errorFrame is the error gocql returns for the codes it has no type for (its ErrorFrame).
type errorFrame struct{ code int }

func (e errorFrame) GetCode() int  { return e.code }
func (e errorFrame) Error() string { return fmt.Sprintf("error 0x%04x", e.code) }

func TestNativeErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{requestError{gocql.ErrCodeOverloaded}, ErrorOverloaded},
		{fmt.Errorf("wrapped: %w", requestError{gocql.ErrCodeOverloaded}), ErrorOverloaded},
		{requestError{gocql.ErrCodeInvalid}, ErrorInvalid},
		{requestError{gocql.ErrCodeServer}, ErrorOther},
		{errorFrame{gocql.ErrCodeOverloaded}, ErrorOverloaded},
		{fmt.Errorf("wrapped: %w", errorFrame{gocql.ErrCodeOverloaded}), ErrorOverloaded},
		{errorFrame{gocql.ErrCodeSyntax}, ErrorInvalid},
		{errorFrame{gocql.ErrCodeServer}, ErrorOther},
		{gocql.ErrNoConnections, ErrorNoConnections},
	} {
		if got := nativeErrorKind(tc.err, false); got != tc.want {
			t.Errorf("nativeErrorKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestFailuresAreCountedByKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := runFake(t, context.Background(), testConfig(50, 2, time.Second), "kv", nil,
			&fakeExec{err: &client.UnavailableError{Message: "2 live of 3 required"}})
		checkTotals(t, s)
		if s.Errors[ErrorUnavailable] != 50 || s.Accepted != 0 || s.LatencyMS != (Latency{}) {
			t.Errorf("every op unavailable: errors %v, accepted %d, latency %+v; want unavailable 50, 0, zero latency", s.Errors, s.Accepted, s.LatencyMS)
		}
	})
}

func TestTerminalProgressRedrawsOneLine(t *testing.T) {
	var st stats
	st.accepted.Add(40)
	st.rejCoord.Add(2)
	var out bytes.Buffer
	p := &progress{w: &out, terminal: true, st: &st, total: 4 * time.Second}
	p.print(time.Second, false)
	p.print(2*time.Second, false)
	if got := out.String(); strings.Count(got, "\r[") != 2 || strings.Contains(got, "\n") || !strings.HasSuffix(got, "\x1b[K") {
		t.Errorf("terminal progress = %q, want two \\r-started lines, each clearing the rest of the line, no newline", got)
	}
	if want := "\r[" + strings.Repeat("#", 15) + strings.Repeat("-", 15) + "]   2.0s/4s"; !strings.Contains(out.String(), want) {
		t.Errorf("terminal progress at 2s of 4s = %q, want a half-full bar %q", out.String(), want)
	}
	out.Reset()
	p.print(4*time.Second, true)
	if got := out.String(); !strings.HasSuffix(got, "\n") || !strings.Contains(got, "accepted 40  rejected 2") {
		t.Errorf("final terminal progress = %q, want the counts and a newline", got)
	}
}
