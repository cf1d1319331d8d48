package replica

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// tableWithID is the test table under another id.
func tableWithID(t *testing.T, id schema.TableID) *schema.Table {
	t.Helper()
	st, err := cql.ParseStatement(testTableDDL)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := schema.NewTable(st.(*cql.CreateTableStmt), "ks", id, schema.Version{Timestamp: 1, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestDropTableDeletesOnlyItsKeys(t *testing.T) {
	s, fs := openMem(t)
	ids := []schema.TableID{1, testTableID, testTableID + 1, math.MaxUint64}
	for _, id := range ids {
		tbl := tableWithID(t, id)
		for _, pk := range []string{"a", "b", "c"} {
			m := mut(pk, row(1, "x", "marker@1", "v=1@1"), row(2, "y", "w=hi@2"))
			m.TableId = uint64(id)
			if err := s.Apply(tbl, m); err != nil {
				t.Fatal(err)
			}
		}
		if id == testTableID {
			if err := s.db.Flush(); err != nil { // some of the data in an sstable, some in the memtable
				t.Fatal(err)
			}
		}
	}
	count := func(id schema.TableID) int {
		n, err := s.TableKeys(id)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count(testTableID + 1)
	if got, err := s.TableIDs(); err != nil || !slices.Equal(got, ids) {
		t.Fatalf("TableIDs() = %v, %v; want %v", got, err, ids)
	}
	for _, drop := range []schema.TableID{testTableID, math.MaxUint64} {
		if count(drop) == 0 {
			t.Fatalf("table id %d has no keys before the drop", drop)
		}
		if err := s.DropTable(drop); err != nil {
			t.Fatalf("DropTable(%d): %v", drop, err)
		}
		if n := count(drop); n != 0 {
			t.Errorf("after DropTable(%d) the table still has %d keys", drop, n)
		}
	}
	if n := count(testTableID + 1); n != before {
		t.Errorf("the next table id has %d keys after its neighbours were dropped, want %d", n, before)
	}
	if n := count(1); n == 0 {
		t.Errorf("table id 1 lost its keys when other tables were dropped")
	}
	if got, _ := s.TableIDs(); !slices.Equal(got, []schema.TableID{1, testTableID + 1}) {
		t.Errorf("TableIDs() after the drops = %v, want [1 %d]", got, testTableID+1)
	}
	if err := s.DropTable(testTableID); err != nil {
		t.Errorf("dropping a dropped table again: %v, want nil", err)
	}

	// The drop is durable.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, _ := s.TableKeys(testTableID); n != 0 {
		t.Errorf("after reopening, the dropped table has %d keys", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.DropTable(1); err == nil {
		t.Errorf("DropTable on a closed store: nil error")
	}
}

// tableSeriesCount counts the series of the service's collector labelled table ks.t.
func tableSeriesCount(t *testing.T, svc *Service) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(svc.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" && l.GetValue() == "t" {
					n++
				}
			}
		}
	}
	return n
}

func TestServiceDropTableForgetsItsState(t *testing.T) {
	svc, clock := testService(t, 100, 100)
	for _, op := range []schema.Op{schema.OpRead, schema.OpWrite} {
		if _, err := svc.Check(testTableID, tokenOf("p"), op, 0.5, clock.t); err != nil {
			t.Fatal(err)
		}
	}
	if resp, _ := svc.Mutate(context.Background(), mutateReq(nil, 1)); resp.Status != replicapb.Status_STATUS_OK {
		t.Fatal(resp)
	}
	if tableSeriesCount(t, svc) == 0 {
		t.Fatal("no series for ks.t before the drop")
	}
	var dropped []uint32
	for _, op := range []schema.Op{schema.OpRead, schema.OpWrite} {
		st, _ := svc.ops.lookup(testTableID, op)
		dropped = append(dropped, st.label)
	}
	if err := svc.DropTable(testTableID); err != nil {
		t.Fatal(err)
	}
	if n := tableSeriesCount(t, svc); n != 0 {
		t.Errorf("%d series for ks.t after its drop, want none", n)
	}
	if countRows(t, svc) != 0 {
		t.Errorf("the dropped table's partition still has rows")
	}
	// A request that resolved the table before the drop counts nowhere visible.
	if _, err := svc.Check(testTableID, tokenOf("p"), schema.OpWrite, 0.5, clock.t); err != nil {
		t.Fatal(err)
	}
	if n := tableSeriesCount(t, svc); n != 0 {
		t.Errorf("a late request on the dropped table brought back %d series", n)
	}
	// A new table never gets the dropped table's labels.
	other := tableWithID(t, testTableID+1)
	other.RateLimit = schema.RateLimit{MaxWritesPerSecond: 100}
	st, err := svc.ops.get(other, schema.OpWrite)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.label; slices.Contains(dropped, got) {
		t.Errorf("a new table got label %d, one of the dropped table's %v", got, dropped)
	}
}

// TestLabelsStopAtMaxLabel: the limiter keeps labels up to partitionlimit.MaxLabel apart, so
// the last pair gets MaxLabel and the next is refused with an error naming the table, while
// pairs that have a label keep it.
func TestLabelsStopAtMaxLabel(t *testing.T) {
	var ops opStates
	ops.next = partitionlimit.MaxLabel
	a, b := tableWithID(t, testTableID), tableWithID(t, testTableID+1)
	st, err := ops.get(a, schema.OpWrite)
	if err != nil || st.label != partitionlimit.MaxLabel {
		t.Fatalf("the last label: %+v, %v, want label %d", st, err, partitionlimit.MaxLabel)
	}
	if st, err := ops.get(b, schema.OpWrite); err == nil || !strings.Contains(err.Error(), "no limiter label left") || !strings.Contains(err.Error(), b.Name) {
		t.Errorf("a pair past MaxLabel: %+v, error %v, want an error saying no label is left for the table", st, err)
	}
	if again, err := ops.get(a, schema.OpWrite); err != nil || again != st {
		t.Errorf("the pair with the last label, asked again: %+v, %v, want its state", again, err)
	}
}
