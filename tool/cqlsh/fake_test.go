package cqlsh

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// slowStatement makes the fake node hold the request until the caller gives up.
const slowStatement = "SELECT * FROM ks.slow WHERE k = 1"

// fakeNode is a KVNode server that answers by statement text and records every request. A
// statement with no answer set gets set_keyspace for USE and an empty (void) result otherwise.
type fakeNode struct {
	kvnodepb.UnimplementedKVNodeServer
	addr string
	// slowStarted receives once per slowStatement request, when the request has arrived.
	slowStarted chan struct{}

	mu      sync.Mutex
	answers map[string]answer
	reqs    []*kvnodepb.ExecuteRequest
}

type answer struct {
	resp *kvnodepb.ExecuteResponse
	err  error
}

func (f *fakeNode) Execute(ctx context.Context, req *kvnodepb.ExecuteRequest) (*kvnodepb.ExecuteResponse, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	a, ok := f.answers[req.GetStatement()]
	f.mu.Unlock()
	stmt := req.GetStatement()
	switch {
	case ok:
		return a.resp, a.err
	case stmt == slowStatement:
		f.slowStarted <- struct{}{}
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case strings.HasPrefix(strings.ToUpper(stmt), "USE "):
		ks := strings.Trim(strings.TrimSpace(stmt[4:]), `"`)
		return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_SetKeyspace{SetKeyspace: ks}}, nil
	}
	return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Void{Void: &kvnodepb.Void{}}}, nil
}

// answer sets the response to one statement text.
func (f *fakeNode) answer(stmt string, resp *kvnodepb.ExecuteResponse, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[stmt] = answer{resp, err}
}

// statements returns the statement texts the node received, in order.
func (f *fakeNode) statements() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.reqs))
	for i, r := range f.reqs {
		out[i] = r.GetStatement()
	}
	return out
}

func (f *fakeNode) requests() []*kvnodepb.ExecuteRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*kvnodepb.ExecuteRequest(nil), f.reqs...)
}

func startNode(t *testing.T) *fakeNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	f := &fakeNode{addr: lis.Addr().String(), answers: map[string]answer{}, slowStarted: make(chan struct{}, 1)}
	kvnodepb.RegisterKVNodeServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return f
}

// run runs the shell against the node with stdin as its input (a strings.Reader, so never a
// terminal) and returns what it printed.
func (f *fakeNode) run(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = Run(ctx, append([]string{"--protocol", "grpc", "--addr", f.addr}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// session returns a session connected to the node, as Run builds it, writing to the buffers.
func (f *fakeNode) session(t *testing.T, interactive bool) (s *session, out, errOut *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, f.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	s = &session{client: c, cl: client.One, timeout: 30 * time.Second, out: &stickyWriter{w: out}, errOut: errOut, interactive: interactive}
	return s, out, errOut
}

func statusWith(t *testing.T, code codes.Code, msg string, details ...protoadapt.MessageV1) error {
	t.Helper()
	st := status.New(code, msg)
	for _, d := range details {
		var err error
		if st, err = st.WithDetails(d); err != nil {
			t.Fatal(err)
		}
	}
	return st.Err()
}

func rowsResponse(cols []*kvnodepb.Column, rows ...[]*kvnodepb.Value) *kvnodepb.ExecuteResponse {
	r := &kvnodepb.Rows{Columns: cols}
	for _, vals := range rows {
		r.Rows = append(r.Rows, &kvnodepb.Row{Values: vals})
	}
	return &kvnodepb.ExecuteResponse{Result: &kvnodepb.ExecuteResponse_Rows{Rows: r}}
}

func textValue(s string) *kvnodepb.Value { return &kvnodepb.Value{Kind: &kvnodepb.Value_Text{Text: s}} }
func intValue(i int32) *kvnodepb.Value   { return &kvnodepb.Value{Kind: &kvnodepb.Value_Int{Int: i}} }
