package replica

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
)

func ballot(n int64, node string) *replicapb.SchemaBallot {
	return &replicapb.SchemaBallot{Counter: n, Node: node}
}

func prepare(t *testing.T, svc *Service, b *replicapb.SchemaBallot, lim *replicapb.Limiter) *replicapb.PaxosPrepareResponse {
	t.Helper()
	rd := readReq("p")
	rd.Limiter = lim
	resp, err := svc.PaxosPrepare(context.Background(), &replicapb.PaxosPrepareRequest{Ballot: b, Read: rd})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestPaxosAcceptor: promises only rising ballots, returns the partition's rows and the proposal
// in progress, accepts only at or above its promise, and a commit applies the mutation and ends
// the proposal's being in progress.
func TestPaxosAcceptor(t *testing.T) {
	svc, clock := testService(t, 0, 0)
	ctx := context.Background()
	if r := prepare(t, svc, ballot(10, "a"), nil); !r.Promised || r.Accepted != nil || len(r.Read.GetRows()) != 0 {
		t.Fatalf("first prepare: %v, want a promise with no rows and nothing accepted", r)
	}
	if r := prepare(t, svc, ballot(10, "a"), nil); r.Promised || ballotCmp(r.Highest, ballot(10, "a")) != 0 {
		t.Fatalf("prepare at the promised ballot: %v, want no promise naming 10@a", r)
	}
	p := &replicapb.PaxosProposal{Ballot: ballot(9, "z"), Mutation: mut("p", row(1, "a", "marker@9", "v=1@9"))}
	if r, _ := svc.PaxosPropose(ctx, &replicapb.PaxosProposeRequest{Proposal: p}); r.Accepted {
		t.Fatalf("a proposal below the promise was accepted: %v", r)
	}
	p.Ballot = ballot(10, "a")
	if r, _ := svc.PaxosPropose(ctx, &replicapb.PaxosProposeRequest{Proposal: p}); !r.Accepted {
		t.Fatalf("a proposal at the promise was refused: %v", r)
	}
	r := prepare(t, svc, ballot(11, "b"), nil)
	if !r.Promised || ballotCmp(r.Accepted.GetBallot(), ballot(10, "a")) != 0 || len(r.Read.GetRows()) != 0 {
		t.Fatalf("prepare after an acceptance: %v, want the proposal at 10@a in progress and no rows yet", r)
	}
	if r, _ := svc.PaxosCommit(ctx, &replicapb.PaxosCommitRequest{Proposal: p}); r.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("commit: %v", r)
	}
	r = prepare(t, svc, ballot(12, "b"), nil)
	if !r.Promised || r.Accepted != nil || ballotCmp(r.Committed, ballot(10, "a")) != 0 || len(r.Read.GetRows()) != 1 {
		t.Fatalf("prepare after the commit: %v, want committed 10@a, nothing in progress, one row", r)
	}
	if st := svc.PaxosStats(); st.Promised != 3 || st.RateLimited != 0 {
		t.Errorf("PaxosStats = %+v, want 3 promised", st)
	}
	// gc: state untouched since before the cutoff goes, newer state stays.
	if n, err := svc.store.PurgePaxos(clock.t); err != nil || n != 0 {
		t.Fatalf("PurgePaxos(now) = %d, %v; want 0 removed", n, err)
	}
	if n, err := svc.store.PurgePaxos(clock.t.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("PurgePaxos(later) = %d, %v; want 1 removed", n, err)
	}
	if r := prepare(t, svc, ballot(1, "a"), nil); !r.Promised {
		t.Fatalf("after gc a low ballot is not promised: %v", r)
	}
}

