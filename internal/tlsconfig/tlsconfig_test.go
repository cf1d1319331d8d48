package tlsconfig_test

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
)

// handshake runs one TLS handshake over loopback TCP between a server with srv and a client
// with cli, and returns the client's error, the server's error and the certificate the client
// saw.
func handshake(t *testing.T, srv, cli *tls.Config) (clientErr, serverErr error, serverCN string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	res := make(chan error, 1)
	go func() {
		c, err := lis.Accept()
		if err != nil {
			res <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		tc := tls.Server(c, srv)
		err = tc.Handshake()
		if err == nil {
			// A TLS 1.3 client finishes its handshake before the server has checked the
			// client's certificate: the client reads this byte, or the server's refusal.
			_, err = tc.Write([]byte{1})
		}
		res <- err
	}()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if cli.ServerName == "" && !cli.InsecureSkipVerify {
		cli = cli.Clone()
		cli.ServerName = "127.0.0.1"
	}
	tc := tls.Client(c, cli)
	clientErr = tc.Handshake()
	if clientErr == nil {
		var b [1]byte
		if _, err := tc.Read(b[:]); err != nil {
			clientErr = err
		}
		serverCN = tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	c.Close()
	serverErr = <-res
	return clientErr, serverErr, serverCN
}

func TestInternodeIsMutual(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	other := tlstest.NewCA(t, dir, "other")
	n1, n2 := ca.Issue(t, dir, "n1"), ca.Issue(t, dir, "n2")
	intruder := other.Issue(t, dir, "intruder")
	r1 := load(t, n1)
	r2 := load(t, n2)

	if cerr, serr, cn := handshake(t, r1.InternodeServerConfig(), r2.InternodeClientConfig()); cerr != nil || serr != nil || cn != "n1" {
		t.Errorf("a peer with the cluster's certificate: client %v, server %v, saw %q; want a handshake with n1", cerr, serr, cn)
	}
	// No client certificate: a plain TLS client trusting the CA.
	trusting, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, serr, _ := handshake(t, r1.InternodeServerConfig(), trusting); serr == nil {
		t.Error("the internode server accepted a client without a certificate")
	}
	// A certificate of another CA, on either side.
	ri, err := tlsconfig.New(tlsconfig.Files{Cert: intruder.Cert, Key: intruder.Key, CA: other.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	// The intruder trusts the cluster's CA (its certificate is public) but holds a certificate
	// another CA signed.
	intruderCert, err := tls.LoadX509KeyPair(intruder.Cert, intruder.Key)
	if err != nil {
		t.Fatal(err)
	}
	intruderCfg := trusting.Clone()
	intruderCfg.Certificates = []tls.Certificate{intruderCert}
	if _, serr, _ := handshake(t, r1.InternodeServerConfig(), intruderCfg); serr == nil || !strings.Contains(serr.Error(), "not signed by the cluster's CA") {
		t.Errorf("the internode server with a client certificate of another CA: %v, want a refusal naming the CA", serr)
	}
	if cerr, _, _ := handshake(t, ri.InternodeServerConfig(), r1.InternodeClientConfig()); cerr == nil || !strings.Contains(cerr.Error(), "not signed by the cluster's CA") {
		t.Errorf("an internode client reaching a server of another CA: %v, want a refusal naming the CA", cerr)
	}
}

func TestClientListener(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	r := load(t, ca.Issue(t, dir, "n1"))
	trusting, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if cerr, serr, cn := handshake(t, r.ServerConfig(), trusting); cerr != nil || serr != nil || cn != "n1" {
		t.Errorf("a client trusting the CA: client %v, server %v, saw %q; want a handshake with n1", cerr, serr, cn)
	}
	other := tlstest.NewCA(t, dir, "other")
	distrusting, err := tlsconfig.ClientConfig(other.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if cerr, _, _ := handshake(t, r.ServerConfig(), distrusting); cerr == nil {
		t.Error("a client trusting another CA accepted the node's certificate")
	}
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	f := ca.Issue(t, dir, "n1")
	r := load(t, f)
	trusting, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := r.Reload(); changed || err != nil {
		t.Errorf("Reload of unchanged files = %v, %v; want false, nil", changed, err)
	}

	// A renewed certificate (same CA) is served from the next handshake on.
	renewed := ca.Issue(t, t.TempDir(), "n1-renewed")
	replace(t, renewed.Cert, f.Cert)
	replace(t, renewed.Key, f.Key)
	if changed, err := r.Reload(); !changed || err != nil {
		t.Fatalf("Reload of a renewed certificate = %v, %v; want true, nil", changed, err)
	}
	if _, _, cn := handshake(t, r.ServerConfig(), trusting); cn != "n1-renewed" {
		t.Errorf("after Reload the server presents %q, want n1-renewed", cn)
	}

	// A half-written or mismatched file keeps the last good material.
	for _, bad := range []struct {
		name, file, content, want string
	}{
		{"a truncated certificate", f.Cert, "-----BEGIN CERTIFICATE-----\nMII", f.Cert},
		{"a key of another certificate", f.Key, string(read(t, ca.Issue(t, t.TempDir(), "x").Key)), f.Key},
		{"an empty CA file", f.CA, "", f.CA},
	} {
		saved := read(t, bad.file)
		if err := os.WriteFile(bad.file, []byte(bad.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if changed, err := r.Reload(); changed || err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Reload with %s = %v, %v; want an error naming %s", bad.name, changed, err, bad.want)
		}
		if _, _, cn := handshake(t, r.ServerConfig(), trusting); cn != "n1-renewed" {
			t.Errorf("after a failed Reload with %s the server presents %q, want n1-renewed still", bad.name, cn)
		}
		if err := os.WriteFile(bad.file, saved, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// A new CA and a certificate it signed: peers of the new CA are accepted, of the old refused.
	ca2 := tlstest.NewCA(t, t.TempDir(), "cluster2")
	n2 := ca2.Issue(t, t.TempDir(), "n2")
	replace(t, n2.Cert, f.Cert)
	replace(t, n2.Key, f.Key)
	origCA := filepath.Join(t.TempDir(), "orig-ca.pem")
	replace(t, f.CA, origCA)
	replace(t, ca2.CertFile, f.CA)
	if changed, err := r.Reload(); !changed || err != nil {
		t.Fatalf("Reload of a new CA = %v, %v; want true, nil", changed, err)
	}
	peer := load(t, ca2.Issue(t, t.TempDir(), "peer2"))
	if cerr, serr, _ := handshake(t, r.InternodeServerConfig(), peer.InternodeClientConfig()); cerr != nil || serr != nil {
		t.Errorf("a peer of the new CA after Reload: client %v, server %v; want a handshake", cerr, serr)
	}
	p1 := ca.Issue(t, t.TempDir(), "peer1")
	p1.CA = origCA
	oldPeer := load(t, p1)
	if _, serr, _ := handshake(t, r.InternodeServerConfig(), oldPeer.InternodeClientConfig()); serr == nil {
		t.Error("a peer of the replaced CA was accepted after Reload")
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	other := tlstest.NewCA(t, dir, "other")
	f := ca.Issue(t, dir, "n1")
	for _, c := range []struct {
		name  string
		files tlsconfig.Files
		want  string
	}{
		{"no CA", tlsconfig.Files{Cert: f.Cert, Key: f.Key}, "all required"},
		{"a missing key file", tlsconfig.Files{Cert: f.Cert, Key: f.Key + ".missing", CA: f.CA}, f.Key + ".missing"},
		{"a certificate of another CA", tlsconfig.Files{Cert: f.Cert, Key: f.Key, CA: other.CertFile}, "not signed by the CA in " + other.CertFile},
		{"the key as certificate", tlsconfig.Files{Cert: f.Key, Key: f.Key, CA: f.CA}, f.Key},
	} {
		if _, err := tlsconfig.New(c.files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New with %s = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := tlsconfig.ClientConfig(f.Key); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("ClientConfig of a key file = %v, want an error saying it holds no certificate", err)
	}
}

func load(t *testing.T, f tlstest.Files) *tlsconfig.Reloader {
	t.Helper()
	r, err := tlsconfig.New(tlsconfig.Files{Cert: f.Cert, Key: f.Key, CA: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replace(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, read(t, from), 0o600); err != nil {
		t.Fatal(err)
	}
}
