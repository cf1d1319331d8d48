package replica

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// modelRow is a row written to the store, as the order tests know it.
type modelRow struct {
	c1   int32
	c2   string
	live bool
}

func (r modelRow) key() [][]byte { return [][]byte{schema.EncodeInt(r.c1), []byte(r.c2)} }

// TestStoreReadsInClusteringOrder checks reads against a model on the four
// clustering orders of two columns: for random filters (= on a prefix, then
// bounds on the next column), limits and directions, the store returns the
// rows the filter selects, sorted by Table.CompareClustering (reversed for a
// reversed read), up to the limit-th live row.
func TestStoreReadsInClusteringOrder(t *testing.T) {
	c1s := []int32{-2, -1, 0, 1, 2}
	c2s := []string{"", "\x00", "a", "a\x00", "ab", "b"}
	for _, order := range []string{" WITH CLUSTERING ORDER BY (c1 ASC, c2 ASC)", " WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)", " WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)", " WITH CLUSTERING ORDER BY (c1 DESC, c2 DESC)"} {
		t.Run(strings.TrimPrefix(order, " WITH CLUSTERING ORDER BY "), func(t *testing.T) {
			s, _ := openMem(t)
			l := newTable(t, testTableDDL+order)
			r := rand.New(rand.NewPCG(1, uint64(len(order))))
			var rows []modelRow
			for _, c1 := range c1s {
				for _, c2 := range c2s {
					switch r.IntN(4) {
					case 0: // no row
						continue
					case 1: // a row whose only cell is deleted: returned, not live
						rows = append(rows, modelRow{c1, c2, false})
						mustApply(t, s, l, mut("p", row(c1, c2, "v=null@2")))
					default:
						rows = append(rows, modelRow{c1, c2, true})
						mustApply(t, s, l, mut("p", row(c1, c2, fmt.Sprintf("v=%d@1", r.IntN(100)), "w=x@1")))
					}
				}
			}
			// How each row reads on its own, to render the model's answers.
			render := make(map[string]string)
			liveness := make(map[string]bool)
			for _, m := range rows {
				req := readReq("p")
				req.Filter = &replicapb.ClusteringFilter{Equal: m.key()}
				resp, err := s.ReadPartition(l, req)
				if err != nil || len(resp.Rows) != 1 {
					t.Fatalf("reading row (%d,%q) alone: %v, %d rows", m.c1, m.c2, err, len(resp.GetRows()))
				}
				render[fmt.Sprint(m.key())] = format(l, resp)
				liveness[fmt.Sprint(m.key())] = m.live
			}

			for range 3000 {
				req := readReq("p")
				req.Limit = uint32(r.IntN(5))
				req.Reversed = r.IntN(2) == 1
				f := &replicapb.ClusteringFilter{}
				var eq []any
				switch r.IntN(3) {
				case 1:
					c1 := c1s[r.IntN(len(c1s))]
					f.Equal, eq = [][]byte{schema.EncodeInt(c1)}, []any{c1}
				case 2:
					c1, c2 := c1s[r.IntN(len(c1s))], c2s[r.IntN(len(c2s))]
					f.Equal, eq = [][]byte{schema.EncodeInt(c1), []byte(c2)}, []any{c1, c2}
				}
				randomBound := func() *replicapb.Bound {
					if len(eq) == 2 || r.IntN(2) == 0 {
						return nil
					}
					b := &replicapb.Bound{Inclusive: r.IntN(2) == 0}
					if len(eq) == 0 {
						b.Value = schema.EncodeInt(c1s[r.IntN(len(c1s))])
					} else {
						b.Value = []byte(c2s[r.IntN(len(c2s))])
					}
					return b
				}
				f.Lower, f.Upper = randomBound(), randomBound()
				req.Filter = f

				// The model's answer.
				col := &l.Clustering[min(len(eq), 1)]
				var want []modelRow
				for _, m := range rows {
					k := m.key()
					if len(eq) >= 1 && m.c1 != eq[0] || len(eq) == 2 && m.c2 != eq[1] {
						continue
					}
					if f.Lower != nil {
						if c := col.Type.Compare(k[len(eq)], f.Lower.Value); c < 0 || c == 0 && !f.Lower.Inclusive {
							continue
						}
					}
					if f.Upper != nil {
						if c := col.Type.Compare(k[len(eq)], f.Upper.Value); c > 0 || c == 0 && !f.Upper.Inclusive {
							continue
						}
					}
					want = append(want, m)
				}
				slices.SortFunc(want, func(a, b modelRow) int { return l.CompareClustering(a.key(), b.key()) })
				if req.Reversed {
					slices.Reverse(want)
				}
				var parts []string
				live := 0
				for _, m := range want {
					if req.Limit > 0 && live == int(req.Limit) {
						break
					}
					parts = append(parts, render[fmt.Sprint(m.key())])
					if m.live {
						live++
					}
				}

				resp, err := s.ReadPartition(l, req)
				if err != nil {
					t.Fatalf("read %v: %v", req, err)
				}
				if got, want := format(l, resp), strings.Join(parts, "; "); got != want {
					t.Fatalf("read of %s (equal %v, lower %v, upper %v, limit %d, reversed %t) returned\n  %s\nwant\n  %s",
						l.QualifiedName(), eq, f.Lower, f.Upper, req.Limit, req.Reversed, got, want)
				}

				// The same read in pages of a few rows, each resuming after the
				// last in the read's order, with what is left of the limit, as
				// a coordinator asks for them.
				pageBytes := uint32(1 + r.IntN(120))
				var paged []string
				var after *replicapb.ClusteringKey
				pages, got := 0, 0
				for {
					page := proto.Clone(req).(*replicapb.ReadRequest)
					page.PageBytes, page.After = pageBytes, after
					if req.Limit > 0 {
						page.Limit = req.Limit - uint32(got)
					}
					resp, err := s.ReadPartition(l, page)
					if err != nil {
						t.Fatalf("read page %d of %v: %v", pages, page, err)
					}
					pages++
					for _, row := range resp.Rows {
						paged = append(paged, format(l, &replicapb.ReadResponse{Rows: []*replicapb.Row{row}}))
						if liveness[fmt.Sprint(row.Clustering)] {
							got++
						}
					}
					if after = resp.StoppedAfter; after == nil || req.Limit > 0 && got == int(req.Limit) {
						break
					}
					if pages > 100 {
						t.Fatalf("the paged read of %v never ends", req)
					}
				}
				if got, want := strings.Join(paged, "; "), strings.Join(parts, "; "); got != want {
					t.Fatalf("paged read (%d bytes) of %s (equal %v, lower %v, upper %v, limit %d, reversed %t) returned\n  %s\nwant\n  %s",
						pageBytes, l.QualifiedName(), eq, f.Lower, f.Upper, req.Limit, req.Reversed, got, want)
				}
			}
		})
	}
}

