package e2e

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
	"github.com/kvnode/kvnode/test/proc"
)

// TestSecureCluster runs `kvnode serve` processes with the flags of docs/operations.md's
// threat model: TLS on every listener (mutual internode), gossip encryption. The nodes form a
// cluster and replicate; `kvnode cql --tls-ca` works and a plaintext shell is refused; a
// renewed certificate is served after SIGHUP, without a restart.
func TestSecureCluster(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "gossip.keys")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var certs []tlstest.Files
	var args [][]string
	for i := range 2 {
		f := ca.Issue(t, dir, fmt.Sprintf("n%d", i+1))
		certs = append(certs, f)
		args = append(args, []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA, "--gossip-key-file", keyFile})
	}
	clientTLS, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{t: t, pc: &proc.Cluster{}}
	root := t.TempDir()
	t.Cleanup(tc.stopAll)
	pc, err := proc.Start(proc.Options{Binary: kvnodeBinary, Dir: root, Nodes: 2, ExtraArgs: args, ClientTLS: clientTLS})
	if pc != nil {
		tc.pc, tc.nodes = pc, pc.Nodes
	}
	if err != nil {
		t.Fatal(err)
	}
	tc.waitStates(joinTimeout, tc.nodes, tc.allUp())
	n1, n2 := tc.nodes[0], tc.nodes[1]

	execute(t, n1.Client(), client.All, "CREATE KEYSPACE sec WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	execute(t, n1.Client(), client.All, "CREATE TABLE sec.t (k text PRIMARY KEY, v int)")
	execute(t, n1.Client(), client.All, "INSERT INTO sec.t (k, v) VALUES ('a', 1)")
	if got := execute(t, n2.Client(), client.All, "SELECT v FROM sec.t WHERE k = 'a'"); len(got.Rows) != 1 {
		t.Fatalf("a write at ALL through n1 read at ALL through n2: %d rows, want 1", len(got.Rows))
	}

	out, errOut, err := runTool(t, 30*time.Second, "cql", "--protocol", "grpc", "--addr", n2.Addr, "--tls-ca", ca.CertFile, "-e", "SELECT v FROM sec.t WHERE k = 'a'")
	if err != nil || !strings.Contains(out, "1") {
		t.Errorf("kvnode cql --tls-ca: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if _, _, err := runTool(t, 30*time.Second, "cql", "--protocol", "grpc", "--addr", n2.Addr, "-e", "SELECT v FROM sec.t WHERE k = 'a'"); err == nil {
		t.Error("a plaintext kvnode cql ran a statement on a TLS node")
	}

	// The admin commands reach a TLS node with --tls-ca, and only with it.
	out, errOut, err = runTool(t, 30*time.Second, "status", "--addr", n2.Addr, "--tls-ca", ca.CertFile, "--json")
	if err != nil || strings.Count(out, `"state": "UN"`)+strings.Count(out, `"state":"UN"`) != 2 {
		t.Errorf("kvnode status --tls-ca: %v, want both nodes UN\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if _, _, err := runTool(t, 30*time.Second, "status", "--addr", n2.Addr, "--timeout", "5s"); err == nil {
		t.Error("a plaintext kvnode status got an answer from a TLS node")
	}
	out, errOut, err = runTool(t, 60*time.Second, "repair", "--addr", n2.Addr, "--tls-ca", ca.CertFile, "sec.t")
	if err != nil {
		t.Errorf("kvnode repair --tls-ca: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}

	// Renew n1's certificate on disk, then SIGHUP.
	renewed := ca.Issue(t, t.TempDir(), "n1-renewed")
	for from, to := range map[string]string{renewed.Cert: certs[0].Cert, renewed.Key: certs[0].Key} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		tmp := to + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, to); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.Proc().Hangup(); err != nil {
		t.Fatal(err)
	}
	poll.Must(t, 30*time.Second, "n1 presents its renewed certificate after SIGHUP", func() error {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: clientTLS}
		c, err := d.Dial("tcp", n1.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if cn := c.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "n1-renewed" {
			return errors.New("it presents " + cn)
		}
		return nil
	})
	// The renewed node still talks to its peer over mutual TLS.
	execute(t, n1.Client(), client.All, "INSERT INTO sec.t (k, v) VALUES ('b', 2)")
	if got := execute(t, n2.Client(), client.All, "SELECT v FROM sec.t WHERE k = 'b'"); len(got.Rows) != 1 {
		t.Fatalf("after the renewal, a write at ALL through n1 read through n2: %d rows, want 1", len(got.Rows))
	}
}
