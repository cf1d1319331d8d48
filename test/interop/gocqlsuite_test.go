package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The gocql suite is ScyllaDB gocql's own integration tests (build tag `integration`), the
// version go.mod's replace directive pins, run unmodified against three kvnode nodes: an outside
// measure of how much of what a driver's authors test kvnode serves (issue 30). It takes
// minutes, so it runs only when asked:
//
//	go test ./test/interop -run TestGocqlSuite -gocqlsuite -timeout 60m
//
// and writes the summary to results/gocql-v1.19.0.txt (-gocqlsuite.out elsewhere;
// -gocqlsuite.run narrows it to some of gocql's tests, and then only logs the summary).
var (
	gocqlSuite    = flag.Bool("gocqlsuite", false, "run gocql v1.19.0's integration suite against three kvnode nodes and write "+gocqlSuiteResults)
	gocqlSuiteRun = flag.String("gocqlsuite.run", "", "a -run pattern for the gocql suite's tests (the results file is then not written)")
	gocqlSuiteOut = flag.String("gocqlsuite.out", gocqlSuiteResults, "where the gocql suite's summary goes")
	gocqlSuiteRaw = flag.String("gocqlsuite.raw", "", "a file for go test's whole -json output of the gocql suite (its logs included)")
)

const (
	gocqlSuiteModule  = "github.com/scylladb/gocql"
	gocqlSuiteVersion = "v1.19.0"
	gocqlSuiteResults = "results/gocql-v1.19.0.txt"
	// gocqlSuitePort is the native port of the nodes: the suite's examples and a few of its tests
	// assume Cassandra's default, and the driver reaches peers on the contact points' port.
	gocqlSuitePort = 9042
)

// gocqlSuiteArgs returns the flags of gocql's test binary, as its Makefile's
// test-integration-cassandra target passes them, minus -runssl and -runauth (kvnode's TLS and
// authentication are not set up on these nodes, so those tests skip). -distribution cassandra
// and -gocql.cversion (the release_version kvnode reports) are what kvnode is to the driver:
// Cassandra of that version.
func gocqlSuiteArgs(hosts []string, releaseVersion string) []string {
	return []string{
		"-distribution", "cassandra",
		"-gocql.cversion", releaseVersion,
		"-proto", "4",
		"-rf", "3",
		"-clusterSize", "3",
		"-autowait", "2000ms",
		"-compressor", "snappy",
		"-gocql.timeout", "60s",
		"-cluster", strings.Join(hosts, ","),
	}
}

func TestGocqlSuite(t *testing.T) {
	if !*gocqlSuite {
		t.Skip("gocql suite: runs only with -gocqlsuite (it takes minutes)")
	}
	src := gocqlSuiteSource(t)
	c := startClusterOnPort(t, gocqlSuitePort)
	version := releaseVersion(t, c.Hosts())

	timeout := 50 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - 2*time.Minute
	}
	if timeout < 5*time.Minute {
		t.Fatalf("gocql suite: %v left before the test's deadline; run with -timeout 60m", timeout)
	}
	args := []string{"test", "-tags", "integration", "-json", "-count=1", "-p", "1", "-parallel", "2",
		"-timeout", timeout.Round(time.Second).String()}
	if *gocqlSuiteRun != "" {
		args = append(args, "-run", *gocqlSuiteRun)
	}
	args = append(args, ".", "-args")
	args = append(args, gocqlSuiteArgs(c.Hosts(), version)...)
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("gocql suite: go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if *gocqlSuiteRaw != "" {
		if err := os.WriteFile(*gocqlSuiteRaw, out, 0o644); err != nil {
			t.Errorf("gocql suite: %v", err)
		}
	}
	s, err := parseGoTestJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("gocql suite: reading go test's output: %v", err)
	}
	if len(s.Tests) == 0 {
		t.Fatalf("gocql suite ran no tests (go test: %v)\nstderr:\n%s\nstdout ends:\n%s", err, stderr.String(), lastLines(string(out), 40))
	}
	report := s.report(fmt.Sprintf("go test ./test/interop -run TestGocqlSuite -gocqlsuite -timeout 60m\n"+
		"gocql: %s@%s (go.mod's replace of github.com/gocql/gocql), unmodified\n"+
		"its command: go %s", gocqlSuiteModule, gocqlSuiteVersion, strings.Join(args, " ")))
	t.Log("\n" + report)
	if *gocqlSuiteRun == "" {
		if err := os.WriteFile(*gocqlSuiteOut, []byte(report), 0o644); err != nil {
			t.Fatalf("gocql suite: %v", err)
		}
	}
}

