//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README and the document whose gocql retry policy the README shows, relative to this
// package's directory.
const (
	readmePath      = "../../README.md"
	cqlProtocolPath = "../../docs/cql-protocol.md"
)

// tourMarker precedes each shell block of the README's tour: an HTML comment, which readers of
// the rendered README do not see.
const tourMarker = "<!-- tour -->"

// tourTimeout bounds the whole tour; it takes about 25 s.
const tourTimeout = 4 * time.Minute

// tourStep is one shell block of the README's tour.
type tourStep struct {
	line int    // the README line of the block's first command
	code string // the block's text, without its fences
}

// readmeTour returns the shell blocks of the README's section "A five-minute tour", in order.
// Every ```sh block of the section must be marked as a step (and only those), so that a new
// step cannot be left out of the test by mistake.
func readmeTour(t *testing.T) []tourStep {
	t.Helper()
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var steps []tourStep
	inTour := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "## "):
			inTour = l == "## A five-minute tour"
		case !inTour:
		case l == tourMarker:
			if i+1 >= len(lines) || lines[i+1] != "```sh" {
				t.Fatalf("%s:%d: %s is not followed by a ```sh block", readmePath, i+1, tourMarker)
			}
		case strings.HasPrefix(l, "```"):
			end := i + 1
			for end < len(lines) && lines[end] != "```" {
				end++
			}
			if end == len(lines) {
				t.Fatalf("%s:%d: the code block is not closed", readmePath, i+1)
			}
			if l == "```sh" {
				if i == 0 || lines[i-1] != tourMarker {
					t.Fatalf("%s:%d: a ```sh block of the tour without %s before it: mark it as a step, or make it another kind of block", readmePath, i+1, tourMarker)
				}
				steps = append(steps, tourStep{line: i + 2, code: strings.Join(lines[i+1:end], "\n")})
			}
			i = end
		}
	}
	if len(steps) == 0 {
		t.Fatalf("%s has no section \"## A five-minute tour\" with %s steps", readmePath, tourMarker)
	}
	return steps
}

// tourCheck is what TestREADMETour checks of the step whose code contains step: its stdout.
type tourCheck struct {
	step  string
	what  string
	check func(stdout string) error
}

// tourChecks are the outputs the tour promises its reader.
func tourChecks() []tourCheck {
	contains := func(subs ...string) func(string) error {
		return func(out string) error {
			for _, s := range subs {
				if !strings.Contains(out, s) {
					return fmt.Errorf("no %q", s)
				}
			}
			return nil
		}
	}
	return []tourCheck{
		{"status --wait-nodes 3", "three nodes up and normal", func(out string) error {
			if n := len(regexp.MustCompile(`(?m)^UN +127\.0\.0\.[123]:`).FindAllString(out, -1)); n != 3 {
				return fmt.Errorf("%d nodes UN, want 3", n)
			}
			return contains("Owns (effective)")(out)
		}},
		{"CREATE KEYSPACE shop", "the row just inserted", contains("alice", "tea", "(1 rows)")},
		{"--addr 127.0.0.3:9042 -e 'DESCRIBE TABLE shop.carts'", "the table on node 3, with its limit",
			contains("CREATE TABLE shop.carts", "per_partition_rate_limit = {'max_writes_per_second': 100}")},
		{"--duration 5s", "the hot partition held near 100 writes/s, the cold ones not rejected", checkBenchHeld},
		{"kvnode_(coordinator_rate_limited", "the coordinators' rejections of writes", func(out string) error {
			total := 0.0
			for _, m := range regexp.MustCompile(`(?m)^kvnode_coordinator_rate_limited_total\{[^}]*op="write"[^}]*\} (\S+)$`).FindAllStringSubmatch(out, -1) {
				v, _ := strconv.ParseFloat(m[1], 64)
				total += v
			}
			if total == 0 {
				return errors.New("no write rejected, by the metrics of the three nodes")
			}
			return nil
		}},
		{"toppartitions --table shop.carts", "'hot' first", func(out string) error {
			if !regexp.MustCompile(`(?m)^\s+1\s+write\s+hot\s`).MatchString(out) {
				return errors.New("no rank 1 write of partition hot")
			}
			return nil
		}},
		{"FROM system.top_partitions", "'hot' in the virtual table", contains(`(id="hot")`)},
		{"./kvnode status\n", "effective ownership of 100% on each node", func(out string) error {
			if n := len(regexp.MustCompile(`(?m)^UN .* 100\.0% `).FindAllString(out, -1)); n != 3 {
				return fmt.Errorf("%d nodes UN owning 100.0%%, want 3", n)
			}
			return nil
		}},
	}
}

