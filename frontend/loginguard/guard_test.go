package loginguard_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/frontend/loginguard"
	"github.com/kvnode/kvnode/frontend/loginguard/loginguardtest"
	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
)

// authenticator logs in alice with "pw"; it counts its calls.
type authenticator struct {
	mu    sync.Mutex
	calls int
}

func (a *authenticator) Authenticate(_ context.Context, user, pass string) (auth.Login, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	switch {
	case user == "alice" && pass == "pw":
		return auth.Login{Role: "alice"}, nil
	case user == "alice":
		return auth.Login{}, &auth.AuthenticationError{Username: user, Cause: auth.FailureBadPassword}
	}
	return auth.Login{}, &auth.AuthenticationError{Username: user, Cause: auth.FailureUnknownRole}
}

func (a *authenticator) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func addr(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }

func newGuard(t *testing.T, cfg loginguard.Config) (*loginguard.Guard, *loginguardtest.Clock, *lockedbuf.Buffer) {
	t.Helper()
	clock := loginguardtest.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	var logs lockedbuf.Buffer
	cfg.Clock = clock
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	g, err := loginguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, clock, &logs
}

// TestGuardBruteForce: 15 wrong passwords from one address are counted; the 11th to 15th each
// wait 1 s of the guard's clock before the authenticator is called; meanwhile a client from
// another address logs in at once; the log has one line.
func TestGuardBruteForce(t *testing.T) {
	g, clock, logs := newGuard(t, loginguard.Config{})
	a := &authenticator{}
	ctx := context.Background()
	attacker := addr("10.0.0.1")
	for i := range 10 {
		if _, err := g.Authenticate(ctx, a, loginguard.Native, attacker, "alice", "guess"); err == nil {
			t.Fatalf("guess %d logged in", i+1)
		}
	}
	if clock.Sleepers() != 0 || len(clock.Slept()) != 0 {
		t.Fatalf("the first 10 guesses waited %v, want no wait", clock.Slept())
	}
	others := 0 // the authenticator's calls for other clients
	for i := 10; i < 15; i++ {
		done := make(chan error, 1)
		go func() {
			_, err := g.Authenticate(ctx, a, loginguard.Native, attacker, "alice", "guess")
			done <- err
		}()
		poll.Must(t, 10*time.Second, "the guess waits", poll.Bool(func() bool { return clock.Sleepers() == 1 }))
		if n := a.count() - others; n != i {
			t.Fatalf("guess %d: the authenticator was called %d times for the attacker while it waited, want %d (the check comes after the wait)", i+1, n, i)
		}
		if i == 10 {
			// Another address is not slowed, nor is alice for it.
			if login, err := g.Authenticate(ctx, a, loginguard.Native, addr("10.0.0.2"), "alice", "pw"); err != nil || login.Role != "alice" || clock.Sleepers() != 1 {
				t.Fatalf("alice from another address while the attacker waits: %v, %v, %d waiting; want logged in at once", login, err, clock.Sleepers())
			}
			others++
		}
		clock.Advance(999 * time.Millisecond)
		if clock.Sleepers() != 1 {
			t.Fatalf("guess %d: stopped waiting before 1 s", i+1)
		}
		clock.Advance(time.Millisecond)
		var ae *auth.AuthenticationError
		if err := <-done; !errors.As(err, &ae) || ae.Cause != auth.FailureBadPassword {
			t.Fatalf("guess %d: %v, want a failed login", i+1, err)
		}
	}
	for _, d := range clock.Slept() {
		if d < time.Second {
			t.Errorf("a guess waited %v, want ≥ 1s", d)
		}
	}
	if n := len(clock.Slept()); n != 5 {
		t.Errorf("%d guesses waited, want 5 (the 11th to the 15th)", n)
	}
	if got := failures(t, g, "native", "bad_password"); got != 15 {
		t.Errorf("kvnode_auth_failures_total{protocol=native,reason=bad_password} = %v, want 15", got)
	}
	if lines := strings.Count(logs.String(), "\n"); lines != 1 || !strings.Contains(logs.String(), "level=WARN msg=\"failed login\" protocol=native remote=10.0.0.1 role=alice reason=bad_password") {
		t.Errorf("log after 15 failures within a minute: %d lines, want 1 WARN naming the address, role and reason:\n%s", lines, logs)
	}
	// A minute later, the next failure's line says how many were not logged.
	clock.Advance(time.Minute)
	go g.Authenticate(ctx, a, loginguard.Native, attacker, "alice", "guess")
	poll.Must(t, 10*time.Second, "the guess waits", poll.Bool(func() bool { return clock.Sleepers() == 1 }))
	clock.Advance(time.Second)
	poll.Must(t, 10*time.Second, "the second line", poll.Bool(func() bool { return strings.Count(logs.String(), "\n") == 2 }))
	if !strings.Contains(logs.String(), "not_logged=14") {
		t.Errorf("the line a minute later does not count the 14 failures not logged:\n%s", logs)
	}
	// A success from the address forgets its failures: the next attempt does not wait.
	g2, clock2, _ := newGuard(t, loginguard.Config{})
	for range 10 {
		g2.Authenticate(ctx, a, loginguard.GRPC, attacker, "bob", "x")
	}
	g2.Authenticate(ctx, a, loginguard.GRPC, addr("10.0.0.9"), "alice", "pw")
	done := make(chan struct{})
	go func() { g2.Authenticate(ctx, a, loginguard.GRPC, attacker, "alice", "pw"); close(done) }()
	poll.Must(t, 10*time.Second, "alice waits", poll.Bool(func() bool { return clock2.Sleepers() == 1 }))
	clock2.Advance(time.Second)
	<-done
	if _, err := g2.Authenticate(ctx, a, loginguard.GRPC, attacker, "alice", "pw"); err != nil || clock2.Sleepers() != 0 || len(clock2.Slept()) != 1 {
		t.Errorf("after alice's success from the address: %v, waits %v; want logged in without waiting", err, clock2.Slept())
	}
	if got := failures(t, g2, "grpc", "unknown_role"); got != 10 {
		t.Errorf("kvnode_auth_failures_total{protocol=grpc,reason=unknown_role} = %v, want 10", got)
	}
}

