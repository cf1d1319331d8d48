package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// fakeAdmin is an Admin service that answers Status with its script, one entry per call, the
// last one again once the script is used up. An entry is a list of node states ("UN", "UJ",
// ...) or an error.
type fakeAdmin struct {
	kvnodepb.UnimplementedAdminServer

	mu     sync.Mutex
	script []any // []string or error
	calls  int
}

func (f *fakeAdmin) Status(context.Context, *kvnodepb.StatusRequest) (*kvnodepb.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	step := f.script[min(f.calls, len(f.script)-1)]
	f.calls++
	if err, ok := step.(error); ok {
		return nil, err
	}
	resp := &kvnodepb.StatusResponse{}
	for i, state := range step.([]string) {
		resp.Nodes = append(resp.Nodes, &kvnodepb.NodeStatus{
			HostId: "host-" + string(rune('a'+i)), Address: "127.0.0." + string(rune('1'+i)) + ":9043",
			State: state, Tokens: 16, LoadBytes: 2048, Owns: 1,
			DataCenter: []string{"dc2", "dc1"}[i%2], Rack: "r" + string(rune('1'+i)),
		})
	}
	return resp, nil
}

func (f *fakeAdmin) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// startAdmin serves f on a loopback port and returns its address.
func startAdmin(t *testing.T, f *fakeAdmin) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	kvnodepb.RegisterAdminServer(srv, f)
	go srv.Serve(lis) // owned by the test: ends at cleanup's Stop
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestStatusWaitsForNodes runs kvnode status --wait-nodes 3 against a node that is not serving
// yet, then sees one node, then three of which one is joining, then three up and normal: it
// waits through all of it, tells stderr what it waits for, and prints the table once.
func TestStatusWaitsForNodes(t *testing.T) {
	f := &fakeAdmin{script: []any{
		status.Error(codes.Unavailable, "connection refused"),
		[]string{"UN"},
		[]string{"UN", "UN", "UJ"},
		[]string{"UN", "UN", "UN"},
	}}
	addr := startAdmin(t, f)
	var stdout, stderr bytes.Buffer
	if err := runStatus(context.Background(), []string{"--addr", addr, "--wait-nodes", "3", "--wait", "1m"}, &stdout, &stderr); err != nil {
		t.Fatalf("status --wait-nodes 3: %v; stderr:\n%s", err, stderr.String())
	}
	wantErr := "waiting for 3 nodes up and normal: the node at " + addr + " does not answer yet …\n" +
		"waiting for 3 nodes up and normal: 1 so far …\n" +
		"waiting for 3 nodes up and normal: 2 so far …\n"
	if stderr.String() != wantErr {
		t.Errorf("stderr is\n%s\nwant\n%s", stderr.String(), wantErr)
	}
	if n := strings.Count(stdout.String(), "UN  "); n != 3 || strings.Count(stdout.String(), "Address") != 2 {
		t.Errorf("status printed, with %d nodes UN:\n%s\nwant the three nodes up and normal, in a table per data center", n, stdout.String())
	}
}

