package replica

import (
	"bytes"
	"container/heap"
	"fmt"
	"slices"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// Range tombstones are stored under their partition, between the partition
// tombstone and the rows:
//
//	partition prefix, kindRangeTombstone, end, start bound, end bound
//
// where end is where the tombstone ends in the partition's key space (the
// exclusive end of its span, after the partition prefix), escaped and
// terminated like a text component, and a bound is a count byte, that many
// clustering components (encoded as in row keys) and an inclusive byte (0 or
// 1). The value is a tombstone in the stored value format, so two writes of
// the same range merge to the newer one like any other key. Ordered by their
// end, the tombstones that can cover rows from some point on are the ones
// from a seek to that point: a page of a read skips those that end before it.
const kindRangeTombstone byte = 0x18

// rtSpan is a range tombstone as the half-open interval [lo, hi) of row keys
// (the partition's row prefix and an encoded clustering key) it covers.
type rtSpan struct {
	lo, hi []byte
	ts     int64
	pb     *replicapb.RangeTombstone
}

// appendRangeTombstoneKey appends the part of the storage key of rt after
// the partition prefix to dst: kindRangeTombstone, end (the end of rt's span
// after the partition prefix) and rt's bounds, which must be well-formed for t
// (rangeSpan checks them).
func appendRangeTombstoneKey(t *schema.Table, dst, end []byte, rt *replicapb.RangeTombstone) []byte {
	dst = append(dst, kindRangeTombstone)
	dst = appendEscaped(dst, end)
	for _, b := range []*replicapb.ClusteringBound{rt.GetStart(), rt.GetEnd()} {
		prefix := b.GetPrefix()
		dst = append(dst, byte(len(prefix)))
		for i, c := range prefix {
			dst = appendClustering(dst, t.Clustering[i].Type, t.Clustering[i].Descending, nonNil(c))
		}
		inclusive := byte(0)
		if b.GetInclusive() || len(prefix) == 0 {
			inclusive = 1
		}
		dst = append(dst, inclusive)
	}
	return dst
}

// decodeRangeTombstone decodes the part of a range tombstone's key after
// kindRangeTombstone.
func decodeRangeTombstone(t *schema.Table, src []byte, ts int64) (*replicapb.RangeTombstone, error) {
	_, src, err := decodeEscaped(src)
	if err != nil {
		return nil, err
	}
	rt := &replicapb.RangeTombstone{Timestamp: ts}
	for _, b := range []**replicapb.ClusteringBound{&rt.Start, &rt.End} {
		if len(src) < 1 || int(src[0]) > len(t.Clustering) {
			return nil, errBadKey
		}
		n := int(src[0])
		src = src[1:]
		bound := &replicapb.ClusteringBound{Prefix: make([][]byte, n)}
		for i := range n {
			var err error
			if bound.Prefix[i], src, err = decodeClustering(src, t.Clustering[i].Type, t.Clustering[i].Descending); err != nil {
				return nil, err
			}
		}
		if len(src) < 1 || src[0] > 1 {
			return nil, errBadKey
		}
		bound.Inclusive = src[0] == 1
		src = src[1:]
		*b = bound
	}
	if len(src) != 0 {
		return nil, errBadKey
	}
	return rt, nil
}

// rangeSpan returns the row keys [lo, hi) that rt covers in the partition
// whose row keys start with rows (the partition prefix and kindRow),
// checking rt's bounds against t. Its errors are for the caller to wrap with
// badRequest.
func rangeSpan(t *schema.Table, rows []byte, rt *replicapb.RangeTombstone) (lo, hi []byte, err error) {
	key := func(what string, b *replicapb.ClusteringBound) ([]byte, error) {
		prefix := b.GetPrefix()
		if len(prefix) > len(t.Clustering) {
			return nil, fmt.Errorf("%s bound has %d clustering components, the table has %d (%s)", what, len(prefix), len(t.Clustering), names(t.Clustering))
		}
		k, err := appendClusteringKey(t, rows[:len(rows):len(rows)], prefix)
		if err != nil {
			return nil, fmt.Errorf("%s bound: %w", what, err)
		}
		return k, nil
	}
	if lo, err = key("start", rt.GetStart()); err != nil {
		return nil, nil, err
	}
	if len(rt.GetStart().GetPrefix()) > 0 && !rt.GetStart().GetInclusive() {
		lo = prefixEnd(lo)
	}
	if hi, err = key("end", rt.GetEnd()); err != nil {
		return nil, nil, err
	}
	if len(rt.GetEnd().GetPrefix()) == 0 || rt.GetEnd().GetInclusive() {
		hi = prefixEnd(hi)
	}
	return lo, hi, nil
}

// coverFragment is a piece of a partition's row key space and the newest
// range tombstone over it.
type coverFragment struct {
	lo, hi []byte
	ts     int64
}

// coverOf returns, for spans that may overlap, the sorted, disjoint fragments
// of row key space they cover, each with the newest timestamp of the spans
// over it: a sweep over the spans' ends with a heap of the open spans, so
// O(n log n) however they overlap.
func coverOf(spans []rtSpan) []coverFragment {
	if len(spans) == 0 {
		return nil
	}
	points := make([][]byte, 0, 2*len(spans))
	for _, s := range spans {
		points = append(points, s.lo, s.hi)
	}
	slices.SortFunc(points, bytes.Compare)
	points = slices.CompactFunc(points, bytes.Equal)
	byLo := slices.Clone(spans)
	slices.SortFunc(byLo, func(a, b rtSpan) int { return bytes.Compare(a.lo, b.lo) })

	var (
		open openSpans
		out  []coverFragment
		next int
	)
	for i := 0; i+1 < len(points); i++ {
		p := points[i]
		for next < len(byLo) && bytes.Compare(byLo[next].lo, p) <= 0 {
			heap.Push(&open, byLo[next])
			next++
		}
		for open.Len() > 0 && bytes.Compare(open[0].hi, p) <= 0 {
			heap.Pop(&open)
		}
		// The newest open span may end before p while an older one is still
		// open: drop ended spans lazily, from the top only, and check the top.
		if open.Len() == 0 {
			continue
		}
		ts := open[0].ts
		if n := len(out); n > 0 && out[n-1].ts == ts && bytes.Equal(out[n-1].hi, p) {
			out[n-1].hi = points[i+1]
			continue
		}
		out = append(out, coverFragment{lo: p, hi: points[i+1], ts: ts})
	}
	return out
}

// openSpans is a max-heap of spans by timestamp.
type openSpans []rtSpan

func (h openSpans) Len() int           { return len(h) }
func (h openSpans) Less(i, j int) bool { return h[i].ts > h[j].ts }
func (h openSpans) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *openSpans) Push(x any)        { *h = append(*h, x.(rtSpan)) }
func (h *openSpans) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// coverAt returns the newest range tombstone timestamp over row key k, or
// cell.NoTimestamp: a binary search, so it serves a scan in either direction.
func coverAt(frags []coverFragment, k []byte) int64 {
	i, _ := slices.BinarySearchFunc(frags, k, func(f coverFragment, k []byte) int {
		if bytes.Compare(f.hi, k) <= 0 {
			return -1
		}
		return 1
	})
	if i < len(frags) && bytes.Compare(frags[i].lo, k) <= 0 {
		return frags[i].ts
	}
	return cell.NoTimestamp
}
