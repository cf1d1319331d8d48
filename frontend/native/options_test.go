package native

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsEnsureDefaults(t *testing.T) {
	defaults := Options{MaxConnections: DefaultMaxConnections, MaxInFlight: DefaultMaxInFlight,
		MaxConnectionBytes: DefaultMaxConnectionBytes, MaxServerBytes: DefaultMaxServerBytes,
		PreparedCacheSize: DefaultPreparedCacheSize, PreparedCacheBytes: DefaultPreparedCacheBytes, EventQueue: DefaultEventQueue,
		MaxPreLoginFrameSize: DefaultMaxPreLoginFrameSize, MaxPreLoginConnectionsPerHost: DefaultMaxPreLoginConnectionsPerHost}
	set := Options{MaxConnections: 1, MaxInFlight: 2, MaxConnectionBytes: 3, MaxServerBytes: 4, PreparedCacheSize: 5,
		PreparedCacheBytes: 6, EventQueue: 7, MaxPreLoginFrameSize: 8, MaxPreLoginConnectionsPerHost: 9}
	for _, tc := range []struct {
		name    string
		in, out Options
	}{
		{"zero", Options{}, defaults},
		{"all set", set, set},
		{"one set", Options{MaxInFlight: 9}, func() Options { o := defaults; o.MaxInFlight = 9; return o }()},
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

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Executor = nil }, "native: Config.Executor is nil"},
		{func(c *Config) { c.MaxFrameSize = -1 }, "native: Config.MaxFrameSize is -1, want a positive number of bytes"},
		{func(c *Config) { c.HandshakeTimeout = -time.Second }, "native: Config.HandshakeTimeout is -1s, want a positive duration"},
		{func(c *Config) { c.MaxConnections = -1 }, "native: Options.MaxConnections (max_native_connections) is -1, want 1 to 2147483647"},
		{func(c *Config) { c.MaxInFlight = MaxInFlightLimit + 1 }, "native: Options.MaxInFlight (max_native_requests_per_connection) is 32769, want 1 to 32768 (the stream ids of a connection)"},
		{func(c *Config) { c.MaxConnectionBytes = -1 }, "native: Options.MaxConnectionBytes (max_native_connection_bytes) is -1, want a positive number of bytes"},
		{func(c *Config) { c.MaxServerBytes = -1 }, "native: Options.MaxServerBytes (max_native_bytes) is -1, want a positive number of bytes"},
		{func(c *Config) { c.PreparedCacheSize = -1 }, "native: Options.PreparedCacheSize is -1, want 1 to 2147483647"},
		{func(c *Config) { c.PreparedCacheBytes = -1 }, "native: Options.PreparedCacheBytes is -1, want a positive number of bytes"},
		{func(c *Config) { c.EventQueue = -1 }, "native: Options.EventQueue is -1, want 1 to 2147483647"},
		{func(c *Config) { c.MaxPreLoginFrameSize = -1 }, "native: Options.MaxPreLoginFrameSize (max_native_prelogin_frame_size) is -1, want a positive number of bytes"},
		{func(c *Config) { c.MaxPreLoginConnectionsPerHost = -1 }, "native: Options.MaxPreLoginConnectionsPerHost (max_native_prelogin_connections_per_host) is -1, want 1 to 2147483647"},
	} {
		c := Config{Executor: &fakeExecutor{}}
		c.EnsureDefaults()
		tc.set(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New() = %v, want an error containing %q", err, tc.want)
		}
	}
	if c := (&Config{}).EnsureDefaults(); c.MaxFrameSize == 0 || c.HandshakeTimeout != DefaultHandshakeTimeout || c.Logger == nil || c.MaxInFlight != DefaultMaxInFlight {
		t.Errorf("EnsureDefaults on zero Config = %+v, want the defaults, its Options' among them", c)
	}
}
