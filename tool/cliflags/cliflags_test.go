package cliflags

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantErr  string // substring; "" means success
		wantHelp bool
	}{
		{args: []string{"--rate", "5"}},
		{args: []string{"--rate", "x"}, wantErr: `bench: invalid value "x" for flag -rate`},
		{args: []string{"--nope"}, wantErr: "bench: flag provided but not defined: -nope (kvnode bench -h lists the flags)"},
		{args: []string{"extra"}, wantErr: `bench: unexpected argument "extra"`},
		{args: []string{"-h"}, wantHelp: true},
	} {
		fs := flag.NewFlagSet("kvnode bench", flag.ContinueOnError)
		fs.Int("rate", 0, "offered `ops/s`")
		var stderr bytes.Buffer
		err := Parse(fs, tc.args, "bench", "Usage: kvnode bench [flags]\n", &stderr)
		switch {
		case tc.wantHelp:
			if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "Usage: kvnode bench") || !strings.Contains(stderr.String(), "-rate") {
				t.Errorf("Parse(-h) = %v with stderr %q, want ErrHelp and the usage with the flags", err, stderr.String())
			}
		case tc.wantErr == "":
			if err != nil || stderr.Len() > 0 {
				t.Errorf("Parse(%q) = %v, stderr %q; want success and no output", tc.args, err, stderr.String())
			}
		default:
			var ue *UsageError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ue) || stderr.Len() > 0 {
				t.Errorf("Parse(%q) = %v (%T), stderr %q; want a *UsageError containing %q and no output", tc.args, err, err, stderr.String(), tc.wantErr)
			}
		}
	}
}
