'use strict';
// kvnode's password authentication checked with the DataStax Node.js driver's PlainTextAuthProvider.
//
// Run by test/interop's Go runner (TestAuthDrivers) against three kvnode processes started with
// --authenticator password, after it created the keyspace, the table ks.t and the role named in
// the config, granted SELECT and MODIFY on the keyspace:
//
//     node test/interop/node/auth.js CONFIG.json
//
// CONFIG.json holds hosts, port, keyspace, username and password. The last line says "N passed,
// N failed"; the exit status is 0 only if all passed.

const fs = require('fs');
const cassandra = require('cassandra-driver');

const { types } = cassandra;
const TIMEOUT_MS = 30000;

function client(cfg, authProvider, keyspace) {
  // docs:begin node-auth-connect
  return new cassandra.Client({
    contactPoints: cfg.hosts,
    localDataCenter: 'datacenter1',
    keyspace,
    protocolOptions: { port: cfg.port, maxVersion: types.protocolVersion.v4 },
    authProvider, // new cassandra.auth.PlainTextAuthProvider(username, password)
    socketOptions: { connectTimeout: TIMEOUT_MS, readTimeout: TIMEOUT_MS },
  });
  // docs:end
}

async function main() {
  const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  let passed = 0;
  let failed = 0;
  async function step(name, fn) {
    try {
      await fn();
      console.log('PASS', name);
      passed++;
    } catch (e) {
      console.log('FAIL', name);
      console.log(e && e.stack ? e.stack : e);
      failed++;
    }
  }
  async function refused(c, want) {
    try {
      await c.connect();
      throw new Error('the connection was accepted');
    } catch (e) {
      const all = [String(e)];
      if (e.innerErrors) {
        for (const k of Object.keys(e.innerErrors)) all.push(String(e.innerErrors[k]));
      }
      if (!all.some((m) => m.includes(want))) {
        throw new Error(`connect failed with ${all.join(' | ')}, want an error saying "${want}"`);
      }
    } finally {
      await c.shutdown();
    }
  }

  await step('an anonymous client is refused', () => refused(client(cfg, undefined, undefined), 'requires authentication'));
  await step('a wrong password is refused', () => refused(
    client(cfg, new cassandra.auth.PlainTextAuthProvider(cfg.username, 'wrong'), undefined),
    'and/or password are incorrect'));
  await step('a role granted SELECT and MODIFY reads and writes, and is Unauthorized for ALTER and DROP', async () => {
    const c = client(cfg, new cassandra.auth.PlainTextAuthProvider(cfg.username, cfg.password), cfg.keyspace);
    try {
      await c.connect();
      await c.execute('INSERT INTO t (k, v) VALUES (?, ?)', ['node', 42], { prepare: true });
      const rs = await c.execute('SELECT v FROM t WHERE k = ?', ['node'], { prepare: true });
      if (rs.rows.length !== 1 || rs.rows[0].v !== 42) {
        throw new Error(`read back ${JSON.stringify(rs.rows)}, want v = 42`);
      }
      for (const [stmt, perm] of [
        ["ALTER TABLE t WITH per_partition_rate_limit = {'max_writes_per_second': 1}", 'ALTER'],
        ['DROP TABLE t', 'DROP'],
      ]) {
        let err = null;
        try {
          await c.execute(stmt);
        } catch (e) {
          err = e;
        }
        const want = `User ${cfg.username} has no ${perm} permission`;
        if (!err || err.code !== types.responseErrorCodes.unauthorized || !String(err.message).includes(want)) {
          throw new Error(`${stmt}: ${err}, want a ResponseError with code 0x2100 saying "${want}"`);
        }
      }
    } finally {
      await c.shutdown();
    }
  });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(e && e.stack ? e.stack : e);
  process.exit(1);
});
