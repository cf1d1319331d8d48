//go:build !unix

package native

import (
	"errors"
	"net"
	"syscall"
)

// rawConn returns nil: writeDirect's non-blocking writes are for unix sockets.
func rawConn(net.Conn) syscall.RawConn { return nil }

func writeSome(syscall.RawConn, []byte) (int, error) { return 0, errors.ErrUnsupported }
