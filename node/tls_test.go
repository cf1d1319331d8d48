package node_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
	"github.com/kvnode/kvnode/node"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// tlsNodeConfig is nodeConfig with TLS from a certificate ca issues for name.
func tlsNodeConfig(t *testing.T, ca *tlstest.CA, name string, seeds []string) node.Config {
	t.Helper()
	f := ca.Issue(t, t.TempDir(), name)
	cfg := nodeConfig(t.TempDir(), seeds)
	cfg.Security.TLSCert, cfg.Security.TLSKey, cfg.Security.TLSCA = f.Cert, f.Key, f.CA
	return cfg
}

// trusting is a client's TLS configuration trusting ca.
func trusting(t *testing.T, ca *tlstest.CA) *tls.Config {
	t.Helper()
	cfg, err := tlsconfig.ClientConfig(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// dialClient connects the Go client to addr with creds.
func dialClient(addr string, creds credentials.TransportCredentials) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return client.Dial(ctx, addr, client.WithDialOptions(grpc.WithTransportCredentials(creds)))
}

// callInternode sends a top_partitions request (Internode/Call) to addr with creds, failing
// fast.
func callInternode(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := &replicapb.Request{Msg: &replicapb.Request_TopPartitions{TopPartitions: &replicapb.TopPartitionsRequest{}}}
	_, err = replicapb.NewInternodeClient(conn).Call(ctx, req)
	return err
}

// cqlSession opens a gocql session on the native address addr, over TLS when cfg is set.
func cqlSession(addr string, cfg *tls.Config) (*gocql.Session, error) {
	c := gocql.NewCluster(addr)
	c.ProtoVersion = 4
	c.Timeout, c.ConnectTimeout = 10*time.Second, 10*time.Second
	c.DisableInitialHostLookup = true
	c.Events.DisableTopologyEvents = true
	c.NumConns = 1
	if cfg != nil {
		c.SslOpts = &gocql.SslOptions{Config: cfg, EnableHostVerification: true}
	}
	return c.CreateSession()
}

// TestTLSOnEveryListener is issue 18's "a plaintext client on a TLS port is refused while a
// client trusting the CA connects", on the gRPC client API, the native protocol, the internode
// port (which also refuses a TLS client without a certificate of the CA) and /metrics.
func TestTLSOnEveryListener(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir(), "cluster")
	cfg := tlsNodeConfig(t, ca, "n1", nil)
	cfg.Listen.MetricsAddr, cfg.Security.MetricsTLS = "127.0.0.1:0", true
	nd := startNode(t, cfg)

	t.Run("gRPC client API", func(t *testing.T) {
		if c, err := dialClient(nd.Addr(), insecure.NewCredentials()); err == nil {
			c.Close()
			t.Error("a plaintext gRPC client connected to the TLS client port")
		}
		c, err := dialClient(nd.Addr(), credentials.NewTLS(trusting(t, ca)))
		if err != nil {
			t.Fatalf("a gRPC client trusting the CA: %v", err)
		}
		defer c.Close()
		exec(t, c, client.One, "CREATE KEYSPACE tls WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
		exec(t, c, client.One, "CREATE TABLE tls.t (k text PRIMARY KEY, v int)")
		exec(t, c, client.One, "INSERT INTO tls.t (k, v) VALUES ('a', 7)")
	})

	t.Run("native protocol", func(t *testing.T) {
		if s, err := cqlSession(nd.CQLAddr(), nil); err == nil {
			s.Close()
			t.Error("a plaintext CQL driver connected to the TLS native port")
		}
		s, err := cqlSession(nd.CQLAddr(), trusting(t, ca))
		if err != nil {
			t.Fatalf("a CQL driver trusting the CA: %v", err)
		}
		defer s.Close()
		var v int
		if err := s.Query("SELECT v FROM tls.t WHERE k = 'a'").Scan(&v); err != nil || v != 7 {
			t.Errorf("SELECT over TLS = %d, %v; want 7", v, err)
		}
		other := tlstest.NewCA(t, t.TempDir(), "other")
		if s, err := cqlSession(nd.CQLAddr(), trusting(t, other)); err == nil {
			s.Close()
			t.Error("a CQL driver trusting another CA connected")
		}
	})

	t.Run("internode", func(t *testing.T) {
		if err := callInternode(t, nd.InternodeAddr(), insecure.NewCredentials()); err == nil {
			t.Error("a plaintext client called the internode port")
		}
		if err := callInternode(t, nd.InternodeAddr(), credentials.NewTLS(trusting(t, ca))); err == nil {
			t.Error("a TLS client without a certificate called the internode port")
		}
		other := tlstest.NewCA(t, t.TempDir(), "other")
		intruder := other.Issue(t, t.TempDir(), "intruder")
		cert, err := tls.LoadX509KeyPair(intruder.Cert, intruder.Key)
		if err != nil {
			t.Fatal(err)
		}
		withForeignCert := trusting(t, ca)
		withForeignCert.Certificates = []tls.Certificate{cert}
		if err := callInternode(t, nd.InternodeAddr(), credentials.NewTLS(withForeignCert)); err == nil {
			t.Error("a client with a certificate of another CA called the internode port")
		}
		peer := ca.Issue(t, t.TempDir(), "peer")
		r, err := tlsconfig.New(tlsconfig.Files{Cert: peer.Cert, Key: peer.Key, CA: peer.CA})
		if err != nil {
			t.Fatal(err)
		}
		if err := callInternode(t, nd.InternodeAddr(), credentials.NewTLS(r.InternodeClientConfig())); err != nil {
			t.Errorf("a peer with a certificate of the CA: %v", err)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		hc := &http.Client{Timeout: 20 * time.Second}
		if resp, err := hc.Get("http://" + nd.MetricsAddr() + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "kvnode_") {
				t.Errorf("plain HTTP on the TLS metrics port got %s with metrics", resp.Status)
			}
		}
		hc.Transport = &http.Transport{TLSClientConfig: trusting(t, ca)}
		resp, err := hc.Get("https://" + nd.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatalf("HTTPS trusting the CA: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "kvnode_cluster_member_up") {
			t.Errorf("HTTPS /metrics = %s, want 200 with the node's metrics", resp.Status)
		}
	})
}

// TestTLSClusterTalksMutualTLS starts two nodes with certificates of one CA: they replicate to
// each other over mutually authenticated internode connections.
func TestTLSClusterTalksMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir(), "cluster")
	n1 := startNode(t, tlsNodeConfig(t, ca, "n1", nil))
	n2 := startNode(t, tlsNodeConfig(t, ca, "n2", []string{n1.GossipAddr()}))
	poll.Must(t, 30*time.Second, "both nodes see 2 live members", poll.Bool(func() bool {
		return liveCount(n1) == 2 && liveCount(n2) == 2
	}))
	c1, err := dialClient(n1.Addr(), credentials.NewTLS(trusting(t, ca)))
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := dialClient(n2.Addr(), credentials.NewTLS(trusting(t, ca)))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	exec(t, c1, client.All, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
	exec(t, c1, client.All, "CREATE TABLE ks.t (k text PRIMARY KEY, v int)")
	for i := range 20 {
		exec(t, c1, client.All, fmt.Sprintf("INSERT INTO ks.t (k, v) VALUES ('k%d', %d)", i, i))
	}
	for i := range 20 {
		if got := exec(t, c2, client.All, fmt.Sprintf("SELECT v FROM ks.t WHERE k = 'k%d'", i)); len(got.Rows) != 1 {
			t.Fatalf("k%d written at ALL through n1 and read at ALL through n2: %d rows, want 1", i, len(got.Rows))
		}
	}
}

func liveCount(nd *node.Node) int {
	live := 0
	for _, m := range nd.Cluster().Members() {
		if m.Live {
			live++
		}
	}
	return live
}

// presented returns the common name of the certificate addr presents.
func presented(addr string, cfg *tls.Config) (string, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// TestTLSReload renews a node's certificate on disk: the node presents the new one without a
// restart, on Reload (SIGHUP) and on its own when the files change; a bad file changes nothing.
func TestTLSReload(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir(), "cluster")
	cfg := tlsNodeConfig(t, ca, "n1", nil)
	cfg.Security.ReloadInterval = time.Hour // Reload only, first
	nd := startNode(t, cfg)
	client := trusting(t, ca)
	renew := func(name string) {
		t.Helper()
		f := ca.Issue(t, t.TempDir(), name)
		for from, to := range map[string]string{f.Cert: cfg.Security.TLSCert, f.Key: cfg.Security.TLSKey} {
			data, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			// Replace atomically, as a certificate manager does: the node never reads half.
			tmp := filepath.Join(filepath.Dir(to), ".tmp")
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, to); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cn, err := presented(nd.CQLAddr(), client); cn != "n1" || err != nil {
		t.Fatalf("the native port presents %q, %v; want n1", cn, err)
	}
	renew("n1-renewed")
	if err := nd.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	for _, addr := range []string{nd.CQLAddr(), nd.Addr(), nd.InternodeAddr()} {
		cfg := client
		if addr == nd.InternodeAddr() {
			cfg = client.Clone()
			cfg.InsecureSkipVerify = true // only the certificate presented matters here
		}
		if cn, err := presented(addr, cfg); cn != "n1-renewed" {
			t.Errorf("after Reload %s presents %q, %v; want n1-renewed", addr, cn, err)
		}
	}
	if err := os.WriteFile(cfg.Security.TLSKey, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := nd.Reload(); err == nil || !strings.Contains(err.Error(), cfg.Security.TLSKey) {
		t.Errorf("Reload with a garbage key = %v, want an error naming %s", err, cfg.Security.TLSKey)
	}
	if cn, err := presented(nd.CQLAddr(), client); cn != "n1-renewed" {
		t.Errorf("after a failed Reload the native port presents %q, %v; want n1-renewed still", cn, err)
	}

	// On file change, without Reload.
	cfg2 := tlsNodeConfig(t, ca, "n2", nil)
	cfg2.Security.ReloadInterval = 20 * time.Millisecond
	nd2 := startNode(t, cfg2)
	cfg = cfg2
	renew("n2-renewed")
	poll.Must(t, 30*time.Second, "the node presents its renewed certificate", func() error {
		cn, err := presented(nd2.Addr(), client)
		if err == nil && cn != "n2-renewed" {
			err = errors.New("it presents " + cn)
		}
		return err
	})
}
