//go:build unix

package native

import (
	"net"
	"syscall"
)

// rawConn returns nc's socket for writeSome, or nil when it has none (TLS, pipes).
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// writeSome writes b to rc's socket with one non-blocking write, and returns how much of it
// the socket took: all of it, some, or none when its buffer is full.
func writeSome(rc syscall.RawConn, b []byte) (int, error) {
	var (
		n    int
		werr error
	)
	err := rc.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if werr != syscall.EINTR {
				return true // done, even when the socket is full: the writer waits, not us
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case werr == syscall.EAGAIN:
		return 0, nil
	case werr != nil:
		return 0, werr
	}
	return max(n, 0), nil
}
