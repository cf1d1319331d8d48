package shell_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
)

// pageAll runs st page by page through node until a page has no paging state, and returns the
// first column of every row, each page's row count, and the last page's result.
func (c *cluster) pageAll(node coordinator.NodeID, st coordinator.Statement) (rows []string, sizes []int) {
	c.t.Helper()
	for i := 0; ; i++ {
		if i > 1000 {
			c.t.Fatalf("%s: paging does not end", st.Text)
		}
		res, err := c.run(node, st)
		if err != nil {
			c.t.Fatalf("%s page %d: %v", st.Text, i+1, err)
		}
		for _, r := range formatRows(res.Rows) {
			rows = append(rows, strings.Fields(r)[0])
		}
		sizes = append(sizes, len(res.Rows.Values))
		if res.PagingState == nil {
			return rows, sizes
		}
		st.PagingState = res.PagingState
	}
}

func intStrings(from, to, step int) []string {
	var out []string
	for i := from; step > 0 && i <= to || step < 0 && i >= to; i += step {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

func TestPagingThroughAPartition(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	ins := c.prepare("n1", "INSERT INTO t (k, c, v) VALUES ('a', ?, 'x')")
	for i := int32(1); i <= 250; i++ {
		if _, err := c.run("n1", coordinator.Statement{Prepared: ins, Values: []coordinator.Value{intv(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	tests := []struct {
		text  string
		size  int
		rows  []string
		sizes []int
	}{
		{"SELECT c FROM t WHERE k = 'a'", 100, intStrings(1, 250, 1), []int{100, 100, 50}},
		{"SELECT c FROM t WHERE k = 'a' ORDER BY c DESC", 100, intStrings(250, 1, -1), []int{100, 100, 50}},
		{"SELECT c FROM t WHERE k = 'a' LIMIT 230", 100, intStrings(1, 230, 1), []int{100, 100, 30}},
		{"SELECT c FROM t WHERE k = 'a' ORDER BY c DESC LIMIT 200", 100, intStrings(250, 51, -1), []int{100, 100}},
		{"SELECT c FROM t WHERE k = 'a' AND c > 10 AND c <= 60", 25, intStrings(11, 60, 1), []int{25, 25}},
		{"SELECT c FROM t WHERE k = 'a' AND c >= 200 ORDER BY c DESC", 7, intStrings(250, 200, -1), []int{7, 7, 7, 7, 7, 7, 7, 2}},
		{"SELECT c FROM t WHERE k = 'a'", 1000, intStrings(1, 250, 1), []int{250}},
		{"SELECT c FROM t WHERE k = 'b'", 10, nil, []int{0}},
	}
	for _, tt := range tests {
		for _, node := range nodes {
			rows, sizes := c.pageAll(node, coordinator.Statement{Text: tt.text, PageSize: tt.size})
			if !slices.Equal(rows, tt.rows) || !slices.Equal(sizes, tt.sizes) {
				t.Errorf("%s in pages of %d through %s: pages of %v rows, %d rows %q...; want pages of %v, %d rows",
					tt.text, tt.size, node, sizes, len(rows), rows[:min(len(rows), 5)], tt.sizes, len(tt.rows))
			}
		}
	}
	// A prepared statement pages the same way, with its values.
	sel := c.prepare("n2", "SELECT c FROM t WHERE k = ? ORDER BY c DESC LIMIT ?")
	rows, sizes := c.pageAll("n3", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a"), intv(120)}, PageSize: 50})
	if !slices.Equal(rows, intStrings(250, 131, -1)) || !slices.Equal(sizes, []int{50, 50, 20}) {
		t.Errorf("prepared SELECT in pages of 50: pages of %v, %d rows", sizes, len(rows))
	}
}

// TestPagingUnderConcurrentWrites: a page continues after the last row the client saw, so rows
// written or deleted before that point are not seen again, and those after it are.
func TestPagingUnderConcurrentWrites(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for i := 10; i <= 100; i += 10 {
		c.must(fmt.Sprintf("INSERT INTO t (k, c) VALUES ('a', %d)", i))
	}
	st := coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", PageSize: 3}
	res, err := c.run("n1", st)
	if err != nil || !slices.Equal(formatRows(res.Rows), []string{"10", "20", "30"}) {
		t.Fatalf("first page: %q, %v", formatRows(res.Rows), err)
	}
	c.clock.Advance(time.Millisecond)
	c.must("INSERT INTO t (k, c) VALUES ('a', 15)", "INSERT INTO t (k, c) VALUES ('a', 35)", "DELETE FROM t WHERE k = 'a' AND c = 40", "DELETE FROM t WHERE k = 'a' AND c = 20")
	st.PagingState = res.PagingState
	rows, _ := c.pageAll("n2", st)
	if want := []string{"35", "50", "60", "70", "80", "90", "100"}; !slices.Equal(rows, want) {
		t.Errorf("the pages after concurrent writes = %q, want %q", rows, want)
	}
}

func TestPagingStateIsCheckedAgainstTheStatement(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for i := 1; i <= 5; i++ {
		c.must(fmt.Sprintf("INSERT INTO t (k, c) VALUES ('a', %d)", i), fmt.Sprintf("INSERT INTO t (k, c) VALUES ('b', %d)", i))
	}
	first, err := c.run("n1", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", PageSize: 2})
	if err != nil || first.PagingState == nil {
		t.Fatalf("first page: %v, paging state %x", err, first.PagingState)
	}
	state := first.PagingState
	sel := c.prepare("n1", "SELECT c FROM t WHERE k = ?")
	pfirst, err := c.run("n1", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a")}, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		st   coordinator.Statement
		want string
	}{
		{"another statement's state", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'b'", PageSize: 2, PagingState: state}, "belongs to another statement"},
		{"the state of the other order", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a' ORDER BY c DESC", PageSize: 2, PagingState: state}, "belongs to another statement"},
		{"other values'", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("b")}, PageSize: 2, PagingState: pfirst.PagingState}, "belongs to another statement"},
		{"garbage", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", PageSize: 2, PagingState: []byte("garbage!garbage!")}, "invalid paging state: not a paging state of this database"},
		{"truncated", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", PageSize: 2, PagingState: state[:len(state)-2]}, "invalid paging state: truncated clustering key"},
		{"trailing garbage", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", PageSize: 2, PagingState: append(slices.Clip(state), 0)}, "invalid paging state: 1 bytes of trailing garbage"},
	} {
		_, err := c.run("n2", tt.st)
		var ie *coordinator.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("paging with %s: error %v, want an *InvalidError containing %q", tt.name, err, tt.want)
		}
	}
	// The right state continues on any node.
	res, err := c.run("n3", coordinator.Statement{Prepared: sel, Values: []coordinator.Value{text("a")}, PageSize: 2, PagingState: pfirst.PagingState})
	if got := formatRows(res.Rows); err != nil || !slices.Equal(got, []string{"3", "4"}) {
		t.Errorf("the second page of the prepared SELECT = %q, %v; want 3, 4", got, err)
	}
}

// TestPagingAcrossDisagreeingReplicas pages through a partition whose replicas disagree (one
// missed every other write and a deletion): each page is reconciled across the replicas it
// reads, and the pages together are the partition, in order, with nothing twice.
func TestPagingAcrossDisagreeingReplicas(t *testing.T) {
	c := newCluster(t, options{})
	c.must(schemaRF3...)
	for i := 1; i <= 60; i++ {
		if i%2 == 0 {
			c.ring.setDown("n3")
			c.transport.setFault(failAll, "n3")
		}
		if _, err := c.exec("n1", quorum, fmt.Sprintf("INSERT INTO t (k, c) VALUES ('a', %d)", i)); err != nil {
			t.Fatal(err)
		}
		c.settle()
		c.ring.setDown()
		c.transport.clearFaults()
	}
	c.clock.Advance(time.Millisecond)
	c.ring.setDown("n1")
	c.transport.setFault(failAll, "n1")
	if _, err := c.exec("n2", quorum, "DELETE FROM t WHERE k = 'a' AND c >= 20 AND c < 30"); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.ring.setDown()
	c.transport.clearFaults()
	var want []string
	for i := 1; i <= 60; i++ {
		if i < 20 || i >= 30 {
			want = append(want, fmt.Sprint(i))
		}
	}
	rows, _ := c.pageAll("n3", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a'", Consistency: all, PageSize: 7})
	if !slices.Equal(rows, want) {
		t.Errorf("paging at ALL through replicas that disagree = %q, want %q", rows, want)
	}
	slices.Reverse(want)
	rows, _ = c.pageAll("n1", coordinator.Statement{Text: "SELECT c FROM t WHERE k = 'a' ORDER BY c DESC", Consistency: quorum, PageSize: 9})
	if !slices.Equal(rows, want) {
		t.Errorf("paging DESC at QUORUM after read repair = %q, want %q", rows, want)
	}
}
