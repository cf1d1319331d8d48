// Package internode carries every exchange between nodes: typed messages (those of
// proto/replicapb's Request and Response) over one sender per node, with one connection per peer,
// and one Mux of handlers serving them, so that the transport under all of them can be changed in
// one place.
//
// A node makes one Mux, registers a handler per request kind it serves (Handle, HandleStream) and
// serves the Mux on its internode listener (Mux.Register); it makes one Sender, which sends each
// request to the node it names (Call, Stream): over gRPC to a peer, at the address the node's
// Addresses give, and in process, through the same Mux, to itself. A subsystem adds an exchange by
// adding its messages to internode.proto and registering its handler; it never dials a peer
// itself.
//
// # Pipes
//
// The data path's kinds (mutate, read, account_delta, counter_update and the Paxos rounds') go
// to a peer on pipes: a long-lived stream per peer carrying many requests at once by id, the
// requests queued while a write is under way coalesced into one message (pipe.go). Deadlines, cancellation and errors are as for
// a unary Call; requests in flight are bounded at each end (PipeMaxInFlight: a caller beyond
// waits until its context ends). A pipe travels on a framed connection of its own to the peer's
// internode port (framed.go: length-prefixed messages under the same TLS, no gRPC between the
// socket and the pipe), which the peer's FramedServer tells apart from gRPC's connections on the
// same listener (framed_server.go); a peer that does not speak it (an older release) gets a
// Pipe gRPC stream, and one without Pipe unary Calls. A node drains its pipes (Mux.Drain) before
// it stops its internode servers. The other kinds go by Call, and streams by Stream.
//
// # Kinds
//
// A request's kind is its message type: each type appears at most once in the Request oneof, and
// each answer type at most once in the Response oneof. The map between the types and the oneof
// fields is read once from the generated descriptors (NewMux, NewSender).
//
// # Errors
//
// A failed exchange returns a gRPC status error (status.Code works on it), wrapped once with the
// kind and the node: "internode: mutate to node n2: rpc error: code = Unavailable desc = ...".
// A node answers a kind it has no handler for, or a field number it does not know, Unimplemented,
// and a Request without a message InvalidArgument. A call to the node itself fails as a call
// over the network would: with the handler's status, or a status made from its plain error
// (Unknown, or Canceled and DeadlineExceeded for the context's errors), or the caller's
// context's status once that context has ended.
//
// # Calls to the node itself
//
// A call to the Sender's own node runs the handler on the caller's goroutine with the caller's
// context: no bytes move, so neither message is copied (neither side may modify a message once
// handed over) and the message size limit is not applied. Handlers see the caller's deadline and
// cancellation either way; they must not depend on the context's values, which do not cross the
// network.
//
// It also holds the conversions between domain types and the wire enums that both ends share
// (op.go), the relay of writes forwarded from another data center (forward.go), and the
// Sender's counts of requests across data centers (metrics.go, a Prometheus collector). It
// imports only proto/replicapb, schema, coordinator's ids, internal packages, gRPC, protobuf and
// Prometheus.
package internode
