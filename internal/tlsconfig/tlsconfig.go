// Package tlsconfig gives a node's listeners and internode clients their TLS configurations: a
// certificate, its key and the cluster's CA, read from PEM files and reloaded without a
// restart (Reloader.Reload, on SIGHUP or when the files change). Every connection handshakes
// with the certificate and CA current at that moment; established connections keep theirs.
//
// Internode connections are mutually authenticated: the server requires a client certificate
// and both sides verify the other's chain against the CA. Peers are dialled at the addresses
// they gossip, usually IP addresses, so internode verification checks the chain and not the
// host name: any certificate the cluster's CA signed is a member. Give a cluster a CA of its
// own. Client listeners (CQL native protocol, gRPC client API, metrics) present the
// certificate and ask clients for none; clients verify the server as usual (ClientConfig).
package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Files names the PEM files of a node's TLS material.
type Files struct {
	Cert string // the node's certificate chain, leaf first
	Key  string // the certificate's private key
	CA   string // the CA certificates that sign the cluster's certificates
}

// material is one loaded generation of the files.
type material struct {
	cert *tls.Certificate
	pool *x509.CertPool
	raw  [3][]byte // the files' contents: cert, key, CA
}

// Reloader holds a node's TLS material and reloads it from its files. It is safe for
// concurrent use: handshakes read the current material while Reload replaces it.
type Reloader struct {
	files Files
	cur   atomic.Pointer[material]
}

// New loads the files. All three are required.
func New(f Files) (*Reloader, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, errors.New("tlsconfig: a certificate, its key and a CA file are all required")
	}
	r := &Reloader{files: f}
	if _, err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads the files again and, when they changed, makes the new certificate and CA the
// ones every later handshake uses. On an error (a file missing or unreadable, a key that does
// not match the certificate, a CA file without certificates) it keeps the material it had and
// returns the error, naming the file; a half-written file is therefore harmless, and the next
// Reload picks up the complete one.
func (r *Reloader) Reload() (changed bool, err error) {
	var raw [3][]byte
	for i, path := range []string{r.files.Cert, r.files.Key, r.files.CA} {
		if raw[i], err = os.ReadFile(path); err != nil {
			return false, fmt.Errorf("tlsconfig: %w", err)
		}
	}
	if old := r.cur.Load(); old != nil && bytes.Equal(old.raw[0], raw[0]) && bytes.Equal(old.raw[1], raw[1]) && bytes.Equal(old.raw[2], raw[2]) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return false, fmt.Errorf("tlsconfig: certificate %s with key %s: %w", r.files.Cert, r.files.Key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw[2]) {
		return false, fmt.Errorf("tlsconfig: CA file %s holds no PEM certificate", r.files.CA)
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates(&cert), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return false, fmt.Errorf("tlsconfig: certificate %s is not signed by the CA in %s: %w", r.files.Cert, r.files.CA, err)
	}
	r.cur.Store(&material{cert: &cert, pool: pool, raw: raw})
	return true, nil
}

// Leaf returns the current certificate.
func (r *Reloader) Leaf() *x509.Certificate { return r.cur.Load().cert.Leaf }

func (r *Reloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load().cert, nil
}

func (r *Reloader) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.cur.Load().cert, nil
}

// ServerConfig is the configuration of a client listener: it presents the current
// certificate and asks clients for none.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.getCertificate}
}

// InternodeServerConfig is the configuration of the internode listener: it presents the
// current certificate and refuses a client that does not present one signed by the current
// CA.
func (r *Reloader) InternodeServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.getCertificate,
		// The CA may change on Reload, and tls.Config.ClientCAs is fixed: the chain is
		// verified against the current CA in VerifyConnection.
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: r.verifyPeer(x509.ExtKeyUsageClientAuth),
	}
}

// InternodeClientConfig is the configuration of a connection to a peer's internode listener:
// it presents the current certificate and accepts a server whose certificate the current CA
// signed (the chain, not the host name: see the package documentation).
func (r *Reloader) InternodeClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		GetClientCertificate: r.getClientCertificate,
		// Verification is VerifyConnection's, against the current CA; it is never skipped.
		InsecureSkipVerify: true,
		VerifyConnection:   r.verifyPeer(x509.ExtKeyUsageServerAuth),
	}
}

// verifyPeer returns a VerifyConnection function checking the peer's chain against the
// current CA for the given use.
func (r *Reloader) verifyPeer(usage x509.ExtKeyUsage) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tlsconfig: the peer presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots: r.cur.Load().pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage},
		})
		if err != nil {
			return fmt.Errorf("tlsconfig: the peer's certificate (%s) is not signed by the cluster's CA: %w", cs.PeerCertificates[0].Subject, err)
		}
		return nil
	}
}

func intermediates(c *tls.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, der := range c.Certificate[1:] {
		if ic, err := x509.ParseCertificate(der); err == nil {
			pool.AddCert(ic)
		}
	}
	return pool
}

// ClientConfig is the configuration of a client tool (kvnode cql, kvnode bench) that trusts
// the CA certificates in the PEM file caFile and verifies the server's host name as usual.
func ClientConfig(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}
