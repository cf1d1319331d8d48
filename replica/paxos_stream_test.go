package replica

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// acceptOn makes svc promise and accept a proposal at b for partition pk, uncommitted.
func acceptOn(t *testing.T, svc *Service, pk string, b *replicapb.SchemaBallot) {
	t.Helper()
	ctx := context.Background()
	if r, err := svc.PaxosPrepare(ctx, &replicapb.PaxosPrepareRequest{Ballot: b, Read: readReq(pk)}); err != nil || !r.Promised {
		t.Fatalf("prepare %s at %v: %v, %v", pk, b, r, err)
	}
	p := &replicapb.PaxosProposal{Ballot: b, Mutation: mut(pk, row(1, "a", "marker@9", "v=1@9"))}
	if r, err := svc.PaxosPropose(ctx, &replicapb.PaxosProposeRequest{Proposal: p}); err != nil || !r.Accepted {
		t.Fatalf("propose %s at %v: %v, %v", pk, b, r, err)
	}
}

// scanPaxos returns the entries ScanPaxosTokens finds in [from, to].
func scanPaxos(t *testing.T, svc *Service, from, to int64) []*replicapb.Entry {
	t.Helper()
	var out []*replicapb.Entry
	err := svc.store.ScanPaxosTokens(testTableID, from, to, func(k, v []byte) error {
		out = append(out, &replicapb.Entry{Key: slices.Clone(k), Value: slices.Clone(v)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPaxosStateStreams: the Paxos states of a token interval (negative and non-negative tokens
// alike) scan out of one replica and merge into another, whose next prepare then finds the
// proposal in progress; a merge keeps the receiver's higher promise; a refused entry applies
// nothing.
func TestPaxosStateStreams(t *testing.T) {
	src, _ := testService(t, 0, 0)
	dst, _ := testService(t, 0, 0)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var neg, nonNeg int
	for i, pk := range keys {
		acceptOn(t, src, pk, ballot(int64(10+i), "n1"))
		if tokenOf(pk) < 0 {
			neg++
		} else {
			nonNeg++
		}
	}
	if neg == 0 || nonNeg == 0 {
		t.Fatalf("the keys' tokens are all of one sign (%d negative): the test needs both", neg)
	}
	if got := scanPaxos(t, src, math.MinInt64, math.MaxInt64); len(got) != len(keys) {
		t.Fatalf("the whole ring scans %d states, want %d", len(got), len(keys))
	}
	if got := scanPaxos(t, src, math.MinInt64, -1); len(got) != neg {
		t.Fatalf("the negative tokens scan %d states, want %d", len(got), neg)
	}
	if got := scanPaxos(t, src, 0, math.MaxInt64); len(got) != nonNeg {
		t.Fatalf("the non-negative tokens scan %d states, want %d", len(got), nonNeg)
	}
	one := tokenOf("c")
	if got := scanPaxos(t, src, one, one); len(got) != 1 {
		t.Fatalf("the token of c scans %d states, want 1", len(got))
	}
	if got := scanPaxos(t, src, 1, 0); len(got) != 0 {
		t.Fatalf("an empty interval scans %d states", len(got))
	}

	// The receiver promised a higher ballot on a: the merge keeps it.
	ctx := context.Background()
	if r, _ := dst.PaxosPrepare(ctx, &replicapb.PaxosPrepareRequest{Ballot: ballot(50, "n2"), Read: readReq("a")}); !r.Promised {
		t.Fatalf("receiver's prepare: %v", r)
	}
	all := scanPaxos(t, src, math.MinInt64, math.MaxInt64)
	refuse := errors.New("not asked for")
	err := dst.ApplyStreamedPaxos(all, func(_ schema.TableID, tok int64) error {
		if tok == one {
			return refuse
		}
		return nil
	})
	if !errors.Is(err, refuse) {
		t.Fatalf("ApplyStreamedPaxos with a refused entry: %v, want the refusal", err)
	}
	if got := scanPaxos(t, dst, math.MinInt64, math.MaxInt64); len(got) != 1 {
		t.Fatalf("after a refused stream the receiver holds %d states, want only its own", len(got))
	}
	bad := []*replicapb.Entry{{Key: []byte("short"), Value: all[0].Value}}
	if err := dst.ApplyStreamedPaxos(bad, func(schema.TableID, int64) error { return nil }); err == nil {
		t.Fatal("a key that is not a Paxos state key was applied")
	}
	if err := dst.ApplyStreamedPaxos(all, func(schema.TableID, int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for i, pk := range keys {
		r, err := dst.PaxosPrepare(ctx, &replicapb.PaxosPrepareRequest{Ballot: ballot(40, "n3"), Read: readReq(pk)})
		if err != nil {
			t.Fatal(err)
		}
		if pk == "a" {
			if r.Promised || ballotCmp(r.Highest, ballot(50, "n2")) != 0 {
				t.Fatalf("prepare of a below the receiver's own promise: %v, want refused naming 50@n2", r)
			}
			continue
		}
		if !r.Promised || ballotCmp(r.Accepted.GetBallot(), ballot(int64(10+i), "n1")) != 0 || r.Accepted.GetMutation() == nil {
			t.Fatalf("prepare of %s after the stream: %v, want the proposal at %d@n1 in progress", pk, r, 10+i)
		}
	}
}
