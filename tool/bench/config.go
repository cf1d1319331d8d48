package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"time"

	"github.com/kvnode/kvnode/client"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/tool/cliflags"
)

// Coordinator says which node coordinates each operation.
type Coordinator string

// The coordinator policies.
const (
	// TokenAware (native protocol only) sends each operation to a replica of its partition, as
	// drivers do by default: gocql's TokenAwareHostPolicy over RoundRobinHostPolicy, over the
	// nodes the driver discovers from the contact points in Addrs.
	TokenAware Coordinator = "tokenaware"
	// RoundRobin sends operation n to address n mod len(Addrs), counted across all workers, so
	// every node coordinates the same share (gRPC); over the native protocol it is gocql's
	// RoundRobinHostPolicy over the discovered nodes.
	RoundRobin Coordinator = "roundrobin"
	// Fixed sends every operation to the first address (over the native protocol with the
	// driver's host discovery off).
	Fixed Coordinator = "fixed"
)

// Protocol is how kvnode bench talks to the nodes.
type Protocol string

// The protocols.
const (
	// ProtocolCQL is the CQL native protocol through gocql (ScyllaDB's fork), with prepared
	// statements: what applications use.
	ProtocolCQL Protocol = "cql"
	// ProtocolGRPC is kvnode's gRPC client API, with literal statements.
	ProtocolGRPC Protocol = "grpc"
)

// The default addresses of each protocol's client port.
const (
	DefaultCQLAddr  = "127.0.0.1:9042"
	DefaultGRPCAddr = "127.0.0.1:9043"
)

// Limits on the flags that have no natural bound, so a typo cannot ask for a billion goroutines
// or an open-loop schedule finer than the timer can keep.
const (
	MaxConcurrency = 100_000
	MaxRate        = 10_000_000
	MaxDuration    = 7 * 24 * time.Hour
)

// Config is one benchmark run. Its fields mirror the flags of kvnode bench; DefaultConfig holds
// the flag defaults. Validate reports the first field out of range, naming the flag.
type Config struct {
	// Protocol is ProtocolCQL or ProtocolGRPC; --protocol.
	Protocol Protocol
	// Addrs are the nodes' client addresses (host:port) for Protocol: native addresses (the
	// driver's contact points) or gRPC ones; --addrs, comma-separated.
	Addrs []string
	// Coordinator is TokenAware (native protocol only), RoundRobin or Fixed; --coordinator.
	Coordinator Coordinator
	// Table is the target table as keyspace.table, in CQL identifier syntax (unquoted names are
	// lower-cased, "Quoted" ones keep their case); --table. Its partition key must be exactly one
	// text or bigint column.
	Table string
	// Writes is the fraction of operations that are writes, 0..1; --writes.
	Writes float64
	// Consistency is the level of every operation; --cl.
	Consistency client.Consistency
	// Partitions is the number of cold partitions, at least 1 unless Hot is 1; --partitions.
	Partitions int
	// Hot is the share of operations sent to the single hot partition, 0..1; --hot.
	Hot float64
	// Rate is the offered load in operations per second (open loop); 0 means closed loop, each
	// worker issuing its next operation when the previous one returns; --rate.
	Rate float64
	// Concurrency is the number of workers (operations in flight at most); --concurrency.
	Concurrency int
	// Duration is how long operations are issued; --duration.
	Duration time.Duration
	// Seed seeds every random choice (keys, op kinds, generated values); --seed.
	Seed uint64
	// JSON asks Run for the JSON summary on stdout (progress then goes to stderr); --json.
	// Execute ignores it.
	JSON bool
	// Collection, when set, names a non-frozen collection column of Table (a set, list or map of
	// text, int or bigint): writes are then updates of one element of it in one row of the
	// partition (s = s + {e}, l = l + [e], m[k] = v), which write without reading; --collection.
	Collection string
	// TLSCA, when set, connects over TLS, trusting the CA certificates in this PEM file;
	// --tls-ca.
	TLSCA string
	// Username and Password log in to nodes started with --authenticator password (gocql's
	// PasswordAuthenticator, or the gRPC client's WithCredentials); --username, and --password
	// or the KVNODE_PASSWORD environment variable. "" for no login.
	Username, Password string
}

