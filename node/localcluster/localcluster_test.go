package localcluster_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/node/localcluster"
)

// TestStopRestartKeepsIdentityAndMembership stops a node, checks the others see it down in
// Members, restarts it and checks it comes back with its id and data, seen live by everyone.
func TestStopRestartKeepsIdentityAndMembership(t *testing.T) {
	ctx := context.Background()
	tc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tc.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	for i := range 3 {
		if ms := tc.Members(i); len(ms) != 3 || !ms[0].Live || !ms[1].Live || !ms[2].Live {
			t.Fatalf("n%d sees members %+v, want 3 live", i+1, ms)
		}
	}
	c := tc.Node(0).Client()
	for _, stmt := range []string{
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE k.t (k int PRIMARY KEY, v int)",
		"INSERT INTO k.t (k, v) VALUES (1, 2)",
	} {
		if _, err := c.Execute(ctx, client.All, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	id := tc.Node(1).ID
	if err := tc.Stop(1); err != nil {
		t.Fatal(err)
	}
	if tc.Node(1).Running() || tc.Node(1).Client() != nil || tc.Members(1) != nil || len(tc.Running()) != 2 {
		t.Fatalf("after Stop(1): running %v, client %v, members %v, %d running; want a stopped node", tc.Node(1).Running(), tc.Node(1).Client(), tc.Members(1), len(tc.Running()))
	}
	if err := tc.WaitSeenDown(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, m := range tc.Members(0) {
		if m.ID == id && m.Live {
			t.Errorf("n1 sees the stopped n2 (%s) live", id)
		}
	}

	if err := tc.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := tc.Node(1).ID; got != id {
		t.Errorf("n2 restarted with id %s, want %s", got, id)
	}
	res, err := tc.Node(1).Client().Execute(ctx, client.One, "SELECT v FROM k.t WHERE k = 1")
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != int32(2) {
		t.Errorf("SELECT through the restarted n2 = %v, %v; want [[2]]", res, err)
	}
	if err := tc.WaitLive(ctx, tc.Nodes(), 3); err != nil {
		t.Fatal(err)
	}
	if err := tc.Restart(ctx, 1); err == nil {
		t.Errorf("Restart of a running node succeeded, want an error")
	}
}

func TestOptions(t *testing.T) {
	var o localcluster.Options
	o.EnsureDefaults()
	if o.Nodes != 3 || o.Profile != cluster.ProfileTest || o.ClusterName == "" || o.Logger == nil || o.LogKey == "" || o.StartTimeout <= 0 {
		t.Errorf("EnsureDefaults on zero Options = %+v, want every default", o)
	}
	once := o
	if o.EnsureDefaults(); !reflect.DeepEqual(o, once) {
		t.Errorf("EnsureDefaults twice = %+v, want once = %+v", o, once)
	}
	set := localcluster.Options{Dir: "d", Nodes: 1, Profile: cluster.ProfileLocal, ClusterName: "c", LogKey: "k", StartTimeout: time.Second}
	if set.EnsureDefaults(); set.Nodes != 1 || set.Profile != cluster.ProfileLocal || set.ClusterName != "c" || set.LogKey != "k" || set.StartTimeout != time.Second {
		t.Errorf("EnsureDefaults changed set fields: %+v", set)
	}
	for _, tc := range []struct {
		o    localcluster.Options
		want string
	}{
		{localcluster.Options{}, "localcluster: Options.Dir is required"},
		{localcluster.Options{Dir: "d", Nodes: -1}, "localcluster: Options.Nodes is -1, want at least 1"},
		{localcluster.Options{Dir: "d", StartTimeout: -time.Second}, "localcluster: Options.StartTimeout is -1s, want a positive duration"},
	} {
		if _, err := localcluster.Start(t.Context(), tc.o); err == nil || err.Error() != tc.want {
			t.Errorf("Start(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}
