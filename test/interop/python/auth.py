#!/usr/bin/python3
"""kvnode's password authentication checked with the DataStax Python driver's PlainTextAuthProvider.

Run by test/interop's Go runner (TestAuthDrivers) against three kvnode processes started with
--authenticator password, after it created the keyspace, the table ks.t and the role named in
the config, granted SELECT and MODIFY on the keyspace; then, as the superuser, the service-level statements (docs/cql.md, "Service levels
and keyspace limits"), a role's writes rejected by its level, and a keyspace's rate_limit:

    /usr/bin/python3 test/interop/python/auth.py CONFIG.json

CONFIG.json holds hosts, port, keyspace, username, password, admin_username and admin_password.
The last line says "N passed, N failed"; the exit status is 0 only if all passed.
"""

import json
import sys
import traceback

# docs:begin python-auth
from cassandra import InvalidRequest, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable
# docs:end
from cassandra.protocol import ConfigurationException  # the server's Config_error (0x2300): a rate-limit rejection

TIMEOUT = 30  # seconds; never waited out on success


def cluster(cfg, auth_provider):
    # docs:begin python-auth-connect
    return Cluster(
        contact_points=cfg["hosts"],
        port=cfg["port"],
        protocol_version=4,
        auth_provider=auth_provider,  # PlainTextAuthProvider(username=..., password=...)
        connect_timeout=TIMEOUT,
        control_connection_timeout=TIMEOUT,
    )
    # docs:end


def check(ok, msg):
    if not ok:
        raise AssertionError(msg)


# The columns of the LIST statements and their CQL types, as docs/cql.md lists them.
LEVEL_COLUMNS = [("service_level", "text"), ("timeout", "text"), ("workload_type", "text"),
                 ("max_reads_per_second", "int"), ("max_writes_per_second", "int"), ("mode", "text")]
ATTACHED_COLUMNS = [("role", "text"), ("service_level", "text"), ("address", "text")]
EFFECTIVE_COLUMNS = [("service_level", "text"), ("attached_to", "text"), ("distance", "int"),
                     ("max_reads_per_second", "int"), ("max_writes_per_second", "int"), ("mode", "text")]


