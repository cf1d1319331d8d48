package shell_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kvcell "github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/internal/poll"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// The harness's transport carries counter updates to their leader too (shell.CounterTransport),
// with the faults of writes.
func (t *transport) CounterUpdate(ctx context.Context, to coordinator.NodeID, req *replicapb.CounterUpdateRequest) (*replicapb.CounterUpdateResponse, error) {
	svc, err := t.begin(ctx, to, true)
	if err != nil {
		return nil, err
	}
	resp, err := svc.CounterUpdate(ctx, overTheWire(req))
	return overTheWire(resp), err
}

var counterSchema = []string{
	"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE TABLE ks.ctr (k text, r int, n counter, m counter, PRIMARY KEY (k, r))",
}

// TestCounterIncrementsSumThroughEveryNode: concurrent increments through every coordinator
// (each its own leader) sum exactly, at every consistency level and on every replica.
func TestCounterIncrementsSumThroughEveryNode(t *testing.T) {
	c := newCluster(t, options{})
	c.must(counterSchema...)
	var wg sync.WaitGroup
	var want atomic.Int64
	for _, coord := range nodes {
		for g := range 3 {
			wg.Go(func() {
				for i := range 10 {
					n := int64(g*10 + i - 7) // some decrements too
					op := "+"
					if n < 0 {
						op = "-"
					}
					stmt := fmt.Sprintf("UPDATE ctr SET n = n %s %d WHERE k = 'a' AND r = 1", op, max(n, -n))
					if _, err := c.exec(coord, quorum, stmt); err != nil {
						t.Errorf("%s through %s: %v", stmt, coord, err)
						return
					}
					want.Add(n)
				}
			})
		}
	}
	wg.Wait()
	c.settle()
	for _, cl := range []coordinator.Consistency{one, quorum, all} {
		for _, coord := range nodes {
			got, err := c.query(coord, cl, "SELECT n, m FROM ctr WHERE k = 'a' AND r = 1")
			if w := []string{fmt.Sprintf("%d null", want.Load())}; err != nil || !slices.Equal(got, w) {
				t.Errorf("read at %v through %s = %q, %v; want %q", cl, coord, got, err, w)
			}
		}
	}
	for _, id := range nodes {
		if got, w := c.localRows(id, "SELECT n FROM ctr WHERE k = 'a' AND r = 1"), fmt.Sprint(want.Load()); !slices.Equal(got, []string{w}) {
			t.Errorf("replica %s alone holds n = %q, want %s (every leader's shard)", id, got, w)
		}
	}
}

func TestCounterStatements(t *testing.T) {
	c := newCluster(t, options{})
	c.must(counterSchema...)
	c.must(
		"UPDATE ctr SET n = n + 5, m = m - 2 WHERE k = 'b' AND r = 1",
		"BEGIN COUNTER BATCH UPDATE ctr SET n = n + 1 WHERE k = 'b' AND r = 1; UPDATE ctr SET n = n + 1 WHERE k = 'b' AND r = 1; UPDATE ctr SET m = m + 10 WHERE k = 'b' AND r = 2; UPDATE ctr SET n = n + 3 WHERE k = 'c' AND r = 1; APPLY BATCH",
		"BEGIN UNLOGGED BATCH UPDATE ctr SET n = n + 100 WHERE k = 'b' AND r = 3; APPLY BATCH",
	)
	got, err := c.query("n2", all, "SELECT r, n, m FROM ctr WHERE k = 'b'")
	if want := []string{"1 7 -2", "2 null 10", "3 100 null"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("after updates and batches: %q, %v; want %q", got, err, want)
	}
	c.must("DELETE n FROM ctr WHERE k = 'b' AND r = 1")
	c.must("UPDATE ctr SET n = n + 1 WHERE k = 'b' AND r = 1") // a deleted counter stays deleted
	got, err = c.query("n3", quorum, "SELECT r, n, m FROM ctr WHERE k = 'b' AND r = 1")
	if want := []string{"1 null -2"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("after DELETE n: %q, %v; want %q", got, err, want)
	}
	for stmt, want := range map[string]string{
		"INSERT INTO ctr (k, r, n) VALUES ('x', 1, 1)":                              "INSERT statements are not allowed on counter tables, use UPDATE instead",
		"UPDATE ctr USING TTL 5 SET n = n + 1 WHERE k = 'x' AND r = 1":              "Cannot provide custom TTL for counter updates",
		"UPDATE ctr USING TIMESTAMP 5 SET n = n + 1 WHERE k = 'x' AND r = 1":        "Cannot provide custom timestamp for counter updates",
		"BEGIN BATCH UPDATE ctr SET n = n + 1 WHERE k = 'x' AND r = 1; APPLY BATCH": "Cannot include a counter statement in a logged batch",
		"UPDATE ctr SET n = 4 WHERE k = 'x' AND r = 1":                              "Cannot set the value of counter column n",
	} {
		if _, err := c.exec("n1", quorum, stmt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", stmt, err, want)
		}
	}
	// A protocol BATCH of type COUNTER.
	_, err = c.executors["n1"].ExecuteBatch(context.Background(), coordinator.BatchStatement{
		Type: coordinator.BatchCounter, Keyspace: "ks", Consistency: quorum,
		Children: []coordinator.BatchChild{{Text: "UPDATE ctr SET n = n + 2 WHERE k = 'd' AND r = 1"}, {Text: "UPDATE ctr SET n = n + 2 WHERE k = 'd' AND r = 1"}},
	})
	if err != nil {
		t.Fatalf("protocol COUNTER batch: %v", err)
	}
	c.settle()
	if got, err := c.query("n1", all, "SELECT n FROM ctr WHERE k = 'd' AND r = 1"); err != nil || !slices.Equal(got, []string{"4"}) {
		t.Errorf("after a protocol COUNTER batch: %q, %v; want 4", got, err)
	}
}