// TestStoreReversedReadOfRowParts checks that a reversed read reassembles
// each row from its keys met in reverse: cells in column order, the row
// tombstone and marker kept, a shadowed cell dropped.
func TestStoreReversedReadOfRowParts(t *testing.T) {
	s, _ := openMem(t)
	l := newTable(t, testTableDDL+" WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")
	mustApply(t, s, l, mut("p",
		row(1, "a", "marker@5", "b=q@5", "v=1@5", "w=x@5"),
		row(1, "b", "deleted@4", "v=2@3", "w=y@6"),
		row(2, "a", "v=3@1"),
	))
	for _, tt := range []struct {
		reversed bool
		want     string
	}{
		{false, "(2,a) [v=3@1]; (1,a) marker@5 [b=[113]@5 v=1@5 w=x@5]; (1,b) deleted@4 [w=y@6]"},
		{true, "(1,b) deleted@4 [w=y@6]; (1,a) marker@5 [b=[113]@5 v=1@5 w=x@5]; (2,a) [v=3@1]"},
	} {
		req := readReq("p")
		req.Reversed = tt.reversed
		resp, err := s.ReadPartition(l, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := format(l, resp); got != tt.want {
			t.Errorf("read (reversed %t) returned\n  %s\nwant\n  %s", tt.reversed, got, tt.want)
		}
	}
}

// BenchmarkReadLastRows reads the last 10 rows of a 10,000-row partition:
// forwards, the whole partition is scanned for them; backwards (a reversed
// read with LIMIT 10), the scan stops after 10 rows, as cheap as reading the
// first 10 forwards.
func BenchmarkReadLastRows(b *testing.B) {
	s, _ := openMem(b)
	l := testTable(b)
	const n = 10000
	for i := 0; i < n; i += 500 {
		m := mut("p")
		for j := i; j < i+500; j++ {
			m.Rows = append(m.Rows, row(int32(j), "a", "v=1@1"))
		}
		if err := s.Apply(l, m); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("forward-all", func(b *testing.B) {
		req := readReq("p")
		for b.Loop() {
			if resp, err := s.ReadPartition(l, req); err != nil || len(resp.Rows) != n {
				b.Fatal(err)
			}
		}
	})
	b.Run("forward-limit-10", func(b *testing.B) {
		req := readReq("p")
		req.Limit = 10
		for b.Loop() {
			if resp, err := s.ReadPartition(l, req); err != nil || len(resp.Rows) != 10 {
				b.Fatal(err)
			}
		}
	})
	b.Run("reversed-limit-10", func(b *testing.B) {
		req := readReq("p")
		req.Reversed, req.Limit = true, 10
		for b.Loop() {
			if resp, err := s.ReadPartition(l, req); err != nil || len(resp.Rows) != 10 {
				b.Fatal(err)
			}
		}
	})
}
