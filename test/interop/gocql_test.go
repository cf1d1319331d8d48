package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/test/proc"
)

// TestGocqlIsScyllaDBsFork checks that go.mod's replace directive took effect: ScyllaDB's fork
// has the typed rate-limit error, which upstream gocql lacks, and it survives wrapping.
func TestGocqlIsScyllaDBsFork(t *testing.T) {
	var err error = fmt.Errorf("insert: %w", &gocql.RequestErrRateLimitReached{OpType: gocql.OpTypeWrite, RejectedByCoordinator: true})
	var rl *gocql.RequestErrRateLimitReached
	if !errors.As(err, &rl) {
		t.Fatalf("errors.As(%v, *gocql.RequestErrRateLimitReached) = false", err)
	}
	if s := rl.String(); !strings.Contains(s, "OpType=Write") || !strings.Contains(s, "RejectedByCoordinator=true") {
		t.Errorf("RequestErrRateLimitReached.String() = %q, want OpType=Write and RejectedByCoordinator=true", s)
	}
}

// keyspace is the keyspace the gocql tests create; replication factor rf of three nodes, so that
// every partition has a node that is not its replica (for the routing and limiter checks).
const (
	keyspace = "interop"
	rf       = 2
)

// newGocqlCluster is how an application connects gocql to a kvnode cluster (docs/cql-protocol.md
// shows it): every node as a contact point, the native port, protocol v4, token-aware routing.
func newGocqlCluster(hosts []string, port int) *gocql.ClusterConfig {
	// docs:begin gocql-connect
	cluster := gocql.NewCluster(hosts...)
	cluster.Port = port
	cluster.ProtoVersion = 4
	cluster.Consistency = gocql.Quorum
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	cluster.Timeout = requestTimeout
	cluster.ConnectTimeout = connectTimeout
	cluster.RetryPolicy = noRateLimitRetry{&gocql.SimpleRetryPolicy{NumRetries: 3}}
	// docs:end
	return cluster
}

// docs:begin gocql-retry
// noRateLimitRetry retries what its RetryPolicy retries except a rate-limit rejection: gocql's
// own policies retry every error on the next host, this one included, which only adds load to
// the partition that is over its limit.
type noRateLimitRetry struct{ gocql.RetryPolicy }

func (p noRateLimitRetry) GetRetryType(err error) gocql.RetryType {
	var rl *gocql.RequestErrRateLimitReached
	if errors.As(err, &rl) {
		return gocql.Rethrow
	}
	return p.RetryPolicy.GetRetryType(err)
}

// docs:end (gocql-retry)

// attempt is one query attempt as gocql's observers saw it.
type attempt struct {
	statement string
	values    []any
	host      string // IP address of the node that served it
	attempt   int
	err       error
}

// recorder records every query and batch attempt of a session: which node served it.
type recorder struct {
	mu       sync.Mutex
	attempts []attempt
}

func (r *recorder) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	r.add(attempt{statement: q.Statement, values: q.Values, host: hostIP(q.Host), attempt: q.Attempt, err: q.Err})
}

func (r *recorder) ObserveBatch(_ context.Context, b gocql.ObservedBatch) {
	r.add(attempt{statement: strings.Join(b.Statements, "; "), host: hostIP(b.Host), attempt: b.Attempt, err: b.Err})
}

func (r *recorder) add(a attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, a)
}

// take returns the attempts recorded since the last take whose statement contains substr, and
// forgets all.
func (r *recorder) take(substr string) []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []attempt
	for _, a := range r.attempts {
		if strings.Contains(a.statement, substr) {
			out = append(out, a)
		}
	}
	r.attempts = nil
	return out
}

func hostIP(h *gocql.HostInfo) string {
	if h == nil {
		return ""
	}
	return h.ConnectAddress().String()
}

// TestGocql runs ScyllaDB's gocql, unmodified, against three kvnode processes: it connects and
// discovers every node, creates a schema, writes and reads every column type through prepared
// statements, pages, batches, routes by token to replicas, and meets the per-partition rate
// limiter. The steps share one cluster and session and run in order; a step that fails stops
// the ones that depend on it.
func TestGocql(t *testing.T) {
	c := startCluster(t)
	place := newPlacement(c)
	rec := &recorder{}
	cluster := newGocqlCluster(c.Hosts(), c.CQLPort)
	cluster.QueryObserver = rec
	cluster.BatchObserver = rec
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql: connecting to %v: %v", c.CQLAddrs(), err)
	}
	defer session.Close()

	if !t.Run("discovers every node", func(t *testing.T) { testGocqlDiscovery(t, c, session) }) {
		return
	}
	if !t.Run("DDL and schema metadata", func(t *testing.T) { testGocqlDDL(t, session) }) {
		return
	}
	t.Run("ALTER KEYSPACE changes the keyspace metadata", func(t *testing.T) { testGocqlAlterKeyspace(t, session) })
	t.Run("schema export replays", func(t *testing.T) { testGocqlExportReplays(t, c, session) })
	t.Run("every type through prepared statements", func(t *testing.T) { testGocqlTypes(t, session) })
	t.Run("pages through a partition", func(t *testing.T) { testGocqlPaging(t, session) })
	t.Run("logged and unlogged batches", func(t *testing.T) { testGocqlBatches(t, session, rec) })
	t.Run("expiring data: USING TTL, TTL(), WRITETIME()", func(t *testing.T) { testGocqlTTL(t, session) })
	t.Run("functions as values and selectors", func(t *testing.T) { testGocqlFunctions(t, session) })
	t.Run("duration values", func(t *testing.T) { testGocqlDuration(t, session) })
	t.Run("frozen collections and tuples", func(t *testing.T) { testGocqlFrozen(t, session) })
	t.Run("non-frozen collections", func(t *testing.T) { testGocqlCollections(t, session) })
	t.Run("user-defined types", func(t *testing.T) { testGocqlUDT(t, session) })
	t.Run("user-defined types in keys", func(t *testing.T) { testGocqlUDTKeys(t, session) })
	t.Run("IN, aggregates, DISTINCT and filtering", func(t *testing.T) { testGocqlSelect(t, session) })
	t.Run("static columns", func(t *testing.T) { testGocqlStatic(t, session) })
	t.Run("token-aware routing reaches a replica", func(t *testing.T) { testGocqlRouting(t, session, rec, place) })
	t.Run("rate limit", func(t *testing.T) { testGocqlRateLimit(t, c, place) })
	t.Run("schema evolution while writing", func(t *testing.T) { testGocqlSchemaEvolution(t, session) })
}

