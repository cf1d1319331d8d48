package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kvnode/kvnode/cluster"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// TestBootstrapFromLog reads the bytes and the time of a joiner's bootstrap from its log lines,
// and refuses a log without them.
func TestBootstrapFromLog(t *testing.T) {
	dir := t.TempDir()
	log := `time=2026-11-29T10:19:29.267Z level=INFO msg="cluster member started" component=cluster
time=2026-11-29T10:19:29.337Z level=INFO msg="bootstrapping: streaming the ranges this node will own" node=a
time=2026-11-29T10:19:30.100Z level=INFO msg="streamed ranges" node=a from=b reason=bootstrap ranges=9 entries=3712 bytes=1997344
time=2026-11-29T10:19:31.376Z level=INFO msg="streamed ranges" node=a from=c reason=bootstrap ranges=2 entries=10 bytes=656
time=2026-11-29T10:19:31.376Z level=INFO msg="bootstrap streamed" node=a entries=3722
`
	path := filepath.Join(dir, "n2.stderr")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	bytes, took, err := bootstrapFromLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes != 1997344+656 || took != 2039*time.Millisecond {
		t.Errorf("bootstrapFromLog = %d bytes in %v, want %d in 2.039s", bytes, took, 1997344+656)
	}
	if err := os.WriteFile(path, []byte(log[:200]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bootstrapFromLog(path); err == nil {
		t.Errorf("bootstrapFromLog of a log without its bootstrap lines succeeded")
	}
}

// TestJoinerRanges checks that the ranges a joiner takes are exactly the tokens it owns in the
// ring of two nodes.
func TestJoinerRanges(t *testing.T) {
	a, b := cluster.NodeID("node-a"), cluster.NodeID("node-b")
	ranges := joinerRanges(a, b)
	if len(ranges) == 0 {
		t.Fatal("the joiner takes no range")
	}
	two := cluster.NewRing([]cluster.RingNode{{ID: a, Tokens: cluster.NodeTokens(a, numTokens)}, {ID: b, Tokens: cluster.NodeTokens(b, numTokens)}})
	tokens := []int64{math.MinInt64, math.MaxInt64, 0}
	for _, tk := range cluster.NodeTokens(b, numTokens) {
		tokens = append(tokens, tk, tk-1, tk+1)
	}
	for i := range 2000 {
		tokens = append(tokens, int64(uint64(i)*0x9E3779B97F4A7C15))
	}
	for _, tk := range tokens {
		in := slices.ContainsFunc(ranges, func(r cluster.TokenRange) bool { return r.Contains(tk) })
		if owner := two.Owner(tk); in != (owner == b) {
			t.Fatalf("token %d: in the joiner's ranges %v, but its owner is %s", tk, in, owner)
		}
	}
}

// streamedKey is the storage key of an entry of partition pk of table id: a static row's entry
// named by entry, enough for a stream's checks of an entry of a table the store may not know.
func streamedKey(id schema.TableID, pk string, entry byte) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(id))
	k = binary.BigEndian.AppendUint64(k, uint64(partitioner.Token([]byte(pk)))^(1<<63))
	k = append(k, pk...) // no 0x00 to escape
	return append(k, 0x00, 0x01, 0x14, entry)
}

// TestRewriteLocal writes a store's entries in a wrapping and a plain range as sstables and
// ingests them into a database of kvnode's merger: exactly the entries of those ranges come back,
// as merge operands.
func TestRewriteLocal(t *testing.T) {
	dir := t.TempDir()
	const id = schema.TableID(42)
	st, err := replica.Open(filepath.Join(dir, "store"), replica.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	value := append(binary.BigEndian.AppendUint64([]byte{0}, 7), "v"...)
	var entries []replica.StreamEntry
	var tokens []int64
	for i := range 200 {
		pk := fmt.Sprintf("p%03d", i)
		entries = append(entries, replica.StreamEntry{Key: streamedKey(id, pk, 'a'), Value: value}, replica.StreamEntry{Key: streamedKey(id+1, pk, 'a'), Value: value})
		tokens = append(tokens, partitioner.Token([]byte(pk)))
	}
	slices.Sort(tokens)
	if err := st.ApplyStreamed(entries, func(schema.TableID, int64) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// A wrapping range and a plain one, their bounds on tokens held: a range holds its end, not
	// its start.
	ranges := []cluster.TokenRange{{Start: tokens[150], End: tokens[40]}, {Start: tokens[80], End: tokens[100]}}
	out := filepath.Join(dir, "sst")
	n, sst, _, err := rewriteLocal(filepath.Join(dir, "store"), out, []schema.TableID{id}, ranges)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, tk := range tokens {
		if slices.ContainsFunc(ranges, func(r cluster.TokenRange) bool { return r.Contains(tk) }) {
			want = append(want, tk)
		}
	}
	if len(want) != 41+20+49 {
		t.Fatalf("the ranges hold %d of the tokens, want 110", len(want))
	}
	if wantN := int64(len(want) * (len(streamedKey(id, "p000", 'a')) + len(value))); n != wantN || sst == 0 {
		t.Errorf("rewriteLocal = %d bytes of entries, %d of files; want %d and some", n, sst, wantN)
	}
	files, err := filepath.Glob(filepath.Join(out, "*.sst"))
	if err != nil || len(files) != 3 {
		t.Fatalf("sstables %v (%v), want one per key span: 3", files, err)
	}
	db, err := pebble.Open(filepath.Join(dir, "db"), &pebble.Options{FormatMajorVersion: replica.FormatMajorVersion,
		Merger: &pebble.Merger{Name: lwwMergerName, Merge: pebble.DefaultMerger.Merge}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ingest(t.Context(), files); err != nil {
		t.Fatalf("ingesting the rewritten sstables: %v", err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for ok := it.First(); ok; ok = it.Next() {
		tid, tok, err := replica.EntryToken(it.Key())
		if err != nil || tid != id || string(it.Value()) != string(value) {
			t.Errorf("entry %x = %x (table %d, %v), want table %d's value %x", it.Key(), it.Value(), tid, err, id, value)
		}
		got = append(got, tok)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ingested tokens %v, want %v", got, want)
	}
}
