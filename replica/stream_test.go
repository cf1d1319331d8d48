package replica

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// TestStreamCopiesARangeLastWriteWins streams the entries of a token range from one store to
// another: exactly the partitions in the range arrive, tombstones included, and a newer write the
// receiver already has is not overwritten by an older streamed one.
func TestStreamCopiesARangeLastWriteWins(t *testing.T) {
	tbl := testTable(t)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	var pks []string
	for i := range 40 {
		pks = append(pks, fmt.Sprintf("p%d", i))
	}
	for _, pk := range pks {
		mustApply(t, src, tbl, mut(pk, row(1, "a", "v=1@10", "w=old@10"), row(2, "b", "deleted@20")))
	}
	mid := tokenOf(pks[0])
	// The receiver already has a newer value for p0's cell: streaming must not undo it.
	mustApply(t, dst, tbl, mut(pks[0], row(1, "a", "w=new@30")))

	var entries []StreamEntry
	for _, iv := range [][2]int64{{math.MinInt64, mid}} {
		if err := src.ScanTokens(tbl.ID, iv[0], iv[1], func(k, v []byte) error {
			entries = append(entries, StreamEntry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	accept := func(id schema.TableID, tok int64) error {
		if id != tbl.ID || tok > mid {
			return fmt.Errorf("token %d of table %d not asked for", tok, id)
		}
		return nil
	}
	if err := dst.ApplyStreamed(entries, accept, nil); err != nil {
		t.Fatal(err)
	}
	for _, pk := range pks {
		got := format(tbl, mustRead(t, dst, tbl, readReq(pk)))
		srcGot := format(tbl, mustRead(t, src, tbl, readReq(pk)))
		switch tok := tokenOf(pk); {
		case pk == pks[0]:
			if !strings.Contains(got, "new") || strings.Contains(got, "old") {
				t.Errorf("partition %s after streaming: %s; want the receiver's newer w=new kept", pk, got)
			}
		case tok <= mid && got != srcGot:
			t.Errorf("partition %s (token %d, in the range) reads %q on the receiver, %q on the source", pk, tok, got, srcGot)
		case tok > mid && strings.Contains(got, "v"):
			t.Errorf("partition %s (token %d, outside the range) was streamed: %s", pk, tok, got)
		}
	}
}

// TestApplyStreamedRefusesBadEntries: an entry for a token or table not asked for, a key too
// short to name them, or a value that does not decode applies nothing and names the entry.
func TestApplyStreamedRefusesBadEntries(t *testing.T) {
	tbl := testTable(t)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	mustApply(t, src, tbl, mut("p1", row(1, "a", "v=1@10")))
	other, _ := openMem(t)
	mustApply(t, other, tbl, mut("p2", row(1, "a", "v=1@10")))
	var p2 StreamEntry
	if err := other.ScanTokens(tbl.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		p2 = StreamEntry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var good []StreamEntry
	if err := src.ScanTokens(tbl.ID, math.MinInt64, math.MaxInt64, func(k, v []byte) error {
		good = append(good, StreamEntry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
		return nil
	}); err != nil || len(good) == 0 {
		t.Fatalf("scan: %d entries, %v", len(good), err)
	}
	errNo := errors.New("not asked for")
	tests := []struct {
		name   string
		e      StreamEntry
		accept func(schema.TableID, int64) error
		want   string
	}{
		{"not asked for", p2, func(_ schema.TableID, tok int64) error {
			if tok == tokenOf("p2") {
				return errNo
			}
			return nil
		}, "not asked for"},
		{"short key", StreamEntry{Key: []byte{1, 2, 3}, Value: good[0].Value}, nil, "shorter than a table id and a token"},
		{"bad value", StreamEntry{Key: good[0].Key, Value: []byte{9}}, nil, "malformed stored value"},
		{"batchlog key space", StreamEntry{Key: make([]byte, 20), Value: good[0].Value}, nil, "batchlog"},
		{"a token not its partition key's", func() StreamEntry {
			k := bytes.Clone(good[0].Key)
			k[15] ^= 1
			return StreamEntry{Key: k, Value: good[0].Value}
		}(), nil, "its partition key's is"},
		{"a partition prefix alone", func() StreamEntry {
			_, _, _, rest, _ := decodePartitionPrefix(good[0].Key)
			return StreamEntry{Key: good[0].Key[:len(good[0].Key)-len(rest)], Value: good[0].Value}
		}(), nil, "none of a partition's"},
	}
	for _, tt := range tests {
		accept := tt.accept
		if accept == nil {
			accept = func(schema.TableID, int64) error { return nil }
		}
		err := dst.ApplyStreamed(append(append([]StreamEntry(nil), good...), tt.e), accept, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), fmt.Sprintf("entry %d", len(good))) {
			t.Errorf("%s: ApplyStreamed = %v, want an error naming entry %d and %q", tt.name, err, len(good), tt.want)
		}
		if n, _ := dst.TableKeys(tbl.ID); n != 0 {
			t.Fatalf("%s: a refused stream applied %d keys, want none", tt.name, n)
		}
	}
}

func mustRead(t *testing.T, s *Store, tbl *schema.Table, req *replicapb.ReadRequest) *replicapb.ReadResponse {
	t.Helper()
	resp, err := s.ReadPartition(tbl, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDeleteTokensDeletesOnlyTheIntervals: deleting token intervals of a table (one at each end
// of the token space, as a wrapping range splits) removes exactly the partitions in them,
// leaves the others and table id 0 (the repair state) alone, and reports how many intervals
// held entries.
func TestDeleteTokensDeletesOnlyTheIntervals(t *testing.T) {
	tbl := testTable(t)
	s, _ := openMem(t)
	var pks []string
	for i := range 40 {
		pks = append(pks, fmt.Sprintf("p%d", i))
	}
	for _, pk := range pks {
		mustApply(t, s, tbl, mut(pk, row(1, "a", "v=1@10"), row(2, "b", "deleted@20")))
	}
	if err := s.SetRepairedAt(tbl.ID, time.Unix(100, 0)); err != nil {
		t.Fatal(err)
	}
	lo, hi := tokenOf(pks[0]), tokenOf(pks[1])
	if lo > hi {
		lo, hi = hi, lo
	}
	// (hi, lo] wrapping: [MinInt64, lo] and [hi+1, MaxInt64], plus an empty interval.
	ivs := [][2]int64{{math.MinInt64, lo}, {hi + 1, math.MaxInt64}, {lo + 1, lo + 1}}
	n, err := s.DeleteTokens(tbl.ID, ivs)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, iv := range ivs[:2] {
		for _, pk := range pks {
			if tok := tokenOf(pk); iv[0] <= tok && tok <= iv[1] {
				held++
				break
			}
		}
	}
	if n != held {
		t.Errorf("DeleteTokens = %d intervals with entries, want %d", n, held)
	}
	for _, pk := range pks {
		got := format(tbl, mustRead(t, s, tbl, readReq(pk)))
		tok := tokenOf(pk)
		deleted := tok <= lo || tok > hi
		if deleted && got != "" {
			t.Errorf("partition %s (token %d, deleted range) reads %q, want nothing", pk, tok, got)
		}
		if !deleted && !strings.Contains(got, "v") {
			t.Errorf("partition %s (token %d, kept range) reads %q, want its row", pk, tok, got)
		}
	}
	if at, ok, err := s.RepairedAt(tbl.ID); err != nil || !ok || !at.Equal(time.Unix(100, 0)) {
		t.Errorf("RepairedAt after DeleteTokens = %v, %v, %v; want the recorded time kept", at, ok, err)
	}
	if _, err := s.DeleteTokens(0, ivs); err == nil {
		t.Errorf("DeleteTokens on table id 0 succeeded, want it refused")
	}
}