// DefaultConfig returns the flag defaults. Table has no default: it must be given.
func DefaultConfig() Config {
	return Config{
		Protocol:    ProtocolCQL,
		Addrs:       []string{DefaultCQLAddr},
		Coordinator: TokenAware,
		Writes:      0.5,
		Consistency: client.One,
		Partitions:  1000,
		Hot:         0.1,
		Rate:        0,
		Concurrency: 16,
		Duration:    10 * time.Second,
		Seed:        1,
	}
}

const usageText = `Usage: kvnode bench --table keyspace.table [flags]

A load generator over the CQL native protocol (through gocql, with prepared
statements and no driver retries), or with --protocol grpc over the gRPC
client API. Each operation goes to the single hot
partition with probability --hot, else to one of --partitions cold partitions
chosen uniformly; it is a write (INSERT of every column, or with
--collection an update of one element of that non-frozen collection column)
with probability --writes, else a read of the whole partition (SELECT *). Partition keys: the
hot partition is 'hot' (text key) or 0 (bigint key); cold partition i is
'cold-<i>' or i+1.

With --rate > 0 the load is open loop: operations start at exact intervals
whether or not earlier ones have returned, and latency counts from the
intended start. With --rate 0 each of --concurrency workers issues its next
operation when the previous one returns.

Flags:
`

