// Package protocheck is the check, shared by the proto packages' tests, that committed generated
// code is what its .proto file generates: an edit to a .proto without `go generate` fails the
// suite.
package protocheck

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Current runs protoc from dir (relative to the test's package directory) with the include
// paths includes on the .proto file proto (relative to dir), as the package's go:generate line
// does, with the pinned plugins of go.mod's tool lines, into a temporary directory, and fails t
// for each generated file (NAME.pb.go, NAME_grpc.pb.go) that differs from the committed one in
// the package directory, or is committed when protoc generates none (NAME_grpc.pb.go of a .proto
// without services). It skips when protoc is missing or in -short mode (building the
// plugins takes a while).
func Current(t *testing.T, dir string, includes []string, proto string) {
	t.Helper()
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc is not installed (Debian: protobuf-compiler, libprotobuf-dev)")
	}
	if testing.Short() {
		t.Skip("builds the protoc plugins")
	}
	plugin := func(name string) string {
		out, err := exec.Command("go", "tool", "-n", name).Output()
		if err != nil {
			t.Fatalf("go tool -n %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	out := t.TempDir()
	var args []string
	for _, inc := range includes {
		args = append(args, "-I", inc)
	}
	args = append(args,
		"--plugin=protoc-gen-go="+plugin("protoc-gen-go"),
		"--plugin=protoc-gen-go-grpc="+plugin("protoc-gen-go-grpc"),
		"--go_out="+out, "--go_opt=paths=source_relative",
		"--go-grpc_out="+out, "--go-grpc_opt=paths=source_relative",
		proto)
	cmd := exec.Command("protoc", args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc %s: %v\n%s", proto, err, b)
	}
	name := strings.TrimSuffix(filepath.Base(proto), ".proto")
	for _, f := range []string{name + ".pb.go", name + "_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(out, filepath.Dir(proto), f))
		wantNone := errors.Is(err, fs.ErrNotExist) && f != name+".pb.go" // a .proto without services
		if err != nil && !wantNone {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		switch {
		case wantNone && err == nil:
			t.Errorf("%s is committed, but %s generates none (it has no services); delete it", f, proto)
		case wantNone && errors.Is(err, fs.ErrNotExist):
		case err != nil:
			t.Fatal(err)
		case !bytes.Equal(got, want):
			t.Errorf("%s differs from what %s generates; run go generate in its package", f, proto)
		}
	}
}