// testGocqlDiscovery checks that the session knows all three nodes, up, with the identity, data
// center, rack and tokens kvnode gave them.
func testGocqlDiscovery(t *testing.T, c *proc.Cluster, session *gocql.Session) {
	want := map[string]string{} // IP → host id
	for _, n := range c.Nodes {
		want[n.Host()] = n.ID
	}
	poll.Must(t, discoverTimeout, "gocql knows all three nodes up", func() error {
		got := map[string]string{}
		for _, h := range session.GetHosts() {
			if h.IsUp() {
				got[hostIP(h)] = h.HostID()
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("gocql's hosts up: %v, want %v", got, want)
		}
		for ip, id := range want {
			if got[ip] != id {
				return fmt.Errorf("gocql's hosts up: %v, want %v", got, want)
			}
		}
		return nil
	})
	seen := map[string]string{}
	for _, h := range session.GetHosts() {
		ip := hostIP(h)
		if h.DataCenter() != "datacenter1" || h.Rack() != "rack1" {
			t.Errorf("gocql sees %s in data center %q, rack %q; want datacenter1, rack1 (the defaults)", ip, h.DataCenter(), h.Rack())
		}
		if h.Port() != c.CQLPort {
			t.Errorf("gocql connects to %s on port %d, want the native port %d", ip, h.Port(), c.CQLPort)
		}
		var wantTokens []string
		for _, tok := range nodeTokens(want[ip]) {
			wantTokens = append(wantTokens, fmt.Sprint(tok))
		}
		gotTokens := slices.Clone(h.Tokens())
		slices.Sort(gotTokens)
		slices.Sort(wantTokens)
		if !slices.Equal(gotTokens, wantTokens) {
			t.Errorf("gocql sees %s with tokens %v, want kvnode's %v", ip, gotTokens, wantTokens)
		}
		for _, tok := range gotTokens {
			if other, dup := seen[tok]; dup {
				t.Errorf("token %s is both %s's and %s's", tok, other, ip)
			}
			seen[tok] = ip
		}
	}
}

// everyTypeColumns are the regular columns of table everytype: name → CQL type, as the schema
// metadata must report it (varchar is an alias of text).
var everyTypeColumns = [][2]string{
	{"a_text", "text"}, {"a_varchar", "text"}, {"a_ascii", "ascii"},
	{"a_int", "int"}, {"a_bigint", "bigint"}, {"a_smallint", "smallint"}, {"a_tinyint", "tinyint"}, {"a_varint", "varint"},
	{"a_double", "double"}, {"a_float", "float"}, {"a_decimal", "decimal"},
	{"a_boolean", "boolean"}, {"a_blob", "blob"},
	{"a_timestamp", "timestamp"}, {"a_date", "date"}, {"a_time", "time"},
	{"a_uuid", "uuid"}, {"a_timeuuid", "timeuuid"}, {"a_inet", "inet"},
}

// gocqlDDL is the schema the gocql tests use.
func gocqlDDL() []string {
	var cols []string
	for _, c := range everyTypeColumns {
		typ := c[1]
		if c[0] == "a_varchar" {
			typ = "varchar"
		}
		cols = append(cols, c[0]+" "+typ)
	}
	return []string{
		fmt.Sprintf("DROP KEYSPACE IF EXISTS %s", keyspace),
		fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", keyspace, rf),
		fmt.Sprintf("CREATE TABLE %s.everytype (k text, c int, %s, PRIMARY KEY (k, c))", keyspace, strings.Join(cols, ", ")),
		fmt.Sprintf("CREATE TABLE %s.keyed (id uuid, day date, at timeuuid, n smallint, PRIMARY KEY ((id, day), at))", keyspace),
		fmt.Sprintf("CREATE TABLE %s.pages (k int, c int, v text, PRIMARY KEY (k, c))", keyspace),
		fmt.Sprintf("CREATE TABLE %s.batches (k text, c int, v text, PRIMARY KEY (k, c))", keyspace),
		fmt.Sprintf("CREATE TABLE %s.routed (k text PRIMARY KEY, v int)", keyspace),
		fmt.Sprintf("CREATE TABLE %s.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_reads_per_second': 2, 'max_writes_per_second': 2}", keyspace),
	}
}

func testGocqlDDL(t *testing.T, session *gocql.Session) {
	for _, stmt := range gocqlDDL() {
		if err := session.Query(stmt).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", stmt, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := session.AwaitSchemaAgreement(ctx); err != nil {
		t.Fatalf("gocql: schema agreement after DDL: %v", err)
	}
	ks, err := session.KeyspaceMetadata(keyspace)
	if err != nil {
		t.Fatalf("gocql: keyspace metadata of %s: %v", keyspace, err)
	}
	if !strings.HasSuffix(ks.StrategyClass, "SimpleStrategy") || fmt.Sprint(ks.StrategyOptions["replication_factor"]) != fmt.Sprint(rf) {
		t.Errorf("gocql sees keyspace %s with strategy %q options %v, want SimpleStrategy with replication_factor %d", keyspace, ks.StrategyClass, ks.StrategyOptions, rf)
	}
	// Valid CQL that kvnode does not execute is Invalid (0x2200), naming the feature: not a
	// syntax error, which drivers and users read as a typo.
	err = session.Query("CREATE MATERIALIZED VIEW " + keyspace + ".mv AS SELECT * FROM " + keyspace + ".everytype PRIMARY KEY (a_int)").Exec()
	if frame, ok := errors.AsType[errorFrame](err); !ok || frame.GetCode() != gocql.ErrCodeInvalid || !strings.Contains(err.Error(), "materialized views are not supported") {
		t.Errorf("gocql: CREATE MATERIALIZED VIEW answered %v, want Invalid (0x2200) saying materialized views are not supported", err)
	}
	// gocql reads the keyspace's CREATE statements from DESCRIBE KEYSPACE ... WITH INTERNALS, as
	// Cassandra 4 answers it (a syntax error would make it rebuild them itself). It keeps them
	// while tables come and go, so they may predate this test's tables.
	if !strings.HasPrefix(ks.CreateStmts, "CREATE KEYSPACE "+keyspace+" WITH replication") {
		t.Errorf("gocql's CREATE statements of %s (from DESCRIBE ... WITH INTERNALS) are %q, want the keyspace's first", keyspace, ks.CreateStmts)
	}
	// gocql caches a keyspace's tables and learns of new ones from the SCHEMA_CHANGE events the
	// server pushes (they invalidate the cache table by table, and TableMetadata then reads the
	// table), so a table created a moment ago may take an event's delivery to appear.
	for _, name := range []string{"batches", "everytype", "keyed", "limited", "pages", "routed"} {
		poll.Must(t, discoverTimeout, fmt.Sprintf("gocql knows table %s.%s", keyspace, name), func() error {
			_, err := session.TableMetadata(keyspace, name)
			return err
		})
	}
	tm, err := session.TableMetadata(keyspace, "everytype")
	if err != nil {
		t.Fatalf("gocql: table metadata of %s.everytype: %v", keyspace, err)
	}
	if len(tm.PartitionKey) != 1 || tm.PartitionKey[0].Name != "k" || len(tm.ClusteringColumns) != 1 || tm.ClusteringColumns[0].Name != "c" {
		t.Errorf("gocql sees %s.everytype with partition key %v and clustering columns %v, want (k) and (c)", keyspace, columnNames(tm.PartitionKey), columnNames(tm.ClusteringColumns))
	}
	for _, c := range append([][2]string{{"k", "text"}, {"c", "int"}}, everyTypeColumns...) {
		col, ok := tm.Columns[c[0]]
		switch {
		case !ok:
			t.Errorf("gocql sees no column %s in %s.everytype", c[0], keyspace)
		case col.Type != c[1]:
			t.Errorf("gocql sees column %s.everytype.%s of type %q, want %q", keyspace, c[0], col.Type, c[1])
		}
	}
	keyed, err := session.TableMetadata(keyspace, "keyed")
	if err != nil {
		t.Fatalf("gocql: table metadata of %s.keyed: %v", keyspace, err)
	}
	if got := columnNames(keyed.PartitionKey); !slices.Equal(got, []string{"id", "day"}) {
		t.Errorf("gocql sees %s.keyed with partition key %v, want [id day]", keyspace, got)
	}
}

// testGocqlExportReplays checks that gocql's export of a keyspace (KeyspaceMetadata.ToCQL, which
// is kvnode's DESCRIBE ... WITH INTERNALS) recreates it on a fresh keyspace: Cassandra's table
// options as gocql reads them, and kvnode's rate limit.
func testGocqlExportReplays(t *testing.T, c *proc.Cluster, session *gocql.Session) {
	ks := keyspace + "_export"
	exec := func(stmt string) {
		t.Helper()
		if err := session.Query(stmt).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", stmt, err)
		}
	}
	exec("DROP KEYSPACE IF EXISTS " + ks)
	exec(fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", ks, rf))
	exec("CREATE TABLE " + ks + ".opts (k text, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)" +
		" AND comment = 'exported' AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 160}" +
		" AND bloom_filter_fp_chance = 0.1 AND min_index_interval = 64 AND speculative_retry = 'MIN(99p,50ms)'" +
		" AND per_partition_rate_limit = {'max_reads_per_second': 500}")
	// options reads the table's options as gocql sees them, once the table exists.
	options := func() gocql.TableMetadataOptions {
		t.Helper()
		var opts gocql.TableMetadataOptions
		poll.Must(t, discoverTimeout, "gocql knows table "+ks+".opts", func() error {
			tm, err := session.TableMetadata(ks, "opts")
			if err != nil {
				return err
			}
			opts = tm.Options
			return nil
		})
		return opts
	}
	before := options()
	if before.Comment != "exported" || before.BloomFilterFpChance != 0.1 || before.MinIndexInterval != 64 ||
		before.SpeculativeRetry != "MIN(99p,50ms)" || before.Compaction["class"] != "org.apache.cassandra.db.compaction.LeveledCompactionStrategy" {
		t.Errorf("gocql reads the options of %s.opts as %+v", ks, before)
	}
	// row reads the options from system_schema.tables, where gocql reads them, without gocql's
	// metadata cache (which may hold the table's earlier incarnation for a moment).
	row := func() map[string]any {
		t.Helper()
		m := map[string]any{}
		q := "SELECT comment, compaction, compression, caching, bloom_filter_fp_chance, min_index_interval, speculative_retry, gc_grace_seconds, extensions" +
			" FROM system_schema.tables WHERE keyspace_name = ? AND table_name = 'opts'"
		if err := session.Query(q, ks).MapScan(m); err != nil {
			t.Fatalf("gocql: reading the options of %s.opts: %v", ks, err)
		}
		return m
	}
	want := fmt.Sprint(row())
	// A new session reads the keyspace's metadata afresh: gocql keeps a keyspace's CREATE
	// statements while its tables change, so the first session's may predate the table.
	fresh, err := newGocqlCluster(c.Hosts(), c.CQLPort).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	km, err := fresh.KeyspaceMetadata(ks)
	if err != nil {
		t.Fatal(err)
	}
	text, err := km.ToCQL()
	if err != nil {
		t.Fatalf("gocql: exporting %s: %v", ks, err)
	}
	exec("DROP KEYSPACE " + ks)
	for _, stmt := range strings.Split(text, ";\n") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			exec(stmt)
		}
	}
	if got := fmt.Sprint(row()); got != want {
		t.Errorf("gocql's export of %s recreated options\n%s\nwant\n%s\nthe export:\n%s", ks, got, want, text)
	}
	if !strings.Contains(want, "per_partition_rate_limit:[123 39 109 97 120 95 114 101 97 100 115") { // {'max_reads...
		t.Errorf("the options of %s.opts lack the rate limit: %s", ks, want)
	}
	exec("DROP KEYSPACE " + ks)
}

