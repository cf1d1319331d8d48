#!/usr/bin/python3
"""kvnode's password authentication checked with the DataStax Python driver's PlainTextAuthProvider.

Run by test/interop's Go runner (TestAuthDrivers) against three kvnode processes started with
--authenticator password, after it created the keyspace, the table ks.t and the role named in
the config, granted SELECT and MODIFY on the keyspace:

    /usr/bin/python3 test/interop/python/auth.py CONFIG.json

CONFIG.json holds hosts, port, keyspace, username and password. The last line says "N passed,
N failed"; the exit status is 0 only if all passed.
"""

import json
import sys
import traceback

# docs:begin python-auth
from cassandra import Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable
# docs:end

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
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
