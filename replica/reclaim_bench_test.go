package replica

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvnode/kvnode/proto/replicapb"
)

var reclaimBytes = flag.Int64("reclaim.bytes", 64<<20, "BenchmarkExpiredReclaim: bytes of values written with a TTL")

// storeClock is a settable clock for a store.
type storeClock struct{ t time.Time }

func (c *storeClock) Now() time.Time { return c.t }

// dirSize is the bytes of the files under dir, and of its sstables.
func dirSize(tb testing.TB, dir string) (all, sst int64) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			all += info.Size()
			if filepath.Ext(path) == ".sst" {
				sst += info.Size()
			}
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return all, sst
}

// BenchmarkExpiredReclaim measures the disk space of expired data given back: it writes
// -reclaim.bytes of 1 KiB values with a 60-second TTL to a store on disk (1000 partitions),
// lets them expire, records a repair after the expiry, purges (gc_grace_seconds = 0; the purge
// compacts the table, having deleted more than a tenth of its keys), and reports the data directory's size, all of it and its sstables, after the writes
// and a flush (-written) and after the purge and reopening the store (-after). Run it once: go test ./replica -run '^$'
// -bench ExpiredReclaim -benchtime 1x -reclaim.bytes 1073741824.
func BenchmarkExpiredReclaim(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		clock := &storeClock{t: time.Unix(1_800_000_000, 0)}
		s, err := Open(dir, Options{NoSync: true, Clock: clock})
		if err != nil {
			b.Fatal(err)
		}
		tbl := newTable(b, testTableDDL+" WITH gc_grace_seconds = 0")
		value := make([]byte, 1024)
		rng := rand.NewChaCha8([32]byte{})
		rows := *reclaimBytes / int64(len(value))
		exp := clock.t.Unix() + 60
		const perMutation = 16
		for i := int64(0); i < rows; i += perMutation {
			pk := fmt.Sprintf("p%d", (i/perMutation)%1000)
			m := mut(pk)
			for j := range int64(perMutation) {
				rng.Read(value) // incompressible, as much application data is
				r := &replicapb.Row{Clustering: row(int32(i+j), "c").Clustering, Marker: ts(5),
					MarkerTtl: 60, MarkerExpires: exp,
					Cells: []*replicapb.Cell{{Column: "b", Value: append([]byte(nil), value...), Timestamp: 5, Ttl: 60, Expires: exp}}}
				m.Rows = append(m.Rows, r)
			}
			if err := s.Apply(tbl, m); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			b.Fatal(err)
		}
		written, writtenSST := dirSize(b, dir)
		clock.t = clock.t.Add(2 * time.Minute)
		if err := s.SetRepairedAt(tbl.ID, clock.t); err != nil {
			b.Fatal(err)
		}
		clock.t = clock.t.Add(time.Minute)
		st, err := s.Purge(context.Background(), tbl, clock.t)
		if err != nil {
			b.Fatal(err)
		}
		if !st.Compacted {
			b.Fatalf("the purge of every key did not compact: %+v", st)
		}
		live := s.db.Metrics().Total().TablesSize
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		// Pebble deletes obsolete files in the background, paced: reopening deletes what is left.
		if s, err = Open(dir, Options{NoSync: true, Clock: clock}); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		after, afterSST := dirSize(b, dir)
		b.ReportMetric(float64(live)/(1<<20), "MiB-live-sst-after")
		b.ReportMetric(float64(written)/(1<<20), "MiB-dir-written")
		b.ReportMetric(float64(writtenSST)/(1<<20), "MiB-sst-written")
		b.ReportMetric(float64(after)/(1<<20), "MiB-dir-after")
		b.ReportMetric(float64(afterSST)/(1<<20), "MiB-sst-after")
		b.ReportMetric(float64(st.Expired), "keys-purged")
	}
}
