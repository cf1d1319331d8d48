package schema

import (
	"strings"
	"testing"
)

// python3xExport is a table as the Python driver (3.25) exports it from a node reporting
// release 3.0.8: Cassandra 3.x's option names, every option written out.
const python3xExport = `CREATE TABLE ks.events (
    k text,
    c int,
    v text,
    PRIMARY KEY (k, c)
) WITH CLUSTERING ORDER BY (c DESC)
    AND bloom_filter_fp_chance = 0.01
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND comment = ''
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4'}
    AND compression = {'chunk_length_in_kb': '64', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}
    AND crc_check_chance = 1.0
    AND dclocal_read_repair_chance = 0.0
    AND gc_grace_seconds = 864000
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair_chance = 0.0
    AND speculative_retry = '99PERCENTILE';`

// cassandra41Describe is a table as Cassandra 4.1's DESCRIBE writes it: 4.x option names.
const cassandra41Describe = `CREATE TABLE ks.logs (
    k text PRIMARY KEY,
    v text
) WITH additional_write_policy = '99p'
    AND bloom_filter_fp_chance = 0.1
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND cdc = false
    AND comment = 'application logs'
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}
    AND compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}
    AND memtable = 'default'
    AND crc_check_chance = 1.0
    AND extensions = {}
    AND gc_grace_seconds = 3600
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '95p';`

func TestCompatOptionsAccepted(t *testing.T) {
	s := mustBuild(t, ksDDL+python3xExport+"\n"+cassandra41Describe)
	ev, _ := s.Table("ks", "events")
	if got := ev.setOptions(); len(got) != 0 {
		t.Errorf("the Python driver's export of a table with default options set %v, want none (all defaults)", got)
	}
	logs, _ := s.Table("ks", "logs")
	for name, want := range map[string]string{
		OptionComment:             "'application logs'",
		OptionBloomFilterFPChance: "0.1",
		OptionCompaction:          "{'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}",
		OptionCompression:         "{'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}",
		OptionReadRepair:          "'BLOCKING'",
		OptionCDC:                 "false",
		OptionMinIndexInterval:    "128",
	} {
		v, ok := logs.Option(name)
		if !ok || v.CQL() != want {
			t.Errorf("Option(%s) = %s, %v, want %s", name, v.CQL(), ok, want)
		}
	}
	if logs.GCGraceSeconds() != 3600 || logs.SpeculativeRetry().String() != "95p" {
		t.Errorf("gc_grace_seconds %d, speculative_retry %s, want 3600 and 95p", logs.GCGraceSeconds(), logs.SpeculativeRetry())
	}
}

func TestCompatOptionsShortNamesAndAlter(t *testing.T) {
	s := mustBuild(t, ksDDL+"CREATE TABLE ks.t (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy'} AND compression = {'sstable_compression': 'SnappyCompressor'} AND caching = {'rows_per_partition': 10}")
	tb, _ := s.Table("ks", "t")
	for name, want := range map[string]string{
		OptionCompaction:  "{'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy'}",
		OptionCompression: "{'class': 'org.apache.cassandra.io.compress.SnappyCompressor'}",
		OptionCaching:     "{'keys': 'ALL', 'rows_per_partition': '10'}",
	} {
		if v, _ := tb.Option(name); v.CQL() != want {
			t.Errorf("Option(%s) = %s, want %s", name, v.CQL(), want)
		}
	}
	s2, err := apply(s, "ALTER TABLE t WITH comment = 'hello' AND compaction = {'class': 'SizeTieredCompactionStrategy', 'max_threshold': 32, 'min_threshold': 4}", 50)
	if err != nil {
		t.Fatal(err)
	}
	tb2, _ := s2.Table("ks", "t")
	if got := strings.Join(tb2.setOptions(), ","); got != "caching,comment,compression" {
		t.Errorf("after ALTER back to the default compaction and a comment, the options set are %s, want caching,comment,compression", got)
	}
	if got := strings.Join(tb.setOptions(), ","); got != "caching,compaction,compression" {
		t.Errorf("ALTER changed the table it altered: its options are now %s", got)
	}
}

