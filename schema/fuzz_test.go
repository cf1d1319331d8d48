package schema

import (
	"bytes"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// FuzzStatement runs whatever parses against a fixed schema — Apply for
// schema statements, PrepareWrite, PrepareRead, Describe — and checks that
// nothing panics and that every schema Apply returns is valid: it encodes
// and decodes, and its tables' CREATE statements recreate them.
func FuzzStatement(f *testing.F) {
	for _, src := range []string{
		"SELECT * FROM t WHERE a = 1 AND b = 'x' AND c1 > 2 AND c1 <= 5 LIMIT 3",
		"INSERT INTO t (a, b, c1, c2, v, w) VALUES (1, 'x', 2, 'y', 'z', 0xff) USING TIMESTAMP 5",
		"UPDATE t SET v = NULL WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 = 'y'",
		"DELETE v FROM t WHERE a = 1 AND b = 'x' AND c1 = 2 AND c2 = 'y'",
		"DELETE FROM kv WHERE k = 'a'",
		"CREATE TABLE n (a int, b text, PRIMARY KEY ((a), b)) WITH per_partition_rate_limit = {'max_reads_per_second': '10'}",
		"ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 2147483647}",
		"ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': '10abc'}",
		"DROP TABLE kv; DROP KEYSPACE ks",
		"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '2'}",
		"DESCRIBE KEYSPACE; DESCRIBE TABLES; DESCRIBE TABLE kv",
		"INSERT INTO kv (k, v) VALUES ('2024-01-01 10:00:00+01:00', -9223372036854775808)",
		"CREATE TABLE o (a int, b text, c int, PRIMARY KEY (a, b, c)) WITH CLUSTERING ORDER BY (b DESC, c ASC); DESCRIBE TABLE o",
		"SELECT * FROM t WHERE a = 1 AND b = 'x' AND c1 = 2 ORDER BY c2 DESC LIMIT 3",
		"ALTER TABLE t ADD (x int, y text); ALTER TABLE t DROP v; ALTER TABLE t ADD v text; TRUNCATE t",
		"SELECT token(a, b), toUnixTimestamp(writetime(v)), CAST(c1 AS text), blobAsText(w) FROM t WHERE a = blobAsInt(intAsBlob(1)) AND b = 'x'",
		"INSERT INTO kv (k, v) VALUES (blobAsText(0x61), toUnixTimestamp(maxTimeuuid('2024-01-01')))",
		"ALTER TABLE t RENAME a TO z AND c1 TO w; ALTER TABLE t DROP IF EXISTS (q, w) USING TIMESTAMP 5",
		"CREATE TABLE p (a int PRIMARY KEY) WITH comment = 'x' AND compaction = {'class': 'LeveledCompactionStrategy', 'n': 1.5} AND bloom_filter_fp_chance = 1e-05 AND caching = {'rows_per_partition': 7}",
		"ALTER TABLE t WITH compression = {'enabled': false} AND speculative_retry = 'MAX(95p,7ms)' AND read_repair = 'none' AND max_index_interval = 4096",
	} {
		f.Add(src)
	}
	base, err := Build(dataDDL)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := cql.Parse(src)
		if err != nil {
			return
		}
		s := base
		for i, st := range stmts {
			switch st := st.(type) {
			case *cql.SelectStmt:
				r, err := s.PrepareRead(st, "ks")
				if err == nil && len(r.PartitionKey) != len(r.Table.PartitionKey) {
					t.Fatalf("%s: PrepareRead gave %d partition key values for %d columns", cql.Format(st), len(r.PartitionKey), len(r.Table.PartitionKey))
				}
				if err == nil { // selectors evaluate, on a row of nulls, to values of their type or an error
					for j, c := range r.Columns {
						if c != nil {
							continue
						}
						v, err := r.Eval(j, func(*Column, cql.SelectKind) []byte { return nil })
						if err == nil && v != nil {
							if err := r.ResultColumns()[j].Type.Check(v); err != nil {
								t.Fatalf("%s: selector %d = %x: %v", cql.Format(st), j, v, err)
							}
						}
					}
				}
			case *cql.InsertStmt, *cql.UpdateStmt, *cql.DeleteStmt:
				w, err := s.PrepareWrite(st, "ks")
				if err == nil {
					for j, c := range w.Cells {
						if err := c.Column.Type.Check(c.Value); err != nil {
							t.Fatalf("%s: cell %d is not a valid %s: %v", cql.Format(st), j, c.Column.Type, err)
						}
					}
				}
			case *cql.DescribeStmt:
				_, _ = s.Describe(st, "ks")
			default:
				next, err := s.Apply(st, "ks", Change{Version: Version{Timestamp: int64(100 + i), Node: "f"}, TableID: TableID(100 + i)})
				if err != nil {
					continue
				}
				d, err := Decode(next.Encode())
				if err != nil || !bytes.Equal(d.Encode(), next.Encode()) {
					t.Fatalf("%s: the resulting schema does not survive encoding: %v", cql.Format(st), err)
				}
				for _, tb := range next.Tables("") {
					ddl := "CREATE KEYSPACE " + cql.QuoteIdent(tb.Keyspace) + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};\n" + tb.CreateStatement()
					again, err := Build(ddl)
					if err != nil {
						t.Fatalf("%s: DESCRIBE output does not run: %v\n%s", cql.Format(st), err, ddl)
					}
					if got, _ := again.Table(tb.Keyspace, tb.Name); got == nil || got.CreateStatement() != tb.CreateStatement() {
						t.Fatalf("%s: DESCRIBE output does not recreate the table:\n%s", cql.Format(st), ddl)
					}
				}
				s = next
			}
		}
	})
}
