package replica

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

const collectionDDL = "CREATE TABLE ks.t (k text, c1 int, c2 text, a int, s set<text>, m map<int, text>, PRIMARY KEY ((k), c1, c2))"

// elems renders a read row's elements and collection tombstones: "s[x]=@5 m[1]=one@5 -s@4".
func elems(r *replicapb.Row) string {
	var parts []string
	for _, c := range r.Cells {
		v := string(c.Value)
		if c.Tombstone {
			v = "null"
		}
		switch {
		case c.Path == nil:
			parts = append(parts, fmt.Sprintf("%s=%x@%d", c.Column, c.Value, c.Timestamp))
		case c.Column == "m":
			parts = append(parts, fmt.Sprintf("m[%d]=%s@%d", int32(uint32(c.Path[0])<<24|uint32(c.Path[1])<<16|uint32(c.Path[2])<<8|uint32(c.Path[3])), v, c.Timestamp))
		default:
			parts = append(parts, fmt.Sprintf("%s[%s]=%s@%d", c.Column, c.Path, v, c.Timestamp))
		}
	}
	for _, d := range r.Collections {
		parts = append(parts, fmt.Sprintf("-%s@%d", d.Column, d.Timestamp))
	}
	return strings.Join(parts, " ")
}

func elem(col string, path []byte, value string, ts int64) *replicapb.Cell {
	c := &replicapb.Cell{Column: col, Path: path, Timestamp: ts}
	if value == "null" {
		c.Tombstone = true
	} else {
		c.Value = []byte(value)
	}
	return c
}

func TestCollectionElements(t *testing.T) {
	s, _ := openMem(t)
	tbl := newTable(t, collectionDDL)
	key := [][]byte{schema.EncodeInt(1), []byte("a")}
	r := func(cells []*replicapb.Cell, dels ...*replicapb.CollectionDeletion) *replicapb.Row {
		return &replicapb.Row{Clustering: key, Cells: cells, Collections: dels}
	}
	mustApply(t, s, tbl,
		mut("p", r([]*replicapb.Cell{elem("s", []byte("x"), "", 3), elem("s", []byte("y"), "", 3), elem("m", schema.EncodeInt(1), "one", 3)})),
		// s = {'z', ''} at 5: a collection tombstone at 4, then the elements (an empty one too).
		mut("p", r([]*replicapb.Cell{elem("s", []byte("z"), "", 5), elem("s", []byte{}, "", 5), {Column: "a", Value: schema.EncodeInt(7), Timestamp: 5}},
			&replicapb.CollectionDeletion{Column: "s", Timestamp: 4})),
		// DELETE m[2] at 6, m[-1] = 'neg' at 6.
		mut("p", r([]*replicapb.Cell{elem("m", schema.EncodeInt(2), "null", 6), elem("m", schema.EncodeInt(-1), "neg", 6)})),
	)
	// Through the wire, as a coordinator gets it.
	resp, err := s.ReadPartition(tbl, readReq("p"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := proto.Marshal(resp)
	resp = new(replicapb.ReadResponse)
	if err := proto.Unmarshal(b, resp); err != nil {
		t.Fatal(err)
	}
	// The shadowed elements x and y are gone; the row's cells are in cell.CompareColumns order.
	// Elements are in path byte order (a map's int keys too: the coordinator orders values).
	want := "a=00000007@5 m[1]=one@3 m[2]=null@6 m[-1]=neg@6 s[]=@5 s[z]=@5 -s@4"
	if len(resp.Rows) != 1 {
		t.Fatalf("read %d rows, want 1", len(resp.Rows))
	}
	if got := elems(resp.Rows[0]); got != want {
		t.Errorf("read = %s\nwant %s", got, want)
	}
	for _, c := range resp.Rows[0].Cells {
		if c.Column == "s" && c.Path == nil {
			t.Errorf("an element of s lost its (empty) path on the wire: %v", c)
		}
	}
	req := readReq("p")
	req.Reversed = true
	if rev, err := s.ReadPartition(tbl, req); err != nil || elems(rev.Rows[0]) != want {
		t.Errorf("reversed read = %v, %v; want %s", rev, err, want)
	}
}

func TestCollectionElementsRefused(t *testing.T) {
	s, _ := openMem(t)
	tbl := newTable(t, collectionDDL)
	key := [][]byte{schema.EncodeInt(1), []byte("a")}
	for _, tt := range []struct {
		cell *replicapb.Cell
		want string
	}{
		{&replicapb.Cell{Column: "s", Value: schema.EncodeSetText([]string{"x"}), Timestamp: 1}, "a cell without an element path"},
		{elem("a", []byte("x"), "", 1), "no non-frozen collection"},
		{elem("s", make([]byte, schema.MaxElementKey+1), "", 1), "set element of 65536 bytes: at most 65535 bytes"},
		{elem("m", []byte("x"), "v", 1), "map key"},
		{elem("s", []byte("x"), "v", 1), "set element with a value"},
	} {
		err := s.Apply(tbl, mut("p", &replicapb.Row{Clustering: key, Cells: []*replicapb.Cell{tt.cell}}))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Apply(%v) = %v, want an error containing %q", tt.cell, err, tt.want)
		}
	}
}

// TestFormat5DataReadsBack opens a store of format 5 (before non-frozen collections), whose
// tables had frozen collections only, and checks that its data reads back unchanged after the
// upgrade to format 6, beside elements written since.
func TestFormat5DataReadsBack(t *testing.T) {
	fs := vfs.NewMem()
	s, err := openFS(t, fs)
	if err != nil {
		t.Fatal(err)
	}
	old := newTable(t, "CREATE TABLE ks.t (k text, c1 int, c2 text, a int, f frozen<set<text>>, PRIMARY KEY ((k), c1, c2))")
	key := [][]byte{schema.EncodeInt(1), []byte("a")}
	mustApply(t, s, old, mut("p", &replicapb.Row{Clustering: key, Cells: []*replicapb.Cell{
		{Column: "a", Value: schema.EncodeInt(7), Timestamp: 5}, {Column: "f", Value: schema.EncodeSetText([]string{"x"}), Timestamp: 5}}}))
	want := format(old, mustRead(t, s, old, readReq("p")))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeFormatVersion(fs, "db", 5); err != nil {
		t.Fatal(err)
	}
	if s, err = openFS(t, fs); err != nil {
		t.Fatalf("Open of format-5 data: %v", err)
	}
	defer s.Close()
	if v, err := readFormatVersion(fs, "db"); err != nil || v != FormatVersion {
		t.Errorf("after the upgrade the store records format %d, %v, want %d", v, err, FormatVersion)
	}
	if got := format(old, mustRead(t, s, old, readReq("p"))); got != want {
		t.Errorf("after the upgrade, read = %s, want %s", got, want)
	}
	// The table gains a non-frozen set (ALTER TABLE ADD), whose elements sit beside the old cells.
	tbl := newTable(t, "CREATE TABLE ks.t (k text, c1 int, c2 text, a int, f frozen<set<text>>, s set<text>, PRIMARY KEY ((k), c1, c2))")
	mustApply(t, s, tbl, mut("p", &replicapb.Row{Clustering: key, Cells: []*replicapb.Cell{elem("s", []byte("y"), "", 6)}}))
	if got := elems(mustRead(t, s, tbl, readReq("p")).Rows[0]); got != "a=00000007@5 f=000000010000000178@5 s[y]=@6" {
		t.Errorf("after an element write, read = %s", got)
	}
}
