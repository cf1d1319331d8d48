package internode

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// The framed protocol carries pipes (pipe.go) without gRPC: on a connection of its own to the
// peer's internode port, beside gRPC's, with the same TLS (the Sender's and the server's gRPC
// transport credentials do the handshake, so certificates and their verification are gRPC's).
// What gRPC costs a pipe's message and the framed protocol does not: a writer goroutine per
// connection (each message handed to it), a reader goroutine per connection handing each
// message to the stream's, HTTP/2 framing and flow control (window updates are writes of their
// own), and protobuf copies between them. On a framed connection the goroutine that flushes a
// pipe writes its batch to the socket itself, in one write, and the pipe's reader reads the
// socket itself.
//
// A connection starts with the client sending framedMagic in clear, which the server answers
// with framedMagic; then comes the TLS handshake, when the node has TLS. gRPC clients start
// with a TLS ClientHello (0x16) or HTTP/2's preface ("PRI * HTTP/2.0"), so the server tells the
// protocols apart by the first byte (FramedServer.Split). A server of an older release answers
// framedMagic with something else, or closes: the Sender then uses the pipe over gRPC, or unary
// calls.
//
// After the handshake each message is a frame: its length as 4 bytes, big-endian, then the
// message, a PipeRequests from the client, a PipeResponses from the server. A frame of length 0
// is a ping from the client, answered by one from the server: a client that read nothing for
// KeepaliveTime pings, and closes the connection when KeepaliveTimeout more brings nothing, as
// gRPC's keepalive does. A frame longer than framedMaxFrame is refused before anything is
// allocated for it, and closes the connection.

// framedMagic opens a framed connection, in both directions; 24 bytes, the length of HTTP/2's
// client preface, so that a gRPC server of an older release reads it whole and refuses it at
// once instead of waiting for more.
const framedMagic = "KVNF/1 internode frames\n"

// framedMaxFrame bounds a frame: a pipe's batch stops growing past pipeMaxBatchBytes, and holds
// no message above pipeMaxSingleBytes, so twice pipeMaxBatchBytes leaves room for the framing.
const framedMaxFrame = 2 * pipeMaxBatchBytes

// Timeouts of framed connections.
const (
	// framedDialTimeout bounds the client's connect, magic and TLS handshake.
	framedDialTimeout = 5 * time.Second
	// framedWriteTimeout bounds one write: a peer that takes nothing for so long is gone.
	framedWriteTimeout = KeepaliveTime + KeepaliveTimeout
	// framedServerIdle closes a server's connection that brought nothing (not even a ping,
	// which an idle client sends every KeepaliveTime) for so long.
	framedServerIdle = 4 * KeepaliveTime
	// framedDeadlineSlack is how stale a connection's deadline may be before it is pushed out
	// again: deadlines move once in this long, not on every frame.
	framedDeadlineSlack = time.Second
)

// framedReadBuffer is the size of a framed connection's read buffer: a burst of small frames
// costs one read.
const framedReadBuffer = 32 << 10

// framedConn is one framed connection, either end: its frames' reading and writing.
type framedConn struct {
	c    net.Conn
	r    *bufio.Reader
	rbuf []byte // the last frame read; reused

	// wmu is held while a frame is written; wbuf is the frame being written.
	wmu  sync.Mutex
	wbuf []byte

	// The deadlines last set, pushed out at most every framedDeadlineSlack.
	readSet, writeSet time.Time
}

func newFramedConn(c net.Conn) *framedConn {
	return &framedConn{c: c, r: bufio.NewReaderSize(c, framedReadBuffer)}
}

// errFrameTooLarge and errFrameGarbage are protocol violations: the connection closes.
var (
	errFrameTooLarge = errors.New("frame too large")
	errFrameGarbage  = errors.New("frame not a message")
)

