package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/test/proc"
)

// upgradeFlag runs TestRollingUpgrade, which builds the previous release from git history.
var upgradeFlag = flag.Bool("upgrade", false, "run TestRollingUpgrade: build the release before data format 2 (commit "+previousRelease+") from git history and upgrade a 3-node cluster of it one node at a time (about 30 s with a warm build cache)")

// previousRelease is the last commit of data format 1 (cells without expiry, no FORMAT_VERSION
// file): "today's release" that a rolling upgrade starts from.
const previousRelease = "c3e6d1d55286b57d987390d854e4506484c99c85"

// upgradeTimeout bounds each wait of the upgrade test (a build, a restart, a gate lifting).
const upgradeTimeout = 3 * time.Minute

// TestRollingUpgrade starts three nodes of the previous release (data format 1), writes to several
// tables (deletes, clustering rows, a cell set to null), then restarts the nodes one at a time on
// this release with the same data directories. After each restart everything reads back at
// QUORUM and at ONE through every node, old and new; the mixed cluster takes writes, and refuses
// with a clear error what nodes of format 1 cannot store (USING TTL, default_time_to_live,
// service levels, a keyspace's rate_limit). Once every node runs this release, FORMAT_VERSION
// says replica.FormatVersion everywhere, and TTL writes and ALTER TABLE ADD work.
//
// Run it with: go test ./test/e2e -run TestRollingUpgrade -upgrade
func TestRollingUpgrade(t *testing.T) {
	skipShort(t)
	if !*upgradeFlag {
		t.Skip("e2e: TestRollingUpgrade builds the previous release from git history (about 30 s with a warm build cache); run it with go test ./test/e2e -run TestRollingUpgrade -upgrade")
	}
	oldBinary := buildRelease(t, previousRelease)

	tc := &testCluster{t: t}
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	pc, err := startProcs(root, oldBinary)
	tc.pc = pc
	if pc != nil {
		tc.nodes = pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())

	n1 := tc.nodes[0]
	for _, stmt := range upgradeSchema {
		execute(t, n1.Client(), client.Quorum, stmt)
	}
	want := writeUpgradeData(t, n1.Client())
	checkUpgradeData(t, "on the previous release", tc.nodes, want)
	for _, n := range tc.nodes {
		if got := formatVersion(t, n); got != "none" {
			t.Fatalf("on the previous release, %s's FORMAT_VERSION is %q; want none (a release of format 1 writes none): is it running the previous release?", n.Name, got)
		}
	}

	for i, n := range tc.nodes {
		stage := fmt.Sprintf("after upgrading %d of %d nodes", i+1, len(tc.nodes))
		restartOn(t, tc, n, kvnodeBinary)
		if got, want := formatVersion(t, n), strconv.Itoa(replica.FormatVersion); got != want {
			t.Errorf("%s: %s's FORMAT_VERSION is %q, want %s", stage, n.Name, got, want)
		}
		// The mixed cluster takes writes through every node, old and new.
		for _, m := range tc.nodes {
			k := fmt.Sprintf("%s-%s", strings.ReplaceAll(stage, " ", "-"), m.Name)
			execute(t, m.Client(), client.All, fmt.Sprintf("INSERT INTO up.kv (k, v) VALUES ('%s', %d)", k, len(k)))
			want[kvQuery(k)] = []string{fmt.Sprint(len(k))}
		}
		if i == 0 {
			addColumnMixed(t, n, tc.nodes, want)
		}
		checkUpgradeData(t, stage, tc.nodes, want)
		if i < len(tc.nodes)-1 {
			checkMixedRefusals(t, stage, n, tc.nodes[i+1:])
		}
	}

	// Every node runs this release: the gate lifts once each has learned every member's format.
	for _, n := range tc.nodes {
		poll.Must(t, upgradeTimeout, fmt.Sprintf("a TTL write through %s succeeds once every node runs format 2", n.Name), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			_, err := n.Client().Execute(ctx, client.All, fmt.Sprintf("INSERT INTO up.kv (k, v) VALUES ('ttl-%s', 1) USING TTL 86400", n.Name))
			return err
		})
		_, rows, err := n.Client().Query(context.Background(), client.One, fmt.Sprintf("SELECT TTL(v) FROM up.kv WHERE k = 'ttl-%s'", n.Name))
		if err != nil || len(rows) != 1 || rows[0][0] == nil {
			t.Errorf("SELECT TTL(v) of the TTL write through %s = %v, %v; want one row with a TTL", n.Name, rows, err)
		}
	}
	execute(t, n1.Client(), client.Quorum, "ALTER TABLE up.ck ADD extra text")
	execute(t, n1.Client(), client.Quorum, "ALTER TABLE up.kv WITH default_time_to_live = 3600")
	for _, n := range tc.nodes {
		poll.Must(t, upgradeTimeout, fmt.Sprintf("%s writes the column added by ALTER TABLE ADD", n.Name), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			_, err := n.Client().Execute(ctx, client.Quorum, fmt.Sprintf("UPDATE up.ck SET extra = 'x-%s' WHERE k = 'p0' AND c = 1", n.Name))
			return err
		})
	}
	for _, n := range tc.nodes {
		if got, want := formatVersion(t, n), strconv.Itoa(replica.FormatVersion); got != want {
			t.Errorf("after the upgrade: %s's FORMAT_VERSION is %q, want %s", n.Name, got, want)
		}
	}
	checkUpgradeData(t, "after the upgrade", tc.nodes, want)
	checkUpgradeLogs(t, tc.nodes)
}