// TestPaxosPrepareRejectedPromisesNothing: a prepare the limiter rejects carries the typed
// rejection and stores no Paxos state: the next prepare at a lower ballot is still promised.
func TestPaxosPrepareRejectedPromisesNothing(t *testing.T) {
	svc, _ := testService(t, 0, 5)
	enforce := limiter(replicapb.Limiter_ACCOUNT_AND_ENFORCE, 0.99)
	var rejected *replicapb.PaxosPrepareResponse
	at := int64(100)
	for ; at < 120; at++ {
		r := prepare(t, svc, ballot(at, "a"), enforce)
		if r.Status == replicapb.Status_STATUS_RATE_LIMITED {
			rejected = r
			break
		}
	}
	if rejected == nil || rejected.Promised || rejected.RateLimited.GetLimit() != 5 {
		t.Fatalf("20 prepares at limit 5 with draw 0.99: last %v, want a rate-limited one naming the limit", rejected)
	}
	if r := prepare(t, svc, ballot(at, "a"), nil); !r.Promised {
		t.Fatalf("the rejected prepare's ballot is not promised afterwards (%v): the rejection promised it", r)
	}
	if st := svc.PaxosStats(); st.RateLimited != 1 {
		t.Errorf("PaxosStats = %+v, want 1 rate-limited", st)
	}
	n, err := svc.store.PurgePaxos(time.Now().Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PurgePaxos = %d, %v; want the one partition's state", n, err)
	}
}

// TestPaxosStateCacheWritesThrough: the Paxos state cache only saves reads: every state it
// holds is stored, so with the cache emptied after each step the acceptor answers the same.
func TestPaxosStateCacheWritesThrough(t *testing.T) {
	svc, _ := testService(t, 0, 0)
	ctx := context.Background()
	if r := prepare(t, svc, ballot(10, "a"), nil); !r.Promised {
		t.Fatalf("first prepare: %v", r)
	}
	svc.store.paxosStates.reset()
	if r := prepare(t, svc, ballot(10, "a"), nil); r.Promised {
		t.Fatalf("prepare at the stored promise, cache emptied: %v, want no promise", r)
	}
	p := &replicapb.PaxosProposal{Ballot: ballot(10, "a"), Mutation: mut("p", row(1, "a", "marker@10", "v=1@10"))}
	if r, _ := svc.PaxosPropose(ctx, &replicapb.PaxosProposeRequest{Proposal: p}); !r.Accepted {
		t.Fatalf("proposal at the promise refused: %v", r)
	}
	svc.store.paxosStates.reset()
	if r := prepare(t, svc, ballot(11, "b"), nil); !r.Promised || ballotCmp(r.Accepted.GetBallot(), ballot(10, "a")) != 0 {
		t.Fatalf("prepare after an acceptance, cache emptied: %v, want 10@a in progress", r)
	}
	if r, _ := svc.PaxosCommit(ctx, &replicapb.PaxosCommitRequest{Proposal: p}); r.Status != replicapb.Status_STATUS_OK {
		t.Fatalf("commit: %v", r)
	}
	svc.store.paxosStates.reset()
	// The commit wrote the row and the state in one batch: both are there.
	if r := prepare(t, svc, ballot(12, "b"), nil); !r.Promised || r.Accepted != nil || ballotCmp(r.Committed, ballot(10, "a")) != 0 || len(r.Read.GetRows()) != 1 {
		t.Fatalf("prepare after the commit, cache emptied: %v, want committed 10@a, nothing in progress, one row", r)
	}
}

