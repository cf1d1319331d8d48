"""The DataStax Python driver against kvnode in two data centers, with a DC-aware policy.

Run by test/interop's TestDriversDataCenters: /usr/bin/python3 dcaware.py CONFIG.json, where
CONFIG.json holds port, keyspace, local_dc, hosts (the local data center's addresses), remote
(the other's), prefix, rows and each_quorum ("ok" or "unavailable"). It writes rows keys
prefix-0 ... at LOCAL_QUORUM through the local data center only (the coordinators the driver
picks must all be local), reads them back at LOCAL_QUORUM, and writes one more at EACH_QUORUM,
which must succeed or answer Unavailable as each_quorum says. The last line of its output is
"OK" when every check held; anything else fails the test."""
import json
import sys

from cassandra import ConsistencyLevel, Unavailable
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import SimpleStatement

TIMEOUT = 30


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=cfg["local_dc"])),
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        request_timeout=TIMEOUT,
    )
    cluster = Cluster(contact_points=cfg["hosts"], port=cfg["port"], protocol_version=4,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=TIMEOUT, control_connection_timeout=TIMEOUT)
    session = cluster.connect(cfg["keyspace"])
    try:
        dcs = {h.address: h.datacenter for h in cluster.metadata.all_hosts()}
        for h in cfg["hosts"]:
            check(dcs.get(h) == cfg["local_dc"], "host %s is in data center %r, want %s" % (h, dcs.get(h), cfg["local_dc"]))
        insert = session.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
        select = session.prepare("SELECT v FROM t WHERE k = ?")
        for i in range(cfg["rows"]):
            key = "%s-%d" % (cfg["prefix"], i)
            rs = session.execute(insert, [key, i])
            served = getattr(rs.response_future.coordinator_host, "address", rs.response_future.coordinator_host)
            check(served in cfg["hosts"], "the insert of %s went to %s, not to the local data center %s" % (key, served, cfg["hosts"]))
            row = session.execute(select, [key]).one()
            check(row is not None and row.v == i, "%s reads %r at LOCAL_QUORUM, want %d" % (key, row, i))
        each = SimpleStatement("INSERT INTO t (k, v) VALUES ('%s-each', 1)" % cfg["prefix"], consistency_level=ConsistencyLevel.EACH_QUORUM)
        try:
            session.execute(each)
            check(cfg["each_quorum"] == "ok", "EACH_QUORUM succeeded with the other data center down")
        except Unavailable as e:
            check(cfg["each_quorum"] == "unavailable", "EACH_QUORUM answered Unavailable with every node up: %s" % e)
        print("OK")
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
