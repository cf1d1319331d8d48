package cqlsh

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/frontend/grpcapi"
	"github.com/kvnode/kvnode/proto/kvnodepb"
	"github.com/kvnode/kvnode/tool/cliflags"
)

const selectKV = "SELECT k, v FROM ks.t WHERE k = 'a'"

// answerKV makes the node answer selectKV, and any other given statement text, with one row.
func answerKV(f *fakeNode, alsoTo ...string) {
	for _, stmt := range append([]string{selectKV}, alsoTo...) {
		answerKVTo(f, stmt)
	}
}

func answerKVTo(f *fakeNode, stmt string) {
	f.answer(stmt, rowsResponse([]*kvnodepb.Column{
		{Name: "k", Type: kvnodepb.ColumnType_COLUMN_TYPE_TEXT},
		{Name: "v", Type: kvnodepb.ColumnType_COLUMN_TYPE_INT},
	}, []*kvnodepb.Value{textValue("a"), intValue(42)}), nil)
}

// kvTable is how the shell prints the answer to selectKV: a blank line first, as cqlsh does.
const kvTable = "\n k |  v\n---+----\n a | 42\n\n(1 rows)\n"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// script is a small file using what the splitter must handle: a multi-line statement, ';' in a
// string and in comments, two statements on one line, a shell command and a last statement
// without ';'.
const script = `-- set up; nothing here runs
USE ks;
INSERT INTO t (k, v)
  VALUES ('a;b', 1); /* ; */ INSERT INTO t (k, v) VALUES ('c', 2);
CONSISTENCY QUORUM
` + selectKV

var scriptStatements = []string{
	"USE ks",
	"INSERT INTO t (k, v)\n  VALUES ('a;b', 1)",
	"INSERT INTO t (k, v) VALUES ('c', 2)",
	selectKV,
}

const scriptOutput = "Consistency level set to QUORUM.\n" + kvTable

func TestRunExecutesEveryInputInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  func(t *testing.T) []string
		stdin string
	}{
		{"-e", func(*testing.T) []string { return []string{"-e", script} }, ""},
		{"--execute", func(*testing.T) []string { return []string{"--execute", script} }, ""},
		{"-f", func(t *testing.T) []string { return []string{"-f", writeFile(t, "s.cql", script)} }, ""},
		{"stdin", func(*testing.T) []string { return nil }, script},
		{"stdin with CRLF", func(*testing.T) []string { return nil }, strings.ReplaceAll(script, "\n", "\r\n")},
	} {
		f := startNode(t)
		answerKV(f)
		stdout, stderr, err := f.run(t, tc.stdin, tc.args(t)...)
		if err != nil {
			t.Fatalf("%s: Run returned %v; stderr:\n%s", tc.name, err, stderr)
		}
		got := f.statements()
		if tc.name == "stdin with CRLF" {
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], "\r\n", "\n")
			}
		}
		if !reflect.DeepEqual(got, scriptStatements) {
			t.Errorf("%s: the node received\n%q\nwant\n%q", tc.name, got, scriptStatements)
		}
		if stdout != scriptOutput || stderr != "" {
			t.Errorf("%s: printed stdout\n%s\nstderr\n%s\nwant stdout\n%s\nand no stderr", tc.name, stdout, stderr, scriptOutput)
		}
		reqs := f.requests()
		if last := reqs[len(reqs)-1]; last.GetKeyspace() != "ks" || last.GetConsistency() != kvnodepb.Consistency_CONSISTENCY_QUORUM {
			t.Errorf("%s: the SELECT after USE ks and CONSISTENCY QUORUM carried keyspace %q at %v", tc.name, last.GetKeyspace(), last.GetConsistency())
		}
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	const input = "INSERT INTO t (k) VALUES (1);\nSELECT * FORM t;\nINSERT INTO t (k) VALUES (3);\n"
	bad := statusWith(t, codes.InvalidArgument, "1:10: expected FROM, found 'FORM'")
	for _, tc := range []struct {
		name       string
		args       func(t *testing.T) (args []string, source string)
		stdin      string
		wantPrefix string
	}{
		{"-e", func(*testing.T) ([]string, string) { return []string{"-e", input}, "" }, "", ""},
		{"-f", func(t *testing.T) ([]string, string) {
			p := writeFile(t, "bad.cql", input)
			return []string{"-f", p}, p + ":2: "
		}, "", ""},
		{"stdin", func(*testing.T) ([]string, string) { return nil, "<stdin>:2: " }, input, ""},
	} {
		f := startNode(t)
		f.answer("SELECT * FORM t", nil, bad)
		args, prefix := tc.args(t)
		_, stderr, err := f.run(t, tc.stdin, args...)
		if !errors.Is(err, ErrStatementFailed) {
			t.Errorf("%s: Run after a failed statement returned %v, want ErrStatementFailed", tc.name, err)
		}
		want := []string{"INSERT INTO t (k) VALUES (1)", "SELECT * FORM t"}
		if got := f.statements(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the node received %q, want it to stop after the failed statement: %q", tc.name, got, want)
		}
		if wantErr := prefix + "InvalidRequest: 1:10: expected FROM, found 'FORM'\n"; stderr != wantErr {
			t.Errorf("%s: stderr = %q, want %q", tc.name, stderr, wantErr)
		}
	}
}

