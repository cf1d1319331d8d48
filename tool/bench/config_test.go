package bench

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
)

func TestParseFlagsReadsEveryFlag(t *testing.T) {
	args := []string{
		"--protocol", "grpc", "--addrs", "127.0.0.1:9043, 10.0.0.2:9043", "--coordinator", "fixed", "--table", "shop.carts",
		"--writes", "0.25", "--cl", "quorum", "--partitions", "50", "--hot", "0.9", "--rate", "1500",
		"--concurrency", "64", "--duration", "30s", "--seed", "42", "--json",
	}
	got, err := ParseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("ParseFlags(%q) failed: %v", args, err)
	}
	want := Config{
		Protocol: ProtocolGRPC, Addrs: []string{"127.0.0.1:9043", "10.0.0.2:9043"}, Coordinator: Fixed, Table: "shop.carts",
		Writes: 0.25, Consistency: client.Quorum, Partitions: 50, Hot: 0.9, Rate: 1500,
		Concurrency: 64, Duration: 30 * time.Second, Seed: 42, JSON: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFlags(%q) =\n%+v, want\n%+v", args, got, want)
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	got, err := ParseFlags([]string{"-table", "ks.t"}, io.Discard)
	if err != nil {
		t.Fatalf("ParseFlags with only -table failed: %v", err)
	}
	want := DefaultConfig()
	want.Table = "ks.t"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFlags(-table ks.t) = %+v, want the defaults %+v", got, want)
	}
}

func TestParseFlagsRejectsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // substrings of the error: the flag and the value
	}{
		{[]string{"--writes", "1.5"}, []string{"--writes", "1.5"}},
		{[]string{"--writes", "-0.1"}, []string{"--writes", "-0.1"}},
		{[]string{"--writes", "NaN"}, []string{"--writes", "NaN"}},
		{[]string{"--hot", "-1"}, []string{"--hot", "-1"}},
		{[]string{"--hot", "2"}, []string{"--hot", "2"}},
		{[]string{"--concurrency", "0"}, []string{"--concurrency", "0"}},
		{[]string{"--concurrency", "1000000"}, []string{"--concurrency", "1000000"}},
		{[]string{"--coordinator", "foo"}, []string{"--coordinator", "foo"}},
		{[]string{"--protocol", "http"}, []string{"--protocol", "http"}},
		{[]string{"--protocol", "grpc", "--coordinator", "tokenaware"}, []string{"--coordinator tokenaware", "--protocol cql"}},
		{[]string{"--cl", "SERIAL"}, []string{"--cl", "SERIAL"}},
		{[]string{"--partitions", "0"}, []string{"--partitions", "0"}},
		{[]string{"--partitions", "-3"}, []string{"--partitions", "-3"}},
		{[]string{"--rate", "-5"}, []string{"--rate", "-5"}},
		{[]string{"--rate", "+Inf"}, []string{"--rate", "+Inf"}},
		{[]string{"--duration", "0s"}, []string{"--duration", "0s"}},
		{[]string{"--duration", "-1s"}, []string{"--duration", "-1s"}},
		{[]string{"--duration", "10"}, []string{"duration", "10"}},
		{[]string{"--writes", "half"}, []string{"writes", "half"}},
		{[]string{"--addrs", ""}, []string{"--addrs", "empty"}},
		{[]string{"--addrs", "a:1,,b:2"}, []string{"--addrs", "a:1,,b:2"}},
		{[]string{"--addrs", "localhost"}, []string{"--addrs", "localhost"}},
		{[]string{"--table", "tbl"}, []string{"--table", "tbl", "keyspace"}},
		{[]string{"--table", "ks.t; DROP TABLE ks.t"}, []string{"--table", "DROP TABLE"}},
		{[]string{"--table", ""}, []string{"--table", "required"}},
		{[]string{"--nope"}, []string{"nope"}},
		{[]string{"extra"}, []string{"extra"}},
	} {
		args := tc.args
		if !hasFlag(args, "--table") {
			args = append([]string{"--table", "ks.t"}, args...)
		}
		_, err := ParseFlags(args, io.Discard)
		if err == nil {
			t.Errorf("ParseFlags(%q) succeeded, want an error", args)
			continue
		}
		for _, s := range tc.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("ParseFlags(%q) error %q does not mention %q", args, err, s)
			}
		}
	}
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name {
			return true
		}
	}
	return false
}

func TestParseFlagsAcceptsEdges(t *testing.T) {
	for _, args := range [][]string{
		{"--writes", "0"}, {"--writes", "1"}, {"--hot", "0"}, {"--hot", "1"},
		{"--hot", "1", "--partitions", "0"}, {"--rate", "0"}, {"--concurrency", "1"},
		{"--table", `ks."Mixed Case"`}, {"--table", "KS.T"}, {"--cl", "local_quorum"},
	} {
		args = append([]string{"--table", "ks.t"}, args...)
		if _, err := ParseFlags(args, io.Discard); err != nil {
			t.Errorf("ParseFlags(%q) failed: %v; want it accepted", args, err)
		}
	}
}

func TestParseFlagsHelp(t *testing.T) {
	var out strings.Builder
	_, err := ParseFlags([]string{"-h"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("ParseFlags(-h) error = %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"-protocol", "-addrs", "-coordinator", "-table", "-writes", "-cl", "-partitions", "-hot", "-rate", "-concurrency", "-duration", "-seed", "-json"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("help text does not list %s:\n%s", name, out.String())
		}
	}
}

func TestValidateZeroConfigNamesAFlag(t *testing.T) {
	err := Config{}.Validate()
	if err == nil || !strings.Contains(err.Error(), "--") {
		t.Errorf("Config{}.Validate() = %v, want an error naming a flag", err)
	}
}

// TestParseFlagsDefaultsFollowTheProtocol checks that the address and coordinator defaults are
// the native protocol's (9042, token-aware) unless --protocol grpc asks for the gRPC API's
// (9043, round-robin), and that explicit flags win.
func TestParseFlagsDefaultsFollowTheProtocol(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		proto Protocol
		addrs []string
		coord Coordinator
	}{
		{nil, ProtocolCQL, []string{"127.0.0.1:9042"}, TokenAware},
		{[]string{"--protocol", "grpc"}, ProtocolGRPC, []string{"127.0.0.1:9043"}, RoundRobin},
		{[]string{"--protocol", "cql", "--coordinator", "fixed", "--addrs", "10.0.0.1:9042,10.0.0.2:9042"}, ProtocolCQL, []string{"10.0.0.1:9042", "10.0.0.2:9042"}, Fixed},
		{[]string{"--protocol", "grpc", "--addrs", "10.0.0.1:7"}, ProtocolGRPC, []string{"10.0.0.1:7"}, RoundRobin},
	} {
		args := append([]string{"--table", "ks.t"}, tc.args...)
		got, err := ParseFlags(args, io.Discard)
		if err != nil {
			t.Errorf("ParseFlags(%q) failed: %v", args, err)
			continue
		}
		if got.Protocol != tc.proto || !reflect.DeepEqual(got.Addrs, tc.addrs) || got.Coordinator != tc.coord {
			t.Errorf("ParseFlags(%q): protocol %q, addrs %q, coordinator %q; want %q, %q, %q",
				args, got.Protocol, got.Addrs, got.Coordinator, tc.proto, tc.addrs, tc.coord)
		}
	}
}
