package internode

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/kvnode/kvnode/internal/lockedbuf"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/internal/tlsconfig"
	"github.com/kvnode/kvnode/internal/tlsconfig/tlstest"
)

// TestFramedHalfOpenClosedWithinHandshakeTimeout opens connections that stop inside the
// handshake: before the first byte, inside the magic, and, under TLS, after the magic (no
// ClientHello). The server closes each once HandshakeTimeout passed, long before the client's
// own deadline, and logs the two that started the framed protocol.
func TestFramedHalfOpenClosedWithinHandshakeTimeout(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "cluster")
	files := ca.Issue(t, dir, "n2")
	r, err := tlsconfig.New(tlsconfig.Files{Cert: files.Cert, Key: files.Key, CA: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	var plainLog, tlsLog lockedbuf.Buffer
	plain := newFuzzServer(t, FramedServerOptions{HandshakeTimeout: timeout, Log: slog.New(slog.NewTextHandler(&plainLog, nil))})
	tlsSrv := newFuzzServer(t, FramedServerOptions{HandshakeTimeout: timeout, Log: slog.New(slog.NewTextHandler(&tlsLog, nil)),
		Credentials: credentials.NewTLS(r.InternodeServerConfig())})
	for _, tc := range []struct {
		name, addr, send, echo, log string
		logged                      *lockedbuf.Buffer
	}{
		{"nothing", plain.addr, "", "", "", nil},
		{"part of the magic", plain.addr, framedMagic[:7], "", "sent part of the framed magic", &plainLog},
		{"the magic, then no ClientHello", tlsSrv.addr, framedMagic, framedMagic, "TLS handshake failed", &tlsLog},
	} {
		c, err := net.Dial("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		c.SetDeadline(start.Add(20 * time.Second)) // the test's bound, far beyond the server's
		if _, err := io.WriteString(c, tc.send); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c) // returns once the server closes the connection
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: the server kept the connection for %v, its handshake timeout is %v", tc.name, time.Since(start), timeout)
		}
		if string(got) != tc.echo {
			t.Errorf("%s: the server sent %q before closing, want %q", tc.name, got, tc.echo)
		}
		if tc.logged != nil {
			// gRPC's TLS handshake closes the connection before the server logs.
			poll.Must(t, 10*time.Second, tc.name+" logged", func() error {
				if !strings.Contains(tc.logged.String(), tc.log) {
					return fmt.Errorf("the log %q lacks %q", tc.logged.String(), tc.log)
				}
				return nil
			})
		}
	}
}
