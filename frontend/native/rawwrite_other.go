//go:build !unix

package native

import (
	"errors"
	"net"
	"syscall"
)

// rawConn returns nil: writeDirect's non-blocking writes are for unix sockets.
func rawConn(net.Conn) syscall.RawConn { return nil }

// rawWriter is writeDirect's writer, which there is none of here.
type rawWriter struct{}

// newRawWriter returns nil: writeDirect's non-blocking writes are for unix sockets.
func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) writeSome([]byte) (int, error) { return 0, errors.ErrUnsupported }
