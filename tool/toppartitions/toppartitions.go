package toppartitions

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// Config is one run. Its fields mirror the flags.
type Config struct {
	// Protocol is how to ask: ProtocolCQL, a SELECT of system.top_partitions over the native
	// protocol, or ProtocolGRPC, the gRPC API's TopPartitions; --protocol.
	Protocol string
	// Addr is the client address of the node to ask (host:port) for Protocol; --addr.
	Addr string
	// Keyspace and Table narrow the list (empty: every keyspace, every table); --table, given as
	// keyspace.table or keyspace, in CQL identifier syntax.
	Keyspace, Table string
	// Top is the most partitions listed per table; --top.
	Top int
	// JSON prints the result as one JSON object; --json.
	JSON bool
	// Timeout bounds the whole request, connection included; --timeout.
	Timeout time.Duration
}

// Defaults of the flags.
const (
	DefaultAddr     = "127.0.0.1:9042" // the native protocol's port
	DefaultGRPCAddr = "127.0.0.1:9043" // the gRPC API's, with --protocol grpc
	DefaultTop      = 10
	DefaultTimeout  = 10 * time.Second
	// MaxTop bounds --top: no node tracks more than 32 hot partitions per table and op.
	MaxTop = 1000
)

const usageText = `Usage: kvnode toppartitions [flags]

Lists, per table, the partitions the cluster's rate limiters see as hottest now: those whose
counter went above twice their per_partition_rate_limit on some node in the last seconds, with
their estimated offered load, the limit and the share the limiters rejected.

Flags:
`

// The protocols of --protocol.
const (
	ProtocolCQL  = "cql"
	ProtocolGRPC = "grpc"
)

// ParseFlags parses the command line of kvnode toppartitions. -h prints the usage to stderr and
// returns flag.ErrHelp.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("kvnode toppartitions", flag.ContinueOnError)
	addr := fs.String("addr", DefaultAddr, "client `address` of the node to ask (host:port; default "+DefaultAddr+", or "+DefaultGRPCAddr+" with --protocol grpc); it asks every live node")
	protocol := fs.String("protocol", ProtocolCQL, "`protocol` to ask with: cql (the native protocol, a SELECT of system.top_partitions) or grpc (kvnode's gRPC API)")
	table := fs.String("table", "", "only this `keyspace.table` (or every table of a keyspace); default every table")
	top := fs.Int("top", DefaultTop, "most `partitions` listed per table")
	jsonOut := fs.Bool("json", false, "print one JSON object instead of tables")
	timeout := fs.Duration("timeout", DefaultTimeout, "how long to wait for the answer, such as 10s")
	if err := cliflags.Parse(fs, args, "toppartitions", usageText, stderr); err != nil {
		return Config{}, err
	}
	c := Config{Protocol: *protocol, Addr: *addr, Top: *top, JSON: *jsonOut, Timeout: *timeout}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.Protocol == ProtocolGRPC && !set["addr"] {
		c.Addr = DefaultGRPCAddr
	}
	if *table != "" {
		var err error
		if c.Keyspace, c.Table, err = parseTable(*table); err != nil {
			return Config{}, err
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports the first field out of range, naming its flag.
func (c Config) Validate() error {
	switch {
	case c.Protocol != ProtocolCQL && c.Protocol != ProtocolGRPC:
		return fmt.Errorf("toppartitions: --protocol %q: want cql or grpc", c.Protocol)
	case c.Addr == "":
		return errors.New("toppartitions: --addr is empty: want host:port")
	case c.Top < 1 || c.Top > MaxTop:
		return fmt.Errorf("toppartitions: --top %d is outside [1, %d]", c.Top, MaxTop)
	case c.Timeout <= 0:
		return fmt.Errorf("toppartitions: --timeout %v is not positive", c.Timeout)
	case c.Table != "" && c.Keyspace == "":
		return fmt.Errorf("toppartitions: --table %q has no keyspace: want keyspace.table", c.Table)
	}
	return nil
}

// parseTable reads keyspace.table or keyspace with CQL identifier rules (unquoted names are
// lower-cased, "Quoted" ones keep their case), by parsing it as the name in a DESCRIBE TABLE
// statement.
func parseTable(s string) (keyspace, table string, err error) {
	st, err := cql.ParseStatement("DESCRIBE TABLE " + s)
	d, ok := st.(*cql.DescribeStmt)
	if err != nil || !ok || d.Kind != cql.DescribeTable {
		return "", "", fmt.Errorf("toppartitions: --table %q is not a table name: want keyspace.table or keyspace", s)
	}
	if d.Table.Keyspace.Name == "" {
		return d.Table.Name.Name, "", nil // a keyspace alone
	}
	return d.Table.Keyspace.Name, d.Table.Name.Name, nil
}

// Run is the command: it parses args, asks the node and prints the result on stdout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	res, err := Execute(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.JSON {
		err = WriteJSON(stdout, res)
	} else {
		err = WriteText(stdout, res)
	}
	if err != nil {
		return fmt.Errorf("toppartitions: write the result: %w", err)
	}
	return nil
}

