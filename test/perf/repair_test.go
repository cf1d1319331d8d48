package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/replica"
	"github.com/kvnode/kvnode/schema"
)

// TestDeleteSome deletes every 100th partition of the repair table from a stopped node's store
// and counts what it deleted: the other partitions, and other tables, stay.
func TestDeleteSome(t *testing.T) {
	dir := t.TempDir()
	sc, err := schema.Build("CREATE KEYSPACE " + repairKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2};" +
		"CREATE TABLE " + tableRepair + " " + tableColumns)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schema.bin"), sc.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl, _ := sc.Table(repairKeyspace, "t")
	value := append(binary.BigEndian.AppendUint64([]byte{0}, 7), "value"...)
	st, err := replica.Open(filepath.Join(dir, "data"), replica.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var entries []replica.StreamEntry
	for i := range 200 {
		pk := fmt.Sprintf("p%03d", i)
		for _, e := range []byte("ab") { // two entries per partition
			entries = append(entries, replica.StreamEntry{Key: streamedKey(tbl.ID, pk, e), Value: value})
		}
		entries = append(entries, replica.StreamEntry{Key: streamedKey(tbl.ID+1, pk, 'a'), Value: value})
	}
	if err := st.ApplyStreamed(entries, func(schema.TableID, int64) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var r repairResult
	if err := deleteSome(dir, 1, &r); err != nil {
		t.Fatal(err)
	}
	entry := float64(len(streamedKey(tbl.ID, "p000", 'a')) + len(value))
	if r.Partitions != 200 || r.MissingPartitions != 2 || r.MissingMiB*(1<<20) != 4*entry || r.StoreMiB*(1<<20) != 400*entry {
		t.Errorf("deleteSome counted %d partitions (%.0f bytes), %d deleted (%.0f bytes); want 200 (%.0f), 2 (%.0f)",
			r.Partitions, r.StoreMiB*(1<<20), r.MissingPartitions, r.MissingMiB*(1<<20), 400*entry, 4*entry)
	}
	st, err = replica.Open(filepath.Join(dir, "data"), replica.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tokens := func(id schema.TableID) (out []int64) {
		st.ScanTokens(id, math.MinInt64, math.MaxInt64, func(k, _ []byte) error {
			_, tok, _ := replica.EntryToken(k)
			if len(out) == 0 || out[len(out)-1] != tok {
				out = append(out, tok)
			}
			return nil
		})
		return out
	}
	got := tokens(tbl.ID)
	if len(got) != 198 || slices.Contains(got, 50*1000-100_000) || slices.Contains(got, 150*1000-100_000) {
		t.Errorf("after deleteSome the table holds %d partitions, want 198 without the 50th and 150th", len(got))
	}
	if n := len(tokens(tbl.ID + 1)); n != 200 {
		t.Errorf("another table holds %d partitions after deleteSome, want its 200", n)
	}
}