// upgradeLogTrouble are log lines that say the old and new releases misunderstood each other:
// gossip or schema one of them could not read, or an error.
var upgradeLogTrouble = []string{"unreadable", "unknown table flags", "unknown format version", "level=ERROR"}

// checkUpgradeLogs fails the test for every line of every run's stderr that says the releases
// misunderstood each other.
func checkUpgradeLogs(t *testing.T, nodes []*node) {
	t.Helper()
	for _, n := range nodes {
		for _, path := range n.Stderrs() {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				continue
			}
			for line := range strings.Lines(string(b)) {
				for _, bad := range upgradeLogTrouble {
					if strings.Contains(line, bad) {
						t.Errorf("%s (%s) logged %q: %s", n.Name, filepath.Base(path), bad, strings.TrimSpace(line))
						break
					}
				}
			}
		}
	}
}

// upgradeSchema is what the previous release creates: two keyspaces, three tables, one with
// clustering rows.
var upgradeSchema = []string{
	"CREATE KEYSPACE up WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE KEYSPACE up2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE TABLE up.kv (k text PRIMARY KEY, v int)",
	"CREATE TABLE up.ck (k text, c int, v text, w bigint, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)",
	"CREATE TABLE up2.blobs (id int PRIMARY KEY, b blob, ok boolean)",
}

// writeUpgradeData writes the data of the upgrade test at ALL (so that a read at ONE through any
// node sees it all) and returns what reads back: query of one partition → its rows as rendered
// by renderRow (none for a deleted partition).
func writeUpgradeData(t *testing.T, c *client.Client) map[string][]string {
	t.Helper()
	want := map[string][]string{}
	for i := range 20 {
		execute(t, c, client.All, fmt.Sprintf("INSERT INTO up.kv (k, v) VALUES ('k%02d', %d)", i, i*i))
		want[kvQuery(fmt.Sprintf("k%02d", i))] = []string{fmt.Sprint(i * i)}
	}
	for i := 0; i < 20; i += 4 {
		execute(t, c, client.All, fmt.Sprintf("DELETE FROM up.kv WHERE k = 'k%02d'", i))
		want[kvQuery(fmt.Sprintf("k%02d", i))] = nil
	}
	for p := range 4 {
		q := fmt.Sprintf("SELECT c, v, w FROM up.ck WHERE k = 'p%d'", p)
		want[q] = nil
		for c2 := range 8 {
			execute(t, c, client.All, fmt.Sprintf("INSERT INTO up.ck (k, c, v, w) VALUES ('p%d', %d, 'v%d.%d', %d)", p, c2, p, c2, int64(p)<<40|int64(c2)))
			if p == 3 || p == 1 && c2 == 3 {
				continue // deleted below
			}
			v, w := fmt.Sprintf("v%d.%d", p, c2), fmt.Sprint(int64(p)<<40|int64(c2))
			if p == 2 && c2 == 5 {
				v = "null"
			}
			if p == 0 && c2 == 7 {
				w = "null"
			}
			want[q] = append(want[q], fmt.Sprintf("%d=%s=%s", c2, v, w))
		}
	}
	execute(t, c, client.All, "DELETE FROM up.ck WHERE k = 'p1' AND c = 3")         // a row
	execute(t, c, client.All, "DELETE FROM up.ck WHERE k = 'p3'")                   // a partition
	execute(t, c, client.All, "UPDATE up.ck SET v = null WHERE k = 'p2' AND c = 5") // a cell
	execute(t, c, client.All, "DELETE w FROM up.ck WHERE k = 'p0' AND c = 7")       // a cell, by DELETE
	for i := range 10 {
		execute(t, c, client.All, fmt.Sprintf("INSERT INTO up2.blobs (id, b, ok) VALUES (%d, 0x%02x%02x, %t)", i, i, 255-i, i%2 == 0))
		want[fmt.Sprintf("SELECT b, ok FROM up2.blobs WHERE id = %d", i)] = []string{fmt.Sprintf("%v=%t", []byte{byte(i), byte(255 - i)}, i%2 == 0)}
	}
	execute(t, c, client.All, "DELETE FROM up2.blobs WHERE id = 9")
	want["SELECT b, ok FROM up2.blobs WHERE id = 9"] = nil
	return want
}

