package replica

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kvnode/kvnode/internode"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// A *schema.Schema serves as a fixed SchemaSource.
var _ SchemaSource = (*schema.Schema)(nil)

// tables is a SchemaSource for tests.
type tables map[schema.TableID]*schema.Table

func (m tables) TableByID(id schema.TableID) (*schema.Table, bool) {
	t, ok := m[id]
	return t, ok
}

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// testService returns a service over an in-memory store whose table
// testTableID (ks.t) has the given limits, and its clock, set 250 ms into a
// second.
func testService(t testing.TB, reads, writes uint32) (*Service, *fakeClock) {
	t.Helper()
	s, _ := openMem(t)
	tbl := testTable(t)
	tbl.RateLimit = schema.RateLimit{MaxReadsPerSecond: reads, MaxWritesPerSecond: writes}
	limits, err := partitionlimit.New(partitionlimit.Options{Capacity: 1024})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 250_000_000)}
	svc, err := NewService(Config{Store: s, Schema: tables{testTableID: tbl}, Limits: limits, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	return svc, clock
}

func limiter(mode replicapb.Limiter_Mode, draw float64) *replicapb.Limiter {
	return &replicapb.Limiter{Mode: mode, Draw: draw}
}

func mutateReq(lim *replicapb.Limiter, c1 int32) *replicapb.MutateRequest {
	return &replicapb.MutateRequest{Limiter: lim, Mutation: mut("p", row(c1, "a", "marker@1", "v=1@1"))}
}

// countRows reads partition p exempt from the limiter and returns its rows.
func countRows(t *testing.T, svc *Service) int {
	t.Helper()
	resp, err := svc.Read(context.Background(), readReq("p"))
	if err != nil || resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("exempt read: %v, %v", resp, err)
	}
	return len(resp.Rows)
}

// TestServiceRejectionCarriesTheResidual: a partition that turns hot again after a whole quiet
// second starts a new onset with its leftover count as the residual, and a rejection in that
// onset carries both the new birth and the residual, for a coordinator to learn them together.
func TestServiceRejectionCarriesTheResidual(t *testing.T) {
	svc, clock := testService(t, 0, 5)
	ctx := context.Background()
	write := func(draw float64) *replicapb.MutateResponse {
		t.Helper()
		resp, err := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, draw), 1))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for range 40 {
		write(0) // a draw of 0 is always admitted; the counter reaches 40
	}
	clock.t = clock.t.Add(2 * time.Second) // two halvings, a whole second without a write: 10 left
	rebirth := clock.t
	for i := range 20 {
		clock.t = clock.t.Add(time.Millisecond)
		resp := write(0.99)
		if resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
			continue
		}
		rl := resp.RateLimited
		// The birth is kept to the millisecond, at most one early (partitionlimit's slot).
		if want := rebirth.Add(time.Millisecond).UnixMilli(); rl.GetOnsetResidual() != 10 || want-rl.GetBornUnixMillis() > 1 || want < rl.GetBornUnixMillis() {
			t.Fatalf("write %d after the pause was rejected with onset_residual=%d born_unix_millis=%d, want 10 and %d (the first write after the pause)",
				i+1, rl.GetOnsetResidual(), rl.GetBornUnixMillis(), want)
		}
		return
	}
	t.Fatal("20 writes in 20 ms with a draw of 0.99, after the partition turned hot again, were never rejected")
}