// errorFrame is how gocql returns the error codes it has no type of its own for (Invalid,
// Syntax, ...): its internal error frame, which has GetCode.
type errorFrame interface {
	error
	GetCode() int
}

func columnNames(cols []*gocql.ColumnMetadata) []string {
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return names
}

// typedRow holds one value of every column of everytype in the Go types gocql maps them to.
type typedRow struct {
	text, varchar, ascii string
	i                    int32
	bi                   int64
	si                   int16
	ti                   int8
	vi                   *big.Int
	d                    float64
	f                    float32
	dec                  *inf.Dec
	b                    bool
	blob                 []byte
	ts                   time.Time
	date                 time.Time
	tod                  time.Duration
	u, tu                gocql.UUID
	ip                   net.IP
}

func (r *typedRow) values() []any {
	return []any{r.text, r.varchar, r.ascii, r.i, r.bi, r.si, r.ti, r.vi, r.d, r.f, r.dec, r.b, r.blob, r.ts, r.date, r.tod, r.u, r.tu, r.ip}
}

func (r *typedRow) dests() []any {
	return []any{&r.text, &r.varchar, &r.ascii, &r.i, &r.bi, &r.si, &r.ti, &r.vi, &r.d, &r.f, &r.dec, &r.b, &r.blob, &r.ts, &r.date, &r.tod, &r.u, &r.tu, &r.ip}
}

