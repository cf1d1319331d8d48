package node_test

import (
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
)

// The operator files in deploy/ must only use metrics a node exports. These tests parse the
// Grafana dashboard and the Prometheus alerting rules, extract the metric names from their
// PromQL, and compare them with what a node of a cluster that served traffic gathers.

const (
	dashboardPath = "../deploy/grafana/kvnode.json"
	alertsPath    = "../deploy/prometheus/alerts.yml"
	// alertTestsPath holds promtool unit tests of the alerting rules.
	alertTestsPath = "../deploy/prometheus/alerts_test.yml"
)

// dashboardExprs returns the PromQL of every panel target and query variable of the dashboard.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	}
	type panel struct {
		ID      int      `json:"id"`
		Type    string   `json:"type"`
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"` // of a collapsed row
	}
	var d struct {
		Title      string  `json:"title"`
		UID        string  `json:"uid"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s does not parse as JSON: %v", dashboardPath, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s has title %q, uid %q and %d panels; want a titled dashboard with a uid and panels", dashboardPath, d.Title, d.UID, len(d.Panels))
	}
	var exprs []string
	ids := map[int]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("dashboard panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("dashboard panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("dashboard panel %q has a target %s without an expression", p.Title, tg.RefID)
				}
				exprs = append(exprs, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("dashboard variable %s has definition %q, want label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		exprs = append(exprs, m[1])
	}
	return exprs
}

// alertRules returns the rules of the alerting rules file.
func alertRules(t *testing.T) []alertRule {
	t.Helper()
	data, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s does not parse as a rules file: %v", alertsPath, err)
	}
	var rules []alertRule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// promqlKeywords are the words of PromQL that are not metric names where a name could stand.
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
	"atan2": true,
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRanges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
)

// promqlMetricNames returns the metric names a PromQL expression selects, in order of first
// appearance: every identifier that is not a function or aggregation (followed by "("), a
// keyword, a label name (in matchers or grouping clauses), a number, or a Grafana variable.
func promqlMetricNames(expr string) []string {
	s := promqlStrings.ReplaceAllString(expr, " ")
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRanges.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
	}
	var names []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case '0' <= c && c <= '9' || c == '.': // a number, perhaps with an exponent or a unit
			for i < len(s) && (isIdent(s[i], false) || s[i] == '.') {
				i++
			}
		case c == '$': // a Grafana variable
			for i++; i < len(s) && isIdent(s[i], false); i++ {
			}
		case isIdent(c, true):
			start := i
			for i < len(s) && isIdent(s[i], false) {
				i++
			}
			word := s[start:i]
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n') {
				j++
			}
			if (j < len(s) && s[j] == '(') || promqlKeywords[strings.ToLower(word)] {
				continue
			}
			if !slices.Contains(names, word) {
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names
}

func TestPromqlMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (keyspace, table) (rate(kvnode_x_total{job=~"$job",result="ok"}[$__rate_interval]))`, []string{"kvnode_x_total"}},
		{`histogram_quantile(0.99, sum by (le, op) (rate(kvnode_h_bucket[5m])))`, []string{"kvnode_h_bucket"}},
		{`a / on (instance) group_left (x) b > 0.8`, []string{"a", "b"}},
		{`max without (instance) (m) > 1e3 and bool n offset 5m`, []string{"m", "n"}},
		{`rate(a[1m]) + rate(a[5m])`, []string{"a"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{`vector(1)`, nil},
	}
	for _, tt := range tests {
		if got := promqlMetricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("promqlMetricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestDeployFilesUseExportedMetrics checks the dashboard and the alerting rules against the
// metrics a node gathers after serving reads, writes and rejections on both limiter paths.
func TestDeployFilesUseExportedMetrics(t *testing.T) {
	exprs := dashboardExprs(t)
	rules := alertRules(t)
	if len(rules) == 0 {
		t.Fatalf("%s has no rules", alertsPath)
	}
	for _, r := range rules {
		if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert rule %+v: want an alert name, an expression, a severity label, a summary and a description", r)
		}
		exprs = append(exprs, r.Expr)
	}
	for _, want := range []string{"KvnodePartitionLimitedPersistently", "KvnodeLimiterTableNearCapacity", "KvnodeNodeDown", "KvnodeSchemaDisagreement", "KvnodeClockSkew", "KvnodeWriteStalls"} {
		if !slices.ContainsFunc(rules, func(r alertRule) bool { return r.Alert == want }) {
			t.Errorf("%s has no alert %s", alertsPath, want)
		}
	}

	tc, _ := limitedCluster(t)
	c := tc.client(0)
	hammerTable(t, c, "rf3.limited", "hot", 60)
	key, _ := keyNotOn(t, tc, 0, "hot")
	hammerTable(t, c, "rf1.limited", key, 60)
	exec(t, c, client.Quorum, "SELECT v FROM rf3.limited WHERE k = 'hot'")
	// Per-peer clock offsets exist once gossip probes have measured the peers.
	poll.Must(t, 10*time.Second, "node 0 measures both peers' clocks", poll.Bool(func() bool {
		return len(tc.nodes[0].Cluster().ClockOffsets()) == 2
	}))
	mfs, err := tc.nodes[0].Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[mf.GetName()+suffix] = true
			}
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, name := range promqlMetricNames(e) {
			used[name] = true
			if !exported[name] {
				t.Errorf("%q uses %s, which a node does not export", e, name)
			}
		}
	}
	if len(used) < 20 {
		t.Errorf("the deploy files use %d metrics, want the dashboard and rules to cover the limiter, coordinator, cluster and storage (at least 20)", len(used))
	}
}

// TestAlertRulesPassPromtool runs `promtool check rules` on the rules file when promtool is
// installed (docs/operations.md says how).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := osexec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed; docs/operations.md says how to install it")
	}
	path, err := filepath.Abs(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", alertsPath, err, out)
	}
	// The rules' own unit tests: series in, alerts (with their rendered annotations) out.
	tests, err := filepath.Abs(alertTestsPath)
	if err != nil {
		t.Fatal(err)
	}
	out, err = osexec.Command(promtool, "test", "rules", tests).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", alertTestsPath, err, out)
	}
}
