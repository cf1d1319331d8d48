package replica

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The data format version. A store records the version of the format its data is in, in the
// file FORMAT_VERSION of its data directory (a decimal number and a newline). Open reads it
// before pebble opens the database, refuses data newer than it knows, and upgrades older data
// before the store serves anything. A file, not a key, so that damage to the database cannot
// hide the version, and an older release's data (which has no file) reads as version 1.
//
//	1  (no file) cells, markers and tombstones with write timestamps; tombstones with their
//	   local deletion time (value.go).
//	2  adds expiring cells and row markers (flagExpiring: TTL, expiry, local store time). Every
//	   value of format 1 is a value of format 2, so the upgrade only records the new version.
//	3  changes no stored value: it says the node decodes the schema's service levels, role
//	   grants and keyspace rate limits (schema.FormatLevels), which coordinators refuse while a
//	   member of an older format remains. The upgrade only records the new version.
//	4  changes no stored value: it says the node decodes columns of the duration, frozen
//	   collection and tuple types in the schema (schema.FormatTypes), which coordinators refuse
//	   while a member of an older format remains. The upgrade only records the new version.
//	5  changes no stored value: it says the node decodes user-defined types in the schema
//	   (schema.FormatUDT), which coordinators refuse while a member of an older format
//	   remains. The upgrade only records the new version.
//	6  changes no stored value: it says the node encodes user types in clustering keys (a user
//	   type's key component ends with a marker, keyparam.go) and accepts them in primary keys
//	   (schema.FormatUDTKeys), which coordinators refuse while a member of an older format
//	   remains. The upgrade only records the new version.
//	7  adds the elements and collection tombstones of non-frozen collections (key.go:
//	   rowCollectionDeletion, rowElement), which a release of an older format would take for
//	   malformed keys; schema.FormatCollections keeps such tables away from older members. Every
//	   key of format 6 is a key of format 7, so the upgrade only records the new version.
//	8  changes no stored value: it says the node decodes keyspaces under
//	   NetworkTopologyStrategy and places their replicas per data center (schema.FormatNTS),
//	   which coordinators refuse while a member of an older format remains. The upgrade only
//	   records the new version.
//	9  adds Paxos state of lightweight transactions, in the reserved key space of table id 0
//	   (paxos.go); it changes no table data. It says the node serves the Paxos exchanges
//	   (schema.FormatLWT), which coordinators refuse to start while a member of an older
//	   format remains. The upgrade only records the new version.
//	10 adds counter cells (flagCounter, value.go: per-replica shards merged by the newest
//	   clock), which a release of an older format would take for malformed values;
//	   schema.FormatCounters keeps counter tables away from older members, and the node serves
//	   counter_update. Every value of format 9 is a value of format 10, so the upgrade only
//	   records the new version.
//	11 adds the static rows of tables with static columns (static.go: kindStatic), which a
//	   release of an older format would take for malformed keys; schema.FormatStatic keeps such
//	   tables away from older members. The upgrade only records the new version.
//	12 adds secondary index entries and build states in the reserved key space of table id 0
//	   (index.go); it changes no table data. schema.FormatIndexes keeps indexes away from older
//	   members. The upgrade only records the new version.
const (
	// FormatVersion is the data format this release writes.
	FormatVersion = 12
	// formatVersionUnrecorded is the version of data written before versions were recorded.
	formatVersionUnrecorded = 1
	// formatVersionFile is the file in the data directory that records the version.
	formatVersionFile = "FORMAT_VERSION"
)

// ErrFormatTooNew is wrapped by the error of Open on data of a newer format than FormatVersion.
var ErrFormatTooNew = errors.New("replica: data format too new")

// readFormatVersion returns the format version recorded in dir, or formatVersionUnrecorded.
func readFormatVersion(fs vfs.FS, dir string) (int, error) {
	f, err := fs.Open(fs.PathJoin(dir, formatVersionFile))
	if oserrorNotExist(err) {
		return formatVersionUnrecorded, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the data format version: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return 0, fmt.Errorf("read the data format version: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < formatVersionUnrecorded {
		return 0, fmt.Errorf("the data format version file %s holds %q, want a version number", fs.PathJoin(dir, formatVersionFile), b)
	}
	return v, nil
}

// checkFormatVersion refuses data in dir newer than FormatVersion; it returns the data's version.
func checkFormatVersion(fs vfs.FS, dir string) (int, error) {
	v, err := readFormatVersion(fs, dir)
	if err != nil {
		return 0, err
	}
	if v > FormatVersion {
		return v, fmt.Errorf("%w: the data in %s is in format version %d, and this release of kvnode reads format versions up to %d: run a release that knows version %d (or newer) on this data directory",
			ErrFormatTooNew, dir, v, FormatVersion, v)
	}
	return v, nil
}

// upgradeFormat brings data of version from up to FormatVersion and records it, durably.
func upgradeFormat(fs vfs.FS, dir string, from int) error {
	if from == FormatVersion {
		return nil
	}
	// From 1 to 2: format 2 only adds a flag that format 1 never sets, and 3 changes no stored
	// value, so there is nothing to rewrite; recording the version is the upgrade.
	return writeFormatVersion(fs, dir, FormatVersion)
}

// writeFormatVersion records version v in dir atomically (a temporary file renamed over it).
func writeFormatVersion(fs vfs.FS, dir string, v int) error {
	path := fs.PathJoin(dir, formatVersionFile)
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("record data format version %d: %w", v, err)
	}
	_, err = io.WriteString(f, strconv.Itoa(v)+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("record data format version %d: %w", v, err)
	}
	return nil
}