class ServiceLevelSteps:
    """The service-level statements run by the superuser's session. The levels and roles are this
    script's own (py_...), so rows of other clients' levels are left out of the LIST ALL checks."""

    def __init__(self, session, cfg):
        self.session, self.cfg = session, cfg
        self.role, self.role_pw, self.granted = "py_lv_a", "py lv password", "py_lv_b"
        self.level, self.granted_level = "py_sl_a", "py_sl_b"

    def run(self, *stmts):
        for stmt in stmts:
            self.session.execute(stmt)

    def listing(self, stmt, columns):
        """The rows of a LIST statement, as tuples, after checking its result metadata: the
        column names and types the driver decoded."""
        rs = self.session.execute(stmt)
        got = [(n, t.typename.replace("varchar", "text")) for n, t in zip(rs.column_names, rs.column_types)]
        check(got == columns, "%s: columns %s, want %s" % (stmt, got, columns))
        return [tuple(r) for r in rs]

    def own(self, rows, col=0):
        return [r for r in rows if (r[col] or "").startswith("py_")]

    def create_attach_list(self):
        ks, role, level = self.cfg["keyspace"], self.role, self.level
        self.run("CREATE ROLE %s WITH PASSWORD = '%s' AND LOGIN = true" % (role, self.role_pw),
                 "GRANT MODIFY ON KEYSPACE %s TO %s" % (ks, role),
                 "CREATE SERVICE LEVEL %s WITH max_writes_per_second = 5 AND max_reads_per_second = 100" % level,
                 "ATTACH SERVICE LEVEL %s TO %s" % (level, role))
        want = (level, None, "interactive", 100, 5, "enforce")
        got = self.listing("LIST SERVICE LEVEL %s" % level, LEVEL_COLUMNS)
        check(got == [want], "LIST SERVICE LEVEL %s: %s, want %s" % (level, got, [want]))
        got = self.own(self.listing("LIST ALL SERVICE LEVELS", LEVEL_COLUMNS))
        check(got == [want], "LIST ALL SERVICE LEVELS (py_ levels): %s, want %s" % (got, [want]))
        got = self.listing("LIST ATTACHED SERVICE LEVEL OF %s" % role, ATTACHED_COLUMNS)
        check(got == [(role, level, None)], "LIST ATTACHED SERVICE LEVEL OF %s: %s, want %s" % (role, got, [(role, level, None)]))
        got = self.own(self.listing("LIST ALL ATTACHED SERVICE LEVELS", ATTACHED_COLUMNS))
        check(got == [(role, level, None)], "LIST ALL ATTACHED SERVICE LEVELS (py_ roles): %s, want %s" % (got, [(role, level, None)]))
        want = [(level, role, 0, 100, 5, "enforce")]
        got = self.listing("LIST EFFECTIVE SERVICE LEVEL OF %s" % role, EFFECTIVE_COLUMNS)
        check(got == want, "LIST EFFECTIVE SERVICE LEVEL OF %s: %s, want %s" % (role, got, want))

    def grant_effective(self):
        role, granted, level, glevel = self.role, self.granted, self.level, self.granted_level
        self.run("CREATE ROLE %s" % granted,
                 "CREATE SERVICE LEVEL %s WITH max_reads_per_second = 500 AND mode = 'shadow'" % glevel,
                 "ATTACH SERVICE LEVEL %s TO %s" % (glevel, granted),
                 "GRANT %s TO %s" % (granted, role))
        want = [(level, role, 0, 100, 5, "enforce"), (glevel, granted, 1, 500, None, "shadow")]
        got = self.listing("LIST EFFECTIVE SERVICE LEVEL OF %s" % role, EFFECTIVE_COLUMNS)
        check(got == want, "LIST EFFECTIVE SERVICE LEVEL OF %s: %s, want %s" % (role, got, want))
        want = [(level, None, "interactive", 100, 5, "enforce"), (glevel, None, "interactive", 500, None, "shadow")]
        got = self.own(self.listing("LIST ALL SERVICE LEVELS", LEVEL_COLUMNS))
        check(got == want, "LIST ALL SERVICE LEVELS (py_ levels): %s, want %s" % (got, want))

    def alter(self):
        level = self.level
        self.run("ALTER SERVICE LEVEL %s WITH max_writes_per_second = 1" % level)
        want = [(level, None, "interactive", 100, 1, "enforce")]
        got = self.listing("LIST SERVICE LEVEL %s" % level, LEVEL_COLUMNS)
        check(got == want, "after ALTER, LIST SERVICE LEVEL %s: %s, want %s" % (level, got, want))
        self.run("ALTER SERVICE LEVEL %s WITH max_reads_per_second = null" % level)
        want = [(level, None, "interactive", None, 1, "enforce")]
        got = self.listing("LIST SERVICE LEVEL %s" % level, LEVEL_COLUMNS)
        check(got == want, "after ALTER ... max_reads_per_second = null, LIST SERVICE LEVEL %s: %s, want %s" % (level, got, want))
        got = self.listing("LIST EFFECTIVE SERVICE LEVEL OF %s" % self.role, EFFECTIVE_COLUMNS)[:1]
        want = [(level, self.role, 0, None, 1, "enforce")]
        check(got == want, "after ALTER, LIST EFFECTIVE SERVICE LEVEL OF %s starts %s, want %s" % (self.role, got, want))

    def rejected(self):
        c = cluster(self.cfg, PlainTextAuthProvider(username=self.role, password=self.role_pw))
        try:
            s = c.connect(self.cfg["keyspace"])
            s.default_timeout = TIMEOUT
            insert = s.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
            for i in range(200):
                try:
                    s.execute(insert, ("py-lv-%d" % (i % 50), i))
                except ConfigurationException as e:  # a level's rejection, as a partition's: do not retry at once
                    print("    write #%d: %s: %s" % (i, type(e).__name__, e))
                    msg = str(e)
                    check("service level" in msg and self.level in msg,
                          "the rejection %r does not name service level %s" % (msg, self.level))
                    return
            raise AssertionError("200 writes of role %s at a level of 1 write/s were all accepted" % self.role)
        finally:
            c.shutdown()

    def detach_drop(self):
        role, granted, level, glevel = self.role, self.granted, self.level, self.granted_level
        self.run("DETACH SERVICE LEVEL FROM %s" % role)
        got = self.listing("LIST ATTACHED SERVICE LEVEL OF %s" % role, ATTACHED_COLUMNS)
        check(got == [], "after DETACH, LIST ATTACHED SERVICE LEVEL OF %s: %s, want none" % (role, got))
        want = [(glevel, granted, 1, 500, None, "shadow")]
        got = self.listing("LIST EFFECTIVE SERVICE LEVEL OF %s" % role, EFFECTIVE_COLUMNS)
        check(got == want, "after DETACH, LIST EFFECTIVE SERVICE LEVEL OF %s: %s, want %s" % (role, got, want))
        self.run("DROP SERVICE LEVEL %s" % level)
        got = [r[0] for r in self.own(self.listing("LIST ALL SERVICE LEVELS", LEVEL_COLUMNS))]
        check(got == [glevel], "after DROP, LIST ALL SERVICE LEVELS (py_ levels): %s, want [%s]" % (got, glevel))
        try:
            self.session.execute("LIST SERVICE LEVEL %s" % level)
            raise AssertionError("LIST SERVICE LEVEL %s answered after its DROP" % level)
        except InvalidRequest as e:
            check(level in str(e), "LIST SERVICE LEVEL of the dropped level: %s, want it to name %s" % (e, level))
        # DROP detaches the level from every role.
        self.run("DROP SERVICE LEVEL %s" % glevel)
        got = self.own(self.listing("LIST ALL ATTACHED SERVICE LEVELS", ATTACHED_COLUMNS))
        check(got == [], "after DROP, LIST ALL ATTACHED SERVICE LEVELS (py_ roles): %s, want none" % got)
        got = self.listing("LIST EFFECTIVE SERVICE LEVEL OF %s" % role, EFFECTIVE_COLUMNS)
        check(got == [], "after DROP, LIST EFFECTIVE SERVICE LEVEL OF %s: %s, want none" % (role, got))
        self.run("DROP ROLE %s" % granted, "DROP ROLE %s" % role)

    def bad_options(self):
        for stmt, want in [
            ("CREATE SERVICE LEVEL py_sl_bad WITH max_writes_per_second = -1", "max_writes_per_second"),
            ("CREATE SERVICE LEVEL py_sl_bad WITH workload_type = 'batch'", "workload_type"),
        ]:
            try:
                self.session.execute(stmt)
                raise AssertionError("%s was accepted" % stmt)
            except InvalidRequest as e:
                check(want in str(e), "%s: %s, want it to name %s" % (stmt, e, want))
        got = [r[0] for r in self.own(self.listing("LIST ALL SERVICE LEVELS", LEVEL_COLUMNS))]
        check("py_sl_bad" not in got, "a refused CREATE SERVICE LEVEL left py_sl_bad: %s" % got)

    def keyspace_rate_limit(self):
        # The driver's keyspace metadata comes from system_schema.keyspaces, whose columns are
        # Cassandra's and do not hold rate_limit (docs/cql.md): kvnode's DESCRIBE KEYSPACE does.
        ks = self.cfg["keyspace"]
        limit = "rate_limit = {'max_reads_per_second': 100000, 'max_writes_per_second': 200000}"

        def described():
            return "\n".join(r.create_statement for r in self.session.execute("DESCRIBE KEYSPACE %s" % ks))

        self.run("ALTER KEYSPACE %s WITH %s" % (ks, limit))
        text = described()
        check(limit in text, "DESCRIBE KEYSPACE %s after ALTER does not show %s:\n%s" % (ks, limit, text))
        self.run("ALTER KEYSPACE %s WITH rate_limit = {}" % ks)
        text = described()
        check("rate_limit" not in text.replace("per_partition_rate_limit", ""),
              "DESCRIBE KEYSPACE %s after rate_limit = {} still shows a rate_limit:\n%s" % (ks, text))


