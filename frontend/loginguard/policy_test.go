package loginguard

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func testPolicy(t *testing.T, cfg Config) *policy {
	t.Helper()
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return newPolicy(&cfg)
}

func host(s string) netip.Prefix {
	a := netip.MustParseAddr(s)
	bits := 32
	if a.Is6() {
		bits = 64
	}
	return netip.PrefixFrom(a, bits).Masked()
}

// fail records n failures of role from h at now, one millisecond apart, and returns the time
// after them.
func fail(p *policy, now time.Time, h netip.Prefix, role string, n int) time.Time {
	for range n {
		p.failed(now, h, p.roleKey(role), true)
		now = now.Add(time.Millisecond)
	}
	return now
}

// TestPolicyThreshold: the 11th attempt after 10 quick failures waits Delay, the 10th does not;
// the delay doubles with each further 10 failures up to MaxDelay; another address is not
// delayed.
func TestPolicyThreshold(t *testing.T) {
	p := testPolicy(t, Config{})
	a, b := host("10.0.0.1"), host("10.0.0.2")
	now := fail(p, t0, a, "alice", 9)
	if d := p.begin(now, a, p.roleKey("alice")); d.delay != 0 {
		t.Fatalf("after 9 failures: delay %v, want none", d.delay)
	}
	now = fail(p, now, a, "alice", 1)
	d := p.begin(now, a, p.roleKey("alice"))
	if d.delay != time.Second || d.refused != admitted {
		t.Fatalf("after 10 failures: %+v, want a wait of 1s", d)
	}
	p.done(a)
	if d := p.begin(now, b, p.roleKey("alice")); d.delay != 0 {
		t.Errorf("another address after 10 failures of alice elsewhere: delay %v, want none (a role is never delayed for everyone)", d.delay)
	}
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{{20, 2 * time.Second}, {30, 4 * time.Second}, {40, 8 * time.Second}, {50, 10 * time.Second}, {500, 10 * time.Second}} {
		p := testPolicy(t, Config{})
		now := fail(p, t0, a, "alice", tt.failures)
		if d := p.begin(now, a, p.roleKey("bob")); d.delay != tt.want {
			t.Errorf("after %d failures: delay %v, want %v", tt.failures, d.delay, tt.want)
		}
	}
}

// TestPolicyDecay: failures halve every HalfLife, so an address that stops failing is soon
// not delayed any more.
func TestPolicyDecay(t *testing.T) {
	p := testPolicy(t, Config{Options: Options{HalfLife: 5 * time.Minute}})
	a := host("10.0.0.1")
	now := fail(p, t0, a, "alice", 10)
	if d := p.begin(now.Add(10*time.Second), a, p.roleKey("alice")); d.delay == 0 {
		t.Fatalf("10 s after 10 failures (%.1f left): no delay, want one", d.failures)
	} else {
		p.done(a)
	}
	if d := p.begin(now.Add(5*time.Minute), a, p.roleKey("alice")); d.delay != 0 || d.failures > 5.01 {
		t.Errorf("a half-life after 10 failures: %+v, want about 5 failures and no delay", d)
	}
	// A clock that steps back decays nothing, and breaks nothing.
	if d := p.begin(t0.Add(-time.Hour), a, p.roleKey("alice")); d.delay == 0 {
		t.Errorf("clock stepped back an hour: no delay, want the failures still counted")
	}
}

// TestPolicySuccessResets: a success from an address forgets its failures and its role's
// there, not another role's from the same address (an attacker behind the NAT of a legitimate
// client keeps being delayed on the role it attacks).
func TestPolicySuccessResets(t *testing.T) {
	p := testPolicy(t, Config{})
	a := host("10.0.0.1")
	now := fail(p, t0, a, "admin", 12)
	p.succeeded(a, p.roleKey("alice"))
	if d := p.begin(now, a, p.roleKey("alice")); d.delay != 0 {
		t.Errorf("alice after her success: delay %v, want none", d.delay)
	}
	if d := p.begin(now, a, p.roleKey("admin")); d.delay == 0 {
		t.Errorf("admin from the same address after alice's success: no delay, want admin's 12 failures to count")
	} else {
		p.done(a)
	}
	p.succeeded(a, p.roleKey("admin"))
	if d := p.begin(now, a, p.roleKey("admin")); d.delay != 0 {
		t.Errorf("admin after admin's success: delay %v, want none", d.delay)
	}
}