// readFrame reads the next frame into fc.rbuf and returns it; an empty frame is a ping. With
// idle > 0 the read fails with os.ErrDeadlineExceeded once nothing came for idle.
func (fc *framedConn) readFrame(idle time.Duration) ([]byte, error) {
	if idle > 0 {
		if now := time.Now(); now.Sub(fc.readSet) >= framedDeadlineSlack {
			fc.readSet = now
			fc.c.SetReadDeadline(now.Add(idle))
		}
	}
	var hdr [4]byte
	if _, err := io.ReadFull(fc.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > framedMaxFrame {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errFrameTooLarge, n, framedMaxFrame)
	}
	if cap(fc.rbuf) < int(n) {
		fc.rbuf = make([]byte, n)
	}
	fc.rbuf = fc.rbuf[:n]
	if _, err := io.ReadFull(fc.r, fc.rbuf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return fc.rbuf, nil
}

// writeFrame writes m, a *replicapb.PipeRequests or *replicapb.PipeResponses, as one frame
// (nil: a ping), in one write; a failed write closes the connection. The requests and answers
// in m must have had their size computed (proto.Size) since they last changed, as the pipes do
// to bound their batches: their encoding reuses it (appendPipeRequests).
func (fc *framedConn) writeFrame(m proto.Message) error {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	b := append(fc.wbuf[:0], 0, 0, 0, 0)
	var err error
	switch m := m.(type) {
	case nil:
	case *replicapb.PipeRequests:
		b, err = appendPipeRequests(b, m)
	case *replicapb.PipeResponses:
		b, err = appendPipeResponses(b, m)
	default:
		err = fmt.Errorf("internode: a frame carries no %T", m)
	}
	if err != nil {
		return err
	}
	if len(b)-4 > framedMaxFrame {
		return fmt.Errorf("%w: %d bytes, the limit is %d", errFrameTooLarge, len(b)-4, framedMaxFrame)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if now := time.Now(); now.Sub(fc.writeSet) >= framedDeadlineSlack {
		fc.writeSet = now
		fc.c.SetWriteDeadline(now.Add(framedWriteTimeout))
	}
	_, err = fc.c.Write(b)
	if cap(b) <= 4*framedReadBuffer {
		fc.wbuf = b // a large frame's buffer is not kept
	}
	if err != nil {
		fc.c.Close() // a frame may be half written: the reader ends too
	}
	return err
}

// appendPipeRequests appends the encoding of m to b, as proto.Marshal makes it, but for the
// requests' sizes: the size of each item's Request is the one proto.Size last computed (the
// Sender computes it to bound the pipe's batches), where Marshal would compute it again.
func appendPipeRequests(b []byte, m *replicapb.PipeRequests) ([]byte, error) {
	const (
		fieldRequests                                    = 1 // in PipeRequests
		fieldID, fieldRequest, fieldTimeout, fieldCancel = 1, 2, 3, 4
	)
	cached := proto.MarshalOptions{UseCachedSize: true}
	for _, r := range m.GetRequests() {
		id, timeout := r.GetId(), uint64(r.GetTimeoutMicros())
		n, rsize := 0, 0
		if id != 0 {
			n += 1 + protowire.SizeVarint(id)
		}
		if r.GetRequest() != nil {
			rsize = cached.Size(r.GetRequest())
			n += 1 + protowire.SizeBytes(rsize)
		}
		if timeout != 0 {
			n += 1 + protowire.SizeVarint(timeout)
		}
		if r.GetCancel() {
			n += 2
		}
		b = protowire.AppendTag(b, fieldRequests, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		if id != 0 {
			b = protowire.AppendTag(b, fieldID, protowire.VarintType)
			b = protowire.AppendVarint(b, id)
		}
		if r.GetRequest() != nil {
			b = protowire.AppendTag(b, fieldRequest, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(rsize))
			var err error
			if b, err = cached.MarshalAppend(b, r.GetRequest()); err != nil {
				return nil, err
			}
		}
		if timeout != 0 {
			b = protowire.AppendTag(b, fieldTimeout, protowire.VarintType)
			b = protowire.AppendVarint(b, timeout)
		}
		if r.GetCancel() {
			b = protowire.AppendTag(b, fieldCancel, protowire.VarintType)
			b = protowire.AppendVarint(b, 1)
		}
	}
	return b, nil
}

// appendPipeResponses appends the encoding of m to b, as proto.Marshal makes it, but for the
// answers' sizes: the size of each item's Response is the one proto.Size last computed (the
// pipe's server computes it to bound its batches), where Marshal would compute it again.
func appendPipeResponses(b []byte, m *replicapb.PipeResponses) ([]byte, error) {
	const (
		fieldResponses, fieldClosing                                  = 1, 2 // in PipeResponses
		fieldID, fieldResponse, fieldCode, fieldMessage, fieldUseCall = 1, 2, 3, 4, 5
	)
	cached := proto.MarshalOptions{UseCachedSize: true}
	for _, r := range m.GetResponses() {
		id, code, msg := r.GetId(), uint64(r.GetCode()), r.GetMessage()
		n, rsize := 0, 0
		if id != 0 {
			n += 1 + protowire.SizeVarint(id)
		}
		if r.GetResponse() != nil {
			rsize = cached.Size(r.GetResponse())
			n += 1 + protowire.SizeBytes(rsize)
		}
		if code != 0 {
			n += 1 + protowire.SizeVarint(code)
		}
		if msg != "" {
			n += 1 + protowire.SizeBytes(len(msg))
		}
		if r.GetUseCall() {
			n += 2
		}
		b = protowire.AppendTag(b, fieldResponses, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(n))
		if id != 0 {
			b = protowire.AppendTag(b, fieldID, protowire.VarintType)
			b = protowire.AppendVarint(b, id)
		}
		if r.GetResponse() != nil {
			b = protowire.AppendTag(b, fieldResponse, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(rsize))
			var err error
			if b, err = cached.MarshalAppend(b, r.GetResponse()); err != nil {
				return nil, err
			}
		}
		if code != 0 {
			b = protowire.AppendTag(b, fieldCode, protowire.VarintType)
			b = protowire.AppendVarint(b, code)
		}
		if msg != "" {
			b = protowire.AppendTag(b, fieldMessage, protowire.BytesType)
			b = protowire.AppendString(b, msg)
		}
		if r.GetUseCall() {
			b = protowire.AppendTag(b, fieldUseCall, protowire.VarintType)
			b = protowire.AppendVarint(b, 1)
		}
	}
	if m.GetClosing() {
		b = protowire.AppendTag(b, fieldClosing, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
	}
	return b, nil
}

// framedClient is a pipe's framed connection, the client's end: the pipe's stream.
type framedClient struct {
	fc     *framedConn
	ctx    context.Context // the pipe's: its end closes the connection
	stop   func() bool     // stops the watch of ctx
	pinged bool            // a ping is unanswered
}

// dialFramed opens a framed connection to addr with creds, for a pipe whose context is ctx.
// unsupported reports that the peer answered, but not as a framed server: an older release.
func dialFramed(ctx context.Context, addr string, creds credentials.TransportCredentials) (fcl *framedClient, unsupported bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, framedDialTimeout)
	defer cancel()
	d := net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: KeepaliveTime, Interval: KeepaliveTime, Count: 2}}
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	deadline, _ := dctx.Deadline()
	c.SetDeadline(deadline)
	if _, err := io.WriteString(c, framedMagic); err != nil {
		return nil, false, err
	}
	var ack [len(framedMagic)]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, false, err
		}
		return nil, true, fmt.Errorf("the peer closed the connection instead of answering the framed protocol: %w", err)
	}
	if string(ack[:]) != framedMagic {
		return nil, true, errors.New("the peer does not speak the framed protocol")
	}
	sc, _, err := creds.ClientHandshake(dctx, addr, c)
	if err != nil {
		return nil, false, fmt.Errorf("handshake: %w", err)
	}
	sc.SetDeadline(time.Time{})
	ok = true
	f := &framedClient{fc: newFramedConn(sc), ctx: ctx}
	f.stop = context.AfterFunc(ctx, func() { sc.Close() })
	return f, false, nil
}