func TestServiceEnforcesWriteLimit(t *testing.T) {
	svc, clock := testService(t, 0, 5)
	ctx := context.Background()
	// At most 2L = 10 writes in a second are always admitted.
	for i := range 10 {
		resp, err := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), int32(i)))
		if err != nil || resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("write %d of 10 at limit 5 returned %v, %v; want STATUS_OK", i+1, resp, err)
		}
	}
	// The 11th with a high draw is rejected: 0.99·11·ln2 ≥ 5.
	resp, err := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), 100))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
		t.Fatalf("write 11 at limit 5 with draw 0.99 returned %v, want STATUS_RATE_LIMITED", resp)
	}
	rl := resp.RateLimited
	if rl.GetCount() != 11 || rl.GetLimit() != 5 || rl.GetRetryAfterMillis() != 750 {
		t.Errorf("rejection carries count=%d limit=%d retry_after_millis=%d, want 11, 5 and 750 (to the next second boundary)",
			rl.GetCount(), rl.GetLimit(), rl.GetRetryAfterMillis())
	}
	// The counter is young: the rejection carries its birth, for a coordinator to learn.
	if got, want := rl.GetBornUnixMillis(), clock.t.UnixMilli(); got != want {
		t.Errorf("rejection carries born_unix_millis=%d, want %d (the counter's first write)", got, want)
	}
	if n := countRows(t, svc); n != 10 {
		t.Errorf("after 10 admitted writes and a rejected one the partition has %d rows, want 10 (a rejection writes nothing)", n)
	}
	// The same counter with a low draw admits: every replica decides alike
	// given the same draw. (The counter is in its onset, born this very
	// millisecond, so the rule judges it as 64·12: partitionlimit's onset bound.)
	resp, _ = svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.001), 101))
	if resp.Status != replicapb.Status_STATUS_OK {
		t.Errorf("write 12 with draw 0.001 returned %v, want STATUS_OK (0.001·64·12·ln2 < 5)", resp)
	}
	// Two seconds later the counter (12) has halved twice to 3.
	clock.t = clock.t.Add(2 * time.Second)
	resp, _ = svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), 102))
	if resp.Status != replicapb.Status_STATUS_OK {
		t.Errorf("a write two seconds later returned %v, want STATUS_OK after the counter decayed", resp)
	}
}

func TestServiceExemptTrafficIsNeitherCountedNorRejected(t *testing.T) {
	const both, readsOnly = true, false
	tests := []struct {
		name          string
		reads, writes uint32
		lim           *replicapb.Limiter
		writesToo     bool // whether writes are exempt as well as reads
	}{
		{"mode NONE on a limited table", 1, 1, limiter(replicapb.Limiter_NONE, 0.99), both},
		{"no limiter field on a limited table", 1, 1, nil, both},
		{"ACCOUNT_AND_ENFORCE on a table without limits", 0, 0, limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), both},
		{"ACCOUNT_ONLY on a table without limits", 0, 0, limiter(replicapb.Limiter_ACCOUNT_ONLY, 0.99), both},
		{"reads with ACCOUNT_AND_ENFORCE on a table limiting only writes", 0, 1, limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), readsOnly},
	}
	for _, tt := range tests {
		svc, clock := testService(t, tt.reads, tt.writes)
		ctx := context.Background()
		for i := range 50 {
			if tt.writesToo {
				resp, err := svc.Mutate(ctx, mutateReq(tt.lim, int32(i)))
				if err != nil || resp.Status != replicapb.Status_STATUS_OK {
					t.Fatalf("%s: write %d returned %v, %v; want STATUS_OK", tt.name, i, resp, err)
				}
			}
			req := readReq("p")
			req.Limiter = tt.lim
			resp, err := svc.Read(ctx, req)
			if err != nil || resp.Status != replicapb.Status_STATUS_OK {
				t.Fatalf("%s: read %d returned %v, %v; want STATUS_OK", tt.name, i, resp, err)
			}
		}
		if st := svc.Limits().Stats(clock.t); st.Lookups != 0 || st.Entries != 0 {
			t.Errorf("%s: the counter table saw %d lookups and holds %d entries, want none", tt.name, st.Lookups, st.Entries)
		}
	}
}

func TestServiceAccountOnlyCountsButNeverRejects(t *testing.T) {
	svc, clock := testService(t, 1, 1)
	ctx := context.Background()
	for i := range 20 {
		resp, _ := svc.Mutate(ctx, mutateReq(limiter(replicapb.Limiter_ACCOUNT_ONLY, 0.99), int32(i)))
		if resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("account-only write %d at limit 1 returned %v, want STATUS_OK", i, resp)
		}
	}
	d, err := svc.Check(testTableID, tokenOf("p"), schema.OpWrite, 0.99, clock.t)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != 21 || d.Admitted {
		t.Errorf("Check after 20 account-only writes = %+v, want count 21 and a rejection", d)
	}
	// Reads have their own counter.
	d, _ = svc.Check(testTableID, tokenOf("p"), schema.OpRead, 0.99, clock.t)
	if d.Count != 1 || !d.Admitted {
		t.Errorf("Check of the first read = %+v, want count 1 and admitted", d)
	}
}