// TestPaxosPromiseFenceAfterACrash: promises are stored unsynced under the fence, so a crash
// that keeps none of the unsynced data loses them; the reopened store still refuses every
// ballot a lost promise shut out (prepare and propose), and promises above the fence.
func TestPaxosPromiseFenceAfterACrash(t *testing.T) {
	tbl := testTable(t)
	open := func(fs vfs.FS) (*Store, *Service) {
		s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		limits, err := partitionlimit.New(partitionlimit.Options{Capacity: 1024})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := NewService(Config{Store: s, Schema: tables{testTableID: tbl}, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		return s, svc
	}
	fs := vfs.NewCrashableMem()
	s, svc := open(fs)
	const b1, b2 = 5_000_000, 5_000_010 // b2 within the window the first promise's fence opened
	if r := prepare(t, svc, ballot(b1, "a"), nil); !r.Promised {
		t.Fatalf("prepare at %d: %v", b1, r)
	}
	if r := prepare(t, svc, ballot(b2, "b"), nil); !r.Promised {
		t.Fatalf("prepare at %d: %v", b2, r)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	s, svc = open(crashed)
	defer s.Close()
	k := paxosKey(testTableID, tokenOf("p"), [][]byte{[]byte("p")})
	if st, err := s.loadPaxos(k); err != nil || ballotCmp(st.Promised, ballot(b2, "b")) >= 0 {
		t.Fatalf("after the crash the promise of %d was kept (%v, %v): the test shows nothing", b2, st, err)
	}
	lost := ballot(b2-5, "c") // refused before the crash, by the promise of b2
	if r := prepare(t, svc, lost, nil); r.Promised || r.Highest.GetCounter() < b2 {
		t.Fatalf("prepare at %v after the crash: %v, want a refusal naming a ballot above %d", lost, r, b2)
	}
	p := &replicapb.PaxosProposal{Ballot: lost, Mutation: mut("p", row(1, "a", "marker@9", "v=1@9"))}
	if r, _ := svc.PaxosPropose(context.Background(), &replicapb.PaxosProposeRequest{Proposal: p}); r.Accepted {
		t.Fatalf("proposal at %v accepted after the crash: %v", lost, r)
	}
	above := ballot(b1+promiseWindow, "d")
	if r := prepare(t, svc, above, nil); !r.Promised {
		t.Fatalf("prepare at the fence %v: %v, want a promise", above, r)
	}
	p.Ballot = above
	if r, _ := svc.PaxosPropose(context.Background(), &replicapb.PaxosProposeRequest{Proposal: p}); !r.Accepted {
		t.Fatalf("proposal at %v: %v, want it accepted", above, r)
	}
}

// TestPaxosCommitByReference: a commit naming the ballot of the proposal the replica accepted
// applies that proposal's mutation; one naming a ballot the replica holds no proposal of
// answers ProposalMissing and records nothing, and the full commit then applies.
func TestPaxosCommitByReference(t *testing.T) {
	svc, _ := testService(t, 0, 0)
	ctx := context.Background()
	key := mut("p")
	ref := &replicapb.Mutation{TableId: key.TableId, Token: key.Token, PartitionKey: key.PartitionKey}
	commit := func(b *replicapb.SchemaBallot) *replicapb.PaxosCommitResponse {
		t.Helper()
		r, err := svc.PaxosCommit(ctx, &replicapb.PaxosCommitRequest{Proposal: &replicapb.PaxosProposal{Ballot: b}, Partition: ref})
		if err != nil || r.Status != replicapb.Status_STATUS_OK {
			t.Fatalf("commit by reference at %v: %v, %v", b, r, err)
		}
		return r
	}
	if r := prepare(t, svc, ballot(10, "a"), nil); !r.Promised {
		t.Fatalf("prepare: %v", r)
	}
	p := &replicapb.PaxosProposal{Ballot: ballot(10, "a"), Mutation: mut("p", row(1, "a", "marker@10", "v=1@10"))}
	if r, _ := svc.PaxosPropose(ctx, &replicapb.PaxosProposeRequest{Proposal: p}); !r.Accepted {
		t.Fatalf("propose: %v", r)
	}
	if r := commit(ballot(9, "z")); !r.ProposalMissing {
		t.Fatalf("commit by reference of a ballot not accepted: %v, want ProposalMissing", r)
	}
	if r := prepare(t, svc, ballot(11, "b"), nil); !r.Promised || ballotCmp(r.Accepted.GetBallot(), ballot(10, "a")) != 0 || r.Committed != nil {
		t.Fatalf("after a missing commit: %v, want 10@a still in progress and nothing committed", r)
	}
	if r := commit(ballot(10, "a")); r.ProposalMissing {
		t.Fatalf("commit by reference of the accepted ballot: %v", r)
	}
	r := prepare(t, svc, ballot(12, "b"), nil)
	if !r.Promised || r.Accepted != nil || ballotCmp(r.Committed, ballot(10, "a")) != 0 || len(r.Read.GetRows()) != 1 {
		t.Fatalf("after the commit by reference: %v, want committed 10@a, nothing in progress, one row", r)
	}
	if r := commit(ballot(10, "a")); r.ProposalMissing {
		t.Fatalf("a repeated commit by reference: %v, want it answered as applied", r)
	}
	bad, _ := svc.PaxosCommit(ctx, &replicapb.PaxosCommitRequest{Proposal: p, Partition: ref})
	if bad.Status != replicapb.Status_STATUS_ERROR || bad.Error.GetCode() != replicapb.Error_BAD_REQUEST {
		t.Fatalf("a commit by reference carrying a mutation: %v, want BAD_REQUEST", bad)
	}
}