// Send writes m, a batch of requests, as one frame.
func (f *framedClient) Send(m *replicapb.PipeRequests) error {
	if err := f.fc.writeFrame(m); err != nil {
		return f.statusOf(err)
	}
	return nil
}

// Recv reads the next batch of answers, pinging the peer when it sent nothing for
// KeepaliveTime, and failing once it then sent nothing for KeepaliveTimeout more.
func (f *framedClient) Recv() (*replicapb.PipeResponses, error) {
	for {
		idle := KeepaliveTime
		if f.pinged {
			idle = KeepaliveTimeout
		}
		b, err := f.fc.readFrame(idle)
		if errors.Is(err, os.ErrDeadlineExceeded) && f.ctx.Err() == nil {
			if f.pinged {
				return nil, status.Errorf(codes.Unavailable, "internode: framed connection: the peer answered no ping for %v", KeepaliveTime+KeepaliveTimeout)
			}
			f.pinged = true
			f.fc.readSet = time.Time{} // the next read waits KeepaliveTimeout from now
			if err := f.fc.writeFrame(nil); err != nil {
				return nil, f.statusOf(err)
			}
			continue
		}
		if err != nil {
			return nil, f.statusOf(err)
		}
		if f.pinged {
			f.pinged = false
			f.fc.readSet = time.Time{}
		}
		if len(b) == 0 {
			continue // a ping's answer
		}
		m := &replicapb.PipeResponses{}
		if err := proto.Unmarshal(b, m); err != nil {
			return nil, status.Errorf(codes.Internal, "internode: framed connection: %v: %v", errFrameGarbage, err)
		}
		return m, nil
	}
}

// CloseSend ends the connection: the pipe calls it once nothing waits.
func (f *framedClient) CloseSend() error {
	f.stop()
	return f.fc.c.Close()
}

// statusOf returns err as the pipe's callers see it: Canceled once the pipe ended, Unavailable
// for a broken connection.
func (f *framedClient) statusOf(err error) error {
	if f.ctx.Err() != nil {
		return status.FromContextError(f.ctx.Err()).Err()
	}
	if errors.Is(err, errFrameTooLarge) {
		return status.Errorf(codes.Internal, "internode: framed connection: %v", err)
	}
	return status.Errorf(codes.Unavailable, "internode: framed connection: %v", err)
}

// peekedConn is a connection whose first byte was read already: Read returns it first.
type peekedConn struct {
	net.Conn
	first []byte
}

func (c *peekedConn) Read(b []byte) (int, error) {
	if len(c.first) > 0 && len(b) > 0 {
		n := copy(b, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
