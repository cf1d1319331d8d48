package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

var (
	fullDoc   = flag.Bool("sim.fulldoc", false, "regenerate every row of docs/accuracy.md's table (about 30 CPU-seconds) instead of a sample")
	updateDoc = flag.Bool("sim.update", false, "rewrite docs/accuracy.md's table from the simulator (implies -sim.fulldoc)")
)

// accuracyDoc is docs/accuracy.md, relative to this package.
const accuracyDoc = "../../docs/accuracy.md"

// docTable matches the generated section of docs/accuracy.md: a begin marker that states the
// simreport flags it was made with, the table, and an end marker.
var docTable = regexp.MustCompile(`(?s)<!-- simreport --seed (\d+) --seconds (\d+(?:\.\d+)?) --warmup (\d+(?:\.\d+)?) -->\n(.*?)<!-- /simreport -->`)

// TestAccuracyDocMatchesSimulator: the table in docs/accuracy.md is what simreport prints for
// the seed and length the document states. Each row has its own random generator, so any subset
// of rows can be regenerated exactly: by default every 11th row is (a few CPU-seconds; 11 is
// prime to the 6 offered rates, so every rate is sampled), with
// -sim.fulldoc all of them, and -sim.update rewrites the table:
//
//	go test ./test/sim -run TestAccuracyDocMatchesSimulator -sim.update
func TestAccuracyDocMatchesSimulator(t *testing.T) {
	doc, err := os.ReadFile(accuracyDoc)
	if err != nil {
		t.Fatalf("reading the accuracy report: %v", err)
	}
	m := docTable.FindSubmatchIndex(doc)
	if m == nil {
		t.Fatalf("%s has no table between <!-- simreport --seed N --seconds S --warmup W --> and <!-- /simreport -->", accuracyDoc)
	}
	seed, _ := strconv.ParseUint(string(doc[m[2]:m[3]]), 10, 64)
	seconds, _ := strconv.ParseFloat(string(doc[m[4]:m[5]]), 64)
	warmup, _ := strconv.ParseFloat(string(doc[m[6]:m[7]]), 64)
	o := Options{
		Seed:     seed,
		Duration: time.Duration(seconds * float64(time.Second)),
		Warmup:   time.Duration(warmup * float64(time.Second)),
	}
	scenarios := Matrix()
	if *updateDoc {
		results, err := RunAll(context.Background(), scenarios, o, 4)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.Write(doc[:m[8]])
		b.WriteString(MarkdownTable(results))
		b.Write(doc[m[9]:])
		if err := os.WriteFile(accuracyDoc, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the table of %s (%d rows, seed %d, %gs)", accuracyDoc, len(results), seed, seconds)
		return
	}
	lines := strings.SplitAfter(string(doc[m[8]:m[9]]), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	header := strings.SplitAfter(markdownHeader, "\n")
	header = header[:len(header)-1]
	if len(lines) != len(header)+len(scenarios) || !slices.Equal(lines[:len(header)], header) {
		t.Fatalf("%s's table has %d lines, want the header and %d rows; regenerate it with -sim.update", accuracyDoc, len(lines), len(scenarios))
	}
	step := 11
	switch {
	case *fullDoc:
		step = 1
	case raceEnabled:
		step = 60
	}
	var sample []Scenario
	var index []int
	for i := 0; i < len(scenarios); i += step {
		sample = append(sample, scenarios[i])
		index = append(index, i)
	}
	results, err := RunAll(context.Background(), sample, o, 4)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range results {
		want := MarkdownRow(r.Row())
		if got := lines[len(header)+index[k]]; got != want {
			t.Errorf("%s row %d (%v) reads\n%s want (simulated with seed %d, %gs)\n%s regenerate the table with -sim.update and revisit the text",
				accuracyDoc, index[k]+1, r.Scenario, got, seed, seconds, want)
		}
	}
}

// TestJSONRowFields: each --json line is one object with exactly the documented fields.
func TestJSONRowFields(t *testing.T) {
	r := Result{
		Scenario: Scenario{RF: 3, ReadFraction: 1, Consistency: coordinator.One, Routing: RandomReplica, Skew: 500 * time.Millisecond, Offered: 1.44, Flood: true},
		Limit:    100, Window: 10 * time.Second,
		Offered: 1440, Accepted: 1300, Rejected: 140, Wasted: 13, Enforced: 200, Disagreed: 10,
		ColdOffered: 1000, ColdRejected: 1, Evictions: 50,
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, []Result{r, r}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("WriteJSON of 2 results printed %d lines, want 2:\n%s", len(lines), b.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("line %q is not a JSON object: %v", lines[0], err)
	}
	want := map[string]any{
		"configuration": "scylla",
		"rf":            3.0, "op": "read", "cl": "ONE", "routing": "random-replica", "skew_ms": 500.0,
		"offered_over_limit": 1.44, "replica_down": false, "flood": true, "onset": false, "again": false,
		"accepted_over_limit": 1.3, "wasted_per_accepted": 0.01, "disagreement": 0.05,
		"disagreement_measured": true, "cold_rejected": 0.001, "evictions_per_s": 5.0,
		"partial_writes_per_accepted": 0.0, "learned_per_rejected": 0.0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %q = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %q = %v", k, got[k])
		}
	}

	// An onset row of kvnode carries first_second_over_limit.
	r.Scenario.Configuration, r.Scenario.Onset, r.FirstSecond = Kvnode, true, 250
	if got, line := jsonRow(t, r); got["configuration"] != "kvnode" || got["onset"] != true || got["again"] != false || got["first_second_over_limit"] != 2.5 {
		t.Errorf("onset row %s: want configuration kvnode, onset true, again false and first_second_over_limit 2.5", line)
	}

	// A row turning hot again says so, in the JSON and in the markdown's onset column.
	r.Scenario.Again = true
	if got, line := jsonRow(t, r); got["onset"] != true || got["again"] != true {
		t.Errorf("row turning hot again %s: want onset true and again true", line)
	}
	if md := MarkdownRow(r.Row()); !strings.Contains(md, "| again |") {
		t.Errorf("markdown row of a partition turning hot again %q: want \"again\" in the onset column", md)
	}
}

// TestMarkdownRow: the markdown row prints the scenario and the three measurements, with "–"
// for a disagreement nothing measured.
func TestMarkdownRow(t *testing.T) {
	cases := []struct {
		w    Row
		want string
	}{
		{
			Row{Configuration: "scylla", RF: 3, Op: "write", CL: "QUORUM", Routing: "outside", SkewMS: 100, OfferedOverLimit: 10, AcceptedOverLimit: 1.0123, WastedPerAccepted: 0.1304, PartialWritesPerAccepted: 0.05, Disagreement: 0.0251, DisagreementMeasured: true},
			"| scylla | 3 | write | QUORUM | outside | ±100 ms | 10 |  |  |  | 1.012 |  | 0.130 | 0.050 | 0.025 |\n",
		},
		{
			Row{Configuration: "kvnode", RF: 3, Op: "read", CL: "ALL", Routing: "fixed-first", OfferedOverLimit: 1.44, ReplicaDown: true, Onset: true, FirstSecondOverLimit: ptr(2.25)},
			"| kvnode | 3 | read | ALL | fixed-first | 0 | 1.44 | yes |  | yes | 0.000 | 2.250 | 0.000 | 0.000 | – |\n",
		},
	}
	for _, c := range cases {
		if got := MarkdownRow(c.w); got != c.want {
			t.Errorf("MarkdownRow(%+v) =\n%q, want\n%q", c.w, got, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestMatrixCoversTheIssue: the report's matrix is the full cross product the accuracy report
// promises, plus replica-down and flood rows, with no duplicate scenario (each row's seed is a
// digest of its scenario, so duplicates would print identical rows).
func TestMatrixCoversTheIssue(t *testing.T) {
	m := Matrix()
	seen := map[string]bool{}
	count := map[string]int{}
	for _, sc := range m {
		if seen[sc.String()] {
			t.Errorf("scenario %v appears twice", sc)
		}
		seen[sc.String()] = true
		switch {
		case sc.Onset:
			count["onset "+sc.Configuration.String()]++
		case sc.ReplicaDown:
			count["down"]++
		case sc.Flood:
			count["flood"]++
		default:
			count["main"]++
		}
	}
	want := 2 * 2 * 2 * 3 * 3 * 3 * 6 // configuration × RF × op × CL × routing × skew × V
	if count["main"] != want || count["down"] == 0 || count["flood"] == 0 || count["onset kvnode"] == 0 || count["onset kvnode"] != count["onset scylla"] {
		t.Errorf("matrix has %d main rows, %d replica-down rows, %d flood rows and %d/%d onset rows (kvnode/scylla), want %d main rows, some of each other kind, as many onset rows per configuration",
			count["main"], count["down"], count["flood"], count["onset kvnode"], count["onset scylla"], want)
	}
	for _, rf := range []int{1, 3} {
		for _, op := range []string{"write", "read"} {
			for _, cl := range []string{"ONE", "QUORUM", "ALL"} {
				for _, rt := range []string{"fixed-first", "random-replica", "outside"} {
					for _, sk := range []string{"0s", "100ms", "500ms"} {
						for _, v := range []string{"0.5", "1", "1.44", "2", "10", "100"} {
							name := fmt.Sprintf("rf=%d op=%s cl=%s routing=%s skew=%s V=%sL down=false flood=false", rf, op, cl, rt, sk, v)
							for _, n := range []string{name, name + " configuration=kvnode"} {
								if !seen[n] {
									t.Errorf("matrix lacks %s", n)
								}
							}
						}
					}
				}
			}
		}
	}
}

// jsonRow returns the object WriteJSON prints for r, and the line itself.
func jsonRow(t *testing.T, r Result) (map[string]any, string) {
	t.Helper()
	var b strings.Builder
	if err := WriteJSON(&b, []Result{r}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("line %q is not a JSON object: %v", b.String(), err)
	}
	return got, b.String()
}
