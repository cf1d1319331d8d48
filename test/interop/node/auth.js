'use strict';
// kvnode's password authentication checked with the DataStax Node.js driver's PlainTextAuthProvider.
//
// Run by test/interop's Go runner (TestAuthDrivers) against three kvnode processes started with
// --authenticator password, after it created the keyspace, the table ks.t and the role named in
// the config, granted SELECT and MODIFY on the keyspace; then, as the superuser, the service-level
// statements (docs/cql.md, "Service levels and keyspace limits"), a role's writes rejected by its
// level, and a keyspace's rate_limit:
//
//     node test/interop/node/auth.js CONFIG.json
//
// CONFIG.json holds hosts, port, keyspace, username, password, admin_username and admin_password.
// The last line says "N passed, N failed"; the exit status is 0 only if all passed.

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

function check(ok, msg) {
  if (!ok) throw new Error(msg);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// The columns of the LIST statements and their CQL types, as docs/cql.md lists them.
const LEVEL_COLUMNS = [['service_level', 'text'], ['timeout', 'text'], ['workload_type', 'text'],
  ['max_reads_per_second', 'int'], ['max_writes_per_second', 'int'], ['mode', 'text']];
const ATTACHED_COLUMNS = [['role', 'text'], ['service_level', 'text'], ['address', 'text']];
const EFFECTIVE_COLUMNS = [['service_level', 'text'], ['attached_to', 'text'], ['distance', 'int'],
  ['max_reads_per_second', 'int'], ['max_writes_per_second', 'int'], ['mode', 'text']];

function typeName(code) {
  const { dataTypes } = types;
  if (code === dataTypes.text || code === dataTypes.varchar) return 'text';
  if (code === dataTypes.int) return 'int';
  return `type 0x${code.toString(16)}`;
}

// errorOf runs fn and returns what it threw, or null.
async function errorOf(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  return null;
}

// ServiceLevelSteps are the service-level statements run by the superuser's client. The levels
// and roles are this script's own (node_...), so rows of other clients' levels are left out of
// the LIST ALL checks.
class ServiceLevelSteps {
  constructor(admin, cfg) {
    this.admin = admin;
    this.cfg = cfg;
    this.role = 'node_lv_a';
    this.rolePw = 'node lv password';
    this.granted = 'node_lv_b';
    this.level = 'node_sl_a';
    this.grantedLevel = 'node_sl_b';
  }

  async run(...stmts) {
    for (const stmt of stmts) await this.admin.execute(stmt);
  }

  // listing returns the rows of a LIST statement as arrays, after checking its result metadata:
  // the column names and types the driver decoded.
  async listing(stmt, columns) {
    const rs = await this.admin.execute(stmt);
    const got = rs.columns.map((c) => [c.name, typeName(c.type.code)]);
    check(same(got, columns), `${stmt}: columns ${JSON.stringify(got)}, want ${JSON.stringify(columns)}`);
    return rs.rows.map((r) => rs.columns.map((c) => r[c.name]));
  }

  own(rows, col = 0) {
    return rows.filter((r) => (r[col] || '').startsWith('node_'));
  }

  async expectRows(stmt, columns, want, filter) {
    let got = await this.listing(stmt, columns);
    if (filter) got = this.own(got);
    check(same(got, want), `${stmt}${filter ? ' (node_ rows)' : ''}: ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }

  async createAttachList() {
    const { role, level } = this;
    await this.run(`CREATE ROLE ${role} WITH PASSWORD = '${this.rolePw}' AND LOGIN = true`,
      `GRANT MODIFY ON KEYSPACE ${this.cfg.keyspace} TO ${role}`,
      `CREATE SERVICE LEVEL ${level} WITH max_writes_per_second = 5 AND max_reads_per_second = 100`,
      `ATTACH SERVICE LEVEL ${level} TO ${role}`);
    const row = [level, null, 'interactive', 100, 5, 'enforce'];
    await this.expectRows(`LIST SERVICE LEVEL ${level}`, LEVEL_COLUMNS, [row]);
    await this.expectRows('LIST ALL SERVICE LEVELS', LEVEL_COLUMNS, [row], true);
    await this.expectRows(`LIST ATTACHED SERVICE LEVEL OF ${role}`, ATTACHED_COLUMNS, [[role, level, null]]);
    await this.expectRows('LIST ALL ATTACHED SERVICE LEVELS', ATTACHED_COLUMNS, [[role, level, null]], true);
    await this.expectRows(`LIST EFFECTIVE SERVICE LEVEL OF ${role}`, EFFECTIVE_COLUMNS, [[level, role, 0, 100, 5, 'enforce']]);
  }

  async grantEffective() {
    const { role, granted, level, grantedLevel } = this;
    await this.run(`CREATE ROLE ${granted}`,
      `CREATE SERVICE LEVEL ${grantedLevel} WITH max_reads_per_second = 500 AND mode = 'shadow'`,
      `ATTACH SERVICE LEVEL ${grantedLevel} TO ${granted}`,
      `GRANT ${granted} TO ${role}`);
    await this.expectRows(`LIST EFFECTIVE SERVICE LEVEL OF ${role}`, EFFECTIVE_COLUMNS,
      [[level, role, 0, 100, 5, 'enforce'], [grantedLevel, granted, 1, 500, null, 'shadow']]);
    await this.expectRows('LIST ALL SERVICE LEVELS', LEVEL_COLUMNS,
      [[level, null, 'interactive', 100, 5, 'enforce'], [grantedLevel, null, 'interactive', 500, null, 'shadow']], true);
  }

  async alter() {
    const { role, level } = this;
    await this.run(`ALTER SERVICE LEVEL ${level} WITH max_writes_per_second = 1`);
    await this.expectRows(`LIST SERVICE LEVEL ${level}`, LEVEL_COLUMNS, [[level, null, 'interactive', 100, 1, 'enforce']]);
    await this.run(`ALTER SERVICE LEVEL ${level} WITH max_reads_per_second = null`);
    await this.expectRows(`LIST SERVICE LEVEL ${level}`, LEVEL_COLUMNS, [[level, null, 'interactive', null, 1, 'enforce']]);
    const got = (await this.listing(`LIST EFFECTIVE SERVICE LEVEL OF ${role}`, EFFECTIVE_COLUMNS)).slice(0, 1);
    check(same(got, [[level, role, 0, null, 1, 'enforce']]), `after ALTER, LIST EFFECTIVE SERVICE LEVEL OF ${role} starts ${JSON.stringify(got)}`);
  }

  async rejected() {
    const c = client(this.cfg, new cassandra.auth.PlainTextAuthProvider(this.role, this.rolePw), this.cfg.keyspace);
    try {
      await c.connect();
      for (let i = 0; i < 200; i++) {
        const err = await errorOf(() => c.execute('INSERT INTO t (k, v) VALUES (?, ?)', [`node-lv-${i % 50}`, i], { prepare: true }));
        if (err === null) continue;
        // A level's rejection is a partition's: a ResponseError with code 0x2300 (configError).
        check(err instanceof cassandra.errors.ResponseError && err.code === types.responseErrorCodes.configError,
          `write #${i} failed with ${err.name} code 0x${(err.code || 0).toString(16)}: ${err.message}; want a ResponseError with code 0x2300`);
        console.log(`    write #${i}: ${err.name} code 0x${err.code.toString(16)}: ${err.message}`);
        check(err.message.includes('service level') && err.message.includes(this.level),
          `the rejection "${err.message}" does not name service level ${this.level}`);
        return;
      }
      throw new Error(`200 writes of role ${this.role} at a level of 1 write/s were all accepted`);
    } finally {
      await c.shutdown();
    }
  }

  async detachDrop() {
    const { role, granted, level, grantedLevel } = this;
    await this.run(`DETACH SERVICE LEVEL FROM ${role}`);
    await this.expectRows(`LIST ATTACHED SERVICE LEVEL OF ${role}`, ATTACHED_COLUMNS, []);
    await this.expectRows(`LIST EFFECTIVE SERVICE LEVEL OF ${role}`, EFFECTIVE_COLUMNS, [[grantedLevel, granted, 1, 500, null, 'shadow']]);
    await this.run(`DROP SERVICE LEVEL ${level}`);
    const names = this.own(await this.listing('LIST ALL SERVICE LEVELS', LEVEL_COLUMNS)).map((r) => r[0]);
    check(same(names, [grantedLevel]), `after DROP, LIST ALL SERVICE LEVELS (node_ levels): ${names}, want ${grantedLevel}`);
    const err = await errorOf(() => this.admin.execute(`LIST SERVICE LEVEL ${level}`));
    check(err && err.code === types.responseErrorCodes.invalid && err.message.includes(level),
      `LIST SERVICE LEVEL of the dropped level: ${err}, want an InvalidRequest (0x2200) naming ${level}`);
    // DROP detaches the level from every role.
    await this.run(`DROP SERVICE LEVEL ${grantedLevel}`);
    await this.expectRows('LIST ALL ATTACHED SERVICE LEVELS', ATTACHED_COLUMNS, [], true);
    await this.expectRows(`LIST EFFECTIVE SERVICE LEVEL OF ${role}`, EFFECTIVE_COLUMNS, []);
    await this.run(`DROP ROLE ${granted}`, `DROP ROLE ${role}`);
  }

  async badOptions() {
    for (const [stmt, want] of [
      ['CREATE SERVICE LEVEL node_sl_bad WITH max_writes_per_second = -1', 'max_writes_per_second'],
      ["CREATE SERVICE LEVEL node_sl_bad WITH workload_type = 'batch'", 'workload_type'],
    ]) {
      const err = await errorOf(() => this.admin.execute(stmt));
      check(err && err.code === types.responseErrorCodes.invalid && err.message.includes(want),
        `${stmt}: ${err}, want an InvalidRequest (0x2200) naming ${want}`);
    }
    const names = this.own(await this.listing('LIST ALL SERVICE LEVELS', LEVEL_COLUMNS)).map((r) => r[0]);
    check(!names.includes('node_sl_bad'), `a refused CREATE SERVICE LEVEL left node_sl_bad: ${names}`);
  }

  async keyspaceRateLimit() {
    // The driver's keyspace metadata comes from system_schema.keyspaces, whose columns are
    // Cassandra's and do not hold rate_limit (docs/cql.md): kvnode's DESCRIBE KEYSPACE does.
    const ks = this.cfg.keyspace;
    const limit = "rate_limit = {'max_reads_per_second': 100000, 'max_writes_per_second': 200000}";
    const described = async () => (await this.admin.execute(`DESCRIBE KEYSPACE ${ks}`)).rows.map((r) => r.create_statement).join('\n');
    await this.run(`ALTER KEYSPACE ${ks} WITH ${limit}`);
    let text = await described();
    check(text.includes(limit), `DESCRIBE KEYSPACE ${ks} after ALTER does not show ${limit}:\n${text}`);
    await this.run(`ALTER KEYSPACE ${ks} WITH rate_limit = {}`);
    text = await described();
    check(!text.replaceAll('per_partition_rate_limit', '').includes('rate_limit'),
      `DESCRIBE KEYSPACE ${ks} after rate_limit = {} still shows a rate_limit:\n${text}`);
  }
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

  const admin = client(cfg, new cassandra.auth.PlainTextAuthProvider(cfg.admin_username, cfg.admin_password), undefined);
  try {
    await admin.connect();
    const levels = new ServiceLevelSteps(admin, cfg);
    await step('CREATE SERVICE LEVEL and ATTACH to a role; the LIST statements decode as docs/cql.md lists them', () => levels.createAttachList());
    await step("GRANT of a role with its own level: LIST EFFECTIVE lists both, the role's own first", () => levels.grantEffective());
    await step('ALTER SERVICE LEVEL changes what LIST shows, and null clears a limit', () => levels.alter());
    await step("the role's writes are rejected by its level of 1 write/s, the error naming the service level", () => levels.rejected());
    await step('DETACH and DROP SERVICE LEVEL: LIST no longer shows the level', () => levels.detachDrop());
    await step('a bad option of CREATE SERVICE LEVEL is InvalidRequest naming the option', () => levels.badOptions());
    await step("a keyspace's rate_limit set by ALTER KEYSPACE shows in DESCRIBE KEYSPACE; rate_limit = {} removes it", () => levels.keyspaceRateLimit());
  } finally {
    await admin.shutdown();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(e && e.stack ? e.stack : e);
  process.exit(1);
});
