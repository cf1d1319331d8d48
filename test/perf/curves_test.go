package main

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("64MiB, 1GiB,10GiB")
	if want := []int64{64 << 20, 1 << 30, 10 << 30}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseSizes(64MiB, 1GiB,10GiB) = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", ",", "13GiB", "1TB", "0MiB", "-1GiB", "1.5GiB", "GiB"} {
		if got, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) = %v, want an error", bad, got)
		}
	}
	for _, b := range []int64{64 << 20, 1 << 30, 10 << 30} {
		if got, err := parseSizes(sizeName(b)); err != nil || len(got) != 1 || got[0] != b {
			t.Errorf("parseSizes(sizeName(%d) = %q) = %v, %v", b, sizeName(b), got, err)
		}
	}
}

func TestRunRejectsBadCurveFlags(t *testing.T) {
	for _, args := range [][]string{{"--size", "20GiB"}, {"--size", "1TB"}, {"--memory-partitions", "-1"}, {"--memory-partitions", "1000000000"}} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}

// TestBigRowsComeInStorageOrder checks that the bigread loader's rows come by token (so its
// sstables do not overlap), one mutation per partition with its rows and values.
func TestBigRowsComeInStorageOrder(t *testing.T) {
	st, err := cql.ParseStatement("CREATE TABLE perf_big.t " + tableColumns)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "perf_big", 9, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := int64(-1 << 63)
	for m := range bigRows(tbl, 500, 3, 20) {
		k := string(m.PartitionKey[0])
		if tok := partitioner.Token(partitioner.AppendKey(nil, m.PartitionKey)); tok != m.Token || tok < last {
			t.Fatalf("partition %s: token %d (computed %d) after %d, want ascending tokens", k, m.Token, tok, last)
		}
		last = m.Token
		if seen[k] || len(m.Rows) != 3 || len(m.Rows[2].Cells[0].Value) != 20 || m.TableId != 9 {
			t.Fatalf("partition %s: seen before %v, %d rows, value %q, table %d; want a new partition of 3 rows of 20 bytes in table 9",
				k, seen[k], len(m.Rows), m.Rows[0].Cells[0].Value, m.TableId)
		}
		seen[k] = true
	}
	if len(seen) != 500 {
		t.Errorf("%d partitions, want 500", len(seen))
	}
}