// diff names every field of got that differs from want.
func (want *typedRow) diff(got *typedRow) []string {
	var d []string
	check := func(name string, equal bool, g, w any) {
		if !equal {
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	check("text", got.text == want.text, got.text, want.text)
	check("varchar", got.varchar == want.varchar, got.varchar, want.varchar)
	check("ascii", got.ascii == want.ascii, got.ascii, want.ascii)
	check("int", got.i == want.i, got.i, want.i)
	check("bigint", got.bi == want.bi, got.bi, want.bi)
	check("smallint", got.si == want.si, got.si, want.si)
	check("tinyint", got.ti == want.ti, got.ti, want.ti)
	check("varint", got.vi != nil && got.vi.Cmp(want.vi) == 0, got.vi, want.vi)
	check("double", got.d == want.d || (math.IsNaN(got.d) && math.IsNaN(want.d)), got.d, want.d)
	check("float", got.f == want.f, got.f, want.f)
	check("decimal", got.dec != nil && got.dec.Cmp(want.dec) == 0 && got.dec.Scale() == want.dec.Scale(), got.dec, want.dec)
	check("boolean", got.b == want.b, got.b, want.b)
	check("blob", bytes.Equal(got.blob, want.blob) && (got.blob == nil) == (want.blob == nil), fmt.Sprintf("%#v", got.blob), fmt.Sprintf("%#v", want.blob))
	check("timestamp", got.ts.Equal(want.ts), got.ts, want.ts)
	check("date", got.date.Equal(want.date), got.date, want.date)
	check("time", got.tod == want.tod, got.tod, want.tod)
	check("uuid", got.u == want.u, got.u, want.u)
	check("timeuuid", got.tu == want.tu, got.tu, want.tu)
	check("inet", got.ip.Equal(want.ip), got.ip, want.ip)
	return d
}

func bigInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bigInt: not an integer: " + s)
	}
	return n
}

