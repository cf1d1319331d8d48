package replica

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/proto/replicapb"
)

// expiring makes row's marker and cells expire at expires with ttl.
func expiring(r *replicapb.Row, ttl int32, expires int64) *replicapb.Row {
	if r.Marker != nil {
		r.MarkerTtl, r.MarkerExpires = ttl, expires
	}
	for _, c := range r.Cells {
		if !c.Tombstone {
			c.Ttl, c.Expires = ttl, expires
		}
	}
	return r
}

func TestExpiringCellsReadAndTravelAsTombstones(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s, _ := openMem(t)
	s.now = func() time.Time { return clock }
	tbl := newTable(t, testTableDDL)
	exp := clock.Unix() + 10
	mustApply(t, s, tbl,
		mut("p", row(1, "a", "w=old@4")),
		mut("p", expiring(row(1, "a", "marker@5", "v=1@5", "w=x@5"), 10, exp)),
		mut("p", row(2, "b", "v=2@5")), mut("p", expiring(row(2, "b", "marker@6"), 10, exp)),
	)
	resp, err := s.ReadPartition(tbl, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Rows[0]
	if r.GetMarkerTtl() != 10 || r.GetMarkerExpires() != exp || len(r.Cells) != 2 || r.Cells[0].Ttl != 10 || r.Cells[0].Expires != exp {
		t.Fatalf("before expiry, row (1,a) = %v, want a marker and cells with ttl 10 expiring at %d", r, exp)
	}
	clock = clock.Add(10 * time.Second)
	resp, err = s.ReadPartition(tbl, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	// (1,a): the expired cells travel as tombstones at their timestamps (the older w=old is
	// gone, merged away), the expired marker as itself; (2,b) lives on through v, written by
	// an UPDATE without TTL.
	want := "(1,a) marker@5 [v=null@5 w=null@5]; (2,b) marker@6 [v=2@5]"
	if got := format(tbl, resp); got != want {
		t.Errorf("after expiry, read = %s, want %s", got, want)
	}
	if resp.Tombstones != 2 {
		t.Errorf("after expiry, the read counted %d tombstones, want 2 (the expired cells)", resp.Tombstones)
	}
}

func TestExpiringMergeOperator(t *testing.T) {
	s, _ := openMem(t)
	tbl := newTable(t, testTableDDL)
	// At an equal timestamp the expiring cell beats a live one with greater bytes, in either
	// write order, and a tombstone beats the expiring cell.
	mustApply(t, s, tbl,
		mut("p", expiring(row(1, "a", "w=a@5"), 100, 1<<40)), mut("p", row(1, "a", "w=z@5")),
		mut("q", row(1, "a", "w=z@5")), mut("q", expiring(row(1, "a", "w=a@5"), 100, 1<<40)),
		mut("r", row(1, "a", "w=null@5")), mut("r", expiring(row(1, "a", "w=a@5"), 100, 1<<40)),
	)
	for pk, want := range map[string]string{"p": "(1,a) [w=a@5]", "q": "(1,a) [w=a@5]", "r": "(1,a) [w=null@5]"} {
		resp, err := s.ReadPartition(tbl, readReq(pk))
		if err != nil {
			t.Fatal(err)
		}
		if got := format(tbl, resp); got != want {
			t.Errorf("partition %s = %s, want %s", pk, got, want)
		}
	}
}

func TestApplyRefusesBadExpiry(t *testing.T) {
	s, _ := openMem(t)
	tbl := newTable(t, testTableDDL)
	for _, tt := range []struct {
		name string
		row  *replicapb.Row
		want string
	}{
		{"ttl without expiry", expiring(row(1, "a", "v=1@5"), 10, 0), "set together"},
		{"expiry without ttl", expiring(row(1, "a", "v=1@5"), 0, 100), "set together"},
		{"negative ttl", expiring(row(1, "a", "v=1@5"), -1, 100), "outside"},
		{"ttl over 20 years", expiring(row(1, "a", "marker@5"), cell.MaxTTL+1, 100), "outside"},
		{"ttl on a tombstone", &replicapb.Row{Clustering: row(1, "a").Clustering, Cells: []*replicapb.Cell{{Column: "v", Timestamp: 5, Tombstone: true, Ttl: 10, Expires: 100}}}, "tombstone"},
	} {
		err := s.Apply(tbl, mut("p", tt.row))
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Apply = %v, want a bad request about %q", tt.name, err, tt.want)
		}
	}
}

func TestValueFormats(t *testing.T) {
	// Format 1 values (no expiry) decode as before: a live cell, a marker, a tombstone
	// with and without its local deletion time.
	v1 := map[string]cell.Cell{
		"\x00\x00\x00\x00\x00\x00\x00\x00\x05abc":                              {Timestamp: 5, Value: []byte("abc")},
		"\x00\x00\x00\x00\x00\x00\x00\x00\x05":                                 {Timestamp: 5, Value: []byte{}},
		"\x01\x00\x00\x00\x00\x00\x00\x00\x05":                                 {Timestamp: 5, Tombstone: true},
		"\x03\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x07": {Timestamp: 5, Tombstone: true},
	}
	for enc, want := range v1 {
		got, err := decodeValue([]byte(enc))
		if err != nil || cell.Compare(got, want) != 0 {
			t.Errorf("decodeValue(%x) = %v, %v, want %v", enc, got, err, want)
		}
	}
	c := cell.Cell{Timestamp: 5, Value: []byte("abc"), TTL: 10, Expires: 1 << 33}
	enc := appendValue(nil, c, 77)
	got, err := decodeValue(enc)
	if err != nil || cell.Compare(got, c) != 0 {
		t.Errorf("decodeValue(appendValue(%v)) = %v, %v", c, got, err)
	}
	if at, ok := storedAt(enc); !ok || at != 77 {
		t.Errorf("storedAt = %d, %t, want 77, true", at, ok)
	}
	for _, bad := range []string{"\x04\x00\x00\x00\x00\x00\x00\x00\x05abc", "\x05" + string(enc[1:]), "\x10\x00\x00\x00\x00\x00\x00\x00\x05", "\x0c" + string(enc[1:])} {
		if _, err := decodeValue([]byte(bad)); err == nil {
			t.Errorf("decodeValue(%x) = nil error, want malformed", bad)
		}
	}
}

func TestPurgeExpired(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s, _ := openMem(t)
	s.now = func() time.Time { return clock }
	tbl := newTable(t, testTableDDL+" WITH gc_grace_seconds = 100")
	exp := clock.Unix() + 10
	mustApply(t, s, tbl,
		mut("p", expiring(row(1, "a", "marker@5", "v=1@5"), 10, exp)),
		mut("p", row(2, "b", "marker@5", "v=2@5")),
	)
	ctx := context.Background()
	purge := func(at time.Time) PurgeStats {
		t.Helper()
		st, err := s.Purge(ctx, tbl, at)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	keysBefore, _ := s.TableKeys(tbl.ID)
	// Not repaired: nothing expired goes, however old.
	if st := purge(clock.Add(time.Hour)); st.Expired != 0 {
		t.Errorf("purge without a repair removed %d expired keys, want 0", st.Expired)
	}
	// Repaired before the expiry: the expired data stays (the repair did not see it expired).
	if err := s.SetRepairedAt(tbl.ID, clock.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := purge(clock.Add(time.Hour)); st.Expired != 0 {
		t.Errorf("purge after a repair that started before the expiry removed %d keys, want 0", st.Expired)
	}
	// Repaired after the expiry, but gc_grace_seconds not yet past the expiry.
	if err := s.SetRepairedAt(tbl.ID, clock.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := purge(clock.Add(50 * time.Second)); st.Expired != 0 {
		t.Errorf("purge within gc_grace_seconds of the expiry removed %d keys, want 0", st.Expired)
	}
	if st := purge(clock.Add(time.Hour)); st.Expired != 2 {
		t.Errorf("purge after repair and gc_grace_seconds removed %d expired keys, want 2 (marker and cell)", st.Expired)
	}
	keysAfter, _ := s.TableKeys(tbl.ID)
	if keysAfter != keysBefore-2 {
		t.Errorf("table keys %d -> %d, want 2 fewer", keysBefore, keysAfter)
	}
	resp, err := s.ReadPartition(tbl, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := format(tbl, resp), "(2,b) marker@5 [v=2@5]"; got != want {
		t.Errorf("after the purge, read = %s, want %s", got, want)
	}
}

// TestRepairShipsExpiredCellsAsTombstones: what repair fetches and hashes of a partition carries
// an expired cell as the tombstone at its timestamp, so the replica it is applied to drops an
// older live value.
func TestRepairShipsExpiredCellsAsTombstones(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	src, _ := openMem(t)
	dst, _ := openMem(t)
	src.now = func() time.Time { return clock }
	dst.now = func() time.Time { return clock }
	tbl := newTable(t, testTableDDL)
	mustApply(t, src, tbl, mut("p", expiring(row(1, "a", "w=new@5"), 10, clock.Unix()+10)))
	mustApply(t, dst, tbl, mut("p", row(1, "a", "marker@1", "w=old@4")))
	clock = clock.Add(10 * time.Second)
	m, err := src.FetchPartition(tbl, tokenOf("p"), [][]byte{[]byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Rows[0].Cells[0]; !c.Tombstone || c.Timestamp != 5 || c.Ttl != 0 {
		t.Fatalf("FetchPartition after expiry = %v, want a tombstone at 5", m)
	}
	mustApply(t, dst, tbl, m)
	if got, want := format(tbl, mustRead(t, dst, tbl, readReq("p"))), "(1,a) marker@1 [w=null@5]"; got != want {
		t.Errorf("after the repair the stale replica reads %s, want %s", got, want)
	}
}
