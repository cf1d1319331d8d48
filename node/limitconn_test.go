package node

import (
	"crypto/tls"
	"net"
	"syscall"
	"testing"
)

// TestLimitConnExposesItsSocket: a connection the limit listener accepts gives its socket to
// whoever asks for it as a syscall.Conn (the native front end writes small answers with a
// non-blocking write of its own), and only when the connection it wraps has one.
func TestLimitConnExposesItsSocket(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(lis, 0, 0, "--cql-addr", "max_native_connections", "max_connections_per_host", nil)
	defer ll.Close()
	client, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := ll.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		t.Fatalf("the limit listener's connection (%T) is not a syscall.Conn, want its TCP socket exposed", nc)
	}
	if rc, err := sc.SyscallConn(); rc == nil || err != nil {
		t.Errorf("SyscallConn() = %v, %v; want the TCP connection's socket", rc, err)
	}
	wrapped := &limitConn{Conn: tls.Client(client, &tls.Config{})}
	if rc, err := wrapped.SyscallConn(); rc != nil || err == nil {
		t.Errorf("SyscallConn() of a connection wrapping TLS = %v, %v; want an error: its bytes are not the socket's", rc, err)
	}
}