func TestRunExitStopsTheScript(t *testing.T) {
	f := startNode(t)
	stdout, _, err := f.run(t, "INSERT INTO t (k) VALUES (1);\nexit\nINSERT INTO t (k) VALUES (2);\n")
	if err != nil {
		t.Fatalf("Run with EXIT returned %v, want nil", err)
	}
	if got := f.statements(); len(got) != 1 {
		t.Errorf("the node received %q; statements after EXIT must not run", got)
	}
	if stdout != "" {
		t.Errorf("EXIT printed %q, want nothing", stdout)
	}
}

func TestConsistencyCommand(t *testing.T) {
	f := startNode(t)
	answerKV(f)
	stdout, stderr, err := f.run(t, "", "--consistency", "all", "-e",
		"CONSISTENCY; "+selectKV+"; consistency local_quorum;\n"+selectKV+";\nConsistency")
	if err != nil {
		t.Fatalf("Run returned %v; stderr: %s", err, stderr)
	}
	want := "Current consistency level is ALL.\n" + kvTable + "Consistency level set to LOCAL_QUORUM.\n" + kvTable +
		"Current consistency level is LOCAL_QUORUM.\n"
	if stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
	}
	var got []kvnodepb.Consistency
	for _, r := range f.requests() {
		got = append(got, r.GetConsistency())
	}
	if want := []kvnodepb.Consistency{kvnodepb.Consistency_CONSISTENCY_ALL, kvnodepb.Consistency_CONSISTENCY_LOCAL_QUORUM}; !reflect.DeepEqual(got, want) {
		t.Errorf("the node received statements at %v, want %v (the --consistency flag, then the CONSISTENCY command)", got, want)
	}

	for _, tc := range []struct{ cmd, wantErr string }{
		{"CONSISTENCY ANY", `ShellError: CONSISTENCY: unknown consistency level "ANY" (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)`},
		{"CONSISTENCY ONE ALL", `ShellError: CONSISTENCY takes at most one level, got "ONE ALL"`},
	} {
		f := startNode(t)
		_, stderr, err := f.run(t, "", "-e", tc.cmd+"; INSERT INTO t (k) VALUES (1)")
		if !errors.Is(err, ErrStatementFailed) || stderr != tc.wantErr+"\n" {
			t.Errorf("%s: Run = %v with stderr %q; want ErrStatementFailed and %q", tc.cmd, err, stderr, tc.wantErr)
		}
		if got := f.statements(); len(got) != 0 {
			t.Errorf("%s: the node received %q after the bad shell command", tc.cmd, got)
		}
	}
}

// nodeStatus is the status a node sends for err.
func nodeStatus(err error) error { return grpcapi.ErrorStatus(err).Err() }

