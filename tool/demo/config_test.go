package demo

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/tool/bench"
)

func TestParseFlagsDefaults(t *testing.T) {
	got, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags() with no flags failed: %v", err)
	}
	if got != DefaultConfig() {
		t.Errorf("parseFlags() = %+v, want the defaults %+v", got, DefaultConfig())
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestParseFlagsReadsEveryFlag(t *testing.T) {
	args := []string{"--limit", "20", "--hot-rate", "90", "--background-rate", "40", "--duration", "1m",
		"--coordinator", "fixed", "--protocol", "grpc", "--seed", "7", "--verbose"}
	got, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags(%q) failed: %v", args, err)
	}
	want := Config{Limit: 20, HotRate: 90, BackgroundRate: 40, Duration: time.Minute,
		Coordinator: bench.Fixed, Protocol: bench.ProtocolGRPC, Seed: 7, Verbose: true}
	if got != want {
		t.Errorf("parseFlags(%q) =\n%+v, want\n%+v", args, got, want)
	}
}

func TestParseFlagsRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // substrings of the error: the flag and the value
	}{
		{[]string{"--limit", "0"}, []string{"--limit", "0"}},
		{[]string{"--limit", "-5"}, []string{"--limit", "-5"}},
		{[]string{"--limit", "10abc"}, []string{"-limit", "10abc"}},
		{[]string{"--limit", "1000001"}, []string{"--limit", "1000001"}},
		{[]string{"--hot-rate", "0"}, []string{"--hot-rate", "0"}},
		{[]string{"--hot-rate", "50001"}, []string{"--hot-rate", "50001"}},
		{[]string{"--background-rate", "0"}, []string{"--background-rate", "0"}},
		{[]string{"--background-rate", "1000000"}, []string{"--background-rate", "1000000"}},
		{[]string{"--duration", "0s"}, []string{"--duration", "0s"}},
		{[]string{"--duration", "-3s"}, []string{"--duration", "-3s"}},
		{[]string{"--duration", "1500ms"}, []string{"--duration", "1.5s", "whole number of seconds"}},
		{[]string{"--duration", "11m"}, []string{"--duration", "11m0s"}},
		{[]string{"--duration", "15"}, []string{"-duration", "15", "unit"}},
		{[]string{"--coordinator", "random"}, []string{"--coordinator", "random"}},
		{[]string{"--protocol", "http"}, []string{"--protocol", "http"}},
		{[]string{"--seed", "-1"}, []string{"-seed", "-1"}},
		{[]string{"--nodes", "5"}, []string{"-nodes"}},
		{[]string{"now"}, []string{`"now"`}},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error naming %q", tc.args, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseFlags(%q) = %q, want it to mention %q", tc.args, err, w)
			}
		}
	}
}

func TestParseFlagsHelp(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	for _, w := range []string{"Usage: kvnode demo", "-limit", "-hot-rate", "-background-rate", "-duration", "-coordinator", "-protocol", "-seed", "-verbose"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("kvnode demo -h printed\n%s\nwant it to mention %q", stderr.String(), w)
		}
	}
}
