package replicapb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the Go code from replica.proto into a
// temporary directory and compares it with the committed files, so that an
// edit to the .proto without `go generate` fails the suite.
func TestGeneratedCodeIsCurrent(t *testing.T) {
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
	dir := t.TempDir()
	cmd := exec.Command("protoc",
		"--plugin=protoc-gen-go="+plugin("protoc-gen-go"),
		"--plugin=protoc-gen-go-grpc="+plugin("protoc-gen-go-grpc"),
		"--go_out="+dir, "--go_opt=paths=source_relative",
		"--go-grpc_out="+dir, "--go-grpc_opt=paths=source_relative",
		"replica.proto")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	for _, f := range []string{"replica.pb.go", "replica_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what replica.proto generates; run go generate ./proto/replicapb/", f)
		}
	}
}
