package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kvnode/kvnode/proto/kvnodepb"
)

// Consistency is how many replicas must answer before an operation succeeds.
type Consistency int

// The consistency levels, with Cassandra's meanings: the LOCAL ones count the coordinator's
// data center alone, EACH_QUORUM a quorum in each.
const (
	// Default lets the server choose (ONE, as in Cassandra).
	Default Consistency = iota
	One
	Quorum
	All
	LocalOne
	LocalQuorum
	Two
	Three
	EachQuorum
	// Serial is for reads that must see every lightweight transaction completed before them (a
	// SELECT runs a Paxos prepare first); LocalSerial is its alias for now.
	Serial
	LocalSerial
)

var consistencyNames = [...]string{"DEFAULT", "ONE", "QUORUM", "ALL", "LOCAL_ONE", "LOCAL_QUORUM", "TWO", "THREE", "EACH_QUORUM", "SERIAL", "LOCAL_SERIAL"}

// String returns the CQL name of the level.
func (c Consistency) String() string {
	if c >= 0 && int(c) < len(consistencyNames) {
		return consistencyNames[c]
	}
	return fmt.Sprintf("Consistency(%d)", int(c))
}

// ParseConsistency parses a level name such as "quorum" or "LOCAL_ONE", case-insensitively.
func ParseConsistency(s string) (Consistency, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	for i := One; int(i) < len(consistencyNames); i++ {
		if consistencyNames[i] == u {
			return i, nil
		}
	}
	return Default, fmt.Errorf("unknown consistency level %q (valid: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL)", s)
}

func (c Consistency) proto() kvnodepb.Consistency {
	switch c {
	case One:
		return kvnodepb.Consistency_CONSISTENCY_ONE
	case Quorum:
		return kvnodepb.Consistency_CONSISTENCY_QUORUM
	case All:
		return kvnodepb.Consistency_CONSISTENCY_ALL
	case LocalOne:
		return kvnodepb.Consistency_CONSISTENCY_LOCAL_ONE
	case LocalQuorum:
		return kvnodepb.Consistency_CONSISTENCY_LOCAL_QUORUM
	case Two:
		return kvnodepb.Consistency_CONSISTENCY_TWO
	case Three:
		return kvnodepb.Consistency_CONSISTENCY_THREE
	case EachQuorum:
		return kvnodepb.Consistency_CONSISTENCY_EACH_QUORUM
	case Serial:
		return kvnodepb.Consistency_CONSISTENCY_SERIAL
	case LocalSerial:
		return kvnodepb.Consistency_CONSISTENCY_LOCAL_SERIAL
	default:
		return kvnodepb.Consistency_CONSISTENCY_UNSPECIFIED
	}
}

func consistencyFromProto(c kvnodepb.Consistency) Consistency {
	switch c {
	case kvnodepb.Consistency_CONSISTENCY_ONE:
		return One
	case kvnodepb.Consistency_CONSISTENCY_QUORUM:
		return Quorum
	case kvnodepb.Consistency_CONSISTENCY_ALL:
		return All
	case kvnodepb.Consistency_CONSISTENCY_LOCAL_ONE:
		return LocalOne
	case kvnodepb.Consistency_CONSISTENCY_LOCAL_QUORUM:
		return LocalQuorum
	case kvnodepb.Consistency_CONSISTENCY_TWO:
		return Two
	case kvnodepb.Consistency_CONSISTENCY_THREE:
		return Three
	case kvnodepb.Consistency_CONSISTENCY_EACH_QUORUM:
		return EachQuorum
	case kvnodepb.Consistency_CONSISTENCY_SERIAL:
		return Serial
	case kvnodepb.Consistency_CONSISTENCY_LOCAL_SERIAL:
		return LocalSerial
	default:
		return Default
	}
}

// Client is a connection to one kvnode node. It is safe for concurrent use. Its keyspace (set by
// a USE statement or WithKeyspace) applies to unqualified table names in later statements.
type Client struct {
	addr string
	conn *grpc.ClientConn
	api  kvnodepb.KVNodeClient

	mu       sync.Mutex
	keyspace string
}

// Option configures Dial.
type Option func(*options)

// maxMessageSize is the largest request or response the client sends or accepts: as large as
// the largest message limit a node can be configured with.
const maxMessageSize = 1 << 30

type options struct {
	keyspace    string
	dialOptions []grpc.DialOption
}

// WithKeyspace sets the initial keyspace, as if USE had been run.
func WithKeyspace(ks string) Option { return func(o *options) { o.keyspace = ks } }

// WithDialOptions adds gRPC dial options (for example transport credentials). Without
// credentials the connection is plaintext.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// Dial connects to the node at addr (host:port) and waits until the connection is ready or ctx
// ends. An unreachable node is an error naming the address.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dialOpts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The node bounds what it accepts and sends (its MaxMutationSize); the client does not
		// add a lower limit of its own (gRPC's default would refuse results over 4 MiB).
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
	}, o.dialOptions...)
	conn, err := grpc.NewClient(addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	if err := waitReady(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("client: connect to %s: %w", addr, err)
	}
	return &Client{addr: addr, conn: conn, api: kvnodepb.NewKVNodeClient(conn), keyspace: o.keyspace}, nil
}

// waitReady blocks until conn is ready. A connection that fails to come up is reported at once
// rather than retried until ctx ends, so a wrong address is a fast, clear error.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("connection %s", strings.ToLower(s.String()))
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}

// Addr returns the address the client is connected to.
func (c *Client) Addr() string { return c.addr }

