// Package loginguard slows down and records failed logins, for both client front ends (the
// native protocol's SASL PLAIN and the gRPC API's per-call credentials): it counts failures per
// client address and per (address, role), forgetting them with a half-life; from the
// Threshold-th recent failure on, each further attempt from the address waits before its
// password is checked, so that a brute force is slowed by time rather than by the CPU its
// hashing takes; it counts failures by cause in Prometheus metrics and logs them at WARN, at
// most one line per address per interval.
//
// A role is never delayed for everyone: counts are per address (an IPv4 address, an IPv6 /64)
// and per (address, role), so a client logging in from another address is not slowed. A
// success from an address forgets its failures and those of its role there. The attempts that
// wait are bounded per address and in all; one beyond the bounds is refused at once as
// throttled, without a check. The tables are bounded (Config.MaxEntries); when full, the
// entries with the fewest recent failures are forgotten first.
package loginguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/kvnode/kvnode/auth"
	"github.com/kvnode/kvnode/internal/loop"
)

// Authenticator checks a login: the front ends' Authenticator, which package node gives the
// coordinator's executor.
type Authenticator interface {
	Authenticate(ctx context.Context, username, password string) (auth.Login, error)
}

// Clock is the guard's time: Now, and Sleep, which returns after d, or with ctx's error once
// ctx ends first. The zero Config's is the system clock; tests give a manual one
// (loginguardtest.Clock).
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Defaults of the zero Config fields.
const (
	DefaultThreshold         = 10
	DefaultDelay             = time.Second
	DefaultMaxDelay          = 10 * time.Second
	DefaultHalfLife          = 5 * time.Minute
	DefaultMaxWaitingPerHost = 4
	DefaultMaxWaiting        = 1024
	DefaultMaxEntries        = 1 << 16
	DefaultLogInterval       = time.Minute
	// DefaultLogLinesPerSecond bounds the guard's log lines over every address together.
	DefaultLogLinesPerSecond = 10
)

// Options are the guard's knobs that an operator sets (node inlines them into kvnode's
// configuration file; the YAML tags are its keys). The zero value of every field means its
// default.
type Options struct {
	// Threshold is how many recent failed logins from one address, or of one role from one
	// address, make each further attempt wait before its check. Default DefaultThreshold: the
	// 11th attempt in quick succession waits.
	Threshold int `yaml:"login_failure_threshold"`
	// Delay is how long such an attempt waits; it doubles with every further Threshold recent
	// failures, up to MaxDelay. Defaults DefaultDelay and DefaultMaxDelay.
	Delay    time.Duration `yaml:"login_failure_delay"`
	MaxDelay time.Duration `yaml:"login_failure_max_delay"`
	// HalfLife is how fast failures are forgotten: an address's count halves every HalfLife.
	// Default DefaultHalfLife.
	HalfLife time.Duration `yaml:"login_failure_half_life"`
	// MaxWaitingPerHost bounds the attempts from one address waiting at once, MaxWaiting those
	// of every address together; an attempt beyond either is refused at once as throttled.
	// Defaults DefaultMaxWaitingPerHost and DefaultMaxWaiting.
	MaxWaitingPerHost int `yaml:"login_max_waiting_per_host"`
	MaxWaiting        int `yaml:"login_max_waiting"`
	// MaxEntries bounds the addresses, and apart from them the (address, role) pairs, the
	// guard remembers (about 100 bytes each). Default DefaultMaxEntries.
	MaxEntries int `yaml:"login_guard_max_entries"`
	// LogInterval spaces the WARN lines about one address's failed logins: its next line says
	// how many were not logged. Default DefaultLogInterval.
	LogInterval time.Duration `yaml:"login_log_interval"`
	// LogLinesPerSecond bounds the lines over every address together (an attacker cycling
	// addresses). Default DefaultLogLinesPerSecond.
	LogLinesPerSecond int `yaml:"login_log_lines_per_second"`
}