func TestServiceCheckThenLocalApplyCountsOnce(t *testing.T) {
	// The coordinator path when it is a replica: Check, then apply locally
	// with mode NONE.
	svc, clock := testService(t, 0, 100)
	ctx := context.Background()
	for i := range 5 {
		d, err := svc.Check(testTableID, tokenOf("p"), schema.OpWrite, 0.5, clock.t)
		if err != nil || !d.Admitted || d.Count != uint32(i+1) || d.Limit != 100 {
			t.Fatalf("Check %d = %+v, %v; want admitted with count %d and limit 100", i, d, err, i+1)
		}
		if resp, _ := svc.Mutate(ctx, mutateReq(nil, int32(i))); resp.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("local apply %d returned %v", i, resp)
		}
	}
	if c := svc.Count(testTableID, tokenOf("p"), schema.OpWrite, clock.t); c != 5 {
		t.Errorf("after 5 checked and applied writes the counter is %d, want 5", c)
	}
	if n := countRows(t, svc); n != 5 {
		t.Errorf("the partition has %d rows, want 5", n)
	}
	// Check on a table without a limit admits without counting.
	svc2, _ := testService(t, 0, 0)
	if d, _ := svc2.Check(testTableID, tokenOf("p"), schema.OpWrite, 0.99, clock.t); !d.Admitted || d.Limit != 0 {
		t.Errorf("Check on an unlimited table = %+v, want admitted with limit 0", d)
	}
	if st := svc2.Limits().Stats(clock.t); st.Lookups != 0 {
		t.Errorf("Check on an unlimited table touched the counters (%d lookups)", st.Lookups)
	}
}

func TestServiceEnforcesReadLimit(t *testing.T) {
	svc, _ := testService(t, 2, 0)
	ctx := context.Background()
	if resp, _ := svc.Mutate(ctx, mutateReq(nil, 1)); resp.Status != replicapb.Status_STATUS_OK {
		t.Fatal(resp)
	}
	var statuses []replicapb.Status
	for range 6 {
		req := readReq("p")
		req.Limiter = limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.9)
		resp, err := svc.Read(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, resp.Status)
		if resp.Status == replicapb.Status_STATUS_RATE_LIMITED && (len(resp.Rows) != 0 || resp.RateLimited.GetLimit() != 2) {
			t.Errorf("a rejected read returned rows %v and limit %d, want no rows and limit 2", resp.Rows, resp.RateLimited.GetLimit())
		}
	}
	ok, rl := replicapb.Status_STATUS_OK, replicapb.Status_STATUS_RATE_LIMITED
	want := []replicapb.Status{ok, ok, ok, ok, rl, rl} // 0.9·5·ln2 = 3.1 ≥ 2
	for i := range want {
		if statuses[i] != want[i] {
			t.Errorf("reads at limit 2 with draw 0.9 returned %v, want %v", statuses, want)
			break
		}
	}
}

