package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// DriversEnv names the environment variable that makes TestDrivers run: .ci/run sets it to 1
// after installing the drivers (python3-cassandra for /usr/bin/python3, npm ci in node/), so that
// `go test ./...` itself needs neither Python nor Node.js.
const DriversEnv = "KVNODE_INTEROP_DRIVERS"

// pythonPath is Debian's interpreter, the one python3-cassandra installs for; the first python3
// on PATH may be another.
const pythonPath = "/usr/bin/python3"

// scriptTimeout bounds one driver script; it is killed when it passes.
const scriptTimeout = 5 * time.Minute

// driverConfig is what the scripts read (their CONFIG.json): where the cluster is, and kvnode's
// own view of it to compare the driver's with.
type driverConfig struct {
	Hosts    []string            `json:"hosts"`
	Port     int                 `json:"port"`
	Keyspace string              `json:"keyspace"`
	RF       int                 `json:"rf"`
	HostIDs  map[string]string   `json:"host_ids"` // IP address → host id
	Replicas map[string][]string `json:"replicas"` // partition key (text) → IP addresses of its replicas
}

// TestDrivers runs the DataStax Python driver (Debian's python3-cassandra) and Node.js driver
// (npm's cassandra-driver, pinned in node/package.json) against three kvnode processes: each
// script connects, discovers the nodes, checks the schema metadata (and its change after ALTER
// KEYSPACE, learnt from the UPDATED KEYSPACE event), writes and reads every type (issue 32's
// collections, frozen values, tuples, frozen and non-frozen user types, duration and counters
// included, each checked against the driver's metadata) through prepared statements, pages,
// batches, checks its replica placement and routing against kvnode's, replays (Python) its own schema export and kvnode's DESCRIBE of a table with
// Cassandra 3.x and 4.x options on a fresh keyspace, binds values by name (Node.js, which sends
// them with their names unprepared), queries secondary indexes (a regular column; a map's keys,
// values and entries; seen in the driver's metadata) and scans with ALLOW FILTERING (on part of
// a composite partition key too, and on primary key columns beside an indexed one), GROUP BY
// and PER PARTITION LIMIT, unpaged and paged, and meets the rate limiter (a ConfigurationException in Python, a ResponseError with
// code 0x2300 in Node.js: neither driver opts in to ScyllaDB's rate-limit error).
//
// It skips unless DriversEnv is set; once set, a missing driver fails it.
func TestDrivers(t *testing.T) {
	nodePath := requireDrivers(t)

	c := startCluster(t)
	place := newPlacement(c)
	hostIDs := map[string]string{}
	for _, n := range c.Nodes {
		hostIDs[n.Host()] = n.ID
	}
	replicas := map[string][]string{}
	for i := range 30 {
		k := fmt.Sprintf("key-%d", i)
		replicas[k] = place.replicaHosts([]byte(k), rf)
	}
	for _, d := range []struct {
		name, keyspace string
		argv           []string
	}{
		{"python", "interop_py", []string{pythonPath, "-B", filepath.Join("python", "interop.py")}},
		{"node", "interop_node", []string{nodePath, filepath.Join("node", "interop.js")}},
	} {
		t.Run(d.name, func(t *testing.T) {
			cfg := driverConfig{Hosts: c.Hosts(), Port: c.CQLPort, Keyspace: d.keyspace, RF: rf, HostIDs: hostIDs, Replicas: replicas}
			if _, err := runScript(t, d.argv, cfg); err != nil {
				t.Errorf("the %s driver's checks failed (%v); its output is above", d.name, err)
			}
		})
	}
}

// runScript runs a driver script, argv with the path of cfg written as JSON appended, within
// scriptTimeout, logs its output and returns it; it fails the test when the script had to be
// killed.
func runScript(t *testing.T, argv []string, cfg any) ([]byte, error) {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], cfgPath)...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", cmd, out)
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v and was killed", argv[0], scriptTimeout)
	}
	return out, err
}

// requireDrivers skips the test unless DriversEnv is set; once set, it fails the test when a
// driver is missing. It returns the path of node.
func requireDrivers(t *testing.T) string {
	t.Helper()
	if os.Getenv(DriversEnv) == "" {
		t.Skipf("%s is not set: .ci/run sets it after installing the Python and Node.js drivers", DriversEnv)
	}
	if out, err := exec.Command(pythonPath, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import the cassandra driver (apt-get install python3-cassandra): %v\n%s", pythonPath, err, out)
	}
	nodePath, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("no node on PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "cassandra-driver", "package.json")); err != nil {
		t.Fatalf("the Node.js driver is not installed (npm ci in test/interop/node): %v", err)
	}
	return nodePath
}