func testGocqlTypes(t *testing.T, session *gocql.Session) {
	ts := time.Date(2026, 11, 24, 5, 30, 1, 123_000_000, time.UTC) // timestamps keep milliseconds
	u, err := gocql.ParseUUID("0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int32]*typedRow{
		1: {
			text: "héllo, wörld ✓", varchar: "varchar", ascii: "plain ascii",
			i: 42, bi: 1 << 40, si: 1234, ti: 12, vi: bigInt("123456789012345678901234567890"),
			d: math.Pi, f: 1.5, dec: inf.NewDec(-12345678901234567, 9),
			b: true, blob: []byte{0, 1, 2, 0xff},
			ts: ts, date: time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC), tod: 13*time.Hour + 37*time.Minute + 5*time.Second + 123456789,
			u: u, tu: gocql.UUIDFromTime(ts), ip: net.ParseIP("2001:db8::1"),
		},
		2: { // the edges: extremes, empty values (not null), IPv4
			text: "", varchar: "", ascii: "",
			i: math.MinInt32, bi: math.MinInt64, si: math.MinInt16, ti: math.MinInt8, vi: bigInt("-98765432109876543210987654321098765432109876543210"),
			d: -math.MaxFloat64, f: math.SmallestNonzeroFloat32, dec: inf.NewDec(5, -3),
			b: false, blob: []byte{},
			ts: time.UnixMilli(-1).UTC(), date: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), tod: 24*time.Hour - 1,
			u: gocql.UUID{}, tu: gocql.UUIDFromTime(time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)), ip: net.ParseIP("192.0.2.1").To4(),
		},
	}
	var names []string
	for _, c := range everyTypeColumns {
		names = append(names, c[0])
	}
	insert := fmt.Sprintf("INSERT INTO %s.everytype (k, c, %s) VALUES (?, ?%s)", keyspace, strings.Join(names, ", "), strings.Repeat(", ?", len(names)))
	selectRow := fmt.Sprintf("SELECT %s FROM %s.everytype WHERE k = ? AND c = ?", strings.Join(names, ", "), keyspace)
	for _, c := range []int32{1, 2} {
		if err := session.Query(insert, append([]any{"types", c}, rows[c].values()...)...).Exec(); err != nil {
			t.Fatalf("gocql: prepared insert of row %d: %v", c, err)
		}
	}
	for _, c := range []int32{1, 2} {
		var got typedRow
		if err := session.Query(selectRow, "types", c).Scan(got.dests()...); err != nil {
			t.Fatalf("gocql: prepared select of row %d: %v", c, err)
		}
		for _, d := range rows[c].diff(&got) {
			t.Errorf("row %d read back through gocql: %s", c, d)
		}
	}

	// A row with only its key set reads back null in every other column.
	if err := session.Query(fmt.Sprintf("INSERT INTO %s.everytype (k, c) VALUES (?, ?)", keyspace), "types", 3).Exec(); err != nil {
		t.Fatalf("gocql: insert of a row of nulls: %v", err)
	}
	var (
		text *string
		i    *int32
		blob *[]byte
		u2   *gocql.UUID
		dec  *inf.Dec
	)
	if err := session.Query(fmt.Sprintf("SELECT a_text, a_int, a_blob, a_uuid, a_decimal FROM %s.everytype WHERE k = ? AND c = ?", keyspace), "types", 3).Scan(&text, &i, &blob, &u2, &dec); err != nil {
		t.Fatalf("gocql: select of a row of nulls: %v", err)
	}
	if text != nil || i != nil || blob != nil || u2 != nil || dec != nil {
		t.Errorf("a row with only its key set reads back text %v, int %v, blob %v, uuid %v, decimal %v; want every one null", text, i, blob, u2, dec)
	}

	// An unset bound value leaves the column as it was.
	if err := session.Query(fmt.Sprintf("UPDATE %s.everytype SET a_int = ?, a_text = ? WHERE k = ? AND c = ?", keyspace), int32(7), gocql.UnsetValue, "types", int32(1)).Exec(); err != nil {
		t.Fatalf("gocql: update with an unset value: %v", err)
	}
	var gotInt int32
	var gotText string
	if err := session.Query(fmt.Sprintf("SELECT a_int, a_text FROM %s.everytype WHERE k = ? AND c = ?", keyspace), "types", int32(1)).Scan(&gotInt, &gotText); err != nil {
		t.Fatalf("gocql: select after the update: %v", err)
	}
	if gotInt != 7 || gotText != rows[1].text {
		t.Errorf("after UPDATE SET a_int = 7, a_text = <unset>: a_int = %d, a_text = %q; want 7 and the text kept (%q)", gotInt, gotText, rows[1].text)
	}

	// New types as partition and clustering keys: a composite partition key, timeuuid order.
	day := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var ats []gocql.UUID
	for n := range 5 {
		at := gocql.UUIDFromTime(ts.Add(time.Duration(4-n) * time.Minute)) // inserted newest first
		ats = append(ats, at)
		if err := session.Query(fmt.Sprintf("INSERT INTO %s.keyed (id, day, at, n) VALUES (?, ?, ?, ?)", keyspace), u, day, at, int16(n)).Exec(); err != nil {
			t.Fatalf("gocql: insert into %s.keyed: %v", keyspace, err)
		}
	}
	iter := session.Query(fmt.Sprintf("SELECT at, n FROM %s.keyed WHERE id = ? AND day = ?", keyspace), u, day).Iter()
	var (
		at    gocql.UUID
		n     int16
		order []int16
	)
	for iter.Scan(&at, &n) {
		if at != ats[n] {
			t.Errorf("row n=%d of %s.keyed has at %v, want %v", n, keyspace, at, ats[n])
		}
		order = append(order, n)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("gocql: select from %s.keyed: %v", keyspace, err)
	}
	if want := []int16{4, 3, 2, 1, 0}; !slices.Equal(order, want) {
		t.Errorf("rows of %s.keyed in clustering (timeuuid) order have n %v, want %v (oldest first)", keyspace, order, want)
	}
}

