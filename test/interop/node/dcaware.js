'use strict';
// The DataStax Node.js driver against kvnode in two data centers, with a DC-aware policy: the
// counterpart of python/dcaware.py, run by test/interop's TestDriversDataCenters with the same
// CONFIG.json (port, keyspace, local_dc, hosts, remote, prefix, rows, each_quorum). The last line
// of its output is "OK" when every check held.

const fs = require('fs');
const cassandra = require('cassandra-driver');

const { types } = cassandra;
const TIMEOUT_MS = 30000;

function check(cond, msg) {
  if (!cond) {
    throw new Error(msg);
  }
}

async function main() {
  const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const client = new cassandra.Client({
    contactPoints: cfg.hosts,
    localDataCenter: cfg.local_dc,
    keyspace: cfg.keyspace,
    protocolOptions: { port: cfg.port, maxVersion: types.protocolVersion.v4 },
    policies: {
      loadBalancing: new cassandra.policies.loadBalancing.TokenAwarePolicy(
        new cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy(cfg.local_dc)),
    },
    queryOptions: { consistency: types.consistencies.localQuorum, prepare: true },
    socketOptions: { connectTimeout: TIMEOUT_MS, readTimeout: TIMEOUT_MS },
  });
  await client.connect();
  try {
    for (const h of client.hosts.values()) {
      if (cfg.hosts.includes(h.address.split(':')[0])) {
        check(h.datacenter === cfg.local_dc, `host ${h.address} is in data center ${h.datacenter}, want ${cfg.local_dc}`);
      }
    }
    for (let i = 0; i < cfg.rows; i++) {
      const key = `${cfg.prefix}-${i}`;
      const rs = await client.execute('INSERT INTO t (k, v) VALUES (?, ?)', [key, i]);
      const served = rs.info.queriedHost.split(':')[0];
      check(cfg.hosts.includes(served), `the insert of ${key} went to ${served}, not to the local data center ${cfg.hosts}`);
      const row = (await client.execute('SELECT v FROM t WHERE k = ?', [key])).first();
      check(row && row.v === i, `${key} reads ${JSON.stringify(row)} at LOCAL_QUORUM, want ${i}`);
    }
    let unavailable = null;
    try {
      await client.execute(`INSERT INTO t (k, v) VALUES ('${cfg.prefix}-each', 1)`, [],
        { consistency: types.consistencies.eachQuorum, prepare: false });
    } catch (e) {
      unavailable = e;
    }
    if (cfg.each_quorum === 'ok') {
      check(unavailable === null, `EACH_QUORUM failed with every node up: ${unavailable}`);
    } else {
      check(unavailable && unavailable.code === types.responseErrorCodes.unavailableException,
        `EACH_QUORUM with the other data center down answered ${unavailable}, want Unavailable`);
    }
    console.log('OK');
  } finally {
    await client.shutdown();
  }
}

main().catch((err) => {
  console.log(`FAIL: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
});
