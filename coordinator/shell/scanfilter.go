package shell

import (
	"context"
	"math"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitioner"
	"github.com/kvnode/kvnode/schema"
)

// A scan's shape beyond plain rows: ALLOW FILTERING (schema.Read.Filters checked by the
// coordinator on each merged row, as rowMatches does for a partition's rows), PER PARTITION
// LIMIT, and GROUP BY a primary key prefix. A filtered scan reads its partitions in chunks of
// scanFilterChunk rows and its position advances over the rows it scanned, matched or not, so
// a page that ends on its time (scanner.page), with what matched or nothing, goes on after the
// last row scanned. Pacing counts the rows the replicas returned (readRange), not the rows that
// matched.

const (
	// scanFilterChunk is how many rows of a partition a filtered scan reads at once.
	scanFilterChunk = 256
)

// scanShape is what of a SELECT's shape a scanner applies to the rows it reads.
type scanShape struct {
	r        *schema.Read
	filtered bool
	// perPartition is PER PARTITION LIMIT of a SELECT without aggregates (0: none); the
	// aggregator applies it to aggregates and groups.
	perPartition int
	// partTaken is the rows of the partition at the scan's position (resuming inside it)
	// returned so far: by earlier pages when the page starts, then by this one.
	partTaken int
}

// shape sets the scanner up for the statement r, resuming inside a partition of which
// partTaken rows were returned.
func (s *scanner) shape(r *schema.Read, partTaken int) {
	s.r, s.filtered, s.partTaken = r, len(r.Filters) > 0, partTaken
	if !r.Aggregated() {
		s.perPartition = r.PerPartitionLimit
	}
}

// rangeLimit is the live rows to ask each replica for in one range read, for want rows.
func (s *scanner) rangeLimit(want int) int {
	if s.filtered {
		want = max(want, scanFilterChunk)
	}
	return min(want, scanReadRows)
}

// takePartition returns the rows of a partition of a range read that the page takes, at most
// room, filtered and within PER PARTITION LIMIT, and where the page stops when it stops in or
// right after this partition (nil: the partition is done and the page goes on to the next).
// whole says the partition is read from its start (otherwise the page resumes inside it).
func (s *scanner) takePartition(ctx context.Context, part coordinator.PartitionPages, room, answered int, now, dl time.Time, whole bool) ([]coordinator.ClusteredRow, *scanPos, error) {
	taken := 0
	if !whole {
		taken = s.partTaken
	}
	pw := room
	if s.distinct {
		pw = 1
	}
	if p := s.perPartition; p > 0 {
		pw = min(pw, p-taken)
	}
	if pw <= 0 { // the partition gave its PER PARTITION LIMIT on earlier pages
		s.partTaken = 0
		return nil, nil, nil
	}
	read := pw
	if s.filtered && !s.distinct {
		read = max(pw, scanFilterChunk)
	}
	got, err := s.mergePartition(ctx, part, read, answered, now, dl, whole)
	if err != nil {
		return nil, nil, err
	}
	if s.distinct && len(got) > 0 {
		// One row stands for the partition; the page goes on after the partition.
		got[0].Clustering = make([][]byte, len(s.t.Clustering))
		got = got[:1]
	}
	out := got
	if s.filtered {
		out = make([]coordinator.ClusteredRow, 0, min(len(got), pw))
		for _, row := range got {
			if len(out) == pw {
				break
			}
			if rowMatches(s.r, part.Key, row, now.Unix()) {
				out = append(out, row)
			}
		}
	} else if len(out) > pw {
		out = out[:pw]
	}
	after := scanPos{Token: part.Token, Key: part.Key}
	switch {
	case len(out) == pw && (s.distinct || s.perPartition > 0 && taken+pw == s.perPartition):
		// The partition gave all it may.
		s.partTaken = 0
		if len(out) == room {
			return out, &after, nil
		}
		return out, nil, nil
	case len(out) == pw: // the page is full inside the partition
		s.partTaken = taken + len(out)
		at := scanPosAfter(part, out[len(out)-1]) // static.go
		return out, &at, nil
	case len(got) < read || s.distinct: // the partition has no more rows
		s.partTaken = 0
		return out, nil, nil
	}
	// Filtered: the chunk ended before the partition did; the page goes on after the chunk.
	s.partTaken = taken + len(out)
	at := scanPosAfter(part, got[len(got)-1])
	return out, &at, nil
}

// groupScan runs a SELECT with GROUP BY over a scan (or an index query): the rows, filtered,
// folded into groups by the aggregator, reading page after page of sc. A page of the statement
// holds want groups (math.MaxInt: all) and, when paged, ends after the last row of its last
// group, where the next page resumes with the groups of that partition counted (partTaken when
// the page starts inside a partition; PER PARTITION LIMIT).
func (e *Executor) groupScan(ctx context.Context, r *schema.Read, sc scanPages, partTaken int, pos scanPos, returned, want int, paged bool, fingerprint uint64) (coordinator.Result, error) {
	agg := newAggregator(r, e.now().Unix())
	if pos.After != nil {
		agg.lastPK, agg.groupsInPart = pos.Key, partTaken
	}
	var keys [][][]byte // the partitions of the rows added, by agg.part
	// A page of few groups reads few rows: the scan's pages grow from the groups wanted.
	read := scanAggregatePage
	if want < scanAggregatePage {
		read = want + 1
	}
	for done := r.Tokens.Empty; !done; read = min(2*read, scanAggregatePage) {
		var rows []scanRow
		var err error
		if rows, pos, done, err = sc.page(ctx, pos, read); err != nil {
			return coordinator.Result{}, err
		}
		for _, x := range rows {
			if n := len(keys); n == 0 || !sameKey(keys[n-1], x.key) {
				keys = append(keys, x.key)
			}
			agg.part = len(keys) - 1
			if err := agg.add(x.key, x.row); err != nil {
				return coordinator.Result{}, err
			}
			if want == math.MaxInt || len(agg.out) < want {
				continue
			}
			var state []byte
			if paged && (r.Limit == 0 || returned+want < r.Limit) {
				f := agg.flushed
				pk := keys[f.part]
				at := scanPos{Token: partitioner.Token(partitioner.AppendKey(nil, pk)), Key: pk, After: f.clustering}
				if staticOnlyRow(coordinator.ClusteredRow{Clustering: f.clustering}) {
					at.After = nil // the partition's only row: go on after it
				}
				state = encodeScanPagingState(fingerprint, returned+want, f.groups, at)
			}
			return groupRows(r, agg.out[:want], state)
		}
	}
	out, err := agg.finish()
	if err != nil {
		return coordinator.Result{}, err
	}
	if len(out) > want {
		out = out[:want]
	}
	return groupRows(r, out, nil)
}

// groupRows returns a scan's groups as the statement's result, with paging state next.
func groupRows(r *schema.Read, groups [][][]byte, next []byte) (coordinator.Result, error) {
	rows := rowsOf(r, len(groups))
	copy(rows.Values, groups)
	if r.JSON {
		var err error
		if rows, err = jsonRows(r, rows); err != nil {
			return coordinator.Result{}, err
		}
	}
	return coordinator.Result{Kind: coordinator.ResultRows, Rows: rows, PagingState: next}, nil
}