func TestErrorKindsArePrintedWithTheirDetails(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // ADDR stands for the node's address
	}{
		{"invalid", statusWith(t, codes.InvalidArgument, "1:8: expected FROM, found 'FORM'"),
			"InvalidRequest: 1:8: expected FROM, found 'FORM'"},
		// kvnode's typed errors: the status the node sends for each, and the shell prints its
		// kind and the node's message.
		{"unavailable", nodeStatus(&coordinator.UnavailableError{Consistency: coordinator.All, Live: 2, Required: 3}),
			"Unavailable: cannot achieve consistency level ALL: 2 replicas live, 3 required"},
		{"write timeout", nodeStatus(&coordinator.TimeoutError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2}),
			"Timeout: write timed out at QUORUM: 1 of 2 required acks received"},
		{"read timeout", nodeStatus(&coordinator.TimeoutError{Op: coordinator.OpRead, Consistency: coordinator.One, Received: 0, Required: 1}),
			"Timeout: read timed out at ONE: 0 of 1 required responses received"},
		{"failure", nodeStatus(&coordinator.FailureError{Op: coordinator.OpWrite, Consistency: coordinator.Quorum, Received: 1, Required: 2, Failures: 1, Rejected: 1, Err: errors.New("disk full")}),
			"Failure: write failed at QUORUM: 1 replica failed and 1 rejected (rate limit), 1 of 2 required acks received: disk full"},
		{"rate limited by the coordinator", nodeStatus(&coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpWrite, RejectedBy: coordinator.RejectedByCoordinator, Limit: 50, Count: 120, RetryAfter: 1234 * time.Millisecond}),
			"RateLimited: rate limit exceeded for writes on ks.t (limit 50/s), rejected by coordinator; retry after 1.234s"},
		{"rate limited by replicas, may be applied", nodeStatus(&coordinator.RateLimitError{Keyspace: "ks", Table: "t", Op: coordinator.OpWrite, RejectedBy: coordinator.RejectedByReplicas, Limit: 7, MayBeApplied: true}),
			"RateLimited: rate limit exceeded for writes on ks.t (limit 7/s), rejected by replicas; replicas that admitted the write may have applied it"},
		{"server fault", statusWith(t, codes.Internal, "disk on fire"), "ServerError: ADDR: disk on fire"},
		{"unauthorized", statusWith(t, codes.PermissionDenied, "User app has no ALTER permission on <table ks.t> or any of its parents"), "Unauthorized: User app has no ALTER permission on <table ks.t> or any of its parents"},
		{"not logged in", statusWith(t, codes.Unauthenticated, "Provided username app and/or password are incorrect"), "AuthenticationFailed: Provided username app and/or password are incorrect"},
		{"other status", statusWith(t, codes.FailedPrecondition, "not now"), "Error: failed precondition: not now"},
		{"overloaded without detail", statusWith(t, codes.ResourceExhausted, "too many requests"), "Error: resource exhausted: too many requests"},
	} {
		f := startNode(t)
		f.answer("SELECT 1", nil, tc.err)
		_, stderr, err := f.run(t, "", "-e", "SELECT 1")
		want := strings.ReplaceAll(tc.want, "ADDR", f.addr) + "\n"
		if stderr != want {
			t.Errorf("%s: printed %q, want %q", tc.name, stderr, want)
		}
		if !errors.Is(err, ErrStatementFailed) {
			t.Errorf("%s: Run returned %v, want ErrStatementFailed", tc.name, err)
		}
	}
}

func TestStatementTimeout(t *testing.T) {
	f := startNode(t)
	_, stderr, err := f.run(t, "", "--timeout", "50ms", "-e", slowStatement)
	want := "Timeout: no answer from " + f.addr + " within 50ms; a write may still have been applied\n"
	if stderr != want || !errors.Is(err, ErrStatementFailed) {
		t.Errorf("a statement past --timeout gave %v and printed %q; want ErrStatementFailed and %q", err, stderr, want)
	}
}

func TestResultKinds(t *testing.T) {
	f := startNode(t)
	f.answer("DESCRIBE KEYSPACES", &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Description{Description: "ks  system"}}, nil)
	f.answer("CREATE TABLE t (k int PRIMARY KEY)", &kvnodepb.ExecuteResponse{
		Result:   &kvnodepb.ExecuteResponse_SchemaChange{SchemaChange: &kvnodepb.SchemaChange{Change: kvnodepb.SchemaChange_CREATED, Keyspace: "ks", Table: "t"}},
		Warnings: []string{"schema agreement not reached within 10s"},
	}, nil)
	stdout, stderr, err := f.run(t, "", "-e",
		"DESCRIBE KEYSPACES; CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t (k) VALUES (1); USE ks")
	if err != nil {
		t.Fatalf("Run returned %v; stderr: %s", err, stderr)
	}
	if stdout != "ks  system\n" {
		t.Errorf("stdout = %q, want only the DESCRIBE text (DDL, INSERT and USE print nothing)", stdout)
	}
	if stderr != "Warning: schema agreement not reached within 10s\n" {
		t.Errorf("stderr = %q, want the DDL warning", stderr)
	}
}