def main():
    cfg = json.load(open(sys.argv[1]))
    ks = cfg["keyspace"]
    passed = failed = 0

    def step(name, fn):
        nonlocal passed, failed
        try:
            fn()
            print("PASS", name)
            passed += 1
        except Exception:
            print("FAIL", name)
            traceback.print_exc(file=sys.stdout)
            failed += 1

    def anonymous_refused():
        c = cluster(cfg, None)
        try:
            c.connect()
            raise AssertionError("an anonymous connection was accepted")
        except NoHostAvailable as e:
            msg = str(e)
            if "authentication" not in msg.lower():
                raise AssertionError("NoHostAvailable does not say authentication is required: " + msg)
        finally:
            c.shutdown()

    def wrong_password_refused():
        c = cluster(cfg, PlainTextAuthProvider(username=cfg["username"], password="wrong"))
        try:
            c.connect()
            raise AssertionError("a wrong password was accepted")
        except NoHostAvailable as e:
            if "and/or password are incorrect" not in str(e):
                raise AssertionError("NoHostAvailable does not name bad credentials: " + str(e))
        finally:
            c.shutdown()

    def granted_and_refused():
        c = cluster(cfg, PlainTextAuthProvider(username=cfg["username"], password=cfg["password"]))
        try:
            s = c.connect(ks)
            s.default_timeout = TIMEOUT
            ins = s.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
            s.execute(ins, ("py", 42))
            row = s.execute("SELECT v FROM t WHERE k = %s", ("py",)).one()
            if row is None or row.v != 42:
                raise AssertionError("read back %r, want v = 42" % (row,))
            for stmt, perm in [
                ("ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 1}", "ALTER"),
                ("DROP TABLE t", "DROP"),
            ]:
                try:
                    s.execute(stmt)
                    raise AssertionError("%s was allowed" % stmt)
                except Unauthorized as e:
                    want = "User %s has no %s permission" % (cfg["username"], perm)
                    if want not in str(e):
                        raise AssertionError("%s: %s, want it to say %r" % (stmt, e, want))
        finally:
            c.shutdown()

    step("an anonymous client is refused", anonymous_refused)
    step("a wrong password is refused", wrong_password_refused)
    step("a role granted SELECT and MODIFY reads and writes, and is Unauthorized for ALTER and DROP", granted_and_refused)

    admin = cluster(cfg, PlainTextAuthProvider(username=cfg["admin_username"], password=cfg["admin_password"]))
    try:
        levels = ServiceLevelSteps(admin.connect(), cfg)
        levels.session.default_timeout = TIMEOUT
        step("CREATE SERVICE LEVEL and ATTACH to a role; the LIST statements decode as docs/cql.md lists them", levels.create_attach_list)
        step("GRANT of a role with its own level: LIST EFFECTIVE lists both, the role's own first", levels.grant_effective)
        step("ALTER SERVICE LEVEL changes what LIST shows, and null clears a limit", levels.alter)
        step("the role's writes are rejected by its level of 1 write/s, the error naming the service level", levels.rejected)
        step("DETACH and DROP SERVICE LEVEL: LIST no longer shows the level", levels.detach_drop)
        step("a bad option of CREATE SERVICE LEVEL is InvalidRequest naming the option", levels.bad_options)
        step("a keyspace's rate_limit set by ALTER KEYSPACE shows in DESCRIBE KEYSPACE; rate_limit = {} removes it", levels.keyspace_rate_limit)
    finally:
        admin.shutdown()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