// Config configures a Guard: its Options and what is wired in code. The zero value of every
// field means its default.
type Config struct {
	Options
	// Logger receives the lines. Default slog.Default().
	Logger *slog.Logger
	// Clock is the guard's time. Default the system clock.
	Clock Clock
}

// EnsureDefaults sets the zero fields to their defaults and returns c.
func (c *Config) EnsureDefaults() *Config {
	c.Options.EnsureDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	return c
}

// EnsureDefaults sets the zero fields to their defaults and returns c.
func (c *Options) EnsureDefaults() *Options {
	setDefault(&c.Threshold, DefaultThreshold)
	setDefault(&c.Delay, DefaultDelay)
	setDefault(&c.MaxDelay, max(DefaultMaxDelay, c.Delay))
	setDefault(&c.HalfLife, DefaultHalfLife)
	setDefault(&c.MaxWaitingPerHost, DefaultMaxWaitingPerHost)
	setDefault(&c.MaxWaiting, DefaultMaxWaiting)
	setDefault(&c.MaxEntries, DefaultMaxEntries)
	setDefault(&c.LogInterval, DefaultLogInterval)
	setDefault(&c.LogLinesPerSecond, DefaultLogLinesPerSecond)
	return c
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// Validate reports the first field out of range, naming it and its configuration key.
func (c *Config) Validate() error { return c.Options.Validate() }

// Validate reports the first field out of range, naming it and its configuration key.
func (c *Options) Validate() error {
	switch {
	case c.Threshold < 1:
		return fmt.Errorf("loginguard: Threshold (login_failure_threshold) is %d, want ≥ 1", c.Threshold)
	case c.Delay < 0:
		return fmt.Errorf("loginguard: Delay (login_failure_delay) is %v, want > 0", c.Delay)
	case c.MaxDelay < c.Delay:
		return fmt.Errorf("loginguard: MaxDelay (login_failure_max_delay) is %v, want ≥ Delay (%v)", c.MaxDelay, c.Delay)
	case c.HalfLife < 0:
		return fmt.Errorf("loginguard: HalfLife (login_failure_half_life) is %v, want > 0", c.HalfLife)
	case c.MaxWaitingPerHost < 0:
		return fmt.Errorf("loginguard: MaxWaitingPerHost (login_max_waiting_per_host) is %d, want > 0", c.MaxWaitingPerHost)
	case c.MaxWaiting < 0:
		return fmt.Errorf("loginguard: MaxWaiting (login_max_waiting) is %d, want > 0", c.MaxWaiting)
	case c.MaxEntries < shardCount:
		return fmt.Errorf("loginguard: MaxEntries (login_guard_max_entries) is %d, want ≥ %d", c.MaxEntries, shardCount)
	case c.LogInterval < 0:
		return fmt.Errorf("loginguard: LogInterval (login_log_interval) is %v, want > 0", c.LogInterval)
	case c.LogLinesPerSecond < 0:
		return fmt.Errorf("loginguard: LogLinesPerSecond (login_log_lines_per_second) is %d, want > 0", c.LogLinesPerSecond)
	}
	return nil
}

// systemClock is the real time.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	return loop.Sleep(ctx, d)
}

// The protocols the metrics name; a front end passes its own to Authenticate.
const (
	Native = "native"
	GRPC   = "grpc"
)

// reasons are the values of the failures' reason label, in auth.LoginFailure order from
// FailureBadPassword (an unspecified failure counts as bad_password).
var reasons = []auth.LoginFailure{auth.FailureBadPassword, auth.FailureUnknownRole, auth.FailureNotPermitted, auth.FailureMalformed, auth.FailureThrottled}

