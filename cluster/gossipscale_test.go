package cluster

import (
	"bytes"
	"compress/lzw"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The message formats of memberlist v0.7.0 (net.go), encoded below with the codec memberlist
// uses (go-msgpack's MsgpackHandle), so that their sizes are what memberlist sends.
type (
	mlPing struct {
		SeqNo      uint32
		Node       string
		SourceAddr []byte `codec:",omitempty"`
		SourcePort uint16 `codec:",omitempty"`
		SourceNode string `codec:",omitempty"`
	}
	mlAck struct {
		SeqNo   uint32
		Payload []byte
	}
	mlAlive struct {
		Incarnation uint32
		Node        string
		Addr        []byte
		Port        uint16
		Meta        []byte
		Vsn         []uint8
	}
	mlPushPullHeader struct {
		Nodes        int
		UserStateLen int
		Join         bool
	}
	mlPushNodeState struct {
		Name        string
		Addr        []byte
		Port        uint16
		Meta        []byte
		Incarnation uint32
		State       int
		Vsn         []uint8
	}
	mlCompress struct {
		Algo int
		Buf  []byte
	}
)

// mlEncode is memberlist's encode: a message type byte and the msgpack encoding.
func mlEncode(tb testing.TB, v any) []byte {
	var buf bytes.Buffer
	buf.WriteByte(0)
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(v); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// mlCompressed is memberlist's compressPayload (LZW, LSB, 8-bit literals, wrapped in a compress
// message), which it sends instead when it is shorter (EnableCompression, on in every profile).
func mlCompressed(tb testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := lzw.NewWriter(&buf, lzw.LSB, 8)
	w.Write(b)
	w.Close()
	if c := mlEncode(tb, mlCompress{Algo: 0, Buf: buf.Bytes()}); len(c) < len(b) {
		return c
	}
	return b
}

// gossipOverhead is what every memberlist packet and stream adds with a keyring (AES-GCM:
// version byte, nonce, tag) and a cluster name label (type byte, length byte, the name), for
// a 16-byte cluster name; a UDP packet adds 28 bytes of IPv4 and UDP headers besides.
const gossipOverhead = 1 + 12 + 16 + 2 + 16

// BenchmarkGossipSizes measures, from real encodes, the bytes of what a node's memberlist
// sends (docs/performance.md, "Scaling curves", turns them into bytes per second): a probe
// (ping) and its ack carrying our clock payload, an alive message carrying our node metadata
// (what a metadata change broadcasts), and a push/pull exchange's state at 100 and 1,000
// members (memberlist's node states and our gossipState JSON, compressed as memberlist does,
// before encryption), as custom metrics in bytes.
//
//	go test ./cluster -run '^$' -bench BenchmarkGossipSizes -benchtime 1x
func BenchmarkGossipSizes(b *testing.B) {
	// Node ids are random version-4 UUIDs (NewNodeID), which compress as badly as real ones.
	id := func(i int) NodeID {
		r := rand.New(rand.NewPCG(36, uint64(i)))
		return NodeID(fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&(1<<48-1)))
	}
	ip := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }
	meta := func(i int) []byte {
		m, err := nodeMeta{ID: id(i), RPCAddr: ip(i) + ":7000", SchemaDigest: "3f9a1c0e5b7d2a4c", NumTokens: DefaultNumTokens,
			NativeAddr: ip(i) + ":9042", DataCenter: "dc1", Rack: "rack1"}.encode()
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	vsn := []uint8{1, 5, 2, 0, 0, 0}
	sizes := map[string]int{
		"meta":  len(meta(1)),
		"ping":  len(mlEncode(b, mlPing{SeqNo: 123456, Node: string(id(2)), SourceAddr: []byte{10, 0, 0, 1}, SourcePort: 7946, SourceNode: string(id(1))})),
		"ack":   len(mlEncode(b, mlAck{SeqNo: 123456, Payload: encodeClockPayload(time.Now())})),
		"alive": len(mlEncode(b, mlAlive{Incarnation: 12, Node: string(id(1)), Addr: []byte{10, 0, 0, 1}, Port: 7946, Meta: meta(1), Vsn: vsn})),
	}
	for _, n := range []int{100, 1000} {
		st := gossipState{Version: 1, From: id(0), Formats: map[NodeID]int{}, Availability: &Availability{}}
		var nodes []byte
		for i := range n {
			st.Peers = append(st.Peers, peerRecord{ID: id(i), RPCAddr: ip(i) + ":7000", GossipAddr: ip(i) + ":7946", NumTokens: DefaultNumTokens,
				NativeAddr: ip(i) + ":9042", DataCenter: "dc1", Rack: "rack1", Updated: time.Now().UnixNano()})
			st.Formats[id(i)] = 12
			nodes = append(nodes, mlEncode(b, mlPushNodeState{Name: string(id(i)), Addr: []byte{10, 0, byte(i >> 8), byte(i)}, Port: 7946,
				Meta: meta(i), Incarnation: 3, State: 0, Vsn: vsn})[1:]...)
		}
		user, err := json.Marshal(st)
		if err != nil {
			b.Fatal(err)
		}
		msg := append(mlEncode(b, mlPushPullHeader{Nodes: n, UserStateLen: len(user)}), nodes...)
		msg = append(msg, user...)
		sizes[fmt.Sprintf("pushpull-%d-raw", n)] = len(msg)
		sizes[fmt.Sprintf("pushpull-%d-user", n)] = len(user)
		sizes[fmt.Sprintf("pushpull-%d", n)] = len(mlCompressed(b, msg))
	}
	for b.Loop() {
	}
	for k, v := range sizes {
		b.ReportMetric(float64(v), k+"-B")
	}
	b.ReportMetric(gossipOverhead, "packet-overhead-B")
}
