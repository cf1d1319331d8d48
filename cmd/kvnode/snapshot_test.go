package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/node/localcluster"
	"github.com/kvnode/kvnode/tool/cliflags"
)

func TestParseSnapshotFlags(t *testing.T) {
	for _, tc := range []struct {
		args                         []string
		tag, restore, keyspace, tabl string
		list, clear, all             bool
	}{
		{args: nil},
		{args: []string{"--tag", "b1", "ks"}, tag: "b1", keyspace: "ks"},
		{args: []string{"ks.t", "--tag", "b1"}, tag: "b1", keyspace: "ks", tabl: "t"},
		{args: []string{"--list"}, list: true},
		{args: []string{"--clear", "b1"}, clear: true, tag: "b1"},
		{args: []string{"--clear", "--all"}, clear: true, all: true},
		{args: []string{"--restore", "b1", `"Ks".t`}, restore: "b1", keyspace: "Ks", tabl: "t"},
	} {
		c, err := parseSnapshotFlags(tc.args, io.Discard)
		if err != nil || c.tag != tc.tag || c.restore != tc.restore || c.keyspace != tc.keyspace || c.table != tc.tabl ||
			c.list != tc.list || c.clear != tc.clear || c.all != tc.all {
			t.Errorf("kvnode snapshot %q: %+v, %v", tc.args, c, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tag", "../x"}, "path separator"},
		{[]string{"--tag", ".."}, "starts with '.'"},
		{[]string{"--clear"}, "--clear needs one TAG"},
		{[]string{"--clear", "a/b"}, "path separator"},
		{[]string{"--clear", "--all", "x"}, "takes no tag"},
		{[]string{"--all"}, "--all goes with --clear"},
		{[]string{"--list", "--clear", "x"}, "at most one of"},
		{[]string{"--list", "ks"}, "--list takes no argument"},
		{[]string{"--tag", "x", "--restore", "y"}, "--tag names a snapshot to take"},
		{[]string{"a", "b"}, `unexpected argument "b"`},
		{[]string{"a.b.c"}, `"a.b.c" is not a keyspace or keyspace.table`},
		{[]string{"--timeout", "0s"}, "--timeout 0s is not positive"},
	} {
		_, err := parseSnapshotFlags(tc.args, io.Discard)
		var usage *cliflags.UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kvnode snapshot %q: error %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	var help strings.Builder
	if _, err := parseSnapshotFlags([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "Usage: kvnode snapshot") {
		t.Errorf("-h: %v, printed %q", err, help.String())
	}
}

// TestSnapshotCommand runs kvnode snapshot against a real node: take, list (text and JSON),
// refuse a tag in use and an unknown table, clear.
func TestSnapshotCommand(t *testing.T) {
	c, err := localcluster.Start(context.Background(), localcluster.Options{Dir: t.TempDir(), Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
		"INSERT INTO ks.t (k, v) VALUES (1, 'one')",
	} {
		if _, err := c.Node(0).Client().Execute(ctx, client.One, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	addr := c.Node(0).Addr()
	snap := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(ctx, append([]string{"snapshot", "--addr", addr}, args...), nil, &out, io.Discard)
		return out.String(), err
	}
	if out, err := snap("--tag", "b1", "ks.t"); err != nil || !strings.Contains(out, "snapshot b1 of table ks.t (1 tables) taken in") {
		t.Fatalf("take: %q, %v", out, err)
	}
	if out, err := snap("--list"); err != nil || !strings.Contains(out, "b1") || !strings.Contains(out, "table ks.t") || !strings.Contains(out, "manual") {
		t.Errorf("--list: %q, %v", out, err)
	}
	out, err := snap("--list", "--json")
	var list struct {
		Snapshots []struct {
			Tag    string   `json:"tag"`
			Tables []string `json:"tables"`
		} `json:"snapshots"`
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Snapshots) != 1 || list.Snapshots[0].Tag != "b1" {
		t.Errorf("--list --json: %q, %v", out, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tag", "b1"}, "snapshot b1: a snapshot with this tag exists already"},
		{[]string{"ks.nope"}, "table ks.nope: not found"},
		{[]string{"--clear", "nope"}, "snapshot nope: not found"},
	} {
		if _, err := snap(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) || exitStatus(err, io.Discard) != 1 {
			t.Errorf("kvnode snapshot %q: %v, want exit status 1 with %q", tc.args, err, tc.want)
		}
	}
	if out, err := snap("--clear", "b1"); err != nil || !strings.Contains(out, "cleared snapshot b1") {
		t.Errorf("--clear b1: %q, %v", out, err)
	}
	if out, err := snap("--list"); err != nil || !strings.Contains(out, "no snapshots") {
		t.Errorf("--list after --clear: %q, %v", out, err)
	}
}