// kvQuery reads the value of key k of table up.kv.
func kvQuery(k string) string { return fmt.Sprintf("SELECT v FROM up.kv WHERE k = '%s'", k) }

// renderRow renders a result row as its values joined by '='.
func renderRow(r []any) string {
	parts := make([]string, len(r))
	for i, v := range r {
		if v == nil {
			parts[i] = "null"
		} else {
			parts[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(parts, "=")
}

// checkUpgradeData runs every query of want through every node at QUORUM and at ONE and
// compares what it returns with want.
func checkUpgradeData(t *testing.T, stage string, nodes []*node, want map[string][]string) {
	t.Helper()
	queries := slices.Sorted(maps.Keys(want))
	for _, n := range nodes {
		for _, cl := range []client.Consistency{client.Quorum, client.One} {
			wrong := 0
			for _, q := range queries {
				var rows [][]any
				poll.Must(t, readRetryTimeout, fmt.Sprintf("%s: %s at %v through %s succeeds", stage, q, cl, n.Name), func() error {
					ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
					defer cancel()
					_, got, err := n.Client().Query(ctx, cl, q)
					rows = got
					return err
				})
				var got []string
				for _, r := range rows {
					got = append(got, renderRow(r))
				}
				slices.Sort(got)
				exp := slices.Sorted(slices.Values(want[q]))
				if !slices.Equal(got, exp) {
					if wrong++; wrong <= 5 {
						t.Errorf("%s: %s at %v through %s:\n got %d rows %v\nwant %d rows %v", stage, q, cl, n.Name, len(got), got, len(exp), exp)
					}
				}
			}
			if wrong > 5 {
				t.Errorf("%s: at %v through %s, %d of %d queries read back wrong", stage, cl, n.Name, wrong, len(queries))
			}
		}
	}
}

// addColumnMixed adds a column to up.ck through upgraded, a node of this release in a cluster
// with nodes of the previous release, writes it through every node, old and new, and records in
// want what reads back.
func addColumnMixed(t *testing.T, upgraded *node, nodes []*node, want map[string][]string) {
	t.Helper()
	// Old and new nodes agree on the schema: the statement returns without a warning that some
	// did not apply it.
	if res := execute(t, upgraded.Client(), client.Quorum, "ALTER TABLE up.ck ADD mixed int"); len(res.Warnings) > 0 {
		t.Errorf("ALTER TABLE up.ck ADD through %s in the mixed cluster warned %q, want schema agreement", upgraded.Name, res.Warnings)
	}
	for j, m := range nodes {
		stmt := fmt.Sprintf("UPDATE up.ck SET mixed = %d WHERE k = 'p1' AND c = %d", 10+j, j)
		poll.Must(t, upgradeTimeout, fmt.Sprintf("%s through %s (the column added in the mixed cluster) succeeds", stmt, m.Name), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			_, err := m.Client().Execute(ctx, client.All, stmt)
			return err
		})
	}
	q := "SELECT c, mixed FROM up.ck WHERE k = 'p1'"
	want[q] = nil
	for c := range 8 {
		switch {
		case c == 3: // deleted
		case c < len(nodes):
			want[q] = append(want[q], fmt.Sprintf("%d=%d", c, 10+c))
		default:
			want[q] = append(want[q], fmt.Sprintf("%d=null", c))
		}
	}
}

// checkMixedRefusals checks that upgraded, a node of this release in a cluster with nodes of the
// previous release (old), refuses what those cannot store, naming them.
func checkMixedRefusals(t *testing.T, stage string, upgraded *node, old []*node) {
	t.Helper()
	refusals := []string{
		"INSERT INTO up.kv (k, v) VALUES ('refused', 1) USING TTL 60",
		"UPDATE up.ck USING TTL 60 SET v = 'x' WHERE k = 'p0' AND c = 0",
		"ALTER TABLE up.kv WITH default_time_to_live = 60",
		"CREATE TABLE up.refused (k int PRIMARY KEY) WITH default_time_to_live = 60",
		"CREATE SERVICE LEVEL refused WITH max_writes_per_second = 10",
		"ALTER KEYSPACE up WITH rate_limit = {'max_writes_per_second': 10}",
	}
	for _, stmt := range refusals {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		_, err := upgraded.Client().Execute(ctx, client.Quorum, stmt)
		cancel()
		var ie *client.InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%s: %s through %s = %v, want an invalid-statement error while nodes of format 1 remain", stage, stmt, upgraded.Name, err)
			continue
		}
		for _, o := range old {
			if !strings.Contains(ie.Message, o.ID) {
				t.Errorf("%s: %s through %s: the error %q does not name %s (%s), still on format 1", stage, stmt, upgraded.Name, ie.Message, o.Name, o.ID)
			}
		}
	}
}

// restartOn stops n (SIGTERM) and starts it again on binary with the same data directory and
// addresses, then waits until every node sees every other one up.
func restartOn(t *testing.T, tc *testCluster, n *node, binary string) {
	t.Helper()
	n.CloseClient()
	if err := n.Proc().Terminate(); err != nil {
		t.Fatalf("SIGTERM %s: %v", n.Name, err)
	}
	if !n.Proc().WaitExit(2 * killTimeout) {
		t.Fatalf("%s did not exit on SIGTERM", n.Name)
	}
	n.Binary = binary
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
}

// formatVersion returns the content of n's data/FORMAT_VERSION without its newline, or "none".
func formatVersion(t *testing.T, n *node) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.DataDir, "data", "FORMAT_VERSION"))
	if errors.Is(err, os.ErrNotExist) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// buildRelease builds cmd/kvnode of the given commit from this repository's git history into a
// temporary directory and returns the binary. It skips the test when git, the history or the
// commit is not available.
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("e2e: no git command to get release %s from: %v", commit, err)
	}
	if out, err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("e2e: commit %s of the previous release is not in this checkout's git history (a shallow clone, or no .git): %v %s", commit, err, out)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	src := t.TempDir()
	archive, err := exec.Command("git", "-C", strings.TrimSpace(string(top)), "archive", "--format=tar", commit).Output()
	if err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if err := untar(src, bytes.NewReader(archive)); err != nil {
		t.Fatalf("extract release %s: %v", commit, err)
	}
	bin := filepath.Join(t.TempDir(), "kvnode-"+commit[:7])
	ctx, cancel := context.WithTimeout(context.Background(), upgradeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kvnode")
	cmd.Dir = src
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build release %s: %v\n%s", commit, err, out)
	}
	t.Logf("built release %s in %v", commit[:7], time.Since(start).Round(time.Millisecond))
	return bin
}

// untar extracts the regular files and directories of a tar stream under dir.
func untar(dir string, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// startProcs starts three nodes of binary under root.
func startProcs(root, binary string) (*proc.Cluster, error) {
	return proc.Start(proc.Options{Binary: binary, Dir: root, Nodes: 3})
}