// TestGuardThrottledRefusals: beyond MaxWaitingPerHost attempts waiting, the next is refused
// at once as throttled, without a check, and counted; a canceled wait returns its context's
// error without a check.
func TestGuardThrottledRefusals(t *testing.T) {
	g, clock, _ := newGuard(t, loginguard.Config{Options: loginguard.Options{MaxWaitingPerHost: 2}})
	a := &authenticator{}
	attacker := addr("10.0.0.1")
	for range 10 {
		g.Authenticate(context.Background(), a, loginguard.GRPC, attacker, "alice", "guess")
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := g.Authenticate(ctx, a, loginguard.GRPC, attacker, "alice", "guess")
			errs <- err
		}()
	}
	poll.Must(t, 10*time.Second, "two guesses wait", poll.Bool(func() bool { return clock.Sleepers() == 2 }))
	_, err := g.Authenticate(context.Background(), a, loginguard.GRPC, attacker, "alice", "pw")
	var ae *auth.AuthenticationError
	if !errors.As(err, &ae) || ae.Cause != auth.FailureThrottled || !strings.Contains(err.Error(), "Login throttled: 10.0.0.1 has 10 recent failed logins") {
		t.Fatalf("a third attempt while two wait: %v, want refused as throttled naming the address", err)
	}
	if a.count() != 10 {
		t.Errorf("the authenticator was called %d times, want 10 (none for the waiting and refused attempts)", a.count())
	}
	if got := failures(t, g, "grpc", "throttled"); got != 1 {
		t.Errorf("kvnode_auth_failures_total{reason=throttled} = %v, want 1", got)
	}
	cancel()
	for range 2 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("a canceled wait: %v, want context.Canceled", err)
		}
	}
	if a.count() != 10 {
		t.Errorf("the authenticator was called for a canceled wait")
	}
}