func TestKeyspaceFlag(t *testing.T) {
	for _, tc := range []struct{ flag, wantUse string }{
		{"shop", "USE shop"},
		{"MyShop", `USE "MyShop"`},
		{"select", `USE "select"`},
	} {
		f := startNode(t)
		_, stderr, err := f.run(t, "", "--keyspace", tc.flag, "-e", "INSERT INTO carts (id) VALUES ('a')")
		if err != nil {
			t.Fatalf("--keyspace %s: Run returned %v; stderr: %s", tc.flag, err, stderr)
		}
		reqs := f.requests()
		if len(reqs) != 2 || reqs[0].GetStatement() != tc.wantUse || reqs[1].GetKeyspace() != tc.flag {
			t.Errorf("--keyspace %s: the node received %v; want %q first and then the INSERT in keyspace %s", tc.flag, reqs, tc.wantUse, tc.flag)
		}
	}

	f := startNode(t)
	f.answer("USE nope", nil, statusWith(t, codes.InvalidArgument, "keyspace nope does not exist"))
	_, stderr, err := f.run(t, "", "-k", "nope", "-e", "INSERT INTO carts (id) VALUES ('a')")
	if want := "--keyspace nope: InvalidRequest: keyspace nope does not exist\n"; stderr != want || !errors.Is(err, ErrStatementFailed) {
		t.Errorf("a missing --keyspace gave %v and printed %q; want ErrStatementFailed and %q", err, stderr, want)
	}
	if got := f.statements(); len(got) != 1 {
		t.Errorf("the node received %q; nothing may run after USE of the --keyspace failed", got)
	}
}

func TestConnectionFailureNamesTheAddress(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	f := &fakeNode{addr: addr}
	stdout, stderr, err := f.run(t, "", "--wait", "0", "-e", "SELECT 1")
	if want := "cql: cannot connect to kvnode at " + addr + ": connect: connection refused"; err == nil || err.Error() != want {
		t.Errorf("Run against a closed port returned %v, want %q", err, want)
	}
	if errors.Is(err, ErrStatementFailed) || stdout != "" || stderr != "" {
		t.Errorf("a connection failure must be returned, not printed: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
}

func TestFlagErrors(t *testing.T) {
	file := writeFile(t, "ok.cql", "SELECT 1;")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "cql: flag provided but not defined: -bogus (kvnode cql --help lists the flags)"},
		{[]string{"-e", "SELECT 1", "-f", file}, "cql: -e and -f cannot be used together"},
		{[]string{"-e", "  "}, "cql: -e needs a statement"},
		{[]string{"--consistency", "ANY"}, `cql: --consistency: unknown consistency level "ANY" (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)`},
		{[]string{"--timeout", "0s"}, "cql: --timeout must be positive, got 0s"},
		{[]string{"--timeout", "soon"}, `cql: invalid value "soon" for flag -timeout: parse error (kvnode cql --help lists the flags)`},
		{[]string{"--wait", "-1s"}, "cql: --wait must not be negative, got -1s"},
		{[]string{"localhost"}, `cql: unexpected argument "localhost": quote the statements of -e (kvnode cql --help lists the flags)`},
		{[]string{"-f", filepath.Join(t.TempDir(), "missing.cql")}, "cql: open "},
	} {
		// The address is never dialled: every case fails before connecting.
		f := &fakeNode{addr: "127.0.0.1:1"}
		stdout, stderr, err := f.run(t, "", tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Run(%q) returned %v, want an error starting %q", tc.args, err, tc.want)
		}
		var usage *cliflags.UsageError
		if isUsage := errors.As(err, &usage); isUsage != (tc.args[0] != "-f") {
			t.Errorf("Run(%q) returned %T, a usage error: %v; want one for every mistake on the command line (exit status 2), and for nothing else", tc.args, err, isUsage)
		}
		if stdout != "" || stderr != "" {
			t.Errorf("Run(%q) printed stdout %q stderr %q; flag errors are returned, not printed", tc.args, stdout, stderr)
		}
	}

	f := &fakeNode{addr: "127.0.0.1:1"}
	stdout, _, err := f.run(t, "", "-h")
	if err != nil || !strings.Contains(stdout, "Usage: kvnode cql") {
		t.Errorf("Run(-h) = %v with stdout %q; want nil and the usage", err, stdout)
	}
}
