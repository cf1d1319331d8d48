"""Replica placement as the DataStax Python driver computes it, for kvnode's to be compared with.

Reads a JSON document on stdin: {"nodes": [{"id", "dc", "rack", "tokens": [int]}], "cases":
[{"rf": {dc: n}, "tokens": [int]}]}, and writes, per case and token, the ids of the token's
replicas under NetworkTopologyStrategy (the driver's make_token_replica_map, a port of
Cassandra's), as {"replicas": [[[id, ...] per token] per case]}. The driver's map is keyed by
the ring's tokens: the replicas of a token are those of the first ring token at or after it."""
import bisect
import json
import sys

from cassandra.connection import DefaultEndPoint
from cassandra.metadata import Murmur3Token, NetworkTopologyStrategy
from cassandra.policies import SimpleConvictionPolicy
from cassandra.pool import Host


def main():
    doc = json.load(sys.stdin)
    owners = {}
    for n in doc["nodes"]:
        h = Host(DefaultEndPoint(n["id"]), SimpleConvictionPolicy, datacenter=n["dc"], rack=n["rack"])
        for t in n["tokens"]:
            owners[Murmur3Token(t)] = h
    ring = sorted(owners)
    values = [t.value for t in ring]
    out = []
    for case in doc["cases"]:
        strategy = NetworkTopologyStrategy({dc: str(rf) for dc, rf in case["rf"].items()})
        m = strategy.make_token_replica_map(owners, ring)
        rows = []
        for t in case["tokens"]:
            i = bisect.bisect_left(values, t) % len(values)
            rows.append([h.endpoint.address for h in m[ring[i]]])
        out.append(rows)
    json.dump({"replicas": out}, sys.stdout)


if __name__ == "__main__":
    main()