// TestPolicyWaitingBounded: at most MaxWaitingPerHost attempts of an address wait, and
// MaxWaiting in all; the rest are refused at once, and done frees a place.
func TestPolicyWaitingBounded(t *testing.T) {
	p := testPolicy(t, Config{Options: Options{MaxWaitingPerHost: 2, MaxWaiting: 3}})
	a, b := host("10.0.0.1"), host("10.0.0.2")
	now := fail(p, t0, a, "x", 10)
	now = fail(p, now, b, "x", 10)
	want := []refusal{admitted, admitted, hostWaiting}
	for i, w := range want {
		if d := p.begin(now, a, p.roleKey("x")); d.refused != w {
			t.Errorf("attempt %d from a: refused %d, want %d", i+1, d.refused, w)
		}
	}
	if d := p.begin(now, b, p.roleKey("x")); d.refused != admitted {
		t.Errorf("first attempt from b: refused %d, want admitted", d.refused)
	}
	if d := p.begin(now, b, p.roleKey("x")); d.refused != allWaiting {
		t.Errorf("second attempt from b with 3 waiting in all: refused %d, want allWaiting", d.refused)
	}
	p.done(a)
	if d := p.begin(now, b, p.roleKey("x")); d.refused != admitted {
		t.Errorf("attempt from b once one of a's ended: refused %d, want admitted", d.refused)
	}
	if _, _, w := p.sizes(); w != 3 {
		t.Errorf("waiting = %d, want 3", w)
	}
}

// TestPolicyTablesBounded: an attacker cycling through 20,000 addresses and roles grows the
// tables no further than MaxEntries, and an address that keeps failing keeps its count.
func TestPolicyTablesBounded(t *testing.T) {
	const maxEntries = 1024
	p := testPolicy(t, Config{Options: Options{MaxEntries: maxEntries}})
	hot := host("192.168.0.1")
	now := fail(p, t0, hot, "admin", 30)
	for i := range 20_000 {
		h := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)
		p.failed(now, h, p.roleKey(string(rune(i))), true)
		if i%200 == 0 {
			now = fail(p, now, hot, "admin", 1) // the hot address keeps failing
		}
	}
	hosts, pairs, _ := p.sizes()
	if hosts > maxEntries || pairs > maxEntries {
		t.Errorf("after 20,000 addresses: %d addresses and %d pairs remembered, want at most %d each", hosts, pairs, maxEntries)
	}
	if d := p.begin(now, hot, p.roleKey("admin")); d.delay == 0 {
		t.Errorf("the address that kept failing lost its count (%.1f) to the flood", d.failures)
	}
}

// TestPolicyLogSpacing: one line per address per LogInterval; the next says how many were not
// logged. Another address has lines of its own.
func TestPolicyLogSpacing(t *testing.T) {
	p := testPolicy(t, Config{Options: Options{LogInterval: time.Minute}})
	a, b := host("10.0.0.1"), host("2001:db8::1")
	var lines int
	now := t0
	for i := range 100 {
		o := p.failed(now, a, 0, true)
		if o.log {
			lines++
			if i > 0 && o.unlogged != 59 {
				t.Errorf("line at failure %d says %d not logged, want 59", i+1, o.unlogged)
			}
		}
		now = now.Add(time.Second)
	}
	if lines != 2 {
		t.Errorf("100 failures over 100 s: %d lines, want 2 (one a minute)", lines)
	}
	if o := p.failed(now, b, 0, true); !o.log {
		t.Errorf("another address's first failure is not logged")
	}
}