// checkBenchHeld checks the summary of the tour's first kvnode bench: 900 writes/s offered to
// the hot partition, held near its limit of 100/s.
func checkBenchHeld(out string) error {
	m := regexp.MustCompile(`(?m)^hot partition +accepted \d+ +([0-9.]+)/s +rejected (\d+)$`).FindStringSubmatch(out)
	if m == nil {
		return errors.New("no summary line for the hot partition")
	}
	rate, _ := strconv.ParseFloat(m[1], 64)
	if rejected, _ := strconv.Atoi(m[2]); rate < 70 || rate > 160 || rejected == 0 {
		return fmt.Errorf("the hot partition accepted %.1f/s with %d rejected; want about 100/s and rejections", rate, rejected)
	}
	if !regexp.MustCompile(`(?m)^cold partitions +accepted \d+ +[0-9.]+/s +rejected 0$`).MatchString(out) {
		return errors.New("cold partitions were rejected, or no summary line for them")
	}
	return nil
}

// liftProbe runs after the tour's step that lifts the limit (the README says the rejections stop
// at once): 400 writes/s to the hot partition, four times the old limit.
const liftProbe = "./kvnode bench --addrs 127.0.0.1:9042,127.0.0.2:9042,127.0.0.3:9042 --table shop.carts --writes 1 --hot 1 --partitions 0 --rate 400 --duration 1s --json"