// gocqlSuiteSource copies gocql's module source from the module cache (downloading it through
// the module proxy if needed) into a writable temporary directory: `go test` writes nothing
// there, but the cache's files are read-only and the copy keeps the run apart from the cache.
func gocqlSuiteSource(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", gocqlSuiteModule+"@"+gocqlSuiteVersion).Output()
	if err != nil {
		t.Fatalf("gocql suite: go mod download %s@%s: %v", gocqlSuiteModule, gocqlSuiteVersion, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("gocql suite: go mod download printed no directory (%v, %s): %s", err, mod.Error, out)
	}
	dst := filepath.Join(t.TempDir(), "gocql")
	if err := os.CopyFS(dst, os.DirFS(mod.Dir)); err != nil {
		t.Fatalf("gocql suite: copying %s: %v", mod.Dir, err)
	}
	err = filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	})
	if err != nil {
		t.Fatalf("gocql suite: making the copy writable: %v", err)
	}
	return dst
}

// releaseVersion returns the release_version the nodes report in system.local: the Cassandra
// version gocql's tests gate their features on.
func releaseVersion(t *testing.T, hosts []string) string {
	t.Helper()
	cluster := newGocqlCluster(hosts, gocqlSuitePort)
	s, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql suite: connecting: %v", err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var v string
	if err := s.Query("SELECT release_version FROM system.local").WithContext(ctx).Scan(&v); err != nil {
		t.Fatalf("gocql suite: reading release_version: %v", err)
	}
	return v
}

// suiteResult is one top-level test or example of a `go test -json` run.
type suiteResult struct {
	Name   string
	Action string // pass, fail, skip; "" when the run ended before the test did
	First  string // a failure's first error line, or a skip's reason
}

// suiteRun is a whole `go test -json` run, its tests in the order they started.
type suiteRun struct {
	Tests    []*suiteResult
	Examples []*suiteResult
	// Panic is the package's panic or timeout line, if it died.
	Panic string
}

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// errorLine matches a t.Error/t.Fatal/t.Skip line of go test's output: indented file:line:
// message. gocql's own log lines carry a date first and do not match.
var errorLine = regexp.MustCompile(`^\s+[\w.]+\.go:\d+: (.*)$`)

