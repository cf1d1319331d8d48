package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestOptionsEnsureDefaults(t *testing.T) {
	defaults := Options{ClusterName: DefaultClusterName, NumTokens: DefaultNumTokens, Profile: ProfileLAN,
		DataCenter: DefaultDataCenter, Rack: DefaultRack, SchemaAgreementTimeout: DefaultSchemaAgreementTimeout}
	set := Options{ClusterName: "c", Seeds: []string{"h:1"}, NumTokens: 7, Profile: ProfileTest, DataCenter: "dc2", Rack: "r2",
		SchemaAgreementTimeout: time.Minute}
	for _, tc := range []struct {
		name    string
		in, out Options
	}{
		{"zero", Options{}, defaults},
		{"all set", set, set},
		{"one set", Options{NumTokens: 3}, func() Options { o := defaults; o.NumTokens = 3; return o }()},
	} {
		got := tc.in
		got.EnsureDefaults()
		if !reflect.DeepEqual(got, tc.out) {
			t.Errorf("%s: EnsureDefaults() = %+v, want %+v", tc.name, got, tc.out)
		}
		if twice := got; !reflect.DeepEqual(*twice.EnsureDefaults(), got) {
			t.Errorf("%s: EnsureDefaults twice = %+v, want once = %+v", tc.name, twice, got)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", tc.name, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.ClusterName = strings.Repeat("x", 256) }, "Options.ClusterName (cluster_name) is 256 bytes, want at most 255"},
		{func(o *Options) { o.Seeds = []string{"a:1", "b:-1"} }, `Options.Seeds[1] (seeds) "b:-1" is not host:port`},
		{func(o *Options) { o.NumTokens = -1 }, "Options.NumTokens (num_tokens) is -1, want 1 to 4096"},
		{func(o *Options) { o.NumTokens = MaxNumTokens + 1 }, "Options.NumTokens (num_tokens) is 4097, want 1 to 4096"},
		{func(o *Options) { o.Profile = 9 }, "Options.Profile (profile) is 9, want lan, wan, local or test"},
		{func(o *Options) { o.DataCenter = "east 1" }, `Options.DataCenter (dc): name "east 1" has byte 0x20 at offset 4`},
		{func(o *Options) { o.Rack = strings.Repeat("r", 65) }, "Options.Rack (rack): name is 65 bytes, the limit is 64"},
		{func(o *Options) { o.SchemaAgreementTimeout = -1 }, "Options.SchemaAgreementTimeout (schema_agreement_timeout) is -1ns, want a positive duration"},
	} {
		var o Options
		o.EnsureDefaults()
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestConfigEnsureDefaultsFillsOptions: Config's defaults include its Options', so Start needs
// nothing from its caller but DataDir and Schema.
func TestConfigEnsureDefaultsFillsOptions(t *testing.T) {
	c := Config{DataDir: "/d", Schema: newFakeSchema()}
	c.EnsureDefaults()
	if c.NumTokens != DefaultNumTokens || c.BindAddr != DefaultBindAddr || c.Logger == nil || c.Now == nil {
		t.Errorf("EnsureDefaults() left num_tokens %d, bind address %q, logger %v, clock set %v",
			c.NumTokens, c.BindAddr, c.Logger, c.Now != nil)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}