func TestServiceBadRequests(t *testing.T) {
	svc, clock := testService(t, 1, 1)
	ctx := context.Background()
	enforce := limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.5)
	tests := []struct {
		name   string
		req    *replicapb.MutateRequest
		code   replicapb.Error_Code
		errHas string
	}{
		{"no mutation", &replicapb.MutateRequest{Limiter: enforce}, replicapb.Error_BAD_REQUEST, "no mutation"},
		{"an unknown table id", &replicapb.MutateRequest{Limiter: enforce, Mutation: &replicapb.Mutation{TableId: 12345}},
			replicapb.Error_UNKNOWN_TABLE, "table id 12345"},
		{"a draw of 1", &replicapb.MutateRequest{Limiter: limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 1), Mutation: mut("p", row(1, "a", "v=1@1"))},
			replicapb.Error_BAD_REQUEST, "draw 1 is outside [0, 1)"},
		{"an unknown limiter mode", &replicapb.MutateRequest{Limiter: limiter(7, 0.5), Mutation: mut("p", row(1, "a", "v=1@1"))},
			replicapb.Error_BAD_REQUEST, "unknown limiter mode 7"},
		{"a malformed clustering key", &replicapb.MutateRequest{Mutation: mut("p", &replicapb.Row{Clustering: [][]byte{{1}, []byte("a")}, Marker: ts(1)})},
			replicapb.Error_BAD_REQUEST, `clustering column "c1": invalid int value`},
		{"a wrong value type", &replicapb.MutateRequest{Mutation: mut("p", row(1, "a", "v=1@1", "w=x@1"), &replicapb.Row{
			Clustering: [][]byte{schema.EncodeInt(2), []byte("b")}, Cells: []*replicapb.Cell{{Column: "v", Value: []byte("x"), Timestamp: 1}}})},
			replicapb.Error_BAD_REQUEST, `row 1 column "v": invalid int value`},
		{"an unknown column", &replicapb.MutateRequest{Mutation: mut("p", row(1, "a", "zz=x@1"))},
			replicapb.Error_BAD_REQUEST, `unknown column "zz"`},
		{"a wrong number of key components", &replicapb.MutateRequest{Mutation: &replicapb.Mutation{TableId: testTableID, Token: tokenOf("p"),
			PartitionKey: [][]byte{[]byte("p"), []byte("q")}, Rows: []*replicapb.Row{row(1, "a", "v=1@1")}}},
			replicapb.Error_BAD_REQUEST, "partition key has 2 components, want 1"},
	}
	for _, tt := range tests {
		resp, err := svc.Mutate(ctx, tt.req)
		if err != nil {
			t.Fatalf("%s: Mutate returned error %v, want an error response", tt.name, err)
		}
		if resp.Status != replicapb.Status_STATUS_ERROR || resp.Error.GetCode() != tt.code || !strings.Contains(resp.Error.GetMessage(), tt.errHas) {
			t.Errorf("%s: Mutate returned %v, want STATUS_ERROR %v containing %q", tt.name, resp, tt.code, tt.errHas)
		}
	}
	if n := countRows(t, svc); n != 0 {
		t.Errorf("after only bad requests the partition has %d rows, want 0", n)
	}

	rresp, _ := svc.Read(ctx, &replicapb.ReadRequest{TableId: 999})
	if rresp.Status != replicapb.Status_STATUS_ERROR || rresp.Error.GetCode() != replicapb.Error_UNKNOWN_TABLE {
		t.Errorf("a read of an unknown table returned %v, want UNKNOWN_TABLE", rresp)
	}
	req := readReq("p")
	req.Columns = []string{"nope"}
	rresp, _ = svc.Read(ctx, req)
	if rresp.Status != replicapb.Status_STATUS_ERROR || rresp.Error.GetCode() != replicapb.Error_BAD_REQUEST || !strings.Contains(rresp.Error.GetMessage(), `"nope"`) {
		t.Errorf("a read of an unknown column returned %v, want BAD_REQUEST naming it", rresp)
	}

	if _, err := svc.Check(999, 0, schema.OpWrite, 0.5, clock.t); !errors.Is(err, ErrUnknownTable) {
		t.Errorf("Check of an unknown table returned %v, want ErrUnknownTable", err)
	}
	if _, err := svc.Check(testTableID, 0, schema.Op(0), 0.5, clock.t); !errors.Is(err, ErrBadRequest) {
		t.Errorf("Check of an unspecified op returned %v, want ErrBadRequest", err)
	}
}

