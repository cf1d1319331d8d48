package toppartitions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/proto/kvnodepb"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    Config
		wantErr string
	}{
		{nil, Config{Protocol: ProtocolCQL, Addr: DefaultAddr, Top: DefaultTop, Timeout: DefaultTimeout}, ""},
		{[]string{"--protocol", "grpc"}, Config{Protocol: ProtocolGRPC, Addr: DefaultGRPCAddr, Top: DefaultTop, Timeout: DefaultTimeout}, ""},
		{[]string{"--protocol", "grpc", "--addr", "10.0.0.1:1"}, Config{Protocol: ProtocolGRPC, Addr: "10.0.0.1:1", Top: DefaultTop, Timeout: DefaultTimeout}, ""},
		{[]string{"--protocol", "http"}, Config{}, `--protocol "http": want cql or grpc`},
		{[]string{"--addr", "10.0.0.1:9043", "--table", "Shop.Carts", "--top", "3", "--json"},
			Config{Protocol: ProtocolCQL, Addr: "10.0.0.1:9043", Keyspace: "shop", Table: "carts", Top: 3, JSON: true, Timeout: DefaultTimeout}, ""},
		{[]string{"--table", `"Shop"."Carts"`}, Config{Protocol: ProtocolCQL, Addr: DefaultAddr, Keyspace: "Shop", Table: "Carts", Top: DefaultTop, Timeout: DefaultTimeout}, ""},
		{[]string{"--table", "shop"}, Config{Protocol: ProtocolCQL, Addr: DefaultAddr, Keyspace: "shop", Top: DefaultTop, Timeout: DefaultTimeout}, ""},
		{[]string{"--table", "shop.carts.x"}, Config{}, "is not a table name"},
		{[]string{"--top", "0"}, Config{}, "--top 0 is outside"},
		{[]string{"--timeout", "0s"}, Config{}, "--timeout 0s is not positive"},
		{[]string{"--addr", ""}, Config{}, "--addr is empty"},
		{[]string{"extra"}, Config{}, `unexpected argument "extra"`},
		{[]string{"--nope"}, Config{}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		got, err := ParseFlags(tt.args, &bytes.Buffer{})
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseFlags(%q) error = %v, want one saying %q", tt.args, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseFlags(%q) = %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
	var stderr bytes.Buffer
	if _, err := ParseFlags([]string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "--top") && !strings.Contains(stderr.String(), "-top") {
		t.Errorf("ParseFlags(-h) = %v with usage %q, want flag.ErrHelp and the flags listed", err, stderr.String())
	}
}

func TestFormatKey(t *testing.T) {
	tests := []struct {
		key  []any
		want string
	}{
		{nil, "(unknown)"},
		{[]any{"hot"}, "hot"},
		{[]any{int32(-7)}, "-7"},
		{[]any{int64(1) << 40}, "1099511627776"},
		{[]any{"a, b", int32(1)}, "('a, b', 1)"},
		{[]any{"it's"}, "it's"},
		{[]any{[]byte{0xca, 0xfe}, true, 2.5}, "(0xcafe, true, 2.5)"},
		{[]any{time.UnixMilli(0)}, "1970-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		if got := FormatKey(tt.key); got != tt.want {
			t.Errorf("FormatKey(%#v) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// sample is a result with a table whose hottest key is composite and a partition without a
// known key.
func sample() *client.TopPartitionsResult {
	return &client.TopPartitionsResult{
		UnreachableNodes: []string{"n3"},
		Tables: []client.TableHotPartitions{{
			Keyspace: "shop", Table: "Carts",
			KeyColumns: []client.Column{{Name: "id", Type: "text"}, {Name: "day", Type: "int"}},
			Partitions: []client.HotPartition{
				{Op: client.OpWrite, Key: []any{"hot", int32(7)}, Token: -42, EstimatedOpsPerSecond: 1000, Limit: 100, RejectedPerSecond: 900, RejectedShare: 0.9, Nodes: 3},
				{Op: client.OpRead, Token: 42, EstimatedOpsPerSecond: 250.25, Limit: 0, Nodes: 1},
			},
		}},
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sample()); err != nil {
		t.Fatal(err)
	}
	want := `shop."Carts" (partition key: id text, day int)
  rank  op     partition key  token  est. ops/s  limit/s  rejected  nodes
  1     write  ('hot', 7)     -42    1000.0      100      90.0%     3
  2     read   (unknown)      42     250.2       none     0.0%      1

Nodes that did not answer (partitions only they saw hot are missing): n3
`
	if b.String() != want {
		t.Errorf("WriteText printed:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteText(&b, &client.TopPartitionsResult{})
	if !strings.HasPrefix(b.String(), "No hot partitions") {
		t.Errorf("WriteText of an empty result printed %q, want it to say there are no hot partitions", b.String())
	}
}

func TestWriteJSON(t *testing.T) {
	res := sample()
	res.Tables[0].Partitions[1].Key = []any{math.Inf(1), []byte{1}}
	var b bytes.Buffer
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tables []struct {
			Keyspace, Table string
			Partitions      []map[string]any
		}
		UnreachableNodes []string `json:"unreachable_nodes"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("WriteJSON printed invalid JSON %q: %v", b.String(), err)
	}
	if len(got.Tables) != 1 || got.Tables[0].Table != "Carts" || len(got.Tables[0].Partitions) != 2 || len(got.UnreachableNodes) != 1 {
		t.Fatalf("WriteJSON printed %s, want one table with two partitions and one unreachable node", b.String())
	}
	p := got.Tables[0].Partitions[0]
	if p["partition_key_text"] != "('hot', 7)" || p["estimated_ops_per_second"] != 1000.0 || p["rejected_share"] != 0.9 || p["op"] != "write" {
		t.Errorf("first partition = %v, want key ('hot', 7), 1000 ops/s, share 0.9, op write", p)
	}
	if k := got.Tables[0].Partitions[1]["partition_key"]; len(k.([]any)) != 2 || k.([]any)[0] != "+Inf" || k.([]any)[1] != "0x01" {
		t.Errorf("second partition's key = %v, want [\"+Inf\", \"0x01\"]", k)
	}
}

// fakeNode answers TopPartitions with a fixed response.
type fakeNode struct {
	kvnodepb.UnimplementedKVNodeServer
	req *kvnodepb.TopPartitionsRequest
}

func (f *fakeNode) TopPartitions(_ context.Context, req *kvnodepb.TopPartitionsRequest) (*kvnodepb.TopPartitionsResponse, error) {
	f.req = req
	return &kvnodepb.TopPartitionsResponse{Tables: []*kvnodepb.TableTopPartitions{{
		Keyspace: "ks", Table: "t",
		PartitionKeyColumns: []*kvnodepb.Column{{Name: "k", Type: kvnodepb.ColumnType_COLUMN_TYPE_BIGINT}},
		Partitions: []*kvnodepb.TopPartition{{
			Op: kvnodepb.Op_OP_WRITE, PartitionKey: []*kvnodepb.Value{{Kind: &kvnodepb.Value_Bigint{Bigint: 12}}},
			Token: 5, EstimatedOpsPerSecond: 500, Limit: 50, RejectedShare: 0.5, Nodes: 3,
		}},
	}}}, nil
}

func TestRunAgainstANode(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fake := &fakeNode{}
	kvnodepb.RegisterKVNodeServer(srv, fake)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"--protocol", "grpc", "--addr", lis.Addr().String(), "--table", "ks.t", "--top", "4"}, &stdout, &stderr); err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, stderr.String())
	}
	if fake.req.GetKeyspace() != "ks" || fake.req.GetTable() != "t" || fake.req.GetLimit() != 4 {
		t.Errorf("the node was asked %v, want keyspace ks, table t, limit 4", fake.req)
	}
	if !strings.Contains(stdout.String(), "ks.t (partition key: k bigint)") || !strings.Contains(stdout.String(), "  1     write  12") {
		t.Errorf("Run printed:\n%s\nwant ks.t with partition 12 first", stdout.String())
	}
	for _, proto := range []string{"grpc", "cql"} {
		err := Run(context.Background(), []string{"--protocol", proto, "--addr", "127.0.0.1:1", "--timeout", "5s"}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("Run --protocol %s against a closed port = %v, want an error naming the address", proto, err)
		}
	}
}

func TestDecodeKey(t *testing.T) {
	text := func(s string) []byte { return []byte(s) }
	composite := func(comps ...[]byte) []byte { // Cassandra's CompositeType encoding
		var b []byte
		for _, c := range comps {
			b = append(b, byte(len(c)>>8), byte(len(c)))
			b = append(b, c...)
			b = append(b, 0)
		}
		return b
	}
	tests := []struct {
		key     []byte
		types   []string
		want    string // FormatKey of the result
		wantErr string
	}{
		{text("hot"), []string{"text"}, "hot", ""},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 12}, []string{"bigint"}, "12", ""},
		{composite(text("a,b"), []byte{0, 0, 0, 7}), []string{"text", "int"}, "('a,b', 7)", ""},
		{[]byte{0, 0, 0, 12}, []string{"bigint"}, "", "component 1"},
		{composite(text("a")), []string{"text", "int"}, "", "1 components, the table's partition key 2"},
		{[]byte{0, 9, 'a', 0}, []string{"text", "int"}, "", "claims 9 bytes"},
		{[]byte{0}, []string{"text", "int"}, "", "truncated"},
		{text("x"), []string{"nosuchtype"}, "", "component 1"},
		{text("x"), nil, "", "no key column types"},
	}
	for _, tt := range tests {
		got, err := decodeKey(tt.key, tt.types)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("decodeKey(%x, %v) error = %v, want one saying %q", tt.key, tt.types, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || FormatKey(got) != tt.want):
			t.Errorf("decodeKey(%x, %v) = %v (%q), %v; want %q", tt.key, tt.types, got, FormatKey(got), err, tt.want)
		}
	}
}

// TestWriteTextShowsWouldReject: a table in shadow mode rejects nothing, and the text shows what
// its limit would reject in a column of its own; JSON always carries the rate.
func TestWriteTextShowsWouldReject(t *testing.T) {
	res := &client.TopPartitionsResult{Tables: []client.TableHotPartitions{{
		Keyspace: "shop", Table: "carts", KeyColumns: []client.Column{{Name: "id", Type: "text"}},
		Partitions: []client.HotPartition{
			{Op: client.OpWrite, Key: []any{"hot"}, EstimatedOpsPerSecond: 500, Limit: 50, WouldRejectPerSecond: 450, Nodes: 3},
		},
	}}}
	var b bytes.Buffer
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "rejected  would reject  nodes") ||
		strings.Join(strings.Fields(lines[2]), " ") != "1 write hot 0 500.0 50 0.0% 90.0% 3" {
		t.Errorf("WriteText printed:\n%s\nwant a would reject column at 90.0%%", b.String())
	}
	b.Reset()
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"would_reject_per_second": 450`) {
		t.Errorf("WriteJSON printed %s, want would_reject_per_second 450", b.String())
	}
	b.Reset()
	res.Tables[0].Partitions[0].WouldRejectPerSecond = 0 // enforce mode: no such column
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "would reject") {
		t.Errorf("WriteText of a table in enforce mode printed:\n%s\nwant no would reject column", b.String())
	}
}