const pagedRows = 250

func testGocqlPaging(t *testing.T, session *gocql.Session) {
	insert := fmt.Sprintf("INSERT INTO %s.pages (k, c, v) VALUES (?, ?, ?)", keyspace)
	for c := range pagedRows {
		if err := session.Query(insert, 1, c, fmt.Sprintf("v%03d", c)).Exec(); err != nil {
			t.Fatalf("gocql: insert row %d: %v", c, err)
		}
	}
	stmt := fmt.Sprintf("SELECT c, v FROM %s.pages WHERE k = ?", keyspace)

	// Page by page, by hand, as a web application does with the paging state.
	const pageSize = 40
	var (
		all    []int
		states [][]byte
		state  []byte
	)
	for page := 0; ; page++ {
		if page > pagedRows {
			t.Fatalf("paging did not end after %d pages", page)
		}
		states = append(states, state)
		iter := session.Query(stmt, 1).PageSize(pageSize).PageState(state).Iter()
		rows := 0
		var c int
		var v string
		scanner := iter.Scanner()
		for scanner.Next() {
			if err := scanner.Scan(&c, &v); err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			if v != fmt.Sprintf("v%03d", c) {
				t.Errorf("page %d: row c=%d has v %q", page, c, v)
			}
			all = append(all, c)
			rows++
		}
		state = iter.PageState()
		if err := scanner.Err(); err != nil {
			t.Fatalf("gocql: page %d: %v", page, err)
		}
		if rows > pageSize {
			t.Errorf("page %d has %d rows, more than the page size %d", page, rows, pageSize)
		}
		if len(state) == 0 {
			break
		}
	}
	want := make([]int, pagedRows)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(all, want) {
		t.Errorf("paging through %d rows %d at a time read clustering keys %v, want 0..%d in order", pagedRows, pageSize, all, pagedRows-1)
	}
	if len(states) < pagedRows/pageSize {
		t.Errorf("%d rows came in %d pages of at most %d, want at least %d", pagedRows, len(states), pageSize, pagedRows/pageSize)
	}

	// A paging state is stable: the same state gives the same page again.
	if len(states) > 3 {
		read := func() []int {
			var cs []int
			iter := session.Query(stmt, 1).PageSize(pageSize).PageState(states[3]).Iter()
			var c int
			var v string
			for iter.Scan(&c, &v) {
				cs = append(cs, c)
			}
			if err := iter.Close(); err != nil {
				t.Fatalf("gocql: page 3 again: %v", err)
			}
			return cs
		}
		if first, again := read(), read(); len(first) == 0 || !slices.Equal(first, again) {
			t.Errorf("the 4th page's paging state read %v, then %v", first, again)
		}
	}

	// Automatic paging with a clustering restriction, as most applications iterate.
	iter := session.Query(fmt.Sprintf("SELECT c FROM %s.pages WHERE k = ? AND c >= ?", keyspace), 1, 100).PageSize(33).Iter()
	var got []int
	var c int
	for iter.Scan(&c) {
		got = append(got, c)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("gocql: automatic paging: %v", err)
	}
	if !slices.Equal(got, want[100:]) {
		t.Errorf("automatic paging of c >= 100, 33 a page, read %v, want 100..%d", got, pagedRows-1)
	}
}

