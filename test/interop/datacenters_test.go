package interop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/test/proc"
)

// dcConfig is what python/dcaware.py and node/dcaware.js read.
type dcConfig struct {
	Port       int      `json:"port"`
	Keyspace   string   `json:"keyspace"`
	LocalDC    string   `json:"local_dc"`
	Hosts      []string `json:"hosts"`
	Prefix     string   `json:"prefix"`
	Rows       int      `json:"rows"`
	EachQuorum string   `json:"each_quorum"` // "ok" or "unavailable"
}

// TestDriversDataCenters runs the three drivers with DC-aware policies against two data centers
// of two processes each (n1, n2 in dc1; n3, n4 in dc2) and a keyspace of NetworkTopologyStrategy
// {'dc1': 2, 'dc2': 2}. With every node up, each driver local to dc1 writes and reads at
// LOCAL_QUORUM through dc1's nodes only, and EACH_QUORUM succeeds. With dc2 down, LOCAL_QUORUM
// through dc1 still succeeds and EACH_QUORUM is Unavailable; then dc2 is back and dc1 down,
// and the same holds through dc2 with the drivers local to it. Once all are up again, every
// acknowledged row reads back at ALL (hints fill the replicas that were down). It skips unless
// DriversEnv is set, as TestDrivers.
func TestDriversDataCenters(t *testing.T) {
	nodePath := requireDrivers(t)
	extra := [][]string{{"--dc", "dc1", "--rack", "r1"}, {"--dc", "dc1", "--rack", "r2"}, {"--dc", "dc2", "--rack", "r1"}, {"--dc", "dc2", "--rack", "r2"}}
	c := startClusterWith(t, proc.Options{Hosts: proc.LoopbackHosts(4), ExtraArgs: extra, Sync: true}) // killed with -9: writes must be on disk
	hosts := c.Hosts()
	dcHosts := map[string][]string{"dc1": hosts[:2], "dc2": hosts[2:]}
	dcNodes := map[string][]*proc.Node{"dc1": c.Nodes[:2], "dc2": c.Nodes[2:]}

	admin, err := newGocqlCluster(hosts, c.CQLPort).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, ddl := range []string{
		"CREATE KEYSPACE dcks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
		"CREATE TABLE dcks.t (k text PRIMARY KEY, v int)",
	} {
		if err := admin.Query(ddl).Exec(); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}

	var acked []string
	// phase runs the three drivers local to dc with EACH_QUORUM expected as each says.
	phase := func(name, dc, each string) {
		t.Helper()
		for _, d := range []struct {
			name string
			argv []string
		}{
			{"python", []string{pythonPath, "-B", filepath.Join("python", "dcaware.py")}},
			{"node", []string{nodePath, filepath.Join("node", "dcaware.js")}},
		} {
			prefix := fmt.Sprintf("%s-%s", name, d.name)
			out, err := runScript(t, d.argv, dcConfig{Port: c.CQLPort, Keyspace: "dcks", LocalDC: dc, Hosts: dcHosts[dc],
				Prefix: prefix, Rows: 10, EachQuorum: each})
			if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
				t.Errorf("%s: the %s driver local to %s failed (%v); its output is above", name, d.name, dc, err)
				continue
			}
			for i := range 10 {
				acked = append(acked, fmt.Sprintf("%s-%d", prefix, i))
			}
		}
		acked = append(acked, gocqlLocal(t, name, dc, dcHosts[dc], c.CQLPort, each)...)
	}
	wait := func(down ...*proc.Node) {
		t.Helper()
		want := c.AllUp()
		var observers []*proc.Node
		for _, n := range c.Nodes {
			if slices.Contains(down, n) {
				want[n.ID] = "DOWN"
			} else {
				observers = append(observers, n)
			}
		}
		if err := c.WaitStates(context.Background(), joinTimeout, observers, want); err != nil {
			t.Fatal(err)
		}
	}
	phase("up", "dc1", "ok")
	for _, dc := range []string{"dc2", "dc1"} {
		local := map[string]string{"dc2": "dc1", "dc1": "dc2"}[dc]
		for _, n := range dcNodes[dc] {
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		wait(dcNodes[dc]...)
		phase(dc+"-down", local, "unavailable")
		for _, n := range dcNodes[dc] {
			if err := n.Start(); err != nil {
				t.Fatal(err)
			}
		}
		wait()
	}
	// Every acknowledged row is on every replica once the hints of the downtimes are replayed.
	s, err := newGocqlCluster(hosts, c.CQLPort).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	poll.Must(t, joinTimeout, "every acknowledged row reads back at ALL", func() error {
		for _, k := range acked {
			var v int
			if err := s.Query("SELECT v FROM dcks.t WHERE k = ?", k).Consistency(gocql.All).Scan(&v); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	})
}

// gocqlLocal is the phase's gocql part: a session whose DC-aware, token-aware policy is local to
// dc writes and reads ten rows at LOCAL_QUORUM, each served by a node of hosts, and one row at
// EACH_QUORUM, which succeeds or is Unavailable as each says. It returns the rows written.
func gocqlLocal(t *testing.T, name, dc string, hosts []string, port int, each string) []string {
	t.Helper()
	cluster := newGocqlCluster(hosts, port)
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(dc))
	cluster.Consistency = gocql.LocalQuorum
	rec := &recorder{}
	cluster.QueryObserver = rec
	s, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("%s: gocql local to %s: %v", name, dc, err)
	}
	defer s.Close()
	var keys []string
	for i := range 10 {
		k := fmt.Sprintf("%s-gocql-%d", name, i)
		if err := s.Query("INSERT INTO dcks.t (k, v) VALUES (?, ?)", k, i).Exec(); err != nil {
			t.Errorf("%s: gocql local to %s: insert %s at LOCAL_QUORUM: %v", name, dc, k, err)
			continue
		}
		var v int
		if err := s.Query("SELECT v FROM dcks.t WHERE k = ?", k).Scan(&v); err != nil || v != i {
			t.Errorf("%s: gocql local to %s: %s reads %d (%v), want %d", name, dc, k, v, err, i)
		}
		keys = append(keys, k)
	}
	for _, a := range rec.take("dcks.t") {
		if !slices.Contains(hosts, a.host) {
			t.Errorf("%s: gocql local to %s sent %q to %s, not to one of %v", name, dc, a.statement, a.host, hosts)
		}
	}
	err = s.Query("INSERT INTO dcks.t (k, v) VALUES (?, 1)", name+"-gocql-each").Consistency(gocql.EachQuorum).Exec()
	var un *gocql.RequestErrUnavailable
	switch {
	case each == "ok" && err != nil:
		t.Errorf("%s: gocql EACH_QUORUM with every node up: %v", name, err)
	case each == "unavailable" && !errors.As(err, &un):
		t.Errorf("%s: gocql EACH_QUORUM with the other data center down: %v, want Unavailable", name, err)
	}
	return keys
}
