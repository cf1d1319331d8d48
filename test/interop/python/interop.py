#!/usr/bin/python3
"""kvnode's CQL native protocol checked with the DataStax Python driver (Debian's python3-cassandra).

Run by test/interop's Go runner (TestDrivers) against three kvnode processes on 127.0.0.1, .2 and
.3 sharing one native port:

    /usr/bin/python3 test/interop/python/interop.py CONFIG.json

CONFIG.json holds hosts, port, keyspace, rf, host_ids (address -> host id) and replicas (partition
key -> addresses of kvnode's replicas of it). The steps run in order; if connecting or the DDL
fails, the rest do not run. The last line says "N passed, N failed"; the exit status is 0 only if all passed.
"""

import datetime
import decimal
import json
import sys
import time
import traceback
import uuid

# docs:begin python-imports
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.protocol import ConfigurationException  # the server's Config_error (0x2300)
# docs:end
from cassandra import InvalidRequest
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType, SimpleStatement
from cassandra.util import Date, Time, uuid_from_time

TIMEOUT = 30  # seconds: connecting, one request, waiting for the nodes; never waited out on success


def connect(hosts, port):
    """How an application connects the Python driver to kvnode (docs/cql-protocol.md shows it)."""
    # docs:begin python-connect
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc="datacenter1")),
        consistency_level=ConsistencyLevel.QUORUM,
        request_timeout=TIMEOUT,
    )
    cluster = Cluster(
        contact_points=hosts,
        port=port,
        protocol_version=4,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=TIMEOUT,
        control_connection_timeout=TIMEOUT,
    )
    session = cluster.connect()
    # docs:end
    return cluster, session


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def wait_until(what, cond):
    """Polls cond (which returns None when it holds, else why not) until it holds or TIMEOUT passes."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        why = cond()
        if why is None:
            return
        if time.monotonic() > deadline:
            raise AssertionError("%s: not reached within %ss (last: %s)" % (what, TIMEOUT, why))
        time.sleep(0.05)


EVERY_TYPE = [  # column, CQL type as the metadata reports it
    ("a_text", "text"), ("a_varchar", "text"), ("a_ascii", "ascii"),
    ("a_int", "int"), ("a_bigint", "bigint"), ("a_smallint", "smallint"), ("a_tinyint", "tinyint"),
    ("a_varint", "varint"), ("a_double", "double"), ("a_float", "float"), ("a_decimal", "decimal"),
    ("a_boolean", "boolean"), ("a_blob", "blob"), ("a_timestamp", "timestamp"), ("a_date", "date"),
    ("a_time", "time"), ("a_uuid", "uuid"), ("a_timeuuid", "timeuuid"), ("a_inet", "inet"),
]
NAMES = [c for c, _ in EVERY_TYPE]


class Steps:
    def __init__(self, cfg):
        self.cfg = cfg
        self.ks = cfg["keyspace"]
        self.cluster = None
        self.session = None

    def connect_and_discover(self):
        self.cluster, self.session = connect(self.cfg["hosts"], self.cfg["port"])
        want = self.cfg["host_ids"]

        def all_up():
            got = {h.address: str(h.host_id) for h in self.cluster.metadata.all_hosts() if h.is_up}
            return None if got == want else "hosts up %s, want %s" % (got, want)

        wait_until("the driver knows all three nodes up", all_up)
        for h in self.cluster.metadata.all_hosts():
            check(h.datacenter == "datacenter1" and h.rack == "rack1",
                  "%s is in data center %r, rack %r; want datacenter1, rack1" % (h.address, h.datacenter, h.rack))
        check(self.cluster.metadata.partitioner.endswith("Murmur3Partitioner"),
              "partitioner %r, want Murmur3Partitioner" % self.cluster.metadata.partitioner)

    def ddl_and_metadata(self):
        s, ks = self.session, self.ks
        cols = ", ".join("%s %s" % (c, "varchar" if c == "a_varchar" else t) for c, t in EVERY_TYPE)
        for stmt in [
            "DROP KEYSPACE IF EXISTS %s" % ks,
            "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}" % (ks, self.cfg["rf"]),
            "CREATE TABLE %s.everytype (k text, c int, %s, PRIMARY KEY (k, c))" % (ks, cols),
            "CREATE TABLE %s.pages (k int, c int, v text, PRIMARY KEY (k, c))" % ks,
            "CREATE TABLE %s.batches (k text, c int, v text, PRIMARY KEY (k, c))" % ks,
            "CREATE TABLE %s.routed (k text PRIMARY KEY, v int)" % ks,
            "CREATE TABLE %s.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = "
            "{'max_reads_per_second': 2, 'max_writes_per_second': 2}" % ks,
        ]:
            s.execute(stmt)
        check(self.cluster.control_connection.wait_for_schema_agreement(wait_time=TIMEOUT),
              "no schema agreement within %ss after the DDL" % TIMEOUT)
        self.cluster.refresh_schema_metadata(max_schema_agreement_wait=TIMEOUT)
        meta = self.cluster.metadata.keyspaces.get(ks)
        check(meta is not None, "cluster.metadata has no keyspace %s (it has %s)" % (ks, sorted(self.cluster.metadata.keyspaces)))
        strategy = meta.replication_strategy
        check(type(strategy).__name__ == "SimpleStrategy" and strategy.replication_factor == self.cfg["rf"],
              "keyspace %s has replication %s, want SimpleStrategy with replication_factor %d" % (ks, strategy.export_for_schema(), self.cfg["rf"]))
        tables = sorted(meta.tables)
        check(tables == ["batches", "everytype", "limited", "pages", "routed"], "keyspace %s has tables %s" % (ks, tables))
        table = meta.tables["everytype"]
        check([c.name for c in table.partition_key] == ["k"] and [c.name for c in table.clustering_key] == ["c"],
              "everytype has partition key %s and clustering key %s, want [k] and [c]"
              % ([c.name for c in table.partition_key], [c.name for c in table.clustering_key]))
        for name, typ in [("k", "text"), ("c", "int")] + EVERY_TYPE:
            col = table.columns.get(name)
            check(col is not None, "everytype has no column %s in the metadata" % name)
            check(col.cql_type == typ, "everytype.%s has type %r in the metadata, want %r" % (name, col.cql_type, typ))
        check("CREATE TABLE %s.everytype" % ks in table.export_as_string(), "the table's CQL export is %r" % table.export_as_string())

    def alter_keyspace(self):
        """ALTER KEYSPACE raises the replication factor: the driver learns it from the
        SCHEMA_CHANGE UPDATED KEYSPACE event (no explicit refresh), and the table stays."""
        s, ks = self.session, self.ks + "_altered"
        s.execute("DROP KEYSPACE IF EXISTS %s" % ks)
        s.execute("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % ks)
        s.execute("CREATE TABLE %s.t (k text PRIMARY KEY, v int)" % ks)
        s.execute("INSERT INTO %s.t (k, v) VALUES ('a', 1)" % ks)

        def factor(want):
            def cond():
                meta = self.cluster.metadata.keyspaces.get(ks)
                if meta is None:
                    return "no keyspace %s in the metadata" % ks
                rf = getattr(meta.replication_strategy, "replication_factor", None)
                return None if rf == want else "replication %s" % meta.replication_strategy.export_for_schema()
            return cond

        wait_until("the driver sees %s at replication factor 1" % ks, factor(1))
        s.execute("ALTER KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2} AND durable_writes = true" % ks)
        wait_until("the driver sees %s at replication factor 2 after ALTER KEYSPACE" % ks, factor(2))
        check("t" in self.cluster.metadata.keyspaces[ks].tables, "table %s.t is gone from the metadata after ALTER KEYSPACE" % ks)
        # QUORUM (the default here) of 2 replicas reads both, so it finds the row on the old one;
        # ONE could ask the new replica, which lacks it until a repair (docs/operations.md).
        row = s.execute("SELECT v FROM %s.t WHERE k = 'a'" % ks).one()
        check(row is not None and row.v == 1, "the row written before ALTER KEYSPACE reads %r" % (row,))
        try:
            s.execute("ALTER KEYSPACE %s_nope WITH durable_writes = true" % ks)
        except InvalidRequest as e:
            check("unknown keyspace" in str(e), "ALTER KEYSPACE of a missing keyspace: %s" % e)
        else:
            raise AssertionError("ALTER KEYSPACE of a missing keyspace succeeded")
        s.execute("DROP KEYSPACE %s" % ks)

    def schema_export_replays(self):
        """The driver's export of a keyspace, and kvnode's own DESCRIBE of it, recreate it on a
        fresh keyspace: table options of Cassandra 3.x and 4.x, limits included in kvnode's."""
        s, ks = self.session, self.ks + "_export"
        s.execute("DROP KEYSPACE IF EXISTS %s" % ks)
        s.execute("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}" % (ks, self.cfg["rf"]))
        s.execute("CREATE TABLE %s.opts (k text, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) "
                  "AND comment = 'exported' AND compaction = {'class': 'LeveledCompactionStrategy'} "
                  "AND caching = {'keys': 'NONE'} AND bloom_filter_fp_chance = 0.1 AND gc_grace_seconds = 3600 "
                  "AND read_repair = 'NONE' AND additional_write_policy = '50ms' AND speculative_retry = 'NEVER' "
                  "AND per_partition_rate_limit = {'max_writes_per_second': 1000}" % ks)
        self.cluster.refresh_schema_metadata(max_schema_agreement_wait=TIMEOUT)
        table = self.cluster.metadata.keyspaces[ks].tables["opts"]
        opts = table.options
        check(opts.get("comment") == "exported" and opts.get("bloom_filter_fp_chance") == 0.1
              and opts.get("gc_grace_seconds") == 3600 and opts.get("speculative_retry") == "NONE"
              and opts.get("compaction", {}).get("class") == "org.apache.cassandra.db.compaction.LeveledCompactionStrategy"
              and opts.get("caching") == {"keys": "NONE", "rows_per_partition": "NONE"},
              "the driver reads the table's options as %r" % opts)
        exported = self.cluster.metadata.keyspaces[ks].export_as_string()
        described = "\n".join(r.create_statement for r in s.execute("DESCRIBE KEYSPACE %s WITH INTERNALS" % ks))
        for source, text in [("the driver's export", exported), ("kvnode's DESCRIBE", described)]:
            s.execute("DROP KEYSPACE %s" % ks)
            for stmt in [x.strip() for x in text.split(";\n") if x.strip()]:
                try:
                    s.execute(stmt)
                except Exception as e:
                    raise AssertionError("%s does not replay: %s\nfailed on:\n%s" % (source, e, stmt))
            self.cluster.refresh_schema_metadata(max_schema_agreement_wait=TIMEOUT)
            again = self.cluster.metadata.keyspaces[ks].tables["opts"]
            check(again.options == opts and [c.name for c in again.clustering_key] == ["c"],
                  "%s recreated options %r, want %r" % (source, again.options, opts))
            limit = s.execute("SELECT extensions FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'opts'", [ks]).one()
            want_limit = source == "kvnode's DESCRIBE"  # the driver's export knows only Cassandra's options
            check(("per_partition_rate_limit" in (limit.extensions or {})) == want_limit,
                  "after replaying %s the table's extensions are %r" % (source, limit.extensions))
        s.execute("DROP KEYSPACE %s" % ks)

    def every_type(self):
        s, ks = self.session, self.ks
        ts = datetime.datetime(2026, 11, 24, 5, 30, 1, 123000)  # naive datetimes are UTC; timestamps keep milliseconds
        rows = {
            1: ["héllo, wörld ✓", "varchar", "plain ascii", 42, 1 << 40, 1234, 12, 123456789012345678901234567890,
                3.141592653589793, 1.5, decimal.Decimal("-12345678.901234567"), True, b"\x00\x01\x02\xff",
                ts, Date(datetime.date(1969, 7, 20)), Time(49025123456789),
                uuid.UUID("0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1"), uuid_from_time(ts), "2001:db8::1"],
            2: ["", "", "", -2**31, -2**63, -2**15, -2**7, -98765432109876543210987654321098765432109876543210,
                -1.7976931348623157e308, 0.25, decimal.Decimal("5E+3"), False, b"",
                datetime.datetime(1969, 12, 31, 23, 59, 59, 999000), Date(datetime.date(9999, 12, 31)), Time(86399999999999),
                uuid.UUID(int=0), uuid_from_time(datetime.datetime(1990, 1, 1)), "192.0.2.1"],
        }
        insert = s.prepare("INSERT INTO %s.everytype (k, c, %s) VALUES (?, ?%s)" % (ks, ", ".join(NAMES), ", ?" * len(NAMES)))
        select = s.prepare("SELECT %s FROM %s.everytype WHERE k = ? AND c = ?" % (", ".join(NAMES), ks))
        for c, values in rows.items():
            s.execute(insert, ["types", c] + values)
        for c, want in rows.items():
            got = s.execute(select, ["types", c]).one()
            check(got is not None, "row %d is missing" % c)
            for name, g, w in zip(NAMES, got, want):
                same = g == w
                if name == "a_decimal":
                    same = str(g) == str(w)  # the scale too
                check(same, "row %d: %s read back %r, want %r" % (c, name, g, w))
        s.execute(s.prepare("INSERT INTO %s.everytype (k, c) VALUES (?, ?)" % ks), ["types", 3])
        got = s.execute(select, ["types", 3]).one()
        check(got is not None and all(v is None for v in got), "a row with only its key set reads back %r, want every column null" % (got,))
        s.execute(s.prepare("UPDATE %s.everytype SET a_int = ?, a_text = ? WHERE k = ? AND c = ?" % ks), [7, UNSET_VALUE, "types", 1])
        got = s.execute(s.prepare("SELECT a_int, a_text FROM %s.everytype WHERE k = ? AND c = ?" % ks), ["types", 1]).one()
        check(got is not None and (got.a_int, got.a_text) == (7, rows[1][0]),
              "after SET a_int = 7, a_text = <unset>: %r, want (7, %r)" % (got, rows[1][0]))

    def paging(self):
        s, ks = self.session, self.ks
        insert = s.prepare("INSERT INTO %s.pages (k, c, v) VALUES (?, ?, ?)" % ks)
        for c in range(250):
            s.execute(insert, [1, c, "v%03d" % c])
        select = s.prepare("SELECT c, v FROM %s.pages WHERE k = ?" % ks)
        seen, pages, state = [], 0, None
        while True:
            bound = select.bind([1])
            bound.fetch_size = 40
            rs = s.execute(bound, paging_state=state)
            page = rs.current_rows
            check(len(page) <= 40, "page %d has %d rows, more than the fetch size 40" % (pages, len(page)))
            for row in page:
                check(row.v == "v%03d" % row.c, "row c=%d has v %r" % (row.c, row.v))
                seen.append(row.c)
            pages += 1
            state = rs.paging_state
            if state is None:
                break
            check(pages <= 250, "paging did not end after %d pages" % pages)
        check(seen == list(range(250)), "paging 40 at a time read %s, want 0..249 in order" % seen)
        check(pages >= 250 // 40, "250 rows came in %d pages of at most 40" % pages)
        # Automatic paging of an unprepared statement with bound values.
        stmt = SimpleStatement("SELECT c FROM %s.pages WHERE k = %%s AND c >= %%s" % ks, fetch_size=33)
        got = [row.c for row in s.execute(stmt, [1, 100])]
        check(got == list(range(100, 250)), "automatic paging of c >= 100 read %s, want 100..249" % got)

    def export_by_token_ranges(self):
        # An export as Spark's does it: the ring split by the driver's token map, each range read
        # at QUORUM, paged; every row comes back exactly once.
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE IF NOT EXISTS %s.export (k int, c int, PRIMARY KEY (k, c))" % ks)
        insert = s.prepare("INSERT INTO %s.export (k, c) VALUES (?, ?)" % ks)
        want = set()
        for k in range(300):
            for c in range(2):
                s.execute(insert, [k, c])
                want.add((k, c))
        ring = sorted(t.value for t in self.cluster.metadata.token_map.ring)
        check(len(ring) >= 3, "the driver's token map has %d tokens" % len(ring))
        bounds = [(-2**63, ring[0])] + list(zip(ring, ring[1:])) + [(ring[-1], 2**63 - 1)]
        select = s.prepare("SELECT k, c FROM %s.export WHERE token(k) > ? AND token(k) <= ?" % ks)
        select.consistency_level = ConsistencyLevel.QUORUM
        seen = []
        for lo, hi in bounds:
            bound = select.bind([lo, hi])
            bound.fetch_size = 50
            seen.extend((r.k, r.c) for r in s.execute(bound))
        check(len(seen) == len(set(seen)), "the export returned %d rows, %d of them distinct" % (len(seen), len(set(seen))))
        check(set(seen) == want, "the export missed %s and returned %s nobody wrote" % (sorted(want - set(seen))[:10], sorted(set(seen) - want)[:10]))
        full = [(r.k, r.c) for r in s.execute(SimpleStatement("SELECT k, c FROM %s.export" % ks, fetch_size=70))]
        check(sorted(full) == sorted(want) and len(full) == len(want), "a full scan returned %d rows, want %d" % (len(full), len(want)))

    def batches(self):
        s, ks = self.session, self.ks
        insert = s.prepare("INSERT INTO %s.batches (k, c, v) VALUES (?, ?, ?)" % ks)
        logged = BatchStatement(batch_type=BatchType.LOGGED)
        logged.add(insert, ["a", 1, "one"])
        logged.add(insert, ["a", 2, "two"])
        logged.add(s.prepare("UPDATE %s.batches SET v = ? WHERE k = ? AND c = ?" % ks), ["three", "b", 3])
        logged.add(SimpleStatement("INSERT INTO %s.batches (k, c, v) VALUES ('b', 4, 'literal')" % ks))
        s.execute(logged)
        unlogged = BatchStatement(batch_type=BatchType.UNLOGGED)
        unlogged.add(s.prepare("DELETE FROM %s.batches WHERE k = ? AND c = ?" % ks), ["a", 1])
        unlogged.add(insert, ["a", 5, "five"])
        s.execute(unlogged)
        select = s.prepare("SELECT c, v FROM %s.batches WHERE k = ?" % ks)
        for k, want in [("a", [(2, "two"), (5, "five")]), ("b", [(3, "three"), (4, "literal")])]:
            got = [(r.c, r.v) for r in s.execute(select, [k])]
            check(got == want, "partition %r after the batches holds %s, want %s" % (k, got, want))

    def expiring_data(self):
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.expiring (k text PRIMARY KEY, v text) WITH default_time_to_live = 500" % ks)
        s.execute("INSERT INTO %s.expiring (k, v) VALUES ('simple', 'x') USING TTL 1000 AND TIMESTAMP 1234" % ks)
        insert = s.prepare("INSERT INTO %s.expiring (k, v) VALUES (?, ?) USING TIMESTAMP ? AND TTL ?" % ks)
        s.execute(insert, ["prepared", "y", 5678, 2000])
        s.execute(insert, ["none", "z", 9, 0])
        s.execute("UPDATE %s.expiring SET v = 'w' WHERE k = 'default'" % ks)
        select = s.prepare("SELECT v, TTL(v), WRITETIME(v) FROM %s.expiring WHERE k = ?" % ks)
        for k, v, ttl, wt in [("simple", "x", 1000, 1234), ("prepared", "y", 2000, 5678), ("none", "z", None, 9), ("default", "w", 500, None)]:
            for how, rs in [("prepared", s.execute(select, [k])),
                            ("unprepared", s.execute("SELECT v, TTL(v), WRITETIME(v) FROM %s.expiring WHERE k = '%s'" % (ks, k)))]:
                row = rs.one()
                check(row is not None and row[0] == v, "%s SELECT of %r returned %r, want v = %r" % (how, k, row, v))
                check(rs.column_names == ["v", "ttl(v)", "writetime(v)"], "%s SELECT's columns are %s" % (how, rs.column_names))
                if ttl is None:
                    check(row[1] is None, "%s TTL(v) of %r = %r, want null" % (how, k, row[1]))
                else:
                    check(isinstance(row[1], int) and ttl - 30 < row[1] <= ttl, "%s TTL(v) of %r = %r, want about %d" % (how, k, row[1], ttl))
                check(isinstance(row[2], int) and (wt is None or row[2] == wt), "%s WRITETIME(v) of %r = %r, want %s" % (how, k, row[2], wt))
        s.execute(insert, ["short", "gone", 10, 1])
        wait_until("the row written USING TTL 1 expires",
                   lambda: None if s.execute(select, ["short"]).one() is None else "still there")

    def functions(self):
        """Cassandra's native functions as values (now(), currentTimestamp(), maxTimeuuid(?),
        blobAsBigint(?)) and as selectors (token, toDate, CAST, ...), prepared and unprepared, with
        the result metadata the driver decodes."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.fns (k text, id timeuuid, at timestamp, n bigint, PRIMARY KEY (k, id))" % ks)
        before = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
        s.execute("INSERT INTO %s.fns (k, id, at, n) VALUES ('f', now(), currentTimestamp(), blobAsBigint(bigintAsBlob(7)))" % ks)
        at = datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)
        insert = s.prepare("INSERT INTO %s.fns (k, id, at, n) VALUES (?, maxTimeuuid(?), ?, blobAsBigint(?))" % ks)
        names = [c.name for c in insert.column_metadata]
        types = [c.type.typename for c in insert.column_metadata]
        check(names == ["k", "arg0(system.maxtimeuuid)", "at", "arg0(system.blobasbigint)"] and types == ["varchar", "timestamp", "timestamp", "blob"],
              "PREPARED variables %s %s" % (names, types))
        s.execute(insert, ["f", at, at, b"\x00" * 7 + b"\x09"])
        cols = ["system.token(k)", "system.todate(id)", "system.totimestamp(id)", "cast(n as text)", "system.tounixtimestamp(at)"]
        sel = "SELECT token(k), toDate(id), toTimestamp(id), CAST(n AS text), toUnixTimestamp(at) FROM %s.fns WHERE k = " % ks
        for how, rs in [("prepared", s.execute(s.prepare(sel + "?"), ["f"])), ("unprepared", s.execute(sel + "'f'"))]:
            check(rs.column_names == cols, "%s SELECT's columns are %s, want %s" % (how, rs.column_names, cols))
            rows = list(rs)
            check(len(rows) == 2, "%s SELECT read %d rows, want 2" % (how, len(rows)))
            first, second = rows
            check(isinstance(first[0], int) and first[0] == second[0], "%s token(k) = %r, %r" % (how, first[0], second[0]))
            check(first[1] == Date(datetime.date(2024, 1, 2)) and first[2] == at and first[3] == "9" and first[4] == 1704164645006,
                  "%s row of maxTimeuuid(at) reads %r" % (how, first))
            check(second[2] >= before and second[3] == "7" and second[4] == int((second[2] - datetime.datetime(1970, 1, 1)).total_seconds() * 1000 + 0.5),
                  "%s row of now() reads %r" % (how, second))
        rng = s.prepare("SELECT n FROM %s.fns WHERE k = ? AND id >= minTimeuuid(?) AND id <= maxTimeuuid(?)" % ks)
        rows = list(s.execute(rng, ["f", at, at]))
        check([r.n for r in rows] == [9], "id between minTimeuuid and maxTimeuuid of %s reads %r" % (at, rows))
        try:
            s.execute("SELECT nosuch(n) FROM %s.fns WHERE k = 'f'" % ks)
        except Exception as e:
            check("unknown function nosuch" in str(e), "an unknown function's error is %r" % str(e))
        else:
            raise AssertionError("SELECT nosuch(n) succeeded")

    def token_aware_routing(self):
        s, ks = self.session, self.ks
        insert = s.prepare("INSERT INTO %s.routed (k, v) VALUES (?, ?)" % ks)
        for i, (key, want) in enumerate(sorted(self.cfg["replicas"].items())):
            got = sorted(h.address for h in self.cluster.metadata.get_replicas(ks, key.encode()))
            check(got == sorted(want), "the driver places key %r on %s; kvnode's replicas are %s" % (key, got, sorted(want)))
            rs = s.execute(insert, [key, i])
            served = getattr(rs.response_future.coordinator_host, "address", rs.response_future.coordinator_host)
            check(served in want, "the driver sent the insert of %r to %s, not to one of kvnode's replicas %s" % (key, served, want))

    def rate_limit(self):
        s, ks = self.session, self.ks
        insert = s.prepare("INSERT INTO %s.limited (k, v) VALUES (?, ?)" % ks)
        select = s.prepare("SELECT v FROM %s.limited WHERE k = ?" % ks)
        for what, op in [("writes", lambda i: s.execute(insert, ["hot", i])), ("reads", lambda i: s.execute(select, ["hot"]))]:
            for i in range(1000):
                # docs:begin python-rate-limit
                try:
                    op(i)
                except ConfigurationException as e:  # the rate-limit rejection: do not retry at once
                    print("    %s #%d: %s: %s" % (what, i, type(e).__name__, e))
                    # docs:end
                    check("limited" in str(e), "the rate-limit error %r does not name the table (limited)" % str(e))
                    break
            else:
                raise AssertionError("1000 %s of partition hot at a limit of 2 per second were all admitted" % what)
        s.execute(insert, ["cold", 1])  # another partition of the table is still admitted

    def schema_evolution(self):
        """ALTER TABLE ADD, then the new columns through statements prepared before it (the server
        answers Unprepared and the driver prepares them again); DROP and ADD of a column of the
        same name (its old value stays gone); TRUNCATE; RENAME of the key column."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.evolve (k text PRIMARY KEY, v int)" % ks)
        insert = s.prepare("INSERT INTO %s.evolve (k, v) VALUES (?, ?)" % ks)
        select = s.prepare("SELECT * FROM %s.evolve WHERE k = ?" % ks)
        s.execute(insert, ["a", 1])
        row = s.execute(select, ["a"]).one()
        check(row is not None and row.v == 1, "before ALTER, SELECT * reads %r" % (row,))
        s.execute("ALTER TABLE %s.evolve ADD (w text, n bigint)" % ks)
        s.execute(s.prepare("INSERT INTO %s.evolve (k, v, w, n) VALUES (?, ?, ?, ?)" % ks), ["b", 2, "new", 7])
        s.execute(insert, ["c", 3])  # prepared before the ALTER
        row = s.execute(select, ["b"]).one()  # likewise: SELECT * now has the new columns
        check(row is not None and (row.v, row.w, row.n) == (2, "new", 7), "after ALTER ADD, SELECT * of b reads %r" % (row,))
        s.execute("ALTER TABLE %s.evolve DROP w" % ks)
        s.execute("ALTER TABLE %s.evolve ADD w text" % ks)
        row = s.execute(select, ["b"]).one()
        check(row is not None and row.w is None and row.n == 7, "after DROP w and ADD w, b reads %r: the dropped value came back" % (row,))
        s.execute("TRUNCATE %s.evolve" % ks)
        rows = [s.execute(select, [k]).one() for k in ["a", "b", "c"]]
        check(rows == [None, None, None], "after TRUNCATE the rows read %r, want none" % (rows,))
        s.execute(insert, ["d", 4])
        row = s.execute(select, ["d"]).one()
        check(row is not None and row.v == 4, "a write after TRUNCATE reads %r" % (row,))
        s.execute("ALTER TABLE %s.evolve RENAME k TO id" % ks)
        row = s.execute(s.prepare("SELECT id, v FROM %s.evolve WHERE id = ?" % ks), ["d"]).one()
        check(row is not None and (row.id, row.v) == ("d", 4), "after RENAME k TO id, d reads %r" % (row,))

    def frozen_types(self):
        """Frozen collections, a DESC tuple clustering column and duration, bound whole by the
        driver (which sends sets and maps in its own order), read back in Cassandra's order, and
        described by cluster.metadata as system_schema writes the types."""
        from cassandra.util import Duration
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.frozen (k frozen<list<int>>, c tuple<int, text>, m frozen<map<text, frozen<list<int>>>>,"
                  " s frozen<set<text>>, d duration, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)" % ks)
        insert = s.prepare("INSERT INTO %s.frozen (k, c, m, s, d) VALUES (?, ?, ?, ?, ?)" % ks)
        key = [1, -2]
        rows = [((1, "b"), {"x": [1, 2], "a": []}, {"q", "p"}, Duration(0, 1, 0)),
                ((-5, "z"), {"k": [3]}, {"only"}, Duration(0, 0, -7)),
                ((1, None), {"b": [4, 4]}, {"y", "x"}, Duration(14, 0, 3600 * 10**9))]
        for c, m, st, d in rows:
            s.execute(insert, [key, c, m, st, d])
        got = [(r.c, dict(r.m or {}), set(r.s or ()), r.d)
               for r in s.execute(s.prepare("SELECT c, m, s, d FROM %s.frozen WHERE k = ?" % ks), [key])]
        want = [(c, m, st, d) for c, m, st, d in (rows[0], rows[2], rows[1])]  # DESC; a null component sorts first
        check(got == want, "the frozen table reads %r, want %r" % (got, want))
        for r in s.execute(s.prepare("SELECT m FROM %s.frozen WHERE k = ?" % ks), [key]):
            check(list(r.m.keys()) == sorted(r.m.keys()), "map keys come back as %r, want them sorted" % (list(r.m.keys()),))
        want_types = {"k": "frozen<list<int>>", "c": "frozen<tuple<int, text>>",
                      "m": "frozen<map<text, frozen<list<int>>>>", "s": "frozen<set<text>>", "d": "duration"}

        def described():
            t = self.cluster.metadata.keyspaces[ks].tables.get("frozen")
            if t is None:
                return "no table frozen in the metadata yet"
            types = {n: c.cql_type for n, c in t.columns.items()}
            return None if types == want_types else "the metadata has types %r, want %r" % (types, want_types)
        wait_until("cluster.metadata describes the frozen table", described)


    def user_types(self):
        """A frozen user-defined type: written through a prepared statement from a class the
        driver maps (register_user_type), read back as that class, described by
        cluster.metadata (user_types, and the column as frozen<address>); a row written before
        ALTER TYPE ADD reads with the new field None."""
        s, ks = self.session, self.ks
        s.execute("CREATE TYPE %s.address (street text, zip int)" % ks)
        s.execute("CREATE TABLE %s.homes (k int PRIMARY KEY, a frozen<address>)" % ks)

        def known():
            u = self.cluster.metadata.keyspaces[ks].user_types.get("address")
            if u is None:
                return "no type address in the metadata yet"
            got = (list(u.field_names), list(u.field_types))
            return None if got == (["street", "zip"], ["text", "int"]) else "type address is %r" % (got,)
        wait_until("cluster.metadata describes type address", known)

        class Address(object):
            def __init__(self, street=None, zip=None, city=None):
                self.street, self.zip, self.city = street, zip, city

        self.cluster.register_user_type(ks, "address", Address)
        s.execute(s.prepare("INSERT INTO %s.homes (k, a) VALUES (?, ?)" % ks), [1, Address("main", 5)])
        s.execute("INSERT INTO %s.homes (k, a) VALUES (2, {street: 'lit', zip: 9})" % ks)
        select = s.prepare("SELECT a FROM %s.homes WHERE k = ?" % ks)
        for k, want in ((1, ("main", 5)), (2, ("lit", 9))):
            a = s.execute(select, [k]).one().a
            check(isinstance(a, Address) and (a.street, a.zip) == want, "row %d reads %r, want Address%r" % (k, vars(a) if a else a, want))

        def column():
            t = self.cluster.metadata.keyspaces[ks].tables.get("homes")
            if t is None:
                return "no table homes in the metadata yet"
            return None if t.columns["a"].cql_type == "frozen<address>" else "column a is %r" % t.columns["a"].cql_type
        wait_until("cluster.metadata describes column homes.a", column)
        s.execute("ALTER TYPE %s.address ADD city text" % ks)
        a = s.execute(s.prepare("SELECT a FROM %s.homes WHERE k = ?" % ks), [1]).one().a
        check((a.street, a.zip, getattr(a, "city", None)) == ("main", 5, None), "after ALTER TYPE ADD row 1 reads %r" % (vars(a),))

    def user_type_keys(self):
        """A user type as a partition key and as a DESC clustering key: rows read back by a
        bound key and by a literal, clustered in the type's order (field by field, a null field
        first); ALTER TYPE ADD is refused while a partition key uses the type."""
        s, ks = self.session, self.ks
        s.execute("CREATE TYPE %s.point (x int, y int)" % ks)
        s.execute("CREATE TABLE %s.bypoint (p frozen<point> PRIMARY KEY, v int)" % ks)
        s.execute("CREATE TABLE %s.path (k int, p frozen<point>, v int, PRIMARY KEY (k, p)) WITH CLUSTERING ORDER BY (p DESC)" % ks)

        class Point(object):
            def __init__(self, x=None, y=None):
                self.x, self.y = x, y

        self.cluster.register_user_type(ks, "point", Point)
        ins_pk = s.prepare("INSERT INTO %s.bypoint (p, v) VALUES (?, ?)" % ks)
        ins_ck = s.prepare("INSERT INTO %s.path (k, p, v) VALUES (0, ?, ?)" % ks)
        for v, p in enumerate([Point(1, 2), Point(1, None), Point(0, 9)]):
            s.execute(ins_pk, [p, v])
            s.execute(ins_ck, [p, v])
        row = s.execute(s.prepare("SELECT v FROM %s.bypoint WHERE p = ?" % ks), [Point(1, None)]).one()
        check(row is not None and row.v == 1, "partition {x: 1, y: null} reads %r, want v=1" % (row,))
        row = s.execute("SELECT v FROM %s.bypoint WHERE p = {x: 0, y: 9}" % ks).one()
        check(row is not None and row.v == 2, "partition {x: 0, y: 9} (literal) reads %r, want v=2" % (row,))
        got = [r.v for r in s.execute("SELECT v FROM %s.path WHERE k = 0" % ks)]
        check(got == [0, 1, 2], "clustering by frozen<point> DESC reads %r, want [0, 1, 2]" % (got,))
        try:
            s.execute("ALTER TYPE %s.point ADD label text" % ks)
            check(False, "ALTER TYPE ADD succeeded while a partition key uses the type")
        except InvalidRequest as e:
            check("used in the partition key column p" in str(e), "ALTER TYPE ADD answered %s" % e)

    def select_shapes(self):
        """IN over partitions bound to a list and paged by the driver, a clustering tuple IN,
        aggregates with aliases (the result's column names), GROUP BY, DISTINCT, PER PARTITION
        LIMIT, and ALLOW FILTERING refused without the words (InvalidRequest)."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.sel (k int, c int, v int, PRIMARY KEY (k, c))" % ks)
        ins = s.prepare("INSERT INTO %s.sel (k, c, v) VALUES (?, ?, ?)" % ks)
        for k in range(5):
            for c in range(6):
                s.execute(ins, [k, c, k * 100 + c])
        stmt = s.prepare("SELECT k, c FROM %s.sel WHERE k IN ?" % ks)
        stmt.fetch_size = 4
        rows = [(r.k, r.c) for r in s.execute(stmt, [[4, 0, 2]])]
        check(sorted(rows) == [(k, c) for k in (0, 2, 4) for c in range(6)], "IN ? paged by 4 returned %r" % rows)
        runs = [k for i, (k, _) in enumerate(rows) if i == 0 or rows[i - 1][0] != k]
        check(len(runs) == 3, "IN: the partitions' rows are not together: %r" % runs)
        rows = [r.c for r in s.execute("SELECT c FROM %s.sel WHERE k = 1 AND (c) IN ((5), (1))" % ks)]
        check(rows == [1, 5], "(c) IN ((5), (1)) returned %r, want [1, 5]" % rows)
        rs = s.execute("SELECT count(*) AS n, max(v) AS top, avg(v) FROM %s.sel WHERE k IN (1, 2)" % ks)
        check(list(rs.column_names) == ["n", "top", "system_avg_v"] or list(rs.column_names) == ["n", "top", "system.avg(v)"],
              "aggregate column names %r" % (rs.column_names,))
        row = rs.one()
        check(tuple(row) == (12, 205, 152), "count, max, avg over IN (1, 2) = %r, want (12, 205, 152)" % (tuple(row),))
        for q, want in [("SELECT k, count(*) FROM %s.sel WHERE k IN (0, 1, 2) GROUP BY k", 3),
                        ("SELECT DISTINCT k FROM %s.sel WHERE k IN (0, 1, 9)", 2),
                        ("SELECT k, c FROM %s.sel WHERE k IN (0, 1) PER PARTITION LIMIT 2", 4),
                        ("SELECT c FROM %s.sel WHERE k = 3 AND v > 302 ALLOW FILTERING", 3)]:
            n = len(list(s.execute(q % ks)))
            check(n == want, "%s returned %d rows, want %d" % (q % ks, n, want))
        try:
            s.execute("SELECT c FROM %s.sel WHERE k = 3 AND v > 302" % ks)
        except InvalidRequest as e:
            check("ALLOW FILTERING" in str(e), "the refusal reads %s" % e)
        else:
            raise AssertionError("filtering without ALLOW FILTERING was not refused")
        s.execute(s.prepare("INSERT INTO %s.sel JSON ?" % ks), ['{"k": 9, "c": 1, "v": 5}'])
        s.execute("INSERT INTO %s.sel JSON '{\"k\": 9, \"c\": 1}' DEFAULT UNSET" % ks)
        js = s.execute("SELECT JSON k, c, v FROM %s.sel WHERE k = 9" % ks).one()[0]
        check(json.loads(js) == {"k": 9, "c": 1, "v": 5}, "SELECT JSON returned %r" % js)
        s.execute(s.prepare("UPDATE %s.sel SET v = fromJson(?) WHERE k = 9 AND c = 1" % ks), ["6"])
        got = s.execute("SELECT toJson(v) FROM %s.sel WHERE k = 9" % ks).one()[0]
        check(got == "6", "toJson(v) returned %r, want '6'" % got)

    def collections(self):
        """Non-frozen sets, lists and maps: whole values and element updates bound by the driver
        (s = s + ?, m[?] = ?, l = ? + l, l[?] = ?, DELETE m[?]), read back, by element and slice
        too, an emptied collection as None, and described by cluster.metadata without frozen."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.colls (k int PRIMARY KEY, s set<text>, l list<int>, m map<text, int>)" % ks)
        s.execute(s.prepare("INSERT INTO %s.colls (k, s, l, m) VALUES (?, ?, ?, ?)" % ks), [1, {"b", "a"}, [1, 2], {"x": 1}])
        s.execute(s.prepare("UPDATE %s.colls SET s = s + ?, l = l + ?, m[?] = ? WHERE k = ?" % ks), [{"c"}, [3], "y", 2, 1])
        s.execute(s.prepare("UPDATE %s.colls SET s = s - ?, l = ? + l, m = m - ? WHERE k = ?" % ks), [{"a"}, [0], {"x"}, 1])
        s.execute(s.prepare("UPDATE %s.colls SET l[?] = ? WHERE k = ?" % ks), [1, 10, 1])
        s.execute(s.prepare("DELETE m[?] FROM %s.colls WHERE k = ?" % ks), ["y", 1])
        r = s.execute(s.prepare("SELECT s, l, m FROM %s.colls WHERE k = ?" % ks), [1]).one()
        got = (set(r.s or ()), list(r.l or ()), dict(r.m or {}))
        check(got == ({"b", "c"}, [0, 10, 2, 3], {}), "colls reads %r" % (got,))
        check(r.m is None, "an emptied map reads %r, want None" % (r.m,))
        r = s.execute(s.prepare("SELECT s['b'], s['c'..] FROM %s.colls WHERE k = ?" % ks), [1]).one()
        check((r[0], set(r[1] or ())) == ("b", {"c"}), "s['b'], s['c'..] read %r" % (tuple(r),))
        want_types = {"k": "int", "s": "set<text>", "l": "list<int>", "m": "map<text, int>"}

        def described():
            t = self.cluster.metadata.keyspaces[ks].tables.get("colls")
            if t is None:
                return "no table colls in the metadata yet"
            types = {n: c.cql_type for n, c in t.columns.items()}
            return None if types == want_types else "the metadata has types %r, want %r" % (types, want_types)
        wait_until("cluster.metadata describes the colls table", described)

    def counters(self):
        """Counters through prepared statements: UPDATE ... SET n = n + ?, m = m - ? (markers of
        type counter in the prepared metadata), a COUNTER batch, read back at QUORUM and ALL
        (result columns of type counter), and described by cluster.metadata as counter."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.hits (k text PRIMARY KEY, n counter, m counter)" % ks)
        upd = s.prepare("UPDATE %s.hits SET n = n + ?, m = m - ? WHERE k = ?" % ks)
        marks = [c.type.typename for c in upd.column_metadata]
        check(marks[:2] == ["counter", "counter"], "the prepared update's markers are of types %r, want counter, counter first" % (marks,))
        for i in range(1, 6):
            s.execute(upd, [i, 1, "a"])
        batch = BatchStatement(batch_type=BatchType.COUNTER)
        batch.add(upd, [100, 10, "a"])
        batch.add(upd, [7, 0, "b"])
        s.execute(batch)
        select = s.prepare("SELECT n, m FROM %s.hits WHERE k = ?" % ks)
        for cl in (ConsistencyLevel.QUORUM, ConsistencyLevel.ALL):
            bound = select.bind(["a"])
            bound.consistency_level = cl
            rs = s.execute(bound)
            check([t.typename for t in rs.column_types] == ["counter", "counter"], "the result's column types are %r" % (rs.column_types,))
            row = rs.one()
            check(row is not None and (row.n, row.m) == (115, -15), "counter a at %s reads %r, want (115, -15)" % (ConsistencyLevel.value_to_name[cl], row))
        row = s.execute(select, ["b"]).one()
        check(row is not None and (row.n, row.m) == (7, 0), "counter b reads %r, want (7, 0)" % (row,))
        try:
            s.execute(s.prepare("INSERT INTO %s.hits (k, n) VALUES (?, ?)" % ks), ["c", 1])
        except InvalidRequest:
            pass
        else:
            raise AssertionError("INSERT into a counter table succeeded")

        def described():
            t = self.cluster.metadata.keyspaces[ks].tables.get("hits")
            if t is None:
                return "no table hits in the metadata yet"
            types = {n: c.cql_type for n, c in t.columns.items()}
            want = {"k": "text", "n": "counter", "m": "counter"}
            return None if types == want else "the metadata has types %r, want %r" % (types, want)
        wait_until("cluster.metadata describes the hits table", described)

    def non_frozen_user_types(self):
        """A non-frozen user type column updated field by field (c.phone = ?), beside a map of a
        frozen user type, a list of frozen maps and a tuple, all bound through prepared
        statements, read back as the registered class, and described by cluster.metadata (the
        column as contact, not frozen; user_types with its frozen<set<text>> field)."""
        s, ks = self.session, self.ks
        s.execute("CREATE TYPE %s.contact (name text, phone text, tags frozen<set<text>>)" % ks)
        s.execute("CREATE TABLE %s.people (k int PRIMARY KEY, c contact, h map<text, frozen<contact>>,"
                  " n list<frozen<map<text, int>>>, t tuple<int, text>)" % ks)

        class Contact(object):
            def __init__(self, name=None, phone=None, tags=None):
                self.name, self.phone, self.tags = name, phone, tags

            def key(self):
                return (self.name, self.phone, set(self.tags or ()))

        def known():
            u = self.cluster.metadata.keyspaces[ks].user_types.get("contact")
            if u is None:
                return "no type contact in the metadata yet"
            got = (list(u.field_names), list(u.field_types))
            return None if got == (["name", "phone", "tags"], ["text", "text", "frozen<set<text>>"]) else "type contact is %r" % (got,)
        wait_until("cluster.metadata describes type contact", known)
        self.cluster.register_user_type(ks, "contact", Contact)
        s.execute(s.prepare("INSERT INTO %s.people (k, c, h, n, t) VALUES (?, ?, ?, ?, ?)" % ks),
                  [1, Contact("ann", "1", {"x", "a"}), {"home": Contact("h", "2", None)}, [{"a": 1}, {"b": 2}], (3, "t")])
        s.execute(s.prepare("UPDATE %s.people SET c.phone = ?, c.tags = ? WHERE k = ?" % ks), ["9", {"y"}, 1])
        s.execute(s.prepare("UPDATE %s.people SET h[?] = ?, n = n + ?, t = ? WHERE k = ?" % ks),
                  ["work", Contact("w", None, {"z"}), [{"c": 3}], (4, None), 1])
        s.execute(s.prepare("DELETE c.name FROM %s.people WHERE k = ?" % ks), [1])
        r = s.execute(s.prepare("SELECT c, h, n, t FROM %s.people WHERE k = ?" % ks), [1]).one()
        check(r is not None, "row 1 of people is missing")
        check(isinstance(r.c, Contact) and r.c.key() == (None, "9", {"y"}), "c reads %r, want name None, phone 9, tags {y}" % (vars(r.c) if r.c else r.c,))
        h = {k: v.key() for k, v in (r.h or {}).items()}
        check(h == {"home": ("h", "2", set()), "work": ("w", None, {"z"})}, "h reads %r" % (h,))
        check([dict(m) for m in r.n or ()] == [{"a": 1}, {"b": 2}, {"c": 3}], "n reads %r" % (r.n,))
        check(tuple(r.t) == (4, None), "t reads %r, want (4, None)" % (r.t,))
        want_types = {"k": "int", "c": "contact", "h": "map<text, frozen<contact>>", "n": "list<frozen<map<text, int>>>",
                      "t": "frozen<tuple<int, text>>"}

        def described():
            t = self.cluster.metadata.keyspaces[ks].tables.get("people")
            if t is None:
                return "no table people in the metadata yet"
            types = {n: c.cql_type for n, c in t.columns.items()}
            return None if types == want_types else "the metadata has types %r, want %r" % (types, want_types)
        wait_until("cluster.metadata describes the people table", described)

    def fetch(self, stmt, args, fetch_size):
        """Executes the prepared stmt with args, unpaged (fetch_size None: one response, no
        paging state) or page after page of fetch_size rows following the paging state; returns
        the rows and the number of pages."""
        rows, pages, state = [], 0, None
        while True:
            bound = stmt.bind(args)
            bound.fetch_size = fetch_size
            rs = self.session.execute(bound, paging_state=state)
            page = list(rs.current_rows)
            pages += 1
            if fetch_size is None:
                check(rs.paging_state is None, "unpaged %s returned a paging state" % stmt.query_string)
            else:
                check(len(page) <= fetch_size, "%s: page %d has %d rows, more than %d" % (stmt.query_string, pages, len(page), fetch_size))
            rows.extend(page)
            state = rs.paging_state
            if state is None:
                return rows, pages
            check(pages <= 1000, "%s: paging did not end after %d pages" % (stmt.query_string, pages))

    def both(self, stmt, args, fetch_size=2):
        """The rows of stmt with args unpaged, checked equal (in order) to them paged by fetch_size."""
        whole, _ = self.fetch(stmt, args, None)
        paged, pages = self.fetch(stmt, args, fetch_size)
        check([tuple(r) for r in paged] == [tuple(r) for r in whole],
              "%s %r paged by %d (%d pages) returned %r, unpaged %r" % (stmt.query_string, args, fetch_size, pages, [tuple(r) for r in paged], [tuple(r) for r in whole]))
        return [tuple(r) for r in whole]

    def index_targets(self, table):
        """The indexes of ks.table in cluster.metadata as {name: (kind, target)}, from the
        keyspace's and the table's view, or why they disagree."""
        meta = self.cluster.metadata.keyspaces[self.ks]
        t = meta.tables.get(table)
        if t is None:
            return None, "no table %s in the metadata yet" % table
        by_table = {n: (i.kind, i.index_options.get("target")) for n, i in t.indexes.items()}
        by_ks = {n: (i.kind, i.index_options.get("target")) for n, i in meta.indexes.items() if i.table_name == table}
        if by_table != by_ks:
            return None, "the table's indexes %r and the keyspace's %r differ" % (by_table, by_ks)
        return by_table, None

    def wait_indexes(self, table, want):
        def cond():
            got, why = self.index_targets(table)
            if why is not None:
                return why
            return None if got == want else "indexes %r, want %r" % (got, want)
        wait_until("cluster.metadata shows the indexes %r of %s" % (want, table), cond)

    def wait_built(self, query, args):
        """Waits until the index query runs at ALL (every replica has built the index)."""
        stmt = self.session.prepare(query)
        stmt.consistency_level = ConsistencyLevel.ALL

        def cond():
            try:
                self.session.execute(stmt, args)
            except Exception as e:
                return str(e)
            return None
        wait_until("the index of %s built on every replica" % query, cond)

    def secondary_indexes(self):
        """CREATE INDEX on a regular column, queried through prepared statements with and
        without the partition key, unpaged and paged by the driver (the same rows in the same
        order: by token, then clustering), seen in cluster.metadata (keyspace and table
        indexes, kind COMPOSITES, target v) and the table's export, with an aggregate, GROUP BY
        and PER PARTITION LIMIT, then DROP INDEX: gone from the metadata, and the query it served
        refused without ALLOW FILTERING."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.idx (k int, c int, v text, n int, PRIMARY KEY (k, c))" % ks)
        ins = s.prepare("INSERT INTO %s.idx (k, c, v, n) VALUES (?, ?, ?, ?)" % ks)
        for k in range(8):
            for c in range(4):
                s.execute(ins, [k, c, "even" if c % 2 == 0 else "odd", k * 10 + c])
        s.execute("CREATE INDEX by_v ON %s.idx (v)" % ks)
        self.wait_built("SELECT k FROM %s.idx WHERE v = ?" % ks, ["even"])
        self.wait_indexes("idx", {"by_v": ("COMPOSITES", "v")})
        check("CREATE INDEX by_v ON %s.idx (v)" % ks in self.cluster.metadata.keyspaces[ks].tables["idx"].export_as_string(),
              "the table's export lacks the index: %s" % self.cluster.metadata.keyspaces[ks].tables["idx"].export_as_string())
        by_v = s.prepare("SELECT k, c, n FROM %s.idx WHERE v = ?" % ks)
        rows = self.both(by_v, ["odd"], 3)
        check(sorted(rows) == [(k, c, k * 10 + c) for k in range(8) for c in (1, 3)], "WHERE v = 'odd' returned %r" % rows)
        runs = [r[0] for i, r in enumerate(rows) if i == 0 or rows[i - 1][0] != r[0]]
        check(len(runs) == 8 and all(rows[i][1] < rows[i + 1][1] for i in range(len(rows) - 1) if rows[i][0] == rows[i + 1][0]),
              "WHERE v = 'odd': rows not by partition in clustering order: %r" % rows)
        check(self.both(by_v, ["none"]) == [], "WHERE v = 'none' returned rows")
        in_part = s.prepare("SELECT c, n FROM %s.idx WHERE k = ? AND v = ?" % ks)
        got = self.both(in_part, [5, "even"], 1)
        check(got == [(0, 50), (2, 52)], "WHERE k = 5 AND v = 'even' returned %r, want [(0, 50), (2, 52)]" % got)
        limited = s.prepare("SELECT k, c FROM %s.idx WHERE v = ? LIMIT 5" % ks)
        got = self.both(limited, ["even"], 2)
        check(len(got) == 5 and len(set(got)) == 5 and all(c % 2 == 0 for _, c in got), "WHERE v = 'even' LIMIT 5 returned %r" % got)
        try:
            s.execute(s.prepare("SELECT k FROM %s.idx WHERE v = ? AND n = ?" % ks), ["even", 10])
        except InvalidRequest as e:
            check("ALLOW FILTERING" in str(e), "v = ? AND n = ? refused with %s" % e)
        else:
            raise AssertionError("an indexed query with another restriction ran without ALLOW FILTERING")
        got = self.both(s.prepare("SELECT k, c FROM %s.idx WHERE v = ? AND n > ? ALLOW FILTERING" % ks), ["even", 60], 1)
        check(sorted(got) == [(6, 2), (7, 0), (7, 2)], "v = 'even' AND n > 60 ALLOW FILTERING returned %r" % got)
        # A scan's shapes over the index: an aggregate, GROUP BY, PER PARTITION LIMIT.
        got = self.both(s.prepare("SELECT count(*), max(n) FROM %s.idx WHERE v = ?" % ks), ["odd"], 3)
        check(got == [(16, 73)], "count(*), max(n) WHERE v = 'odd' returned %r, want [(16, 73)]" % got)
        got = self.both(s.prepare("SELECT k, count(*) FROM %s.idx WHERE v = ? GROUP BY k" % ks), ["odd"], 3)
        check(sorted(got) == [(k, 2) for k in range(8)] and [k for k, _ in got] == runs,
              "GROUP BY k WHERE v = 'odd' returned %r (partitions in the order %r)" % (got, runs))
        got = self.both(s.prepare("SELECT k, c FROM %s.idx WHERE v = ? PER PARTITION LIMIT ?" % ks), ["odd", 1], 3)
        check(got == [(k, 1) for k in runs], "WHERE v = 'odd' PER PARTITION LIMIT 1 returned %r" % got)
        s.execute("DROP INDEX %s.by_v" % ks)
        self.wait_indexes("idx", {})
        try:
            s.execute(s.prepare("SELECT k, c FROM %s.idx WHERE v = ?" % ks), ["odd"])
        except InvalidRequest as e:
            check("ALLOW FILTERING" in str(e), "WHERE v = ? after DROP INDEX refused with %s" % e)
        else:
            raise AssertionError("WHERE v = ? ran without ALLOW FILTERING after DROP INDEX")

    def map_indexes(self):
        """Indexes on a map's keys, values and entries, queried with CONTAINS KEY, CONTAINS and
        m[k] = v through prepared statements, with and without the partition key, unpaged and
        paged, and seen in cluster.metadata with their targets."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.idxmap (k int, c int, m map<text, int>, PRIMARY KEY (k, c))" % ks)
        for target in ("keys(m)", "values(m)", "entries(m)"):
            s.execute("CREATE INDEX ON %s.idxmap (%s)" % (ks, target))
        ins = s.prepare("INSERT INTO %s.idxmap (k, c, m) VALUES (?, ?, ?)" % ks)
        for k in range(6):
            for c in range(3):
                s.execute(ins, [k, c, {"c%d" % c: k, "all": 1}])
        s.execute(s.prepare("UPDATE %s.idxmap SET m[?] = ? WHERE k = ? AND c = ?" % ks), ["all", 2, 4, 1])
        self.wait_built("SELECT k FROM %s.idxmap WHERE m CONTAINS KEY ?" % ks, ["all"])
        self.wait_built("SELECT k FROM %s.idxmap WHERE m CONTAINS ?" % ks, [1])
        self.wait_built("SELECT k FROM %s.idxmap WHERE m[?] = ?" % ks, ["all", 1])
        self.wait_indexes("idxmap", {"idxmap_m_idx": ("COMPOSITES", "keys(m)"), "idxmap_m_idx_1": ("COMPOSITES", "values(m)"),
                                     "idxmap_m_idx_2": ("COMPOSITES", "entries(m)")})
        keys = s.prepare("SELECT k, c FROM %s.idxmap WHERE m CONTAINS KEY ?" % ks)
        got = self.both(keys, ["c2"], 2)
        check(sorted(got) == [(k, 2) for k in range(6)], "m CONTAINS KEY 'c2' returned %r" % got)
        values = s.prepare("SELECT k, c FROM %s.idxmap WHERE m CONTAINS ?" % ks)
        got = self.both(values, [1], 2)
        check(sorted(got) == [(k, c) for k in range(6) for c in range(3) if (k, c) != (4, 1)],
              "m CONTAINS 1 returned %r (m['all'] = 2 at (4, 1): its old entry is stale)" % got)
        got = self.both(values, [2], 2)
        check(sorted(got) == [(2, 0), (2, 1), (2, 2), (4, 1)], "m CONTAINS 2 returned %r" % got)
        entries = s.prepare("SELECT k, c FROM %s.idxmap WHERE m[?] = ?" % ks)
        got = self.both(entries, ["all", 1], 4)
        check(sorted(got) == [(k, c) for k in range(6) for c in range(3) if (k, c) != (4, 1)], "m['all'] = 1 returned %r" % got)
        got = self.both(entries, ["c1", 3], 1)
        check(got == [(3, 1)], "m['c1'] = 3 returned %r" % got)
        in_part = s.prepare("SELECT c FROM %s.idxmap WHERE k = ? AND m[?] = ?" % ks)
        got = self.both(in_part, [4, "all", 1], 1)
        check(got == [(0,), (2,)], "k = 4 AND m['all'] = 1 returned %r" % got)
        got = self.both(s.prepare("SELECT c FROM %s.idxmap WHERE k = ? AND m CONTAINS KEY ?" % ks), [1, "c0"], 1)
        check(got == [(0,)], "k = 1 AND m CONTAINS KEY 'c0' returned %r" % got)
        for name in ("idxmap_m_idx", "idxmap_m_idx_1", "idxmap_m_idx_2"):
            s.execute("DROP INDEX %s.%s" % (ks, name))
        self.wait_indexes("idxmap", {})

    def scan_shapes(self):
        """Over a scan, through prepared statements, unpaged and paged: WHERE v = ? ALLOW
        FILTERING over the whole table, refused without ALLOW FILTERING; GROUP BY the partition
        key; PER PARTITION LIMIT ?; and materialized views refused, pointing to indexes."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.scanq (k int, c int, v int, PRIMARY KEY (k, c))" % ks)
        ins = s.prepare("INSERT INTO %s.scanq (k, c, v) VALUES (?, ?, ?)" % ks)
        for k in range(7):
            for c in range(5):
                s.execute(ins, [k, c, (k + c) % 3])
        filt = s.prepare("SELECT k, c FROM %s.scanq WHERE v = ? ALLOW FILTERING" % ks)
        got = self.both(filt, [0], 2)
        check(sorted(got) == [(k, c) for k in range(7) for c in range(5) if (k + c) % 3 == 0] and len(got) == len(set(got)),
              "WHERE v = 0 ALLOW FILTERING returned %r" % got)
        got = self.both(s.prepare("SELECT k, c FROM %s.scanq WHERE c = ? ALLOW FILTERING" % ks), [4], 3)
        check(sorted(got) == [(k, 4) for k in range(7)], "WHERE c = 4 ALLOW FILTERING returned %r" % got)
        try:
            s.execute(s.prepare("SELECT k, c FROM %s.scanq WHERE v = ?" % ks), [0])
        except InvalidRequest as e:
            check("ALLOW FILTERING" in str(e), "WHERE v = ? without ALLOW FILTERING refused with %s" % e)
        else:
            raise AssertionError("WHERE v = ? over a scan ran without ALLOW FILTERING")
        grouped = s.prepare("SELECT k, count(*), max(v) FROM %s.scanq GROUP BY k" % ks)
        got = self.both(grouped, [], 2)
        check(sorted(got) == [(k, 5, 2) for k in range(7)], "GROUP BY k returned %r" % got)
        got = self.both(s.prepare("SELECT k, count(*) FROM %s.scanq WHERE v = ? GROUP BY k ALLOW FILTERING" % ks), [1], 3)
        check(sorted(got) == sorted((k, sum(1 for c in range(5) if (k + c) % 3 == 1)) for k in range(7)),
              "GROUP BY k of v = 1 returned %r" % got)
        ppl = s.prepare("SELECT k, c FROM %s.scanq PER PARTITION LIMIT ?" % ks)
        got = self.both(ppl, [2], 3)
        check(sorted(got) == [(k, c) for k in range(7) for c in range(2)], "PER PARTITION LIMIT 2 returned %r" % got)
        got = self.both(s.prepare("SELECT k, c FROM %s.scanq WHERE v = ? PER PARTITION LIMIT 1 ALLOW FILTERING" % ks), [2], 2)
        check(sorted(got) == [(k, min(c for c in range(5) if (k + c) % 3 == 2)) for k in range(7)],
              "v = 2 PER PARTITION LIMIT 1 returned %r" % got)
        try:
            s.execute("CREATE MATERIALIZED VIEW %s.by_v AS SELECT * FROM %s.scanq WHERE v IS NOT NULL AND k IS NOT NULL "
                      "AND c IS NOT NULL PRIMARY KEY (v, k, c)" % (ks, ks))
        except Exception as e:  # Cassandra's answer is an InvalidRequest, a SyntaxException from kvnode's parser
            check("secondary index" in str(e), "CREATE MATERIALIZED VIEW refused with %s" % e)
        else:
            raise AssertionError("CREATE MATERIALIZED VIEW succeeded")

    def partition_key_filters(self):
        """Part of a composite partition key (=, IN on one column, slices) with ALLOW
        FILTERING over a scan, and primary key columns (part of the partition key, a clustering
        column) beside an indexed column with ALLOW FILTERING, through prepared statements,
        unpaged and paged; without ALLOW FILTERING, and IN on the partition key beside an index,
        refused with Cassandra 4.1's messages (InvalidRequest)."""
        s, ks = self.session, self.ks
        s.execute("CREATE TABLE %s.pkf (k1 int, k2 int, c int, v int, PRIMARY KEY ((k1, k2), c))" % ks)
        ins = s.prepare("INSERT INTO %s.pkf (k1, k2, c, v) VALUES (?, ?, ?, ?)" % ks)
        rows = [(k1, k2, c, (k1 + k2 + c) % 3) for k1 in range(5) for k2 in range(3) for c in range(3)]
        for r in rows:
            s.execute(ins, list(r))
        s.execute("CREATE INDEX pkf_v ON %s.pkf (v)" % ks)
        self.wait_built("SELECT k1 FROM %s.pkf WHERE v = ?" % ks, [1])
        q = "SELECT k1, k2, c, v FROM %s.pkf WHERE " % ks
        for where, args, keep in [
            ("k1 = ? ALLOW FILTERING", [2], lambda r: r[0] == 2),
            ("k2 = ? ALLOW FILTERING", [1], lambda r: r[1] == 1),
            ("k1 IN ? ALLOW FILTERING", [[1, 4]], lambda r: r[0] in (1, 4)),
            ("k1 > ? AND k1 <= ? AND k2 = ? ALLOW FILTERING", [1, 3, 0], lambda r: 1 < r[0] <= 3 and r[1] == 0),
            ("k1 = ? AND c = ? ALLOW FILTERING", [3, 2], lambda r: r[0] == 3 and r[2] == 2),
            ("v = ? AND c = ? ALLOW FILTERING", [1, 2], lambda r: r[3] == 1 and r[2] == 2),
            ("v = ? AND k1 = ? ALLOW FILTERING", [0, 4], lambda r: r[3] == 0 and r[0] == 4),
        ]:
            want = sorted(r for r in rows if keep(r))
            check(len(want) > 0, "the model of %s selects no rows" % where)
            got = self.both(s.prepare(q + where), args, 2)
            check(sorted(got) == want and len(got) == len(set(got)), "WHERE %s %r returned %r, want %r" % (where, args, got, want))
        needs = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"
        for where, want in [
            ("k1 = ?", needs),
            ("k1 > ? AND k2 = ?", needs),
            ("v = ? AND c = ?", needs),
            ("v = ? AND k1 = ?", needs),
            ("v = ? AND k1 IN (1, 2) ALLOW FILTERING", "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported"),
        ]:
            try:
                s.prepare(q + where)
            except InvalidRequest as e:
                check(want in str(e), "WHERE %s refused with %s, want %r" % (where, e, want))
            else:
                raise AssertionError("WHERE %s was prepared" % where)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: interop.py CONFIG.json")
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    import cassandra
    print("python %s, cassandra-driver %s" % (sys.version.split()[0], cassandra.__version__))
    steps = Steps(cfg)
    plan = [steps.connect_and_discover, steps.ddl_and_metadata, steps.alter_keyspace, steps.schema_export_replays, steps.every_type, steps.paging,
            steps.export_by_token_ranges, steps.batches, steps.expiring_data, steps.functions, steps.token_aware_routing, steps.rate_limit, steps.schema_evolution, steps.frozen_types, steps.user_types, steps.user_type_keys,
            steps.select_shapes, steps.collections, steps.counters, steps.non_frozen_user_types,
            steps.secondary_indexes, steps.map_indexes, steps.scan_shapes, steps.partition_key_filters]
    passed = failed = 0
    try:
        for i, step in enumerate(plan):
            name = step.__name__.replace("_", " ")
            try:
                step()
            except Exception:
                failed += 1
                print("FAIL %s:\n%s" % (name, traceback.format_exc()), flush=True)
                if i < 2:  # nothing else can run without a connection and the schema
                    print("skipping the remaining %d steps" % (len(plan) - i - 1))
                    break
            else:
                passed += 1
                print("PASS %s" % name, flush=True)
    finally:
        if steps.cluster is not None:
            steps.cluster.shutdown()
    print("python: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