func TestServiceAccountDelta(t *testing.T) {
	svc, clock := testService(t, 10, 0)
	ctx := context.Background()
	token := tokenOf("p")
	resp, err := svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: 30},
		{TableId: testTableID, Token: token, Op: replicapb.Op_OP_WRITE, Count: 30}, // no write limit: skipped
		{TableId: 999, Token: token, Op: replicapb.Op_OP_READ, Count: 30},          // unknown table: skipped
	}})
	if err != nil || resp.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("AccountDelta returned %v, %v; want STATUS_OK", resp, err)
	}
	if c := svc.Count(testTableID, token, schema.OpRead, clock.t); c != 30 {
		t.Errorf("after a delta of 30 reads the read counter is %d, want 30", c)
	}
	if st := svc.Limits().Stats(clock.t); st.Entries != 1 {
		t.Errorf("the counter table holds %d entries, want 1 (the write delta is for an unlimited op)", st.Entries)
	}
	// A batch with a malformed delta counts nothing.
	resp, _ = svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: 5},
		{TableId: testTableID, Token: token, Count: 5},
	}})
	if resp.Status != replicapb.Status_STATUS_ERROR || resp.Error.GetCode() != replicapb.Error_BAD_REQUEST || !strings.Contains(resp.Error.GetMessage(), "delta 1") {
		t.Errorf("AccountDelta with an unspecified op returned %v, want BAD_REQUEST naming delta 1", resp)
	}
	if c := svc.Count(testTableID, token, schema.OpRead, clock.t); c != 30 {
		t.Errorf("after a rejected batch the read counter is %d, want still 30", c)
	}
	// Issue 18's flood: one delta of 2^32-1 made the partition reject every write for 19 s. A
	// count no coordinator can have offered between two propagations is refused, and the batch
	// counts nothing.
	for _, n := range []uint32{MaxAccountDeltaCount + 1, 1<<32 - 1} {
		resp, _ = svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
			{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: 5},
			{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: n},
		}})
		if resp.Status != replicapb.Status_STATUS_ERROR || resp.Error.GetCode() != replicapb.Error_BAD_REQUEST ||
			!strings.Contains(resp.Error.GetMessage(), "delta 1") || !strings.Contains(resp.Error.GetMessage(), strconv.Itoa(MaxAccountDeltaCount)) {
			t.Errorf("AccountDelta with a count of %d returned %v, want BAD_REQUEST naming delta 1 and the bound %d", n, resp, MaxAccountDeltaCount)
		}
		if c := svc.Count(testTableID, token, schema.OpRead, clock.t); c != 30 {
			t.Errorf("after a delta of %d was refused the read counter is %d, want still 30", n, c)
		}
	}
	// The bound holds per partition over the batch: deltas repeating one partition add up (a
	// batch of 4,096 bounded deltas to one partition set its counter to 2^32-1), while the same
	// counts spread over partitions and ops are each within it.
	half := uint32(MaxAccountDeltaCount/2 + 1)
	resp, _ = svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: half},
		{TableId: testTableID, Token: token + 1, Op: replicapb.Op_OP_READ, Count: half},
		{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: half},
	}})
	if resp.Status != replicapb.Status_STATUS_ERROR || resp.Error.GetCode() != replicapb.Error_BAD_REQUEST || !strings.Contains(resp.Error.GetMessage(), "delta 2") {
		t.Errorf("AccountDelta repeating one partition with two counts of %d returned %v, want BAD_REQUEST naming delta 2", half, resp)
	}
	if c := svc.Count(testTableID, token, schema.OpRead, clock.t); c != 30 {
		t.Errorf("after a repeated partition's batch was refused the read counter is %d, want still 30", c)
	}
	resp, _ = svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: token + 1, Op: replicapb.Op_OP_READ, Count: half},
		{TableId: testTableID, Token: token + 2, Op: replicapb.Op_OP_READ, Count: half},
		{TableId: testTableID, Token: token + 1, Op: replicapb.Op_OP_WRITE, Count: half},
	}})
	if resp.Status != replicapb.Status_STATUS_OK {
		t.Errorf("AccountDelta with counts of %d on distinct partitions and ops returned %v, want STATUS_OK", half, resp)
	}
	resp, _ = svc.AccountDelta(ctx, &replicapb.AccountDeltaRequest{Deltas: []*replicapb.AccountDelta{
		{TableId: testTableID, Token: token, Op: replicapb.Op_OP_READ, Count: MaxAccountDeltaCount},
	}})
	if resp.Status != replicapb.Status_STATUS_OK {
		t.Errorf("AccountDelta with a count of exactly %d returned %v, want STATUS_OK", MaxAccountDeltaCount, resp)
	}
	if err := svc.ApplyAccountDelta(999, token, schema.OpRead, 1, clock.t); !errors.Is(err, ErrUnknownTable) {
		t.Errorf("ApplyAccountDelta on an unknown table returned %v, want ErrUnknownTable", err)
	}
}