// Execute asks the node at cfg.Addr for the top partitions, over cfg.Protocol.
func Execute(ctx context.Context, cfg Config) (*client.TopPartitionsResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if cfg.Protocol == ProtocolCQL {
		return executeNative(ctx, cfg)
	}
	c, err := client.Dial(ctx, cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("toppartitions: %w", err)
	}
	defer c.Close()
	res, err := c.TopPartitions(ctx, cfg.Keyspace, cfg.Table, cfg.Top)
	if err != nil {
		return nil, fmt.Errorf("toppartitions: %s: %w", cfg.Addr, err)
	}
	return res, nil
}

// WriteText prints res as one aligned table per table of the cluster.
func WriteText(w io.Writer, res *client.TopPartitionsResult) error {
	var b strings.Builder
	if len(res.Tables) == 0 {
		b.WriteString("No hot partitions: no partition is above twice its limit on any node that answered.\n")
	}
	for i, t := range res.Tables {
		if i > 0 {
			b.WriteString("\n")
		}
		var cols []string
		for _, c := range t.KeyColumns {
			cols = append(cols, c.Name+" "+c.Type)
		}
		fmt.Fprintf(&b, "%s.%s (partition key: %s)\n", cql.QuoteIdent(t.Keyspace), cql.QuoteIdent(t.Table), strings.Join(cols, ", "))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		shadow := false
		for _, p := range t.Partitions {
			shadow = shadow || p.WouldRejectPerSecond > 0
		}
		head := "  rank\top\tpartition key\ttoken\test. ops/s\tlimit/s\trejected\tnodes\n"
		if shadow {
			head = "  rank\top\tpartition key\ttoken\test. ops/s\tlimit/s\trejected\twould reject\tnodes\n"
		}
		fmt.Fprint(tw, head)
		for j, p := range t.Partitions {
			limit := "none"
			if p.Limit > 0 {
				limit = fmt.Sprint(p.Limit)
			}
			would := ""
			if shadow {
				would = fmt.Sprintf("%.1f%%\t", 100*min(1, ratioOf(p.WouldRejectPerSecond, p.EstimatedOpsPerSecond)))
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%.1f\t%s\t%.1f%%\t%s%d\n",
				j+1, p.Op, FormatKey(p.Key), p.Token, p.EstimatedOpsPerSecond, limit, 100*p.RejectedShare, would, p.Nodes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(res.UnreachableNodes) > 0 {
		fmt.Fprintf(&b, "\nNodes that did not answer (partitions only they saw hot are missing): %s\n", strings.Join(res.UnreachableNodes, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ratioOf returns a/b, or 1 when b is 0 and a is not (a share of nothing estimated).
func ratioOf(a, b float64) float64 {
	switch {
	case b > 0:
		return a / b
	case a > 0:
		return 1
	}
	return 0
}

// FormatKey renders a partition key: a single component as its value (text as is, numbers as
// numbers, blobs in hex, timestamps in RFC 3339), several as a tuple (a, 1), and a key no node
// knew as "(unknown)".
func FormatKey(key []any) string {
	switch len(key) {
	case 0:
		return "(unknown)"
	case 1:
		return formatValue(key[0], false)
	}
	parts := make([]string, len(key))
	for i, v := range key {
		parts[i] = formatValue(v, true)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// formatValue renders one key component; in a tuple, text is quoted as a CQL literal so that
// commas inside it cannot be mistaken for separators.
func formatValue(v any, quoted bool) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if quoted {
			return cql.QuoteString(v)
		}
		return v
	case []byte:
		return fmt.Sprintf("0x%x", v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Sprint(v)
		}
		return fmt.Sprintf("%g", v)
	default:
		return fmt.Sprint(v)
	}
}

// jsonResult is the JSON form of a result; field names are the documented interface.
type jsonResult struct {
	Tables           []jsonTable `json:"tables"`
	UnreachableNodes []string    `json:"unreachable_nodes"`
}

type jsonTable struct {
	Keyspace   string          `json:"keyspace"`
	Table      string          `json:"table"`
	KeyColumns []jsonColumn    `json:"partition_key_columns"`
	Partitions []jsonPartition `json:"partitions"`
}

type jsonColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type jsonPartition struct {
	Op                    string  `json:"op"`
	Key                   []any   `json:"partition_key"` // null when unknown
	KeyText               string  `json:"partition_key_text"`
	Token                 int64   `json:"token"`
	EstimatedOpsPerSecond float64 `json:"estimated_ops_per_second"`
	Limit                 uint32  `json:"limit"`
	RejectedPerSecond     float64 `json:"rejected_per_second"`
	RejectedShare         float64 `json:"rejected_share"`
	WouldRejectPerSecond  float64 `json:"would_reject_per_second"`
	Nodes                 int     `json:"nodes"`
}

// WriteJSON prints res as one JSON object: {"tables": [{"keyspace", "table",
// "partition_key_columns", "partitions": [{"op", "partition_key", "partition_key_text",
// "token", "estimated_ops_per_second", "limit", "rejected_per_second", "rejected_share",
// "would_reject_per_second", "nodes"}]}], "unreachable_nodes": [...]}. Key components are JSON
// strings, numbers and booleans; blobs are hex strings ("0x..."), timestamps RFC 3339 strings,
// and infinite or NaN doubles the strings "+Inf", "-Inf" and "NaN".
func WriteJSON(w io.Writer, res *client.TopPartitionsResult) error {
	out := jsonResult{Tables: []jsonTable{}, UnreachableNodes: res.UnreachableNodes}
	if out.UnreachableNodes == nil {
		out.UnreachableNodes = []string{}
	}
	for _, t := range res.Tables {
		jt := jsonTable{Keyspace: t.Keyspace, Table: t.Table, KeyColumns: []jsonColumn{}, Partitions: []jsonPartition{}}
		for _, c := range t.KeyColumns {
			jt.KeyColumns = append(jt.KeyColumns, jsonColumn{c.Name, c.Type})
		}
		for _, p := range t.Partitions {
			jp := jsonPartition{
				Op: string(p.Op), KeyText: FormatKey(p.Key), Token: p.Token,
				EstimatedOpsPerSecond: p.EstimatedOpsPerSecond, Limit: p.Limit,
				RejectedPerSecond: p.RejectedPerSecond, RejectedShare: p.RejectedShare, WouldRejectPerSecond: p.WouldRejectPerSecond,
				Nodes: p.Nodes,
			}
			for _, v := range p.Key {
				switch v := v.(type) {
				case []byte, time.Time, client.UUID, client.Date, client.Decimal, *big.Int, time.Duration:
					jp.Key = append(jp.Key, formatValue(v, false))
				case float64:
					if math.IsInf(v, 0) || math.IsNaN(v) { // not representable in JSON
						jp.Key = append(jp.Key, formatValue(v, false))
					} else {
						jp.Key = append(jp.Key, v)
					}
				default:
					jp.Key = append(jp.Key, v)
				}
			}
			jt.Partitions = append(jt.Partitions, jp)
		}
		out.Tables = append(out.Tables, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