// TestStatusWaitEnds checks how status --wait-nodes ends without enough nodes: on timeout with
// the last table and an error that counts them, at once on an error that is not the node's
// starting up.
func TestStatusWaitEnds(t *testing.T) {
	addr := startAdmin(t, &fakeAdmin{script: []any{[]string{"UN", "DN"}}})
	var stdout, stderr bytes.Buffer
	err := runStatus(context.Background(), []string{"--addr", addr, "--wait-nodes", "2", "--wait", "500ms"}, &stdout, &stderr)
	if want := "status: 1 of the 2 nodes --wait-nodes asks for are up and normal after --wait 500ms"; err == nil || err.Error() != want {
		t.Errorf("status --wait-nodes 2 with one node down = %v, want %q", err, want)
	}
	if !strings.Contains(stdout.String(), "DN  ") {
		t.Errorf("on timeout status printed\n%s\nwant the last table it got", stdout.String())
	}

	f := &fakeAdmin{script: []any{status.Error(codes.PermissionDenied, "log in as a superuser")}}
	addr = startAdmin(t, f)
	stdout.Reset()
	err = runStatus(context.Background(), []string{"--addr", addr, "--wait-nodes", "2", "--wait", "1m"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "PermissionDenied: log in as a superuser") || f.callCount() != 1 {
		t.Errorf("status --wait-nodes against a node that refuses the call = %v after %d calls, want the refusal at once", err, f.callCount())
	}
}

// TestStatusLabelsEffectiveOwnership checks that the table says its ownership is effective
// ownership, and what that counts, and that it groups the nodes by data center, in name order,
// with each node's rack, as nodetool status does.
func TestStatusLabelsEffectiveOwnership(t *testing.T) {
	addr := startAdmin(t, &fakeAdmin{script: []any{[]string{"UN", "UN", "UN"}}})
	var stdout, stderr bytes.Buffer
	if err := runStatus(context.Background(), []string{"--addr", addr}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if !strings.Contains(out, "Owns (effective)  Host ID  Rack\n") || strings.Count(out, "100.0%") != 3 ||
		!strings.Contains(out, "(RF 3 on 3 nodes: 100% each)") {
		t.Errorf("status printed\n%s\nwant the column Owns (effective) and a note on what it counts", out)
	}
	dc1, dc2 := strings.Index(out, "Datacenter: dc1\n=="), strings.Index(out, "Datacenter: dc2\n==")
	b, a, c := strings.Index(out, "host-b   r2"), strings.Index(out, "host-a   r1"), strings.Index(out, "host-c   r3")
	if dc1 < 0 || dc2 < dc1 || !(dc1 < b && b < dc2 && dc2 < a && a < c) {
		t.Errorf("status printed\n%s\nwant dc1 (host-b, rack r2), then dc2 (host-a, r1; host-c, r3)", out)
	}
}

// TestStatusPrintsRepairs: the table of the node's repairs says when each table was last
// repaired, whether it is due, and the automatic repair's progress; --json carries the same.
func TestStatusPrintsRepairs(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	resp := &kvnodepb.StatusResponse{AutoRepair: "on", Repairs: []*kvnodepb.TableRepairStatus{
		{Keyspace: "ks", Table: "a", DueUnixNanos: now.Add(-time.Hour).UnixNano()},
		{Keyspace: "ks", Table: "b", LastRepairedUnixNanos: now.Add(-time.Hour).UnixNano(), DueUnixNanos: now.Add(23 * time.Hour).UnixNano(),
			RangesDone: 12, RangesTotal: 256},
	}}
	var out bytes.Buffer
	if err := printStatus(resp, false, now, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Repairs of this node (auto_repair: on)\n",
		"ks.a   never                    due                      -\n",
		"ks.b   2026-11-29 11:00:00 UTC  2026-11-30 11:00:00 UTC  12/256 ranges\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status printed\n%s\nwant a line %q", out.String(), want)
		}
	}
	out.Reset()
	if err := printStatus(resp, true, now, &out); err != nil {
		t.Fatal(err)
	}
	var got statusJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []statusRepairJSON{
		{Keyspace: "ks", Table: "a", Due: "2026-11-29T11:00:00Z"},
		{Keyspace: "ks", Table: "b", LastRepaired: "2026-11-29T11:00:00Z", Due: "2026-11-30T11:00:00Z", RangesDone: 12, RangesTotal: 256},
	}
	if got.AutoRepair != "on" || !slices.Equal(got.Repairs, want) {
		t.Errorf("status --json: auto_repair %q, repairs %+v; want on, %+v", got.AutoRepair, got.Repairs, want)
	}
}

// TestStatusPrintsDownReason: a node down for a reason of its own (a full disk) has it printed
// under the table, and in --json; the others have none.
func TestStatusPrintsDownReason(t *testing.T) {
	resp := &kvnodepb.StatusResponse{Nodes: []*kvnodepb.NodeStatus{
		{HostId: "n1", State: "UN", Address: "10.0.0.1:9043"},
		{HostId: "n3", State: "DN", Address: "10.0.0.3:9043", LoadBytes: -1, DownReason: "disk full"},
	}}
	var out bytes.Buffer
	if err := printStatus(resp, false, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nn3 is down: disk full (") || strings.Contains(out.String(), "n1 is down") {
		t.Errorf("status printed\n%s\nwant n3 down for a full disk, and nothing of n1", out.String())
	}
	out.Reset()
	if err := printStatus(resp, true, time.Now(), &out); err != nil {
		t.Fatal(err)
	}
	var got statusJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 2 || got.Nodes[0].DownReason != "" || got.Nodes[1].DownReason != "disk full" {
		t.Errorf("status --json: nodes %+v, want n3's down_reason \"disk full\" and none for n1", got.Nodes)
	}
}
