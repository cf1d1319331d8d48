package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
)

// hintRows is how many rows the hint and repair tests write, one partition each.
const hintRows = 60

// metricSum scrapes n's metrics and returns the sum of the series of family name (0 when the
// family is absent).
func metricSum(n *node, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.MetricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	sum := 0.0
	for _, m := range families[name].GetMetric() {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum, nil
}

// readAlone reads row k of table through n at ONE: present reports whether the row was
// returned with value want; served is false when the read was unavailable (no live replica).
func readAlone(t *testing.T, n *node, table string, k int) (value int, present, served bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	_, rows, err := n.Client().Query(ctx, client.One, fmt.Sprintf("SELECT v FROM %s WHERE k = %d", table, k))
	var unavailable *client.UnavailableError
	switch {
	case errors.As(err, &unavailable):
		return 0, false, false
	case err != nil:
		t.Fatalf("reading row %d of %s at ONE through %s: %v", k, table, n.Name, err)
	}
	if len(rows) == 0 {
		return 0, false, true
	}
	v, _ := rows[0][0].(int32)
	return int(v), true, true
}

// TestHintedHandoff stops a node while writes go on at ONE, restarts it, waits until the other
// nodes have replayed their hints to it, stops them, and reads every row through it alone: each
// row it replicates must be there.
func TestHintedHandoff(t *testing.T) {
	skipShort(t)
	tc := startCluster(t, 3, false)
	n1, n2, n3 := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	execute(t, n1.Client(), client.Quorum, "CREATE KEYSPACE hk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	execute(t, n1.Client(), client.Quorum, "CREATE TABLE hk.t (k int PRIMARY KEY, v int)")

	if err := n2.Kill(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, []*node{n1, n3}, map[string]string{n1.ID: "UP", n2.ID: "DOWN", n3.ID: "UP"})
	for k := range hintRows {
		through := []*node{n1, n3}[k%2]
		execute(t, through.Client(), client.One, fmt.Sprintf("INSERT INTO hk.t (k, v) VALUES (%d, %d)", k, 10*k))
	}
	stored := 0.0
	for _, n := range []*node{n1, n3} {
		v, err := metricSum(n, "kvnode_hints_stored_total")
		if err != nil {
			t.Fatal(err)
		}
		stored += v
	}
	if stored == 0 {
		t.Fatalf("no hints stored for %d writes at ONE with %s down", hintRows, n2.Name)
	}

	if err := n2.Start(); err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	poll.Must(t, 60*time.Second, "n1 and n3 replayed every hint", func() error {
		for _, n := range []*node{n1, n3} {
			pending, err := metricSum(n, "kvnode_hints_pending")
			if err != nil {
				return err
			}
			if pending != 0 {
				return fmt.Errorf("%s holds %v hints", n.Name, pending)
			}
		}
		return nil
	})
	replayed := 0.0
	for _, n := range []*node{n1, n3} {
		v, err := metricSum(n, "kvnode_hints_replayed_total")
		if err != nil {
			t.Fatal(err)
		}
		replayed += v
	}
	if replayed != stored {
		t.Errorf("%v hints replayed, want the %v stored", replayed, stored)
	}

	// n2 alone: every row it replicates reads back at ONE from its own storage.
	for _, n := range []*node{n1, n3} {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	tc.waitStates(joinTimeout, []*node{n2}, map[string]string{n1.ID: "DOWN", n2.ID: "UP", n3.ID: "DOWN"})
	served, missing := 0, []int{}
	for k := range hintRows {
		v, present, ok := readAlone(t, n2, "hk.t", k)
		if !ok {
			continue // n2 does not replicate row k
		}
		served++
		if !present || v != 10*k {
			missing = append(missing, k)
		}
	}
	t.Logf("%v hints stored and replayed; %s alone serves %d of %d rows", stored, n2.Name, served, hintRows)
	if served < hintRows/4 {
		t.Fatalf("%s alone served %d of %d rows at RF=2 on 3 nodes, want about two thirds", n2.Name, served, hintRows)
	}
	if len(missing) > 0 {
		t.Errorf("%s alone lacks %d rows it replicates (written while it was down): %v", n2.Name, len(missing), missing)
	}
}