func testGocqlBatches(t *testing.T, session *gocql.Session, rec *recorder) {
	insert := fmt.Sprintf("INSERT INTO %s.batches (k, c, v) VALUES (?, ?, ?)", keyspace)
	logged := session.Batch(gocql.LoggedBatch)
	logged.Query(insert, "a", 1, "one")
	logged.Query(insert, "a", 2, "two")
	logged.Query(fmt.Sprintf("UPDATE %s.batches SET v = ? WHERE k = ? AND c = ?", keyspace), "three", "b", 3)
	logged.Query(fmt.Sprintf("INSERT INTO %s.batches (k, c, v) VALUES ('b', 4, 'literal')", keyspace)) // no values: a query-string child
	rec.take("")
	if err := session.ExecuteBatch(logged); err != nil {
		t.Fatalf("gocql: logged batch: %v", err)
	}
	if got := rec.take("batches"); len(got) == 0 {
		t.Errorf("gocql's batch observer saw no batch attempt")
	}
	unlogged := session.Batch(gocql.UnloggedBatch)
	unlogged.Query(fmt.Sprintf("DELETE FROM %s.batches WHERE k = ? AND c = ?", keyspace), "a", 1)
	unlogged.Query(insert, "a", 5, "five")
	if err := session.ExecuteBatch(unlogged); err != nil {
		t.Fatalf("gocql: unlogged batch: %v", err)
	}
	want := map[string][]string{"a": {"2=two", "5=five"}, "b": {"3=three", "4=literal"}}
	for _, k := range []string{"a", "b"} {
		iter := session.Query(fmt.Sprintf("SELECT c, v FROM %s.batches WHERE k = ?", keyspace), k).Iter()
		var got []string
		var c int
		var v string
		for iter.Scan(&c, &v) {
			got = append(got, fmt.Sprintf("%d=%s", c, v))
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("gocql: reading partition %q after the batches: %v", k, err)
		}
		if !slices.Equal(got, want[k]) {
			t.Errorf("partition %q after the batches holds %v, want %v", k, got, want[k])
		}
	}
}

const routedKeys = 60

// testGocqlRouting checks that gocql's token-aware policy sends each statement to a node that
// kvnode places a replica of its partition on: the driver's Murmur3 and replica calculation
// (from the tokens and keyspace it read from the system tables) agree with kvnode's placement.
// With two replicas of three nodes, a driver routing at random would pass for 60 keys with
// probability (2/3)^120.
func testGocqlRouting(t *testing.T, session *gocql.Session, rec *recorder, place placement) {
	insert := fmt.Sprintf("INSERT INTO %s.routed (k, v) VALUES (?, ?)", keyspace)
	read := fmt.Sprintf("SELECT v FROM %s.routed WHERE k = ?", keyspace)
	rec.take("")
	for i := range routedKeys {
		k := fmt.Sprintf("key-%d", i)
		if err := session.Query(insert, k, i).Exec(); err != nil {
			t.Fatalf("gocql: %s: %v", insert, err)
		}
		var v int
		if err := session.Query(read, k).Scan(&v); err != nil || v != i {
			t.Fatalf("gocql: %s (%q) = %d, %v; want %d", read, k, v, err, i)
		}
	}
	served := map[string]int{}
	checked := 0
	for _, a := range rec.take("routed") {
		if a.attempt != 0 || len(a.values) == 0 {
			continue
		}
		k, ok := a.values[0].(string)
		if !ok {
			continue
		}
		checked++
		served[a.host]++
		replicas := place.replicaHosts([]byte(k), rf)
		if !slices.Contains(replicas, a.host) {
			t.Errorf("gocql sent %q for key %q to %s; kvnode's replicas of the key are %v", a.statement, k, a.host, replicas)
		}
	}
	if checked != 2*routedKeys {
		t.Errorf("gocql's observer saw %d first attempts at the routed statements, want %d", checked, 2*routedKeys)
	}
	if len(served) != len(place.hosts) {
		t.Errorf("statements for %d keys were served by %v; want every node to own some of them", routedKeys, served)
	}
}

// testGocqlRateLimit drives a hot partition into its per-partition rate limit and checks the
// error gocql returns: *gocql.RequestErrRateLimitReached with the op type and who rejected,
// first through a replica (token-aware: the coordinator decides alone), then through the node
// that is not a replica of the partition (its replicas decide).
func testGocqlRateLimit(t *testing.T, c *proc.Cluster, place placement) {
	rec := &recorder{}
	newSession := func(t *testing.T, hosts []string) *gocql.Session {
		cluster := newGocqlCluster(hosts, c.CQLPort)
		cluster.QueryObserver = rec
		if len(hosts) == 1 {
			cluster.HostFilter = gocql.WhiteListHostFilter(hosts...)
		}
		s, err := cluster.CreateSession()
		if err != nil {
			t.Fatalf("gocql: connecting to %v: %v", hosts, err)
		}
		t.Cleanup(s.Close)
		return s
	}
	// hammer runs op until it fails, at most 1000 times, and returns the error.
	hammer := func(t *testing.T, what string, op func(i int) error) *gocql.RequestErrRateLimitReached {
		t.Helper()
		rec.take("")
		for i := range 1000 {
			err := op(i)
			if err == nil {
				rec.take("")
				continue
			}
			if attempts := rec.take("limited"); len(attempts) != 1 {
				t.Errorf("%s #%d failed after %d attempts, want 1: noRateLimitRetry must not retry a rate-limit rejection", what, i, len(attempts))
			}
			// docs:begin gocql-rate-limit
			var rl *gocql.RequestErrRateLimitReached
			if !errors.As(err, &rl) {
				t.Fatalf("%s #%d failed with %T %v, want *gocql.RequestErrRateLimitReached", what, i, err, err)
			}
			// rl.OpType is gocql.OpTypeRead or gocql.OpTypeWrite; rl.RejectedByCoordinator is
			// true when the coordinator, a replica of the partition, rejected on its own.
			// docs:end
			t.Logf("%s #%d: %v %s", what, i, err, rl.String())
			if !strings.Contains(err.Error(), "limited") {
				t.Errorf("the rate-limit error %q does not name the table (limited)", err)
			}
			return rl
		}
		t.Fatalf("1000 of %s at a limit of 2 per second were all admitted", what)
		return nil
	}
	insert := fmt.Sprintf("INSERT INTO %s.limited (k, v) VALUES (?, ?)", keyspace)
	read := fmt.Sprintf("SELECT v FROM %s.limited WHERE k = ?", keyspace)

	t.Run("through a replica", func(t *testing.T) {
		s := newSession(t, c.Hosts())
		rl := hammer(t, "writes to partition hot", func(i int) error { return s.Query(insert, "hot", i).Exec() })
		if rl.OpType != gocql.OpTypeWrite || !rl.RejectedByCoordinator {
			t.Errorf("a write rejected through token-aware routing: %s; want OpType=Write RejectedByCoordinator=true (the coordinator is a replica)", rl.String())
		}
		if err := s.Query(insert, "cold", 1).Exec(); err != nil {
			t.Errorf("a write to another partition of the same table right after: %v, want it admitted", err)
		}
		rl = hammer(t, "reads of partition hot", func(int) error {
			var v int
			return s.Query(read, "hot").Scan(&v)
		})
		if rl.OpType != gocql.OpTypeRead || !rl.RejectedByCoordinator {
			t.Errorf("a read rejected through token-aware routing: %s; want OpType=Read RejectedByCoordinator=true", rl.String())
		}
	})
	t.Run("through a node that is not a replica", func(t *testing.T) {
		const key = "hot-elsewhere"
		other := place.nonReplicaHost([]byte(key), rf)
		s := newSession(t, []string{other})
		rl := hammer(t, "writes to partition "+key+" through "+other, func(i int) error { return s.Query(insert, key, i).Exec() })
		if rl.OpType != gocql.OpTypeWrite || rl.RejectedByCoordinator {
			t.Errorf("the first write rejected through %s, not a replica of %q: %s; want OpType=Write RejectedByCoordinator=false (the replicas rejected)", other, key, rl.String())
		}
	})
}