// TestCounterLeaderDown: a replica down at the update gets the applied shards by read repair
// once it is back (hints are off in the harness by default).
func TestCounterLeaderDown(t *testing.T) {
	c := newCluster(t, options{})
	c.must(counterSchema...)
	c.transport.setFault(failAll, "n3")
	for range 3 {
		if _, err := c.exec("n1", quorum, "UPDATE ctr SET n = n + 2 WHERE k = 'e' AND r = 1"); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	c.transport.clearFaults()
	if got := c.localRows("n3", "SELECT n FROM ctr WHERE k = 'e' AND r = 1"); len(got) != 0 {
		t.Fatalf("n3 was down but holds %q", got)
	}
	if got, err := c.query("n2", all, "SELECT n FROM ctr WHERE k = 'e' AND r = 1"); err != nil || !slices.Equal(got, []string{"6"}) {
		t.Errorf("read at ALL: %q, %v; want 6", got, err)
	}
	c.settle()
	if got := c.localRows("n3", "SELECT n FROM ctr WHERE k = 'e' AND r = 1"); !slices.Equal(got, []string{"6"}) {
		t.Errorf("after read repair n3 holds %q, want 6", got)
	}
}

// TestCounterRateLimited: a hot counter partition's increments are rejected with the typed
// rate-limit error, through a coordinator that is a replica and one that is not, and an
// increment that was applied never comes back rate limited: the counter equals the number of
// acknowledged increments on every replica.
func TestCounterRateLimited(t *testing.T) {
	c := newCluster(t, options{})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.ctr (k text PRIMARY KEY, n counter) WITH per_partition_rate_limit = {'max_writes_per_second': 5}",
	)
	acked, byCoord, byReplicas := 0, 0, 0
	for i := range 60 {
		coord := nodes[i%3]
		_, err := c.exec(coord, quorum, "UPDATE ctr SET n = n + 1 WHERE k = 'hot'")
		var rl *coordinator.RateLimitError
		switch {
		case err == nil:
			acked++
		case errors.As(err, &rl):
			if rl.RejectedBy == coordinator.RejectedByCoordinator {
				byCoord++
			} else {
				byReplicas++
			}
		default:
			t.Fatalf("increment %d through %s: %v", i, coord, err)
		}
		c.settle()
	}
	if acked == 0 || byCoord == 0 || byReplicas == 0 {
		t.Fatalf("60 increments in one second at limit 5: %d acknowledged, %d rejected by a coordinator, %d by a leader; want all three", acked, byCoord, byReplicas)
	}
	got, err := c.query("n1", all, "SELECT n FROM ctr WHERE k = 'hot'")
	if want := []string{fmt.Sprint(acked)}; err != nil || !slices.Equal(got, want) {
		t.Errorf("counter after %d acknowledged increments = %q, %v; want %q: an applied increment came back rate limited, or a rejected one was applied", acked, got, err, want)
	}
}