// checkLifted checks liftProbe's JSON summary: no write rejected, and far more accepted than the
// old limit allowed.
func checkLifted(out string) error {
	var sum struct {
		Hot struct {
			Accepted, Rejected int64
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		return fmt.Errorf("the probe's summary: %v", err)
	}
	if sum.Hot.Rejected != 0 || sum.Hot.Accepted < 200 {
		return fmt.Errorf("after the limit was lifted, the hot partition had %d writes accepted and %d rejected in a second; want none rejected and over 200 accepted", sum.Hot.Accepted, sum.Hot.Rejected)
	}
	return nil
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestREADMETour runs the README's tour as a newcomer would, verbatim: its shell blocks in order,
// in one bash, from the top of a copy of the working tree (the files git knows, as they are on
// disk), in a network namespace of its own, so the tour's fixed addresses (127.0.0.1-3, ports
// 9042, 7946, ...) collide with nothing else on the machine, and in a PID namespace of its own,
// so that every process the tour starts dies with it, whatever happens. Each step must
// succeed (bash runs with set -e), and the outputs the README promises are checked: three nodes
// up, the table on node 3, the hot partition held near its limit, the limit lifted (by an
// extra probe), the rejections in the metrics, 'hot' first in toppartitions and in
// system.top_partitions, effective ownership of 100%, and nodes that stop cleanly.
//
// It needs root (or CAP_SYS_ADMIN) for the namespaces, and bash, ip, mount, curl, git and go; it
// skips, saying why, where they are missing.
func TestREADMETour(t *testing.T) {
	skipShort(t)
	for _, tool := range []string{"bash", "ip", "mount", "curl", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's tour needs %s: %v", tool, err)
		}
	}
	steps := readmeTour(t)
	checks := tourChecks()
	checkOf := make([]*tourCheck, len(steps))
	for i := range checks {
		found := false
		for j, s := range steps {
			if strings.Contains(s.code+"\n", checks[i].step) {
				checkOf[j], found = &checks[i], true
				break
			}
		}
		if !found {
			t.Fatalf("no step of the README's tour contains %q, whose output should show %s: update tourChecks with the README", checks[i].step, checks[i].what)
		}
	}
	lift := -1
	for i, s := range steps {
		if strings.Contains(s.code, "per_partition_rate_limit = {}") {
			lift = i
		}
	}
	if lift < 0 {
		t.Fatal("no step of the README's tour lifts the limit (per_partition_rate_limit = {})")
	}

	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	src, out, tmp := filepath.Join(root, "kvnode"), filepath.Join(root, "out"), filepath.Join(root, "tmp")
	for _, d := range []string{out, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyWorkingTree(t, checkout, src)

	// The script: the steps verbatim, each with its output kept apart and a mark once it is
	// done, and the probe after the step that lifts the limit.
	var script strings.Builder
	// The copy is mounted over the checkout in the tour's own mount namespace: the tour's
	// go build then finds the packages TestMain compiled from the same directory in the build
	// cache, while everything the tour writes lands in the copy. Each mark holds the time
	// ($EPOCHREALTIME, bash 5) for the log of each step's duration.
	fmt.Fprintf(&script, "set -e\nip link set lo up\nmount --bind %s %s\necho \"$EPOCHREALTIME\" > %s\ncd %s\n",
		shellQuote(src), shellQuote(checkout), shellQuote(filepath.Join(out, "ready")), shellQuote(checkout))
	for i, s := range steps {
		fmt.Fprintf(&script, "{\n%s\n} > %s 2> %s\necho \"$EPOCHREALTIME\" > %s\n", s.code,
			shellQuote(filepath.Join(out, fmt.Sprint(i, ".out"))), shellQuote(filepath.Join(out, fmt.Sprint(i, ".err"))),
			shellQuote(filepath.Join(out, fmt.Sprint(i, ".done"))))
		if i == lift {
			fmt.Fprintf(&script, "%s > %s 2> %s\n", liftProbe, shellQuote(filepath.Join(out, "probe.out")), shellQuote(filepath.Join(out, "probe.err")))
		}
	}
	scriptPath := filepath.Join(root, "tour.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), tourTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptPath)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var bashOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bashOut, &bashOut
	// bash is the first process of a new PID namespace: when it ends (or the test process dies,
	// Pdeathsig), the kernel kills every process left in it. Its network namespace has only a
	// loopback interface; its mount namespace is private (Go marks / MS_PRIVATE when it
	// unshares one), so the bind mount of the copy is seen by the tour alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		Unshareflags: syscall.CLONE_NEWNS,
		Pdeathsig:    syscall.SIGKILL,
	}
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Skipf("the README's tour runs in network and PID namespaces of its own, which this process may not create (it needs root or CAP_SYS_ADMIN): %v", err)
	}
	err = cmd.Wait()
	elapsed := time.Since(start)
	if _, serr := os.Stat(filepath.Join(out, "ready")); serr != nil {
		t.Skipf("cannot bring up the loopback interface in the tour's network namespace, or mount the copy of the working tree in its mount namespace: %v\n%s", err, bashOut.String())
	}

	read := func(name string) string { // "" when the file is missing
		b, _ := os.ReadFile(filepath.Join(out, name))
		return string(b)
	}
	prev := read("ready")
	for i, s := range steps {
		done := read(fmt.Sprint(i, ".done"))
		if done == "" {
			t.Fatalf("step %d of the tour (%s:%d) failed: %v\n%s\nstdout:\n%s\nstderr:\n%s\nbash:\n%s\n%s",
				i+1, readmePath, s.line, err, s.code, read(fmt.Sprint(i, ".out")), read(fmt.Sprint(i, ".err")), bashOut.String(), nodeLogs(tmp))
		}
		t.Logf("step %d (%s:%d) took %s", i+1, readmePath, s.line, stepDuration(prev, done))
		prev = done
		if c := checkOf[i]; c != nil {
			if cerr := c.check(read(fmt.Sprint(i, ".out"))); cerr != nil {
				t.Errorf("step %d of the tour (%s:%d) should show %s: %v\n%s\nstdout:\n%s\nstderr:\n%s", i+1, readmePath, s.line, c.what, cerr, s.code, read(fmt.Sprint(i, ".out")), read(fmt.Sprint(i, ".err")))
			}
		}
		if i == lift {
			if cerr := checkLifted(read("probe.out")); cerr != nil {
				t.Errorf("step %d of the tour (%s:%d) lifts the limit, but: %v\nprobe: %s\nstderr:\n%s", i+1, readmePath, s.line, cerr, liftProbe, read("probe.err"))
			}
		}
	}
	if err != nil {
		t.Fatalf("the tour's bash ended with %v after its last step\n%s", err, bashOut.String())
	}
	// The last step stops the nodes: each must have shut down cleanly.
	logs, _ := filepath.Glob(filepath.Join(tmp, "*", "n*.log"))
	if len(logs) != 3 {
		t.Errorf("found the logs %q of the tour's nodes in $TMPDIR, want n1.log, n2.log and n3.log in $TOUR", logs)
	}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if !strings.Contains(string(b), "level=INFO msg=stopped") {
			t.Errorf("the node of %s did not stop cleanly:\n%s", l, b)
		}
	}
	t.Logf("the README's tour (%d steps) took %v", len(steps), elapsed.Round(100*time.Millisecond))
}