// testGocqlTTL writes with USING TTL and TIMESTAMP, as literals (unprepared) and bound (prepared),
// reads TTL(v) and WRITETIME(v) both ways, and waits for a one-second TTL to expire.
func testGocqlTTL(t *testing.T, session *gocql.Session) {
	ddl := fmt.Sprintf("CREATE TABLE %s.expiring (k text PRIMARY KEY, v text) WITH default_time_to_live = 500", keyspace)
	if err := session.Query(ddl).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", ddl, err)
	}
	lit := fmt.Sprintf("INSERT INTO %s.expiring (k, v) VALUES ('simple', 'x') USING TTL 1000 AND TIMESTAMP 1234", keyspace)
	if err := session.Query(lit).Exec(); err != nil { // no values: sent unprepared
		t.Fatalf("gocql: %s: %v", lit, err)
	}
	insert := fmt.Sprintf("INSERT INTO %s.expiring (k, v) VALUES (?, ?) USING TIMESTAMP ? AND TTL ?", keyspace)
	for _, args := range [][]any{{"prepared", "y", int64(5678), 2000}, {"none", "z", int64(9), 0}} {
		if err := session.Query(insert, args...).Exec(); err != nil {
			t.Fatalf("gocql: %s %v: %v", insert, args, err)
		}
	}
	update := fmt.Sprintf("UPDATE %s.expiring SET v = 'w' WHERE k = 'default'", keyspace)
	if err := session.Query(update).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", update, err)
	}
	sel := fmt.Sprintf("SELECT v, TTL(v), WRITETIME(v) FROM %s.expiring WHERE k = ", keyspace)
	for _, tt := range []struct {
		k, v    string
		ttl, wt int64 // 0: null TTL; any write time
	}{{"simple", "x", 1000, 1234}, {"prepared", "y", 2000, 5678}, {"none", "z", 0, 9}, {"default", "w", 500, 0}} {
		for _, q := range []*gocql.Query{session.Query(sel+"?", tt.k), session.Query(sel + "'" + tt.k + "'")} {
			var v string
			var ttl *int
			var wt int64
			if err := q.Scan(&v, &ttl, &wt); err != nil {
				t.Fatalf("gocql: %s (%s): %v", q.Statement(), tt.k, err)
			}
			switch {
			case v != tt.v:
				t.Errorf("%s (%s): v = %q, want %q", q.Statement(), tt.k, v, tt.v)
			case tt.ttl == 0 && ttl != nil:
				t.Errorf("%s (%s): TTL(v) = %d, want null", q.Statement(), tt.k, *ttl)
			case tt.ttl != 0 && (ttl == nil || int64(*ttl) > tt.ttl || int64(*ttl) <= tt.ttl-30):
				t.Errorf("%s (%s): TTL(v) = %v, want about %d", q.Statement(), tt.k, ttl, tt.ttl)
			case tt.wt != 0 && wt != tt.wt:
				t.Errorf("%s (%s): WRITETIME(v) = %d, want %d", q.Statement(), tt.k, wt, tt.wt)
			}
		}
	}
	if err := session.Query(insert, "short", "gone", int64(10), 1).Exec(); err != nil {
		t.Fatalf("gocql: %s: %v", insert, err)
	}
	poll.Must(t, discoverTimeout, "the row written USING TTL 1 expires", func() error {
		iter := session.Query(sel+"?", "short").Iter()
		n := iter.NumRows()
		if err := iter.Close(); err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	})
}