// TestCounterFollowersNeverReject: through a coordinator that is not a replica, the leader
// decides an increment; a follower whose counter is hotter than the leader's (it accounted
// other traffic) only accounts the shards it is sent, so no applied increment is reported rate
// limited. Each replica in turn is made the hot one.
func TestCounterFollowersNeverReject(t *testing.T) {
	c := newCluster(t, options{})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.ctr (k text PRIMARY KEY, n counter) WITH per_partition_rate_limit = {'max_writes_per_second': 3}",
	)
	tbl, _ := c.schema.Schema().Table("ks", "ctr")
	pk := [][]byte{[]byte("hot")}
	token := partitioner.Token(partitioner.AppendKey(nil, pk))
	var replicas []coordinator.NodeID
	outsider := coordinator.NodeID("")
	c.must("UPDATE ctr SET n = n + 0 WHERE k = 'hot'")
	for _, id := range nodes {
		if len(c.localRows(id, "SELECT n FROM ctr WHERE k = 'hot'")) > 0 {
			replicas = append(replicas, id)
		} else {
			outsider = id
		}
	}
	if len(replicas) != 2 || outsider == "" {
		t.Fatalf("replicas of 'hot' %v, outsider %q; want two and one", replicas, outsider)
	}
	for round, hot := range replicas {
		c.clock.Advance(time.Minute) // every counter decays to nothing
		// Heat one replica: it accounts 30 writes of the partition (harmless empty shards).
		for range 30 {
			m := &replicapb.Mutation{TableId: uint64(tbl.ID), PartitionKey: pk, Token: token, Rows: []*replicapb.Row{{Cells: []*replicapb.Cell{
				{Column: "n", Counter: true, Timestamp: 1, Value: kvcell.AppendShards(nil, []kvcell.Shard{{ID: "heat", Clock: 1}})},
			}}}}
			lim := &replicapb.Limiter{Mode: replicapb.Limiter_ACCOUNT_ONLY, StampUnixNanos: c.clock.Now().UnixNano()}
			if r, err := c.services[hot].Mutate(context.Background(), &replicapb.MutateRequest{Limiter: lim, Mutation: m}); err != nil || r.Status != replicapb.Status_STATUS_OK {
				t.Fatalf("heating %s: %v, %v", hot, r, err)
			}
		}
		before, err := c.query(outsider, all, "SELECT n FROM ctr WHERE k = 'hot'")
		if err != nil {
			t.Fatal(err)
		}
		acked, limited := 0, 0
		for range 20 {
			_, err := c.exec(outsider, all, "UPDATE ctr SET n = n + 1 WHERE k = 'hot'")
			var rl *coordinator.RateLimitError
			switch {
			case err == nil:
				acked++
			case errors.As(err, &rl):
				limited++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
			c.settle()
		}
		after, err := c.query(outsider, all, "SELECT n FROM ctr WHERE k = 'hot'")
		if err != nil {
			t.Fatal(err)
		}
		var b, a int
		fmt.Sscan(before[0], &b)
		fmt.Sscan(after[0], &a)
		if a-b != acked {
			t.Errorf("round %d (%s hot): %d increments acknowledged, %d rate limited, but the counter grew by %d", round, hot, acked, limited, a-b)
		}
		if limited == 0 {
			t.Errorf("round %d (%s hot): 20 increments in a second at limit 3 and none rate limited", round, hot)
		}
	}
}

// TestCounterLeaderRejectionsCountOnFollowers: through a coordinator that is not a replica, the
// leader decides every increment; the ones it rejects never reach the follower, which must
// still count them (by propagation), or it would see a fraction of the partition's rate and
// admit more of the increments it decides itself as a coordinator (1.12 × the limit on real
// processes). Every replica ends up counting every increment sent.
func TestCounterLeaderRejectionsCountOnFollowers(t *testing.T) {
	c := newCluster(t, options{draw: 0.99, propagate: true})
	c.must(
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE ks.ctr (k text PRIMARY KEY, n counter) WITH per_partition_rate_limit = {'max_writes_per_second': 3}",
	)
	tbl, _ := c.schema.Schema().Table("ks", "ctr")
	token := partitioner.Token([]byte("hot"))
	replicas, outsider := nodes[:2], nodes[2] // the harness's ring puts every token on n1, n2 at RF 2
	const sent = 20
	acked, limited := 0, 0
	for range sent { // the clock stands still: no counter decays
		_, err := c.exec(outsider, quorum, "UPDATE ctr SET n = n + 1 WHERE k = 'hot'")
		var rl *coordinator.RateLimitError
		switch {
		case err == nil:
			acked++
		case errors.As(err, &rl):
			limited++
		default:
			t.Fatal(err)
		}
		c.settle()
	}
	if acked == 0 || limited == 0 {
		t.Fatalf("%d increments at limit 3: %d acknowledged, %d rate limited; want both", sent, acked, limited)
	}
	for _, id := range replicas {
		poll.Must(t, 30*time.Second, fmt.Sprintf("%s to count all %d increments (%d applied, %d rejected by the leader)", id, sent, acked, limited), func() error {
			if got := c.services[id].Count(tbl.ID, token, schema.OpWrite, c.clock.Now()); got != sent {
				return fmt.Errorf("%s counts %d", id, got)
			}
			return nil
		})
	}
}

// TestCounterTimeout: an increment whose followers do not answer in time times out as a
// counter update (the protocol's COUNTER write type); its leader applied it.
func TestCounterTimeout(t *testing.T) {
	c := newCluster(t, options{writeTimeout: 50 * time.Millisecond})
	c.must(counterSchema...)
	c.transport.setFault(hangWrites, "n2", "n3")
	_, err := c.exec("n1", all, "UPDATE ctr SET n = n + 1 WHERE k = 't' AND r = 1")
	var to *coordinator.TimeoutError
	if !errors.As(err, &to) || !to.Counter || to.CAS {
		t.Fatalf("an increment whose followers hang: %v, want a counter update's timeout", err)
	}
	c.transport.clearFaults()
	c.settle()
	if got := c.localRows("n1", "SELECT n FROM ctr WHERE k = 't' AND r = 1"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("the leader holds %q after the timeout, want 1 (timed out is not undone)", got)
	}
}