// TestGuardMalformed: credentials a front end cannot parse are counted and logged, but do not
// delay the address (no password was tried).
func TestGuardMalformed(t *testing.T) {
	g, clock, logs := newGuard(t, loginguard.Config{})
	for range 20 {
		g.Malformed(loginguard.Native, addr("10.0.0.1"), "the AUTH_RESPONSE token is not a SASL PLAIN token")
	}
	if _, err := g.Authenticate(context.Background(), &authenticator{}, loginguard.Native, addr("10.0.0.1"), "alice", "pw"); err != nil || len(clock.Slept()) != 0 {
		t.Errorf("login after 20 malformed ones: %v, waited %v; want at once", err, clock.Slept())
	}
	if got := failures(t, g, "native", "malformed"); got != 20 {
		t.Errorf("malformed = %v, want 20", got)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Errorf("%d log lines for 20 malformed logins, want 1:\n%s", n, logs)
	}
}

// TestGuardLogBoundAcrossAddresses: an attacker cycling addresses gets at most
// LogLinesPerSecond lines a second.
func TestGuardLogBoundAcrossAddresses(t *testing.T) {
	g, _, logs := newGuard(t, loginguard.Config{Options: loginguard.Options{LogLinesPerSecond: 5}})
	a := &authenticator{}
	for i := range 1000 {
		g.Authenticate(context.Background(), a, loginguard.Native, addr("10.1."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256)), "x", "y")
	}
	if n := strings.Count(logs.String(), "\n"); n != 5 {
		t.Errorf("1000 failures from 1000 addresses in one instant: %d lines, want 5", n)
	}
}

// failures returns kvnode_auth_failures_total{protocol, reason} of g.
func failures(t *testing.T, g *loginguard.Guard, protocol, reason string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kvnode_auth_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["protocol"] == protocol && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no kvnode_auth_failures_total{protocol=%q,reason=%q}", protocol, reason)
	return 0
}

// TestNilGuard: a nil guard checks logins without counting, logging or delaying them.
func TestNilGuard(t *testing.T) {
	var g *loginguard.Guard
	a := &authenticator{}
	for range 20 {
		g.Malformed(loginguard.Native, addr("10.0.0.1"), "junk")
		g.Authenticate(context.Background(), a, loginguard.Native, addr("10.0.0.1"), "alice", "guess")
	}
	if login, err := g.Authenticate(context.Background(), a, loginguard.Native, addr("10.0.0.1"), "alice", "pw"); err != nil || login.Role != "alice" || a.count() != 21 {
		t.Errorf("nil guard: %v, %v after %d checks; want alice logged in and every attempt checked", login, err, a.count())
	}
}

// TestConfigValidate: a field out of range is refused, naming it.
func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  loginguard.Config
		want string
	}{
		{loginguard.Config{Options: loginguard.Options{Threshold: -1}}, "Threshold (login_failure_threshold) is -1"},
		{loginguard.Config{Options: loginguard.Options{Delay: 2 * time.Second, MaxDelay: time.Second}}, "MaxDelay (login_failure_max_delay) is 1s"},
		{loginguard.Config{Options: loginguard.Options{MaxEntries: 3}}, "MaxEntries (login_guard_max_entries) is 3"},
		{loginguard.Config{Options: loginguard.Options{MaxWaitingPerHost: -2}}, "MaxWaitingPerHost"},
	} {
		if _, err := loginguard.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := loginguard.New(loginguard.Config{Options: loginguard.Options{Delay: 30 * time.Second}}); err != nil {
		t.Errorf("New with Delay 30s (MaxDelay defaulting to it): %v", err)
	}
}