// stepDuration returns the time between two $EPOCHREALTIME marks, or "?" when bash has none.
func stepDuration(from, to string) string {
	a, aerr := strconv.ParseFloat(strings.TrimSpace(from), 64)
	b, berr := strconv.ParseFloat(strings.TrimSpace(to), 64)
	if aerr != nil || berr != nil {
		return "?"
	}
	return fmt.Sprintf("%.1fs", b-a)
}

// nodeLogs returns the end of the tour's node logs ($TOUR/n*.log under tmp), for a failure
// message.
func nodeLogs(tmp string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(tmp, "*", "n*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		lines := strings.SplitAfter(string(data), "\n")
		fmt.Fprintf(&b, "--- the last lines of %s:\n%s", l, strings.Join(lines[max(0, len(lines)-30):], ""))
	}
	return b.String()
}

// copyWorkingTree copies the files of the working tree at root that git knows of (tracked, or
// new and not ignored), as they are on disk, to dst: a fresh checkout with the local changes.
func copyWorkingTree(t *testing.T, root, dst string) {
	t.Helper()
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("the README's tour runs from a copy of the files git knows, but git ls-files failed: %v", err)
	}
	for _, name := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		from, to := filepath.Join(root, name), filepath.Join(dst, name)
		fi, err := os.Lstat(from)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.IsDir() {
			continue // deleted in the working tree, or a submodule
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err == nil {
				err = os.Symlink(target, to)
			}
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestREADMEGoSnippetCompiles compiles the README's Go code against the module's gocql
// (ScyllaDB's v1.19.0): the blocks of declarations at file level, the others as the body of a
// function returning error. The retry policy it installs must be the one docs/cql-protocol.md
// shows, which test/interop runs against a cluster.
func TestREADMEGoSnippetCompiles(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("compiling the README's Go code needs the go command: %v", err)
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)\n```").FindAllStringSubmatch(string(readme), -1)
	var decls, body []string
	for _, b := range blocks {
		code := b[1]
		first := strings.TrimLeft(regexp.MustCompile(`(?m)^//.*\n`).ReplaceAllString(code, ""), "\n")
		if strings.HasPrefix(first, "type ") || strings.HasPrefix(first, "func ") {
			decls = append(decls, code)
		} else {
			body = append(body, code)
		}
	}
	if len(decls) == 0 || len(body) == 0 {
		t.Fatalf("%s has %d Go blocks of declarations and %d of statements, want the retry policy and the code that uses it", readmePath, len(decls), len(body))
	}
	if !strings.Contains(strings.Join(body, "\n"), "cluster.RetryPolicy = noRateLimitRetry{") {
		t.Errorf("%s's Go code does not install the retry policy noRateLimitRetry", readmePath)
	}
	doc, err := os.ReadFile(cqlProtocolPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- test/interop/gocql_test.go: gocql-retry -->\n```go\n(.*?)\n```").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no gocql-retry snippet", cqlProtocolPath)
	}
	if policy := string(m[1]); !strings.Contains(strings.Join(decls, "\n"), policy) {
		t.Errorf("%s's retry policy is not the one %s shows (and test/interop runs):\n%s", readmePath, cqlProtocolPath, policy)
	}

	src := "package main\n\nimport (\n\t\"errors\"\n\n\t\"github.com/gocql/gocql\"\n)\n\n" +
		strings.Join(decls, "\n\n") +
		"\n\nfunc readmeExample() error {\n" + strings.Join(body, "\n") + "\nreturn nil\n}\n\nfunc main() { _ = readmeExample }\n"
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The file is laid over a package directory of the module that does not exist, so that it
	// builds with the module's go.mod (its replace of gocql) without writing into the tree.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgDir := filepath.Join(root, "test", "e2e", "readmeexample")
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkgDir, "main.go"): file}})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCmd, "build", "-overlay", overlayPath, "-o", os.DevNull, "./test/e2e/readmeexample")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the README's Go code does not compile: %v\n%s\nthe program:\n%s", err, out, src)
	}
}