func TestCompatOptionErrors(t *testing.T) {
	for _, tt := range []struct{ opt, want string }{
		{"comment = 5", "comment = 5 is not a string"},
		{"bloom_filter_fp_chance = 0", "bloom_filter_fp_chance = 0 is out of range: a probability from 0 (excluded) to 1"},
		{"bloom_filter_fp_chance = 1.5", "bloom_filter_fp_chance = 1.5 is out of range: a probability from 0 (excluded) to 1"},
		{"crc_check_chance = 'x'", "crc_check_chance = 'x' is not a number"},
		{"read_repair_chance = -0.1", "read_repair_chance = -0.1 is out of range: a probability from 0 to 1"},
		{"read_repair = 'SOMETIMES'", "read_repair = 'SOMETIMES' is not a read repair strategy (valid: 'BLOCKING', 'NONE')"},
		{"min_index_interval = 0", "min_index_interval = 0 is out of range: from 1 to 2147483647"},
		{"max_index_interval = 1.5", "max_index_interval = 1.5 is not a whole number"},
		{"min_index_interval = 4096", "min_index_interval = 4096 is greater than max_index_interval = 2048"},
		{"memtable_flush_period_in_ms = -1", "memtable_flush_period_in_ms = -1 is out of range: from 0 to 2147483647"},
		{"memtable_flush_period_in_ms = 99999999999", "memtable_flush_period_in_ms = 99999999999 is out of range: from 0 to 2147483647"},
		{"compaction = 'LeveledCompactionStrategy'", "compaction = 'LeveledCompactionStrategy' is not a map"},
		{"compaction = {'max_threshold': 32}", "compaction = {'max_threshold': 32} has no 'class' (the compaction strategy)"},
		{"compaction = {'class': 'Fast'}", "compaction = {'class': 'Fast'}: unknown compaction strategy 'Fast' (valid: SizeTieredCompactionStrategy, LeveledCompactionStrategy, TimeWindowCompactionStrategy, DateTieredCompactionStrategy, UnifiedCompactionStrategy)"},
		{"compaction = {'class': 'LeveledCompactionStrategy', 'class': 'x'}", "compaction = {'class': 'LeveledCompactionStrategy'...: key 'class' is given twice"},
		{"compression = {'chunk_length_in_kb': 3, 'class': 'LZ4Compressor'}", "compression = {'chunk_length_in_kb': 3, 'class': 'L...: chunk_length_in_kb '3' is not a power of two"},
		{"compression = {'class': 'BrotliCompressor'}", "compression = {'class': 'BrotliCompressor'}: unknown compressor 'BrotliCompressor' (valid: LZ4Compressor, SnappyCompressor, DeflateCompressor, ZstdCompressor, NoopCompressor)"},
		{"caching = {'keys': 'SOME'}", "caching = {'keys': 'SOME'}: keys 'SOME' is not 'ALL' or 'NONE'"},
		{"caching = {'rows_per_partition': 0}", "caching = {'rows_per_partition': 0}: rows_per_partition '0' is not 'ALL', 'NONE' or a positive number"},
		{"caching = {'rows': 'ALL'}", "caching = {'rows': 'ALL'}: unknown key 'rows' (valid: 'keys', 'rows_per_partition')"},
		{"cdc = true", "cdc = true is not supported: kvnode has no change data capture"},
		{"cdc = 1", "cdc = 1 is not a boolean"},
		{"additional_write_policy = '101p'", "additional_write_policy = '101p': the percentile must be above 0 and below 100; want a percentile such as '99p' or '99PERCENTILE' (above 0, below 100), a whole number of milliseconds such as '50ms', 'ALWAYS', 'NONE', or MIN or MAX of a percentile and a delay such as 'MIN(99p,50ms)'"},
		{"memtable = 'skiplist'", "memtable = 'skiplist' is not a memtable configuration (valid: 'default')"},
		{"extensions = {'a': 0x00}", "extensions = {'a': 0x00}: only {} is accepted; kvnode has no table extensions"},
		{"comment = ?", "comment = ?: bind markers cannot be used in schema statements"},
		{"id = 5a1c395e-b41f-11e5-9f22-ba0be0483c18", "table option id (which Cassandra's DESCRIBE ... WITH INTERNALS writes) is not supported: kvnode gives each table its own id"},
	} {
		_, err := Build(ksDDL + "CREATE TABLE ks.t (k int PRIMARY KEY) WITH " + tt.opt)
		if want := "table ks.t: " + tt.want; err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("WITH %s: error %v\n  want %q", tt.opt, err, want)
		}
	}
}

func TestCompatOptionsEncodeAndDescribe(t *testing.T) {
	s := mustBuild(t, ksDDL+cassandra41Describe+"\nCREATE TABLE ks.q (k int PRIMARY KEY) WITH comment = 'it''s {odd}: \"x\"' AND compression = {'enabled': false} AND caching = {'keys': 'NONE', 'rows_per_partition': 'ALL'} AND bloom_filter_fp_chance = 0.00001")
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatalf("Decode(Encode()) of a schema with options: %v", err)
	}
	if string(d.Encode()) != string(s.Encode()) {
		t.Errorf("Decode(Encode()) encodes differently")
	}
	for _, name := range []string{"logs", "q"} {
		want, _ := s.Table("ks", name)
		got, _ := d.Table("ks", name)
		if got.CreateStatement() != want.CreateStatement() {
			t.Errorf("decoded table %s describes as\n%s\nwant\n%s", name, got.CreateStatement(), want.CreateStatement())
		}
		again, err := Build(ksDDL + want.CreateStatement())
		if err != nil {
			t.Fatalf("DESCRIBE of %s does not run again: %v\n%s", name, err, want.CreateStatement())
		}
		re, _ := again.Table("ks", name)
		if re.CreateStatement() != want.CreateStatement() || strings.Join(re.setOptions(), ",") != strings.Join(want.setOptions(), ",") {
			t.Errorf("DESCRIBE of %s recreated\n%s\nwant\n%s", name, re.CreateStatement(), want.CreateStatement())
		}
	}
	q, _ := s.Table("ks", "q")
	for _, line := range []string{"AND comment = 'it''s {odd}: \"x\"'", "AND compression = {'enabled': 'false'}", "AND bloom_filter_fp_chance = 1e-05"} {
		if !strings.Contains(q.CreateStatement(), line) {
			t.Errorf("DESCRIBE of ks.q lacks %q:\n%s", line, q.CreateStatement())
		}
	}
}
