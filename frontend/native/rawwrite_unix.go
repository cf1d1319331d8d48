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

// rawWriter makes writeDirect's non-blocking writes to a connection's socket. There is one per
// connection, used under its wmu, and it holds what a write needs, so that a write allocates
// nothing (a closure given to RawConn.Write, and the results it sets, would escape to the heap
// on every write).
type rawWriter struct {
	rc    syscall.RawConn
	write func(fd uintptr) bool // w.writeFD, bound once
	b     []byte
	n     int
	err   error
}

// newRawWriter returns a rawWriter of nc's socket, or nil when it has none (TLS, pipes).
func newRawWriter(nc net.Conn) *rawWriter {
	rc := rawConn(nc)
	if rc == nil {
		return nil
	}
	w := &rawWriter{rc: rc}
	w.write = w.writeFD
	return w
}

func (w *rawWriter) writeFD(fd uintptr) bool {
	for {
		w.n, w.err = syscall.Write(int(fd), w.b)
		if w.err != syscall.EINTR {
			return true // done, even when the socket is full: the writer waits, not us
		}
	}
}

// writeSome writes b to the socket with one non-blocking write, and returns how much of it the
// socket took: all of it, some, or none when its buffer is full.
func (w *rawWriter) writeSome(b []byte) (int, error) {
	w.b = b
	err := w.rc.Write(w.write)
	n, werr := w.n, w.err
	w.b, w.err = nil, nil
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