// ParseFlags parses the arguments of kvnode bench (those after "bench") into a validated
// Config. Errors name the flag and the value; -h or --help prints the flags to stderr and
// returns flag.ErrHelp.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	def := DefaultConfig()
	fs := flag.NewFlagSet("kvnode bench", flag.ContinueOnError)
	protocol := fs.String("protocol", string(def.Protocol), "client `protocol`: cql (the native protocol through gocql) or grpc (the gRPC API)")
	addrs := fs.String("addrs", "", "comma-separated client `addresses` of the nodes (host:port) for --protocol (default "+DefaultCQLAddr+" for cql, "+DefaultGRPCAddr+" for grpc)")
	coord := fs.String("coordinator", "", "coordinator choice per operation: tokenaware (a replica of the partition; cql only), roundrobin or fixed (always the first address) (default tokenaware for cql, roundrobin for grpc)")
	table := fs.String("table", "", "target `keyspace.table`; its partition key must be one text or bigint column (required)")
	writes := fs.Float64("writes", def.Writes, "`fraction` of operations that are writes, 0..1")
	cl := fs.String("cl", def.Consistency.String(), "consistency `level`: ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM")
	partitions := fs.Int("partitions", def.Partitions, "`number` of cold partitions")
	hot := fs.Float64("hot", def.Hot, "`share` of operations sent to the single hot partition, 0..1")
	rate := fs.Float64("rate", def.Rate, "offered load in `ops/s` (open loop); 0 means closed loop")
	concurrency := fs.Int("concurrency", def.Concurrency, "number of `workers` (most operations in flight)")
	duration := def.Duration
	fs.Func("duration", "how long to issue operations, such as 30s or 2m (default 10s)", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration with a unit, such as 10s or 1m30s")
		}
		duration = d
		return nil
	})
	seed := fs.Uint64("seed", def.Seed, "seed of every random choice")
	jsonOut := fs.Bool("json", false, "print one JSON summary object on stdout; progress goes to stderr")
	collection := fs.String("collection", "", "write element updates of this non-frozen collection `column` (s = s + {e}, l = l + [e], m[k] = v) instead of INSERTs of every column")
	tlsCA := fs.String("tls-ca", "", "connect over TLS, trusting the CA certificates in this PEM `file`")
	username := fs.String("username", "", "log in as this `role` (nodes started with --authenticator password); the password from "+cliflags.PasswordEnv)
	password := fs.String("password", "", "the `password` of --username; better set "+cliflags.PasswordEnv+", which is not in the process list")

	if err := cliflags.Parse(fs, args, "bench", usageText, stderr); err != nil {
		return Config{}, err
	}
	c := Config{
		Protocol:    Protocol(*protocol),
		Addrs:       splitAddrs(*addrs),
		Coordinator: Coordinator(*coord),
		Table:       *table,
		Writes:      *writes,
		Partitions:  *partitions,
		Hot:         *hot,
		Rate:        *rate,
		Concurrency: *concurrency,
		Duration:    duration,
		Seed:        *seed,
		JSON:        *jsonOut,
		TLSCA:       *tlsCA,
		Collection:  *collection,
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	if c.Username, c.Password, err = cliflags.Credentials(*username, *password, set["password"], os.Getenv(cliflags.PasswordEnv)); err != nil {
		return Config{}, fmt.Errorf("bench: %w", err)
	}
	if !set["addrs"] {
		c.Addrs = []string{DefaultCQLAddr}
		if c.Protocol == ProtocolGRPC {
			c.Addrs = []string{DefaultGRPCAddr}
		}
	}
	if !set["coordinator"] {
		c.Coordinator = TokenAware
		if c.Protocol == ProtocolGRPC {
			c.Coordinator = RoundRobin
		}
	}
	level, err := client.ParseConsistency(*cl)
	if err != nil {
		return Config{}, fmt.Errorf("bench: --cl %s: %w", *cl, err)
	}
	c.Consistency = level
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// splitAddrs splits a comma-separated list, trimming spaces. Empty items are kept (as "") so
// that Validate can name them.
func splitAddrs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// Validate reports the first setting out of range, as an error naming its flag and value.
func (c Config) Validate() error {
	if c.Protocol != ProtocolCQL && c.Protocol != ProtocolGRPC {
		return fmt.Errorf("bench: --protocol %q: want cql or grpc", string(c.Protocol))
	}
	if len(c.Addrs) == 0 {
		return errors.New("bench: --addrs is empty: give at least one node address (host:port)")
	}
	for i, a := range c.Addrs {
		if a == "" {
			return fmt.Errorf("bench: --addrs %q: address %d is empty", strings.Join(c.Addrs, ","), i+1)
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("bench: --addrs: %q is not host:port: %v", a, err)
		}
	}
	switch c.Coordinator {
	case RoundRobin, Fixed:
	case TokenAware:
		if c.Protocol == ProtocolGRPC {
			return errors.New("bench: --coordinator tokenaware needs --protocol cql (the gRPC client does not know the ring): use roundrobin or fixed")
		}
	default:
		return fmt.Errorf("bench: --coordinator %q: want tokenaware, roundrobin or fixed", string(c.Coordinator))
	}
	if _, err := parseTable(c.Table); err != nil {
		return err
	}
	if err := checkFraction("--writes", c.Writes); err != nil {
		return err
	}
	if c.Consistency < client.One || c.Consistency > client.EachQuorum {
		return fmt.Errorf("bench: --cl %v: want ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM or EACH_QUORUM", c.Consistency)
	}
	if err := checkFraction("--hot", c.Hot); err != nil {
		return err
	}
	if c.Partitions < 0 || (c.Partitions == 0 && c.Hot < 1) {
		return fmt.Errorf("bench: --partitions %d: want at least 1 cold partition (0 only with --hot 1)", c.Partitions)
	}
	if math.IsNaN(c.Rate) || c.Rate < 0 || c.Rate > MaxRate {
		return fmt.Errorf("bench: --rate %v: want ops/s between 0 (closed loop) and %d", c.Rate, MaxRate)
	}
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		return fmt.Errorf("bench: --concurrency %d: want 1 to %d workers", c.Concurrency, MaxConcurrency)
	}
	if c.Duration <= 0 || c.Duration > MaxDuration {
		return fmt.Errorf("bench: --duration %v: want a positive duration such as 10s, at most %v", c.Duration, MaxDuration)
	}
	return nil
}

func checkFraction(flagName string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return fmt.Errorf("bench: %s %v: want a fraction between 0 and 1", flagName, v)
	}
	return nil
}

// parseTable reads keyspace.table with CQL identifier rules, by parsing it as the table name of
// a DESCRIBE TABLE statement: whatever the server would accept there is accepted here.
func parseTable(s string) (cql.TableName, error) {
	if strings.TrimSpace(s) == "" {
		return cql.TableName{}, errors.New("bench: --table is required: give the target as keyspace.table")
	}
	st, err := cql.ParseStatement("DESCRIBE TABLE " + s)
	d, ok := st.(*cql.DescribeStmt)
	if err != nil || !ok || d.Kind != cql.DescribeTable {
		return cql.TableName{}, fmt.Errorf("bench: --table %q is not a table name: want keyspace.table", s)
	}
	if d.Table.Keyspace.Name == "" {
		return cql.TableName{}, fmt.Errorf("bench: --table %q has no keyspace: want keyspace.table", s)
	}
	return d.Table, nil
}