func TestServiceRejectionAllocatesOnlyTheResponse(t *testing.T) {
	svc, _ := testService(t, 1, 1)
	ctx := context.Background()
	req := mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), 1)
	for range 10 {
		svc.Mutate(ctx, req)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if resp, _ := svc.Mutate(ctx, req); resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
			t.Fatalf("Mutate returned %v, want STATUS_RATE_LIMITED", resp)
		}
	})
	if allocs > 1 {
		t.Errorf("a rejected Mutate allocates %.0f times, want 1 (the response)", allocs)
	}
	rreq := readReq("p")
	rreq.Limiter = limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99)
	for range 10 {
		svc.Read(ctx, rreq)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if resp, _ := svc.Read(ctx, rreq); resp.Status != replicapb.Status_STATUS_RATE_LIMITED {
			t.Fatalf("Read returned %v, want STATUS_RATE_LIMITED", resp)
		}
	})
	if allocs > 1 {
		t.Errorf("a rejected Read allocates %.0f times, want 1 (the response)", allocs)
	}
}

func TestServiceCanceledContext(t *testing.T) {
	svc, _ := testService(t, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.Mutate(ctx, mutateReq(nil, 1)); err == nil {
		t.Errorf("Mutate with a canceled context succeeded, want an error")
	}
	if n := countRows(t, svc); n != 0 {
		t.Errorf("a canceled Mutate wrote %d rows, want 0", n)
	}
}

// staticAddrs resolves nodes' internode addresses from a map (internode.Addresses).
type staticAddrs map[internode.NodeID]string

func (a staticAddrs) InternodeAddr(id internode.NodeID) (string, bool) {
	addr, ok := a[id]
	return addr, ok
}

// TestServiceOverGRPC serves the service's handlers through an internode.Mux on a real loopback
// listener, as a node does, and calls them with an internode.Sender.
func TestServiceOverGRPC(t *testing.T) {
	svc, _ := testService(t, 0, 1)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := internode.NewMux()
	internode.Handle(mux, svc.Mutate)
	internode.Handle(mux, svc.Read)
	srv := grpc.NewServer()
	mux.Register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	sender, err := internode.NewSender(internode.Options{Addresses: staticAddrs{"r": lis.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sender.Close() })
	ctx := t.Context()

	var last *replicapb.MutateResponse
	for i := range 3 {
		if last, err = internode.Call[*replicapb.MutateResponse](ctx, sender, "r", mutateReq(limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99), int32(i))); err != nil {
			t.Fatalf("Mutate over gRPC: %v", err)
		}
	}
	if last.Status != replicapb.Status_STATUS_RATE_LIMITED || last.RateLimited.GetCount() != 3 {
		t.Errorf("the third write at limit 1 over gRPC returned %v, want STATUS_RATE_LIMITED with count 3", last)
	}
	resp, err := internode.Call[*replicapb.ReadResponse](ctx, sender, "r", readReq("p"))
	if err != nil {
		t.Fatalf("Read over gRPC: %v", err)
	}
	if got, want := format(testTable(t), resp), "(0,a) marker@1 [v=1@1]; (1,a) marker@1 [v=1@1]"; resp.Status != replicapb.Status_STATUS_OK || got != want {
		t.Errorf("Read over gRPC returned %v %q, want STATUS_OK %q", resp.Status, got, want)
	}
}