// Guard applies the policy to the logins of a node's front ends; one Guard serves them all,
// so that an address's failures over one protocol slow its attempts over the other. It is
// safe for concurrent use. A nil *Guard checks logins without counting, logging or delaying
// them.
type Guard struct {
	p       *policy
	clock   Clock
	log     *slog.Logger
	lines   *rate.Limiter // the log lines of every address together
	maxWait int

	failuresVec *prometheus.CounterVec
	delayedVec  *prometheus.CounterVec
	waiting     prometheus.GaugeFunc
	failures    [2][]prometheus.Counter // by protocol (native, grpc) and reason, resolved once
	delayed     [2]prometheus.Counter
}

// New returns a guard for cfg.
func New(cfg Config) (*Guard, error) {
	if err := cfg.EnsureDefaults().Validate(); err != nil {
		return nil, err
	}
	g := &Guard{
		p:       newPolicy(&cfg),
		clock:   cfg.Clock,
		log:     cfg.Logger,
		lines:   rate.NewLimiter(rate.Limit(cfg.LogLinesPerSecond), cfg.LogLinesPerSecond),
		maxWait: cfg.MaxWaitingPerHost,
		failuresVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "auth", Name: "failures_total",
			Help: "Failed logins, by protocol (native, grpc) and reason: bad_password (a role whose password did not match), unknown_role (a username that names no role), not_permitted (a role without LOGIN), malformed (credentials missing or unparseable), throttled (refused without a check: too many attempts from the address wait already).",
		}, []string{"protocol", "reason"}),
		delayedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kvnode", Subsystem: "auth", Name: "delayed_logins_total",
			Help: "Logins made to wait before their check because their address (or their role from that address) failed too often recently, by protocol.",
		}, []string{"protocol"}),
	}
	g.waiting = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kvnode", Subsystem: "auth", Name: "waiting_logins",
		Help: "Logins waiting now before their check (delayed_logins_total).",
	}, func() float64 { _, _, w := g.p.sizes(); return float64(w) })
	for i, proto := range []string{Native, GRPC} {
		for _, r := range reasons {
			g.failures[i] = append(g.failures[i], g.failuresVec.WithLabelValues(proto, r.String()))
		}
		g.delayed[i] = g.delayedVec.WithLabelValues(proto)
	}
	return g, nil
}

// failureCounter returns the counter of protocol's failures for cause.
func (g *Guard) failureCounter(protocol string, cause auth.LoginFailure) prometheus.Counter {
	if cause == auth.FailureUnspecified {
		cause = auth.FailureBadPassword
	}
	r := int(cause - auth.FailureBadPassword)
	switch protocol {
	case Native:
		return g.failures[0][r]
	case GRPC:
		return g.failures[1][r]
	}
	return g.failuresVec.WithLabelValues(protocol, cause.String())
}

func (g *Guard) delayedCounter(protocol string) prometheus.Counter {
	switch protocol {
	case Native:
		return g.delayed[0]
	case GRPC:
		return g.delayed[1]
	}
	return g.delayedVec.WithLabelValues(protocol)
}

// Authenticate checks the login of username with password from remote through a, under the
// policy: an attempt from an address (or of the role from it) that failed Threshold times
// recently first waits (Sleep of the guard's clock; ctx ending stops the wait and returns its
// error), or, when too many wait already, is refused at once with an *auth.AuthenticationError
// caused by auth.FailureThrottled; a failure (an *auth.AuthenticationError from a) is counted
// and logged; a success forgets the address's failures. Errors that are no failed login (the
// roles cannot be read) are returned as they are, neither counted nor logged.
func (g *Guard) Authenticate(ctx context.Context, a Authenticator, protocol string, remote net.Addr, username, password string) (auth.Login, error) {
	if g == nil {
		return a.Authenticate(ctx, username, password)
	}
	host := Host(remote)
	role := g.p.roleKey(username)
	d := g.p.begin(g.clock.Now(), host, role)
	if d.refused != admitted {
		err := &auth.AuthenticationError{Username: username, Cause: auth.FailureThrottled, Reason: g.throttledMessage(host, d)}
		g.record(protocol, host, username, role, auth.FailureThrottled, false)
		return auth.Login{}, err
	}
	if d.delay > 0 {
		g.delayedCounter(protocol).Inc()
		err := g.clock.Sleep(ctx, d.delay)
		g.p.done(host)
		if err != nil {
			return auth.Login{}, err
		}
	}
	login, err := a.Authenticate(ctx, username, password)
	var ae *auth.AuthenticationError
	switch {
	case err == nil:
		g.p.succeeded(host, role)
	case errors.As(err, &ae):
		g.record(protocol, host, username, role, ae.Cause, ae.Cause != auth.FailureMalformed)
	}
	return login, err
}