// parseGoTestJSON reads `go test -json` output into a suiteRun.
func parseGoTestJSON(r io.Reader) (*suiteRun, error) {
	run := &suiteRun{}
	byName := map[string]*suiteResult{}
	firstOf := map[string]string{} // (sub)test → its first error line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 || line[0] != '{' {
			continue
		}
		var ev testEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("%w: %.200s", err, line)
		}
		out := strings.TrimRight(ev.Output, "\n")
		if ev.Test == "" {
			if run.Panic == "" && (strings.HasPrefix(out, "panic: ") || strings.HasPrefix(out, "fatal error: ")) {
				run.Panic = out
			}
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		res := byName[top]
		if res == nil {
			res = &suiteResult{Name: top}
			byName[top] = res
			if strings.HasPrefix(top, "Example") {
				run.Examples = append(run.Examples, res)
			} else {
				run.Tests = append(run.Tests, res)
			}
		}
		switch ev.Action {
		case "output":
			if firstOf[ev.Test] != "" {
				break
			}
			if m := errorLine.FindStringSubmatch(out); m != nil {
				firstOf[ev.Test] = strings.TrimSpace(m[1])
			} else if strings.HasPrefix(out, "panic: ") {
				firstOf[ev.Test] = out
			} else if strings.HasPrefix(top, "Example") && strings.HasPrefix(out, "got:") {
				firstOf[ev.Test] = "output differs"
			}
		case "fail":
			// The first (sub)test to fail with a line of its own names the cause: subtests end
			// before their parent, and a passing subtest's t.Log lines are not the failure's.
			if res.First == "" {
				res.First = firstOf[ev.Test]
			}
			if ev.Test == top {
				res.Action = ev.Action
			}
		case "pass", "skip":
			if ev.Test == top {
				res.Action = ev.Action
				res.First = firstOf[top]
			}
		}
	}
	for _, res := range slices.Concat(run.Tests, run.Examples) {
		if res.Action == "" && res.First == "" {
			res.First = firstOf[res.Name]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return run, nil
}

// cause is a group of failures with one reason: what kvnode lacks (or gets wrong), and the issue
// that owns it.
type cause struct {
	Name  string
	Issue string
	Match *regexp.Regexp // on "TestName: first error line"
}

// causes classify the suite's failures, first match wins; a failure matching none is "other".
// The issues are kvnode's: 30 (schemas: TTL, ALTER, functions, DESCRIBE), 32 (types and
// collections), 33 (queries), 34 (lightweight transactions), 35 (multi-DC).
var causes = []cause{
	{"NetworkTopologyStrategy keyspaces", "35", regexp.MustCompile(`NetworkTopologyStrategy`)},
	{"sessions into gocql_test, whose CREATE KEYSPACE (NetworkTopologyStrategy) failed", "35",
		regexp.MustCompile(`no connections were made when creating the session`)},
	{"lightweight transactions", "34", regexp.MustCompile(`lightweight transactions`)},
	{"user-defined types", "32", regexp.MustCompile(`user-defined types`)},
	{"collections and tuples", "32", regexp.MustCompile(`collection types|found 'SET'|found 'LIST'|found 'MAP'|tuple<`)},
	{"duration type", "32", regexp.MustCompile(`column type "duration"`)},
	{"counters", "32", regexp.MustCompile(`column type "counter"`)},
	{"scans and filtering (SELECT without the partition key, ALLOW FILTERING)", "33",
		regexp.MustCompile(`SELECT needs = or IN on every partition key column|cannot restrict regular column`)},
	{"IN restrictions", "33", regexp.MustCompile(`IN restrictions|^TestWhereIn: Was expecting id and cluster`)},
	{"aggregates (COUNT)", "33", regexp.MustCompile(`aggregate functions`)},
	{"secondary indexes", "33", regexp.MustCompile(`secondary indexes`)},
	{"INSERT JSON", "33", regexp.MustCompile(`JSON is not supported`)},
	{"CQL functions (now(), ...)", "30, branch funcs", regexp.MustCompile(`function calls`)},
	{"DESCRIBE KEYSPACE of a system keyspace", "30", regexp.MustCompile(`unknown keyspace system\b`)},
	{"query tracing", "none yet", regexp.MustCompile(`tracing`)},
	// Nanosecond client timeouts racing the server's answer: it fails now and then against
	// any server, and passes alone.
	{"flaky: nanosecond driver timeouts that race the answer", "none", regexp.MustCompile(`^TestNewConnectWithLowTimeout:`)},
}

func classify(name, first string) cause {
	line := name + ": " + first
	for _, c := range causes {
		if c.Match.MatchString(line) {
			return c
		}
	}
	return cause{Name: "other", Issue: "?"}
}

// report renders the run: counts, then every failure grouped by cause, then skips.
func (r *suiteRun) report(header string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", header)
	count := func(rs []*suiteResult) (pass, fail, skip, unfinished int) {
		for _, t := range rs {
			switch t.Action {
			case "pass":
				pass++
			case "fail":
				fail++
			case "skip":
				skip++
			default:
				unfinished++
			}
		}
		return
	}
	p, f, s, u := count(r.Tests)
	fmt.Fprintf(&b, "tests: %d of %d pass; %d fail, %d skip", p, len(r.Tests), f, s)
	if u > 0 {
		fmt.Fprintf(&b, ", %d did not finish", u)
	}
	b.WriteString("\n")
	if len(r.Examples) > 0 {
		ep, ef, es, eu := count(r.Examples)
		fmt.Fprintf(&b, "examples: %d of %d pass; %d fail, %d skip, %d did not finish\n", ep, len(r.Examples), ef, es, eu)
	}
	if r.Panic != "" {
		fmt.Fprintf(&b, "the test binary died: %s\n", r.Panic)
	}

	type group struct {
		cause
		lines []string
	}
	groups := map[string]*group{}
	var names []string
	for _, t := range slices.Concat(r.Tests, r.Examples) {
		if t.Action == "pass" || t.Action == "skip" {
			continue
		}
		first := t.First
		if t.Action == "" {
			first = "did not finish: " + first
		}
		c := classify(t.Name, first)
		g := groups[c.Name]
		if g == nil {
			g = &group{cause: c}
			groups[c.Name] = g
			names = append(names, c.Name)
		}
		g.lines = append(g.lines, fmt.Sprintf("  %s: %s", t.Name, first))
	}
	slices.SortStableFunc(names, func(a, b string) int { return len(groups[b].lines) - len(groups[a].lines) })
	b.WriteString("\nfailures by cause (kvnode issue that owns it):\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %3d  %s (%s)\n", len(groups[n].lines), n, groups[n].Issue)
	}
	for _, n := range names {
		g := groups[n]
		fmt.Fprintf(&b, "\n%s (%s): %d\n", g.Name, g.Issue, len(g.lines))
		for _, l := range g.lines {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\nskipped:\n")
	for _, t := range slices.Concat(r.Tests, r.Examples) {
		if t.Action == "skip" {
			fmt.Fprintf(&b, "  %s: %s\n", t.Name, t.First)
		}
	}
	b.WriteString("\npassed:\n")
	for _, t := range slices.Concat(r.Tests, r.Examples) {
		if t.Action == "pass" {
			fmt.Fprintf(&b, "  %s\n", t.Name)
		}
	}
	return b.String()
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestGocqlSuiteReport holds the summary to go test's -json stream: top-level results only,
// the first t.Error line of a failure (a subtest's included, gocql's log lines not), a skip's
// reason, a test left running by a dead binary counted apart, and failures grouped by cause.
func TestGocqlSuiteReport(t *testing.T) {
	const stream = `{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Test":"TestA"}
{"Action":"run","Test":"TestCAS"}
{"Action":"output","Test":"TestCAS","Output":"2026/11/29 03:00:00 common_test.go:227: error creating table\n"}
{"Action":"run","Test":"TestCAS/logs"}
{"Action":"output","Test":"TestCAS/logs","Output":"    cassandra_test.go:550: passed due to a high timeout\n"}
{"Action":"pass","Test":"TestCAS/logs"}
{"Action":"run","Test":"TestCAS/sub"}
{"Action":"output","Test":"TestCAS/sub","Output":"    cassandra_test.go:560: insert: 2:20: lightweight transactions (IF conditions) are not supported\n"}
{"Action":"output","Test":"TestCAS","Output":"    cassandra_test.go:570: later line\n"}
{"Action":"fail","Test":"TestCAS/sub"}
{"Action":"fail","Test":"TestCAS"}
{"Action":"run","Test":"TestSkip"}
{"Action":"output","Test":"TestSkip","Output":"    x_test.go:9: protocol >= 5 only\n"}
{"Action":"skip","Test":"TestSkip"}
{"Action":"run","Test":"TestHang"}
{"Action":"output","Output":"panic: test timed out after 1m0s\n"}
{"Action":"fail"}
`
	r, err := parseGoTestJSON(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, res := range r.Tests {
		got = append(got, res.Name+" "+res.Action+" "+res.First)
	}
	want := []string{
		"TestA pass ",
		"TestCAS fail insert: 2:20: lightweight transactions (IF conditions) are not supported",
		"TestSkip skip protocol >= 5 only",
		"TestHang  ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed tests:\n%q\nwant\n%q", got, want)
	}
	if r.Panic != "panic: test timed out after 1m0s" {
		t.Errorf("Panic = %q, want the timeout line", r.Panic)
	}
	rep := r.report("header")
	for _, s := range []string{
		"tests: 1 of 4 pass; 1 fail, 1 skip, 1 did not finish",
		"    1  lightweight transactions (34)",
		"  TestCAS: insert: 2:20: lightweight",
		"  TestHang: did not finish: ",
		"  TestSkip: protocol >= 5 only",
	} {
		if !strings.Contains(rep, s) {
			t.Errorf("report lacks %q:\n%s", s, rep)
		}
	}
	if c := classify("TestX", "something new"); c.Name != "other" {
		t.Errorf("classify(an unknown error) = %q, want other", c.Name)
	}
}
