package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kvnode/kvnode/schema"
)

func openFS(t *testing.T, fs vfs.FS) (*Store, error) {
	t.Helper()
	return Open("db", Options{FS: fs, CacheSize: 1 << 20, MemTableSize: 1 << 20})
}

// TestFormatUpgrade opens data written by a release of format 1 (no version recorded, values
// in the format-1 layout) and reads it back after the upgrade to format 2.
func TestFormatUpgrade(t *testing.T) {
	fs := vfs.NewMem()
	s, err := openFS(t, fs)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := readFormatVersion(fs, "db"); err != nil || v != FormatVersion {
		t.Fatalf("a new store records format %d, %v, want %d", v, err, FormatVersion)
	}
	tbl := newTable(t, testTableDDL)
	mustApply(t, s, tbl, mut("p", row(1, "a", "marker@5", "v=7@5", "w=null@6")), mut("p", row(2, "b", "deleted@4")))
	// Make it a format-1 store: values as format 1 wrote them, no version recorded.
	it, err := s.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var vKey []byte
	for valid := it.First(); valid; valid = it.Next() {
		if v := it.Value(); len(v) >= 1 && v[0]&flagExpiring != 0 {
			t.Errorf("key %x: a write without TTL stored flagExpiring", it.Key())
		}
		if k := it.Key(); strings.HasSuffix(string(k), string([]byte{rowCell, 'v'})) {
			vKey = append([]byte(nil), k...)
		}
	}
	it.Close()
	// Column v rewritten with a value in the exact format-1 layout: flags 0, the timestamp (9),
	// the value (the int 8).
	v1 := append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 9}, schema.EncodeInt(8)...)
	if err := s.db.Set(vKey, v1, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove("db/" + formatVersionFile); err != nil {
		t.Fatal(err)
	}
	want := format(tbl, mustRead(t, s, tbl, readReq("p")))
	if !strings.Contains(want, "v=8@9") {
		t.Fatalf("before the upgrade, read = %s, want the format-1 value v=8@9", want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = openFS(t, fs)
	if err != nil {
		t.Fatalf("Open of format-1 data: %v", err)
	}
	defer s.Close()
	if v, err := readFormatVersion(fs, "db"); err != nil || v != FormatVersion {
		t.Errorf("after the upgrade the store records format %d, %v, want %d", v, err, FormatVersion)
	}
	if got := format(tbl, mustRead(t, s, tbl, readReq("p"))); got != want {
		t.Errorf("after the upgrade, read = %s, want %s", got, want)
	}
}

func TestFormatTooNew(t *testing.T) {
	fs := vfs.NewMem()
	s, err := openFS(t, fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeFormatVersion(fs, "db", FormatVersion+1); err != nil {
		t.Fatal(err)
	}
	s, err = openFS(t, fs)
	if err == nil {
		s.Close()
		t.Fatal("Open of data in a newer format succeeded, want an error")
	}
	if !errors.Is(err, ErrFormatTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d", FormatVersion+1)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", FormatVersion)) {
		t.Errorf("Open of format-%d data = %v, want ErrFormatTooNew naming versions %d and %d", FormatVersion+1, err, FormatVersion+1, FormatVersion)
	}
}

func TestFormatVersionFileMalformed(t *testing.T) {
	fs := vfs.NewMem()
	s, err := openFS(t, fs)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, _ := fs.Create("db/"+formatVersionFile, vfs.WriteCategoryUnspecified)
	f.Write([]byte("two\n"))
	f.Close()
	if s, err := openFS(t, fs); err == nil || !strings.Contains(err.Error(), "want a version number") {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open with a malformed version file = %v, want an error naming it", err)
	}
}
