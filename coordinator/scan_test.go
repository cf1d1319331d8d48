package coordinator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
)

// rangePart is a partition of key k at token tok, stopped inside when stopped.
func rangePart(tok int64, k string, stopped bool) coordinator.RangePartition {
	p := coordinator.RangePartition{Token: tok, Key: [][]byte{[]byte(k)}, Page: coordinator.Page{PartitionDeletion: cell.NoTimestamp}}
	if stopped {
		p.Page.Stopped, p.Page.StoppedAfter = true, [][]byte{{0, 0, 0, 1}}
	}
	return p
}

// describeGroups renders groups as "tok/key[replicas with a non-empty page]".
func describeGroups(parts []coordinator.PartitionPages) string {
	var out []string
	for _, p := range parts {
		var held []string
		for _, rp := range p.Pages {
			if rp.Page.Stopped || rp.Page.PartitionDeletion != cell.NoTimestamp {
				held = append(held, string(rp.From))
			}
		}
		out = append(out, fmt.Sprintf("%d/%s%v", p.Token, p.Key[0], held))
	}
	return strings.Join(out, " ")
}

func TestGroupRangeStopsAtTheEarliestStop(t *testing.T) {
	tbl := newTable(t, "CREATE TABLE ks.s (k text PRIMARY KEY, v int)")
	held := func(p coordinator.RangePartition) coordinator.RangePartition { p.Page.PartitionDeletion = 1; return p }
	for _, tt := range []struct {
		name     string
		answers  []coordinator.RangeAnswer
		want     string
		complete bool
	}{
		{
			name: "no replica stopped: every partition, each with every replica's page",
			answers: []coordinator.RangeAnswer{
				{From: "a", Partitions: []coordinator.RangePartition{held(rangePart(1, "x", false)), held(rangePart(5, "y", false))}},
				{From: "b", Partitions: []coordinator.RangePartition{held(rangePart(5, "y", false)), held(rangePart(9, "z", false))}},
			},
			want: "1/x[a] 5/y[a b] 9/z[b]", complete: true,
		},
		{
			name: "the earliest stop bounds the page, inside a partition or after it",
			answers: []coordinator.RangeAnswer{
				{From: "a", Partitions: []coordinator.RangePartition{held(rangePart(1, "x", false)), rangePart(5, "y", true)}, Stopped: true},
				{From: "b", Partitions: []coordinator.RangePartition{held(rangePart(3, "w", false)), held(rangePart(5, "y", false)), held(rangePart(9, "z", false))}, Stopped: true},
				{From: "c", Partitions: []coordinator.RangePartition{held(rangePart(5, "a", false)), held(rangePart(12, "q", false))}},
			},
			want: "1/x[a] 3/w[b] 5/a[c] 5/y[a b]",
		},
	} {
		parts, complete, err := coordinator.GroupRange(tbl, tt.answers)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := describeGroups(parts); got != tt.want || complete != tt.complete {
			t.Errorf("%s: GroupRange = %s (complete %v), want %s (complete %v)", tt.name, got, complete, tt.want, tt.complete)
		}
	}
	for _, tt := range []struct {
		name    string
		answers []coordinator.RangeAnswer
		want    string
	}{
		{"out of order", []coordinator.RangeAnswer{{From: "a", Partitions: []coordinator.RangePartition{rangePart(5, "y", false), rangePart(1, "x", false)}}}, "out of token order"},
		{"same token, keys out of order", []coordinator.RangeAnswer{{From: "a", Partitions: []coordinator.RangePartition{rangePart(5, "y", false), rangePart(5, "x", false)}}}, "out of token order"},
		{"stopped inside an earlier partition", []coordinator.RangeAnswer{{From: "a", Partitions: []coordinator.RangePartition{rangePart(1, "x", true), rangePart(5, "y", false)}, Stopped: true}}, "not its last"},
		{"stopped with nothing", []coordinator.RangeAnswer{{From: "a", Stopped: true}}, "without returning a partition"},
		{"a key of two components", []coordinator.RangeAnswer{{From: "a", Partitions: []coordinator.RangePartition{{Token: 1, Key: [][]byte{{1}, {2}}}}}}, "partition key of 2 components"},
	} {
		if _, _, err := coordinator.GroupRange(tbl, tt.answers); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("coordinator.GroupRange(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestComparePartitionsOrdersAsCassandra(t *testing.T) {
	// Equal tokens order by the serialized key: for a composite key, component lengths first.
	a := [][]byte{[]byte("b"), []byte("x")}
	b := [][]byte{[]byte("ab"), []byte("x")}
	if c := coordinator.ComparePartitions(5, a, 5, b); c >= 0 {
		t.Errorf("ComparePartitions(5 (b, x), 5 (ab, x)) = %d, want < 0: the shorter first component serializes first", c)
	}
	if c := coordinator.ComparePartitions(4, b, 5, a); c >= 0 {
		t.Errorf("a lower token = %d, want < 0", c)
	}
	if c := coordinator.ComparePartitions(5, [][]byte{[]byte("k")}, 5, [][]byte{[]byte("k")}); c != 0 {
		t.Errorf("the same partition compares %d, want 0", c)
	}
}