// Keyspace returns the current keyspace ("" if none).
func (c *Client) Keyspace() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keyspace
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Column describes a result column.
type Column struct {
	Name string
	// Type is the CQL type name: text, int, bigint, double, boolean, blob, timestamp, ascii,
	// float, smallint, tinyint, uuid, timeuuid, inet, date, time, decimal, varint, or (system
	// tables only) set<text>, list<text>, map<text, text>, map<text, blob>.
	Type string
}

// SchemaChange describes what a DDL statement changed.
type SchemaChange struct {
	// Change is "CREATED", "UPDATED" or "DROPPED".
	Change   string
	Keyspace string
	// Table is empty for a keyspace change.
	Table string
}

// Result is the outcome of one statement. Exactly one of Rows (with Columns), SchemaChange,
// Keyspace or Description is set, or none for INSERT, UPDATE and DELETE.
type Result struct {
	Columns []Column
	// Rows holds one slice per row, one value per column, or nil for null:
	//
	//	text, ascii        string
	//	int                int32
	//	bigint             int64
	//	smallint           int16
	//	tinyint            int8
	//	double             float64
	//	float              float32
	//	boolean            bool
	//	blob               []byte
	//	timestamp          time.Time (UTC)
	//	uuid, timeuuid     UUID
	//	inet               netip.Addr
	//	date               Date
	//	time               time.Duration since midnight
	//	decimal            Decimal
	//	varint             *big.Int
	//	set<text>, list<text>
	//	                   []string
	//	map<text, text>    map[string]string
	//	map<text, blob>    map[string][]byte
	//
	// A value the server sends malformed (which it does not) is an error of Execute.
	Rows         [][]any
	SchemaChange *SchemaChange
	// Keyspace is set by USE.
	Keyspace string
	// Description is the text of a DESCRIBE.
	Description string
	// Warnings are non-fatal notes from the server, such as schema agreement not being reached.
	Warnings []string
}

// Execute runs one statement at consistency cl. Errors from the cluster are typed: use errors.As
// with *RateLimitError, *UnavailableError, *TimeoutError, *FailureError or *InvalidError.
func (c *Client) Execute(ctx context.Context, cl Consistency, stmt string) (*Result, error) {
	req := &kvnodepb.ExecuteRequest{Statement: stmt, Consistency: cl.proto(), Keyspace: c.Keyspace()}
	resp, err := c.api.Execute(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	res, err := decodeResult(resp)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", c.addr, err)
	}
	if res.Keyspace != "" {
		c.mu.Lock()
		c.keyspace = res.Keyspace
		c.mu.Unlock()
	}
	return res, nil
}

// Query runs a SELECT at consistency cl and returns its columns and rows.
func (c *Client) Query(ctx context.Context, cl Consistency, stmt string) ([]Column, [][]any, error) {
	res, err := c.Execute(ctx, cl, stmt)
	if err != nil {
		return nil, nil, err
	}
	if res.Columns == nil {
		return nil, nil, errors.New("client: statement returned no rows result; Query is for SELECT")
	}
	return res.Columns, res.Rows, nil
}

func decodeResult(resp *kvnodepb.ExecuteResponse) (*Result, error) {
	res := &Result{Warnings: resp.GetWarnings()}
	switch r := resp.GetResult().(type) {
	case *kvnodepb.ExecuteResponse_Rows:
		cols := r.Rows.GetColumns()
		res.Columns = make([]Column, len(cols))
		for i, col := range cols {
			res.Columns[i] = Column{Name: col.GetName(), Type: typeName(col.GetType())}
			if col.GetTypeName() != "" { // a server that names its types: the whole type
				res.Columns[i].Type = col.GetTypeName()
			}
		}
		res.Rows = make([][]any, 0, len(r.Rows.GetRows()))
		for i, row := range r.Rows.GetRows() {
			vals := row.GetValues()
			if len(vals) != len(cols) {
				return nil, fmt.Errorf("row %d has %d values for %d columns", i, len(vals), len(cols))
			}
			out := make([]any, len(vals))
			for j, v := range vals {
				x, err := decodeValue(v)
				if err != nil {
					return nil, fmt.Errorf("row %d column %s: %w", i, cols[j].GetName(), err)
				}
				out[j] = x
			}
			res.Rows = append(res.Rows, out)
		}
	case *kvnodepb.ExecuteResponse_SchemaChange:
		sc := r.SchemaChange
		res.SchemaChange = &SchemaChange{Change: sc.GetChange().String(), Keyspace: sc.GetKeyspace(), Table: sc.GetTable()}
	case *kvnodepb.ExecuteResponse_SetKeyspace:
		res.Keyspace = r.SetKeyspace
	case *kvnodepb.ExecuteResponse_Description:
		res.Description = r.Description
	}
	return res, nil
}

func typeName(t kvnodepb.ColumnType) string {
	switch t {
	case kvnodepb.ColumnType_COLUMN_TYPE_SET_TEXT:
		return "set<text>"
	case kvnodepb.ColumnType_COLUMN_TYPE_LIST_TEXT:
		return "list<text>"
	case kvnodepb.ColumnType_COLUMN_TYPE_MAP_TEXT_TEXT:
		return "map<text, text>"
	case kvnodepb.ColumnType_COLUMN_TYPE_MAP_TEXT_BLOB:
		return "map<text, blob>"
	}
	name := strings.TrimPrefix(t.String(), "COLUMN_TYPE_")
	return strings.ToLower(name)
}