// Malformed records a login from remote whose credentials the front end could not parse
// (why), before any check: counted and logged, but no password was tried, so it does not count
// toward the address's delay.
func (g *Guard) Malformed(protocol string, remote net.Addr, why string) {
	if g == nil {
		return
	}
	g.record(protocol, Host(remote), why, 0, auth.FailureMalformed, false)
}

// throttledMessage is the refusal's message: the client learns why and what to do.
func (g *Guard) throttledMessage(host netip.Prefix, d decision) string {
	if d.refused == allWaiting {
		return fmt.Sprintf("Login throttled: this node already delays the maximum of logins after repeated failures; %s has %.0f recent failed logins: try again later", hostString(host), d.failures)
	}
	return fmt.Sprintf("Login throttled: %s has %.0f recent failed logins, so each login from it waits %v before its check, and %d already wait: try again later", hostString(host), d.failures, d.delay, g.maxWait)
}

// maxLoggedName bounds the username a log line shows: it is the client's to choose.
const maxLoggedName = 64

// record counts a failure and logs it when the policy says so.
func (g *Guard) record(protocol string, host netip.Prefix, username string, role uint64, cause auth.LoginFailure, counted bool) {
	g.failureCounter(protocol, cause).Inc()
	now := g.clock.Now()
	o := g.p.failed(now, host, role, counted)
	if !o.log {
		return
	}
	if !g.lines.AllowN(now, 1) {
		g.p.unlog(host, o)
		return
	}
	if len(username) > maxLoggedName {
		username = username[:maxLoggedName] + "…"
	}
	if cause == auth.FailureUnspecified {
		cause = auth.FailureBadPassword
	}
	msg := "failed login"
	what := "role"
	switch cause {
	case auth.FailureThrottled:
		msg = "login refused: too many logins from its address wait already after failing"
	case auth.FailureMalformed:
		what = "why"
	}
	g.log.Warn(msg, "protocol", protocol, "remote", hostString(host), what, username, "reason", cause.String(),
		"recent_failures", int(o.failures+0.5), "not_logged", o.unlogged)
}

// Collector returns the guard's metrics for the node's registry.
func (g *Guard) Collector() prometheus.Collector { return collector{g} }

type collector struct{ g *Guard }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	c.g.failuresVec.Describe(ch)
	c.g.delayedVec.Describe(ch)
	c.g.waiting.Describe(ch)
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.g.failuresVec.Collect(ch)
	c.g.delayedVec.Collect(ch)
	c.g.waiting.Collect(ch)
}

// Host returns the address a connection from addr counts as: its IPv4 address, or its IPv6
// address's /64 (what one machine is commonly given). A non-IP address is one unnamed host.
func Host(addr net.Addr) netip.Prefix {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	case *net.UDPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		return netip.Prefix{}
	}
	ip = ip.Unmap()
	if !ip.IsValid() {
		return netip.Prefix{}
	}
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// hostString shows host in logs and messages: an IPv4 address alone, an IPv6 prefix whole.
func hostString(host netip.Prefix) string {
	switch {
	case !host.IsValid():
		return "(unknown address)"
	case host.Addr().Is4():
		return host.Addr().String()
	}
	return host.String()
}
