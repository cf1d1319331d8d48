package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseRepairFlags(t *testing.T) {
	for _, tc := range []struct {
		args            []string
		keyspace, table string
		addr            string
	}{
		{nil, "", "", "127.0.0.1:9043"},
		{[]string{"ks"}, "ks", "", "127.0.0.1:9043"},
		{[]string{"--addr", "h:1", "ks.t"}, "ks", "t", "h:1"},
		{[]string{"ks.t", "--addr", "h:2"}, "ks", "t", "h:2"},
		{[]string{`"Ks"."T"`}, "Ks", "T", "127.0.0.1:9043"},
		{[]string{"KS.T"}, "ks", "t", "127.0.0.1:9043"},
	} {
		c, err := parseRepairFlags(tc.args, io.Discard)
		if err != nil || c.keyspace != tc.keyspace || c.table != tc.table || c.addr != tc.addr || c.timeout != 24*time.Hour {
			t.Errorf("kvnode repair %q: %+v, %v; want keyspace %q table %q addr %q", tc.args, c, err, tc.keyspace, tc.table, tc.addr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"a", "b"}, `unexpected argument "b"`},
		{[]string{"a.b.c"}, `"a.b.c" is not a keyspace or keyspace.table`},
		{[]string{"--timeout", "0s"}, "--timeout 0s is not positive"},
		{[]string{"--addr", ""}, "--addr is empty"},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
	} {
		if _, err := parseRepairFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kvnode repair %q: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
	var help strings.Builder
	if _, err := parseRepairFlags([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "Usage: kvnode repair") {
		t.Errorf("-h: %v, printed %q", err, help.String())
	}
}
