'use strict';
// kvnode's CQL native protocol checked with the DataStax Node.js driver (npm's cassandra-driver 4.x).
//
// Run by test/interop's Go runner (TestDrivers) against three kvnode processes on 127.0.0.1, .2 and
// .3 sharing one native port:
//
//     node test/interop/node/interop.js CONFIG.json
//
// CONFIG.json holds hosts, port, keyspace, rf, host_ids (address -> host id) and replicas (partition
// key -> addresses of kvnode's replicas of it). The steps run in order; if connecting or the DDL
// fails, the rest do not run. The last line says "N passed, N failed"; the exit status is 0 only if
// all passed.

const fs = require('fs');
const assert = require('assert');
// docs:begin node-imports
const cassandra = require('cassandra-driver');

const { types } = cassandra;
// docs:end
const TIMEOUT_MS = 30000; // connecting, one request, waiting for the nodes; never waited out on success

// How an application connects the Node.js driver to kvnode (docs/cql-protocol.md shows it).
function connect(hosts, port) {
  // docs:begin node-connect
  const client = new cassandra.Client({
    contactPoints: hosts,
    localDataCenter: 'datacenter1',
    protocolOptions: { port, maxVersion: types.protocolVersion.v4 },
    policies: {
      loadBalancing: new cassandra.policies.loadBalancing.TokenAwarePolicy(
        new cassandra.policies.loadBalancing.DCAwareRoundRobinPolicy('datacenter1')),
    },
    queryOptions: { consistency: types.consistencies.quorum, prepare: true },
    socketOptions: { connectTimeout: TIMEOUT_MS, readTimeout: TIMEOUT_MS },
  });
  // docs:end
  return client;
}

function check(cond, msg) {
  if (!cond) {
    throw new assert.AssertionError({ message: msg });
  }
}

// waitUntil polls cond (which returns null when it holds, else why not) until it holds or the
// timeout passes.
async function waitUntil(what, cond) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const why = await cond();
    if (why === null) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not reached within ${TIMEOUT_MS} ms (last: ${why})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const EVERY_TYPE = [ // column, CQL type as the metadata reports it
  ['a_text', 'text'], ['a_varchar', 'text'], ['a_ascii', 'ascii'],
  ['a_int', 'int'], ['a_bigint', 'bigint'], ['a_smallint', 'smallint'], ['a_tinyint', 'tinyint'],
  ['a_varint', 'varint'], ['a_double', 'double'], ['a_float', 'float'], ['a_decimal', 'decimal'],
  ['a_boolean', 'boolean'], ['a_blob', 'blob'], ['a_timestamp', 'timestamp'], ['a_date', 'date'],
  ['a_time', 'time'], ['a_uuid', 'uuid'], ['a_timeuuid', 'timeuuid'], ['a_inet', 'inet'],
];
const NAMES = EVERY_TYPE.map(([c]) => c);

// norm turns a driver value into a string that is equal for equal values (decimals keep their scale).
function norm(v) {
  if (v === null || v === undefined) {
    return String(v);
  }
  if (Buffer.isBuffer(v)) {
    return `0x${v.toString('hex')}`;
  }
  if (v instanceof Date) {
    return `ts:${v.getTime()}`;
  }
  if (v instanceof types.BigDecimal) {
    return `dec:${v._intVal.toString()}e${-v._scale}`;
  }
  return `${typeof v}:${v.toString()}`;
}

class Steps {
  constructor(cfg) {
    this.cfg = cfg;
    this.ks = cfg.keyspace;
    this.client = null;
  }

  async connect_and_discover() {
    this.client = connect(this.cfg.hosts, this.cfg.port);
    await this.client.connect();
    const want = this.cfg.host_ids;
    const port = this.cfg.port;
    await waitUntil('the driver knows all three nodes up', () => {
      const got = {};
      for (const h of this.client.hosts.values()) {
        if (h.isUp()) {
          got[h.address] = h.hostId.toString();
        }
      }
      const wantAddrs = {};
      for (const [ip, id] of Object.entries(want)) {
        wantAddrs[`${ip}:${port}`] = id;
      }
      return JSON.stringify(Object.entries(got).sort()) === JSON.stringify(Object.entries(wantAddrs).sort())
        ? null : `hosts up ${JSON.stringify(got)}, want ${JSON.stringify(wantAddrs)}`;
    });
    for (const h of this.client.hosts.values()) {
      check(h.datacenter === 'datacenter1' && h.rack === 'rack1',
        `${h.address} is in data center ${h.datacenter}, rack ${h.rack}; want datacenter1, rack1`);
    }
  }

  async ddl_and_metadata() {
    const { client, ks } = this;
    const cols = EVERY_TYPE.map(([c, t]) => `${c} ${c === 'a_varchar' ? 'varchar' : t}`).join(', ');
    for (const stmt of [
      `DROP KEYSPACE IF EXISTS ${ks}`,
      `CREATE KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': ${this.cfg.rf}}`,
      `CREATE TABLE ${ks}.everytype (k text, c int, ${cols}, PRIMARY KEY (k, c))`,
      `CREATE TABLE ${ks}.pages (k int, c int, v text, PRIMARY KEY (k, c))`,
      `CREATE TABLE ${ks}.batches (k text, c int, v text, PRIMARY KEY (k, c))`,
      `CREATE TABLE ${ks}.routed (k text PRIMARY KEY, v int)`,
      `CREATE TABLE ${ks}.limited (k text PRIMARY KEY, v int) WITH per_partition_rate_limit = {'max_reads_per_second': 2, 'max_writes_per_second': 2}`,
    ]) {
      await client.execute(stmt, [], { prepare: false });
    }
    check(await client.metadata.checkSchemaAgreement(), 'no schema agreement after the DDL');
    await client.metadata.refreshKeyspace(ks);
    const meta = client.metadata.keyspaces[ks];
    check(meta !== undefined, `client.metadata has no keyspace ${ks} (it has ${Object.keys(client.metadata.keyspaces)})`);
    check(meta.strategy.endsWith('SimpleStrategy') && String(meta.strategyOptions.replication_factor) === String(this.cfg.rf),
      `keyspace ${ks} has strategy ${meta.strategy} ${JSON.stringify(meta.strategyOptions)}, want SimpleStrategy with replication_factor ${this.cfg.rf}`);
    const table = await client.metadata.getTable(ks, 'everytype');
    check(table !== null, `client.metadata.getTable(${ks}, everytype) is null`);
    const pk = table.partitionKeys.map((c) => c.name);
    const ck = table.clusteringKeys.map((c) => c.name);
    check(JSON.stringify(pk) === '["k"]' && JSON.stringify(ck) === '["c"]',
      `everytype has partition key ${pk} and clustering key ${ck}, want [k] and [c]`);
    for (const [name, typ] of [['k', 'text'], ['c', 'int'], ...EVERY_TYPE]) {
      const col = table.columnsByName[name];
      check(col !== undefined, `everytype has no column ${name} in the metadata`);
      let got = types.getDataTypeNameByCode(col.type);
      if (got === 'varchar') {
        got = 'text'; // the protocol has one code for both
      }
      check(got === typ, `everytype.${name} has type ${got} in the metadata, want ${typ}`);
    }
  }

  // ALTER KEYSPACE raises the replication factor: the driver learns it from the SCHEMA_CHANGE
  // UPDATED KEYSPACE event (no explicit refresh), and the table and its row stay.
  async alter_keyspace() {
    const { client } = this;
    const ks = `${this.ks}_altered`;
    const run = (q) => client.execute(q, [], { prepare: false });
    await run(`DROP KEYSPACE IF EXISTS ${ks}`);
    await run(`CREATE KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
    await run(`CREATE TABLE ${ks}.t (k text PRIMARY KEY, v int)`);
    await run(`INSERT INTO ${ks}.t (k, v) VALUES ('a', 1)`);
    const factor = (want) => () => {
      const meta = client.metadata.keyspaces[ks];
      if (meta === undefined) {
        return `no keyspace ${ks} in the metadata`;
      }
      return String(meta.strategyOptions.replication_factor) === String(want) ? null : `strategy options ${JSON.stringify(meta.strategyOptions)}`;
    };
    await waitUntil(`the driver sees ${ks} at replication factor 1`, factor(1));
    await run(`ALTER KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2} AND durable_writes = true`);
    await waitUntil(`the driver sees ${ks} at replication factor 2 after ALTER KEYSPACE`, factor(2));
    const rs = await run(`SELECT v FROM ${ks}.t WHERE k = 'a'`);
    check(rs.rows.length === 1 && rs.rows[0].v === 1, `the row written before ALTER KEYSPACE reads ${JSON.stringify(rs.rows)}`);
    let refused = null;
    try {
      await run(`ALTER KEYSPACE ${ks}_nope WITH durable_writes = true`);
    } catch (e) {
      refused = e;
    }
    check(refused instanceof cassandra.errors.ResponseError && refused.code === types.responseErrorCodes.invalid
      && refused.message.includes('unknown keyspace'),
    `ALTER KEYSPACE of a missing keyspace answered ${refused}, want a ResponseError with code 0x2200 naming the unknown keyspace`);
    await run(`DROP KEYSPACE ${ks}`);
  }

  async named_values() {
    const { client, ks } = this;
    // Unprepared with an object, the driver sends the values with their names (flag 0x40);
    // prepared, it orders them by the markers' names itself.
    await client.execute(`INSERT INTO ${ks}.routed (k) VALUES (:k)`, { k: 'named' }, { prepare: false });
    await client.execute(`UPDATE ${ks}.routed SET v = :v WHERE k = :k`, { v: 42, k: 'named' }, { prepare: true });
    const rs = await client.execute(`SELECT k, v FROM ${ks}.routed WHERE k = :key`, { key: 'named' }, { prepare: false });
    check(rs.rows.length === 1 && rs.rows[0].k === 'named' && rs.rows[0].v === 42,
      `the row written and read with values bound by name is ${JSON.stringify(rs.rows)}, want k named, v 42`);
    let err = null;
    try {
      await client.execute(`SELECT k FROM ${ks}.routed WHERE k = :key`, { nope: 'named' }, { prepare: false });
    } catch (e) {
      err = e;
    }
    check(err !== null && err.code === 0x2200 && /no value is bound to the name key/.test(err.message),
      `a value bound to a name the statement lacks answered ${err}, want Invalid naming the marker key`);
  }

  async every_type() {
    const { client, ks } = this;
    const ts = new Date(Date.UTC(2026, 10, 24, 5, 30, 1, 123)); // timestamps keep milliseconds
    const rows = {
      1: ['héllo, wörld ✓', 'varchar', 'plain ascii', 42, types.Long.fromString('1099511627776'), 1234, 12,
        types.Integer.fromString('123456789012345678901234567890'), Math.PI, 1.5,
        types.BigDecimal.fromString('-12345678.901234567'), true, Buffer.from([0, 1, 2, 0xff]), ts,
        types.LocalDate.fromString('1969-07-20'), types.LocalTime.fromString('13:37:05.123456789'),
        types.Uuid.fromString('0b3c5b0e-8f53-4c43-9d6e-6b1d41c8e0b1'), types.TimeUuid.fromDate(ts),
        types.InetAddress.fromString('2001:db8::1')],
      2: ['', '', '', -2147483648, types.Long.fromString('-9223372036854775808'), -32768, -128,
        types.Integer.fromString('-98765432109876543210987654321098765432109876543210'), -Number.MAX_VALUE, 0.25,
        new types.BigDecimal(types.Integer.fromNumber(5), -3), false, Buffer.alloc(0), new Date(-1),
        types.LocalDate.fromString('9999-12-31'), types.LocalTime.fromString('23:59:59.999999999'),
        types.Uuid.fromString('00000000-0000-0000-0000-000000000000'), types.TimeUuid.fromDate(new Date(Date.UTC(1990, 0, 1))),
        types.InetAddress.fromString('192.0.2.1')],
    };
    const insert = `INSERT INTO ${ks}.everytype (k, c, ${NAMES.join(', ')}) VALUES (?, ?${', ?'.repeat(NAMES.length)})`;
    const select = `SELECT ${NAMES.join(', ')} FROM ${ks}.everytype WHERE k = ? AND c = ?`;
    for (const [c, values] of Object.entries(rows)) {
      await client.execute(insert, ['types', Number(c), ...values], { prepare: true });
    }
    for (const [c, want] of Object.entries(rows)) {
      const got = (await client.execute(select, ['types', Number(c)], { prepare: true })).first();
      check(got !== null, `row ${c} is missing`);
      NAMES.forEach((name, i) => {
        check(norm(got[name]) === norm(want[i]), `row ${c}: ${name} read back ${norm(got[name])}, want ${norm(want[i])}`);
      });
    }
    await client.execute(`INSERT INTO ${ks}.everytype (k, c) VALUES (?, ?)`, ['types', 3], { prepare: true });
    const nulls = (await client.execute(select, ['types', 3], { prepare: true })).first();
    check(nulls !== null && NAMES.every((n) => nulls[n] === null),
      `a row with only its key set reads back ${JSON.stringify(nulls)}, want every column null`);
    await client.execute(`UPDATE ${ks}.everytype SET a_int = ?, a_text = ? WHERE k = ? AND c = ?`, [7, types.unset, 'types', 1], { prepare: true });
    const upd = (await client.execute(`SELECT a_int, a_text FROM ${ks}.everytype WHERE k = ? AND c = ?`, ['types', 1], { prepare: true })).first();
    check(upd !== null && upd.a_int === 7 && upd.a_text === rows[1][0],
      `after SET a_int = 7, a_text = <unset>: ${JSON.stringify(upd)}, want a_int 7 and the text kept`);
  }

  // An export as Spark's does it: the ring split by the driver's token ranges
  // (client.metadata.getTokenRanges()), each read at QUORUM, paged; every row comes back once.
  async export_by_token_ranges() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE IF NOT EXISTS ${ks}.export_node (k int, c int, PRIMARY KEY (k, c))`);
    const want = new Set();
    for (let k = 0; k < 300; k++) {
      for (let c = 0; c < 2; c++) {
        await client.execute(`INSERT INTO ${ks}.export_node (k, c) VALUES (?, ?)`, [k, c], { prepare: true });
        want.add(`${k}/${c}`);
      }
    }
    const ends = [...client.metadata.getTokenRanges()].map((r) => BigInt(r.end.getValue().toString()));
    const ring = [...new Set(ends)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    check(ring.length >= 3, `the driver's token ranges have ${ring.length} distinct ends`);
    const bounds = [[-(2n ** 63n), ring[0]]];
    for (let i = 1; i < ring.length; i++) {
      bounds.push([ring[i - 1], ring[i]]);
    }
    bounds.push([ring[ring.length - 1], 2n ** 63n - 1n]);
    const seen = [];
    for (const [lo, hi] of bounds) {
      await new Promise((resolve, reject) => {
        client.eachRow(`SELECT k, c FROM ${ks}.export_node WHERE token(k) > ? AND token(k) <= ?`,
          [types.Long.fromString(lo.toString()), types.Long.fromString(hi.toString())],
          { prepare: true, fetchSize: 50, autoPage: true, consistency: types.consistencies.quorum },
          (n, row) => seen.push(`${row.k}/${row.c}`), (err) => (err ? reject(err) : resolve()));
      });
    }
    check(seen.length === new Set(seen).size, `the export returned ${seen.length} rows, ${new Set(seen).size} of them distinct`);
    check(seen.length === want.size && seen.every((r) => want.has(r)), `the export returned ${seen.length} rows, want the ${want.size} written`);
  }

  async paging() {
    const { client, ks } = this;
    for (let c = 0; c < 250; c++) {
      await client.execute(`INSERT INTO ${ks}.pages (k, c, v) VALUES (?, ?, ?)`, [1, c, `v${String(c).padStart(3, '0')}`], { prepare: true });
    }
    const select = `SELECT c, v FROM ${ks}.pages WHERE k = ?`;
    const seen = [];
    let pageState;
    let pages = 0;
    for (;;) {
      const rs = await client.execute(select, [1], { prepare: true, fetchSize: 40, pageState });
      check(rs.rows.length <= 40, `page ${pages} has ${rs.rows.length} rows, more than the fetch size 40`);
      for (const row of rs.rows) {
        check(row.v === `v${String(row.c).padStart(3, '0')}`, `row c=${row.c} has v ${row.v}`);
        seen.push(row.c);
      }
      pages++;
      pageState = rs.pageState;
      if (!pageState) {
        break;
      }
      check(pages <= 250, `paging did not end after ${pages} pages`);
    }
    const want = Array.from({ length: 250 }, (_, i) => i);
    check(JSON.stringify(seen) === JSON.stringify(want), `paging 40 at a time read ${seen}, want 0..249 in order`);
    check(pages >= 6, `250 rows came in ${pages} pages of at most 40`);
    // Automatic paging with eachRow and autoPage.
    const got = [];
    await new Promise((resolve, reject) => {
      client.eachRow(`SELECT c FROM ${ks}.pages WHERE k = ? AND c >= ?`, [1, 100], { prepare: true, fetchSize: 33, autoPage: true },
        (n, row) => got.push(row.c), (err) => (err ? reject(err) : resolve()));
    });
    check(JSON.stringify(got) === JSON.stringify(want.slice(100)), `automatic paging of c >= 100 read ${got}, want 100..249`);
  }

  async batches() {
    const { client, ks } = this;
    const insert = `INSERT INTO ${ks}.batches (k, c, v) VALUES (?, ?, ?)`;
    await client.batch([
      { query: insert, params: ['a', 1, 'one'] },
      { query: insert, params: ['a', 2, 'two'] },
      { query: `UPDATE ${ks}.batches SET v = ? WHERE k = ? AND c = ?`, params: ['three', 'b', 3] },
      { query: `INSERT INTO ${ks}.batches (k, c, v) VALUES ('b', 4, 'literal')` },
    ], { prepare: true, logged: true });
    await client.batch([
      { query: `DELETE FROM ${ks}.batches WHERE k = ? AND c = ?`, params: ['a', 1] },
      { query: insert, params: ['a', 5, 'five'] },
    ], { prepare: true, logged: false });
    for (const [k, want] of [['a', '2=two,5=five'], ['b', '3=three,4=literal']]) {
      const rs = await client.execute(`SELECT c, v FROM ${ks}.batches WHERE k = ?`, [k], { prepare: true });
      const got = rs.rows.map((r) => `${r.c}=${r.v}`).join(',');
      check(got === want, `partition ${k} after the batches holds ${got}, want ${want}`);
    }
  }

  async expiring_data() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.expiring (k text PRIMARY KEY, v text) WITH default_time_to_live = 500`);
    await client.execute(`INSERT INTO ${ks}.expiring (k, v) VALUES ('simple', 'x') USING TTL 1000 AND TIMESTAMP 1234`, [], { prepare: false });
    const insert = `INSERT INTO ${ks}.expiring (k, v) VALUES (?, ?) USING TIMESTAMP ? AND TTL ?`;
    await client.execute(insert, ['prepared', 'y', types.Long.fromNumber(5678), 2000], { prepare: true });
    await client.execute(insert, ['none', 'z', types.Long.fromNumber(9), 0], { prepare: true });
    await client.execute(`UPDATE ${ks}.expiring SET v = 'w' WHERE k = 'default'`);
    const select = `SELECT v, TTL(v), WRITETIME(v) FROM ${ks}.expiring WHERE k = ?`;
    for (const [k, v, ttl, wt] of [['simple', 'x', 1000, 1234], ['prepared', 'y', 2000, 5678], ['none', 'z', null, 9], ['default', 'w', 500, null]]) {
      for (const [how, rs] of [
        ['prepared', await client.execute(select, [k], { prepare: true })],
        ['unprepared', await client.execute(`SELECT v, TTL(v), WRITETIME(v) FROM ${ks}.expiring WHERE k = '${k}'`, [], { prepare: false })],
      ]) {
        const row = rs.first();
        check(row !== null && row.v === v, `${how} SELECT of ${k} returned ${JSON.stringify(row)}, want v = ${v}`);
        const cols = rs.columns.map((c) => c.name).join(',');
        check(cols === 'v,ttl(v),writetime(v)', `${how} SELECT's columns are ${cols}`);
        const gotTTL = row['ttl(v)'];
        const gotWT = row['writetime(v)'];
        if (ttl === null) {
          check(gotTTL === null, `${how} TTL(v) of ${k} = ${gotTTL}, want null`);
        } else {
          check(typeof gotTTL === 'number' && gotTTL > ttl - 30 && gotTTL <= ttl, `${how} TTL(v) of ${k} = ${gotTTL}, want about ${ttl}`);
        }
        check(gotWT instanceof types.Long && (wt === null || gotWT.equals(types.Long.fromNumber(wt))), `${how} WRITETIME(v) of ${k} = ${gotWT}, want ${wt}`);
      }
    }
    await client.execute(insert, ['short', 'gone', types.Long.fromNumber(10), 1], { prepare: true });
    await waitUntil('the row written USING TTL 1 expires', async () => {
      const rs = await client.execute(select, ['short'], { prepare: true });
      return rs.first() === null ? null : 'still there';
    });
  }

  // Cassandra's native functions as values (now(), currentTimestamp(), maxTimeuuid(?),
  // blobAsBigint(?)) and as selectors (token, toDate, CAST, ...), prepared and unprepared, with the
  // result metadata the driver decodes.
  async functions() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.fns (k text, id timeuuid, at timestamp, n bigint, PRIMARY KEY (k, id))`);
    const before = Date.now() - 1000;
    await client.execute(`INSERT INTO ${ks}.fns (k, id, at, n) VALUES ('f', now(), currentTimestamp(), blobAsBigint(bigintAsBlob(7)))`, [], { prepare: false });
    const at = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6));
    const insert = `INSERT INTO ${ks}.fns (k, id, at, n) VALUES (?, maxTimeuuid(?), ?, blobAsBigint(?))`;
    await client.execute(insert, ['f', at, at, Buffer.from([0, 0, 0, 0, 0, 0, 0, 9])], { prepare: true });
    const cols = 'system.token(k),system.todate(id),system.totimestamp(id),cast(n as text),system.tounixtimestamp(at)';
    const sel = `SELECT token(k), toDate(id), toTimestamp(id), CAST(n AS text), toUnixTimestamp(at) FROM ${ks}.fns WHERE k = `;
    for (const [how, rs] of [
      ['prepared', await client.execute(sel + '?', ['f'], { prepare: true })],
      ['unprepared', await client.execute(sel + "'f'", [], { prepare: false })],
    ]) {
      const got = rs.columns.map((c) => c.name).join(',');
      check(got === cols, `${how} SELECT's columns are ${got}, want ${cols}`);
      check(rs.rows.length === 2, `${how} SELECT read ${rs.rows.length} rows, want 2`);
      const [first, second] = rs.rows.map((r) => rs.columns.map((c) => r[c.name]));
      check(first[0] instanceof types.Long && first[0].equals(second[0]), `${how} token(k) = ${first[0]}, ${second[0]}`);
      check(first[1] instanceof types.LocalDate && first[1].toString() === '2024-01-02' && first[2].getTime() === at.getTime() &&
        first[3] === '9' && first[4].equals(types.Long.fromNumber(at.getTime())), `${how} row of maxTimeuuid(at) reads ${first}`);
      check(second[2].getTime() >= before && second[3] === '7' && second[4].equals(types.Long.fromNumber(second[2].getTime())),
        `${how} row of now() reads ${second}`);
    }
    const rng = `SELECT n FROM ${ks}.fns WHERE k = ? AND id >= minTimeuuid(?) AND id <= maxTimeuuid(?)`;
    const rs = await client.execute(rng, ['f', at, at], { prepare: true });
    check(rs.rows.length === 1 && rs.rows[0].n.equals(types.Long.fromNumber(9)), `id between minTimeuuid and maxTimeuuid of ${at.toISOString()} reads ${JSON.stringify(rs.rows)}`);
    let err = null;
    try {
      await client.execute(`SELECT nosuch(n) FROM ${ks}.fns WHERE k = 'f'`, [], { prepare: false });
    } catch (e) {
      err = e;
    }
    check(err !== null && err.message.includes('unknown function nosuch'), `SELECT nosuch(n): ${err}`);
  }

  async token_aware_routing() {
    const { client, ks } = this;
    const port = this.cfg.port;
    const keys = Object.keys(this.cfg.replicas).sort();
    for (const [i, key] of keys.entries()) {
      const want = this.cfg.replicas[key].map((ip) => `${ip}:${port}`).sort();
      const got = client.getReplicas(ks, Buffer.from(key)).map((h) => h.address).sort();
      check(JSON.stringify(got) === JSON.stringify(want), `the driver places key ${key} on ${got}; kvnode's replicas are ${want}`);
      const rs = await client.execute(`INSERT INTO ${ks}.routed (k, v) VALUES (?, ?)`, [key, i], { prepare: true });
      check(want.includes(rs.info.queriedHost), `the driver sent the insert of ${key} to ${rs.info.queriedHost}, not to one of kvnode's replicas ${want}`);
    }
  }

  async rate_limit() {
    const { client, ks } = this;
    const insert = `INSERT INTO ${ks}.limited (k, v) VALUES (?, ?)`;
    const select = `SELECT v FROM ${ks}.limited WHERE k = ?`;
    for (const [what, op] of [
      ['writes', (i) => client.execute(insert, ['hot', i], { prepare: true })],
      ['reads', () => client.execute(select, ['hot'], { prepare: true })],
    ]) {
      let rejected = null;
      for (let i = 0; i < 1000 && rejected === null; i++) {
        try {
          await op(i);
        } catch (err) {
          // docs:begin node-rate-limit
          // The rate-limit rejection: a ResponseError with code 0x2300 (configError); do not retry at once.
          check(err instanceof cassandra.errors.ResponseError && err.code === types.responseErrorCodes.configError,
            `${what} #${i} failed with ${err.name} code 0x${(err.code || 0).toString(16)}: ${err.message}; want a ResponseError with code 0x2300`);
          // docs:end
          console.log(`    ${what} #${i}: ${err.name} code 0x${err.code.toString(16)}: ${err.message}`);
          check(err.message.includes('limited'), `the rate-limit error "${err.message}" does not name the table (limited)`);
          rejected = err;
        }
      }
      check(rejected !== null, `1000 ${what} of partition hot at a limit of 2 per second were all admitted`);
    }
    await client.execute(insert, ['cold', 1], { prepare: true }); // another partition of the table is still admitted
  }

  // ALTER TABLE ADD, then the new columns through statements prepared before it (the server
  // answers Unprepared and the driver prepares them again); DROP and ADD of a column of the same
  // name (its old value stays gone); TRUNCATE; RENAME of the key column.
  async schema_evolution() {
    const { client, ks } = this;
    const opts = { prepare: true, consistency: types.consistencies.all };
    const insert = `INSERT INTO ${ks}.evolve (k, v) VALUES (?, ?)`;
    const select = `SELECT * FROM ${ks}.evolve WHERE k = ?`;
    const one = async (k) => (await client.execute(select, [k], opts)).first();
    await client.execute(`CREATE TABLE ${ks}.evolve (k text PRIMARY KEY, v int)`);
    await client.execute(insert, ['a', 1], opts);
    let row = await one('a');
    check(row !== null && row.v === 1, `before ALTER, SELECT * reads ${JSON.stringify(row)}`);
    await client.execute(`ALTER TABLE ${ks}.evolve ADD (w text, n bigint)`);
    await client.execute(`INSERT INTO ${ks}.evolve (k, v, w, n) VALUES (?, ?, ?, ?)`, ['b', 2, 'new', types.Long.fromNumber(7)], opts);
    await client.execute(insert, ['c', 3], opts); // prepared before the ALTER
    row = await one('b'); // likewise: SELECT * now has the new columns
    check(row !== null && row.v === 2 && row.w === 'new' && row.n !== undefined && row.n !== null && row.n.toNumber() === 7,
      `after ALTER ADD, SELECT * of b reads ${row && JSON.stringify(Object.keys(row))}: ${row}`);
    await client.execute(`ALTER TABLE ${ks}.evolve DROP w`);
    await client.execute(`ALTER TABLE ${ks}.evolve ADD w text`);
    row = await one('b');
    check(row !== null && row.w === null && row.n.toNumber() === 7, `after DROP w and ADD w, b reads w = ${row && row.w}: the dropped value came back`);
    await client.execute(`TRUNCATE ${ks}.evolve`);
    for (const k of ['a', 'b', 'c']) {
      row = await one(k);
      check(row === null, `after TRUNCATE, ${k} reads ${row}`);
    }
    await client.execute(insert, ['d', 4], opts);
    row = await one('d');
    check(row !== null && row.v === 4, `a write after TRUNCATE reads ${row}`);
    await client.execute(`ALTER TABLE ${ks}.evolve RENAME k TO id`);
    row = (await client.execute(`SELECT id, v FROM ${ks}.evolve WHERE id = ?`, ['d'], opts)).first();
    check(row !== null && row.id === 'd' && row.v === 4, `after RENAME k TO id, d reads ${JSON.stringify(row)}`);
  }

  // Frozen collections, a DESC tuple clustering column and duration through prepared statements,
  // read back in Cassandra's order, and described by client.metadata as system_schema writes them.
  // (The driver encodes an empty array as null, and inside a map as a 0-byte value, which is no
  // list: the values here are not empty.)
  async frozen_types() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.frozen (k frozen<list<int>>, c tuple<int, text>, m frozen<map<text, frozen<list<int>>>>,
      s frozen<set<text>>, d duration, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)`);
    const opts = { prepare: true };
    const key = [1, -2];
    const rows = [
      [new types.Tuple(1, 'b'), { x: [1, 2], a: [0] }, ['q', 'p'], new types.Duration(0, 1, types.Long.ZERO)],
      [new types.Tuple(-5, 'z'), { k: [3] }, ['only'], new types.Duration(0, 0, types.Long.fromNumber(-7))],
      [new types.Tuple(1, null), { b: [4, 4] }, ['y', 'x'], new types.Duration(14, 0, types.Long.fromString('3600000000000'))],
    ];
    for (const [c, m, s, d] of rows) {
      await client.execute(`INSERT INTO ${ks}.frozen (k, c, m, s, d) VALUES (?, ?, ?, ?, ?)`, [key, c, m, s, d], opts);
    }
    const sortedKeys = (m) => Object.keys(m || {}).sort().map((k) => [k, m[k]]);
    const show = (r) => JSON.stringify([r.c.values(), sortedKeys(r.m), [...(r.s || [])].sort(), r.d.toString()]);
    const got = (await client.execute(`SELECT c, m, s, d FROM ${ks}.frozen WHERE k = ?`, [key], opts)).rows.map(show);
    const want = [rows[0], rows[2], rows[1]].map(([c, m, s, d]) => show({ c, m, s, d })); // DESC; a null component first
    check(JSON.stringify(got) === JSON.stringify(want), `the frozen table reads ${got}, want ${want}`);
    const wantTypes = { k: 'frozen<list<int>>', c: 'frozen<tuple<int, text>>', m: 'frozen<map<text, frozen<list<int>>>>', s: 'frozen<set<text>>', d: 'duration' };
    await waitUntil('client.metadata describes the frozen table', async () => {
      const t = await client.metadata.getTable(ks, 'frozen');
      if (!t) {
        return 'no table frozen in the metadata yet';
      }
      const typeName = (ti) => {
        const name = { 0x15: 'duration', 0x09: 'int', 0x0d: 'text', 0x0a: 'text' }[ti.code];
        if (name) {
          return name;
        }
        const inner = Array.isArray(ti.info) ? ti.info.map(typeName) : [typeName(ti.info)];
        const kind = { 0x20: 'list', 0x21: 'map', 0x22: 'set', 0x31: 'tuple' }[ti.code];
        return `frozen<${kind}<${inner.join(', ')}>>`;
      };
      const gotTypes = {};
      for (const c of t.columns) {
        gotTypes[c.name] = typeName(c.type);
      }
      const g = JSON.stringify(sortedKeys(gotTypes));
      const w = JSON.stringify(sortedKeys(wantTypes));
      return g === w ? null : `the metadata has types ${g}, want ${w}`;
    });
  }

  async user_types() {
    const { client, ks } = this;
    await client.execute(`CREATE TYPE ${ks}.address (street text, zip int)`);
    await client.execute(`CREATE TABLE ${ks}.homes (k int PRIMARY KEY, a frozen<address>)`);
    const opts = { prepare: true };
    await client.execute(`INSERT INTO ${ks}.homes (k, a) VALUES (?, ?)`, [1, { street: 'main', zip: 5 }], opts);
    await client.execute(`INSERT INTO ${ks}.homes (k, a) VALUES (2, {street: 'lit', zip: 9})`);
    for (const [k, want] of [[1, { street: 'main', zip: 5 }], [2, { street: 'lit', zip: 9 }]]) {
      const res = await client.execute(`SELECT a FROM ${ks}.homes WHERE k = ?`, [k], opts);
      const col = res.columns[0].type;
      check(col.code === 0x30 && col.info.keyspace === ks && col.info.name === 'address' && col.info.fields.map((f) => f.name).join() === 'street,zip',
        `the result metadata of a is ${JSON.stringify(col)}, want the UDT ${ks}.address (street, zip)`);
      const a = res.rows[0].a;
      check(a && a.street === want.street && a.zip === want.zip, `row ${k} reads ${JSON.stringify(a)}, want ${JSON.stringify(want)}`);
    }
    await waitUntil('client.metadata describes type address', async () => {
      const u = await client.metadata.getUdt(ks, 'address');
      if (!u) {
        return 'no type address in the metadata yet';
      }
      const got = JSON.stringify(u.fields.map((f) => [f.name, f.type.code === 0x0a ? 0x0d : f.type.code]));
      const want = JSON.stringify([['street', 0x0d], ['zip', 0x09]]);
      return got === want ? null : `type address has fields ${got}, want ${want}`;
    });
    await client.execute(`ALTER TYPE ${ks}.address ADD city text`);
    const a = (await client.execute(`SELECT a FROM ${ks}.homes WHERE k = ?`, [1], opts)).rows[0].a;
    check(a.street === 'main' && a.zip === 5 && (a.city === null || a.city === undefined),
      `after ALTER TYPE ADD row 1 reads ${JSON.stringify(a)}, want city empty`);
  }

  async user_type_keys() {
    const { client, ks } = this;
    await client.execute(`CREATE TYPE ${ks}.point (x int, y int)`);
    await client.execute(`CREATE TABLE ${ks}.bypoint (p frozen<point> PRIMARY KEY, v int)`);
    await client.execute(`CREATE TABLE ${ks}.path (k int, p frozen<point>, v int, PRIMARY KEY (k, p)) WITH CLUSTERING ORDER BY (p DESC)`);
    const opts = { prepare: true };
    const points = [{ x: 1, y: 2 }, { x: 1, y: null }, { x: 0, y: 9 }];
    for (const [v, p] of points.entries()) {
      await client.execute(`INSERT INTO ${ks}.bypoint (p, v) VALUES (?, ?)`, [p, v], opts);
      await client.execute(`INSERT INTO ${ks}.path (k, p, v) VALUES (0, ?, ?)`, [p, v], opts);
    }
    let row = (await client.execute(`SELECT v FROM ${ks}.bypoint WHERE p = ?`, [{ x: 1, y: null }], opts)).first();
    check(row && row.v === 1, `partition {x: 1, y: null} reads ${JSON.stringify(row)}, want v=1`);
    row = (await client.execute(`SELECT v FROM ${ks}.bypoint WHERE p = {x: 0, y: 9}`)).first();
    check(row && row.v === 2, `partition {x: 0, y: 9} (literal) reads ${JSON.stringify(row)}, want v=2`);
    const got = (await client.execute(`SELECT v FROM ${ks}.path WHERE k = 0`)).rows.map((r) => r.v);
    check(JSON.stringify(got) === '[0,1,2]', `clustering by frozen<point> DESC reads ${JSON.stringify(got)}, want [0,1,2]`);
    let err = null;
    try {
      await client.execute(`ALTER TYPE ${ks}.point ADD label text`);
    } catch (e) {
      err = e;
    }
    check(err && /used in the partition key column p/.test(err.message), `ALTER TYPE ADD answered ${err}, want the partition key refusal`);
  }

  // select_shapes: IN over partitions bound to an array and paged by the driver (eachRow with
  // autoPage), a clustering tuple IN, aggregates with aliases (the result's column names),
  // GROUP BY, DISTINCT, PER PARTITION LIMIT, and ALLOW FILTERING refused without the words.
  async select_shapes() {
    const { client, ks } = this;
    const opts = { prepare: true };
    await client.execute(`CREATE TABLE ${ks}.sel (k int, c int, v int, PRIMARY KEY (k, c))`);
    for (let k = 0; k < 5; k++) {
      for (let c = 0; c < 6; c++) {
        await client.execute(`INSERT INTO ${ks}.sel (k, c, v) VALUES (?, ?, ?)`, [k, c, k * 100 + c], opts);
      }
    }
    const rows = [];
    await new Promise((resolve, reject) => {
      client.eachRow(`SELECT k, c FROM ${ks}.sel WHERE k IN ?`, [[4, 0, 2]], { prepare: true, fetchSize: 4, autoPage: true },
        (n, row) => rows.push([row.k, row.c]), (err) => (err ? reject(err) : resolve()));
    });
    const got = rows.map((r) => r.join(':')).sort().join(' ');
    const want = [0, 2, 4].flatMap((k) => [0, 1, 2, 3, 4, 5].map((c) => `${k}:${c}`)).sort().join(' ');
    check(got === want, `IN ? paged by 4 returned ${got}, want ${want}`);
    const runs = rows.filter((r, i) => i === 0 || rows[i - 1][0] !== r[0]).length;
    check(runs === 3, `IN: the partitions' rows are not together: ${JSON.stringify(rows)}`);
    const cs = (await client.execute(`SELECT c FROM ${ks}.sel WHERE k = 1 AND (c) IN ((5), (1))`, [], { prepare: false })).rows.map((r) => r.c);
    check(cs.join() === '1,5', `(c) IN ((5), (1)) returned ${cs}, want 1,5`);
    const agg = await client.execute(`SELECT count(*) AS n, max(v) AS top, avg(v) FROM ${ks}.sel WHERE k IN (1, 2)`, [], { prepare: false });
    const names = agg.columns.map((c) => c.name).join();
    check(names === 'n,top,system.avg(v)', `aggregate column names ${names}`);
    const r = agg.rows[0];
    check(r.n.toString() === '12' && r.top === 205 && r['system.avg(v)'] === 152, `count, max, avg over IN (1, 2) = ${r.n}, ${r.top}, ${r['system.avg(v)']}`);
    for (const [q, n] of [[`SELECT k, count(*) FROM ${ks}.sel WHERE k IN (0, 1, 2) GROUP BY k`, 3],
      [`SELECT DISTINCT k FROM ${ks}.sel WHERE k IN (0, 1, 9)`, 2],
      [`SELECT k, c FROM ${ks}.sel WHERE k IN (0, 1) PER PARTITION LIMIT 2`, 4],
      [`SELECT c FROM ${ks}.sel WHERE k = 3 AND v > 302 ALLOW FILTERING`, 3]]) {
      const got = (await client.execute(q, [], { prepare: false })).rows.length;
      check(got === n, `${q} returned ${got} rows, want ${n}`);
    }
    let refused = null;
    try {
      await client.execute(`SELECT c FROM ${ks}.sel WHERE k = 3 AND v > 302`, [], { prepare: false });
    } catch (err) {
      refused = err;
    }
    check(refused && /ALLOW FILTERING/.test(refused.message), `filtering without ALLOW FILTERING: ${refused}`);
    await client.execute(`INSERT INTO ${ks}.sel JSON ?`, ['{"k": 9, "c": 1, "v": 5}'], opts);
    await client.execute(`INSERT INTO ${ks}.sel JSON '{"k": 9, "c": 1}' DEFAULT UNSET`, [], { prepare: false });
    const js = (await client.execute(`SELECT JSON k, c, v FROM ${ks}.sel WHERE k = 9`, [], { prepare: false })).rows[0]['[json]'];
    check(JSON.stringify(JSON.parse(js)) === '{"k":9,"c":1,"v":5}', `SELECT JSON returned ${js}`);
    await client.execute(`UPDATE ${ks}.sel SET v = fromJson(?) WHERE k = 9 AND c = 1`, ['6'], opts);
    const tj = (await client.execute(`SELECT toJson(v) FROM ${ks}.sel WHERE k = 9`, [], { prepare: false })).rows[0]['system.tojson(v)'];
    check(tj === '6', `toJson(v) returned ${tj}, want 6`);
  }

  // Non-frozen sets, lists and maps: whole values and element updates through prepared
  // statements, read back (by element and slice too, an emptied map as null), and described by
  // client.metadata as not frozen.
  async collections() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.colls (k int PRIMARY KEY, s set<text>, l list<int>, m map<text, int>)`);
    const opts = { prepare: true };
    const run = (q, params) => client.execute(q.replace('%s', ks), params, opts);
    await run('INSERT INTO %s.colls (k, s, l, m) VALUES (?, ?, ?, ?)', [1, ['b', 'a'], [1, 2], { x: 1 }]);
    await run('UPDATE %s.colls SET s = s + ?, l = l + ?, m[?] = ? WHERE k = ?', [['c'], [3], 'y', 2, 1]);
    await run('UPDATE %s.colls SET s = s - ?, l = ? + l, m = m - ? WHERE k = ?', [['a'], [0], ['x'], 1]);
    await run('UPDATE %s.colls SET l[?] = ? WHERE k = ?', [1, 10, 1]);
    await run('DELETE m[?] FROM %s.colls WHERE k = ?', ['y', 1]);
    const r = (await run('SELECT s, l, m FROM %s.colls WHERE k = ?', [1])).rows[0];
    const got = JSON.stringify([[...(r.s || [])].sort(), r.l, r.m]);
    check(got === JSON.stringify([['b', 'c'], [0, 10, 2, 3], null]), `colls reads ${got}, want [["b","c"],[0,10,2,3],null]`);
    const e = (await run("SELECT s['b'], s['c'..] FROM %s.colls WHERE k = ?", [1])).rows[0];
    const sel = JSON.stringify([e[0] === undefined ? e["s['b']"] : e[0], e["s['c'..]"]]);
    check(sel === JSON.stringify(['b', ['c']]), `s['b'], s['c'..] read ${sel}`);
    await waitUntil('client.metadata describes the colls table', async () => {
      const t = await client.metadata.getTable(ks, 'colls');
      if (!t) {
        return 'no table colls in the metadata yet';
      }
      const got = {};
      for (const c of t.columns) {
        got[c.name] = `${c.type.code}${c.type.options && c.type.options.frozen ? ' frozen' : ''}`;
      }
      const g = JSON.stringify(Object.keys(got).sort().map((k) => [k, got[k]]));
      const w = JSON.stringify([['k', '9'], ['l', '32'], ['m', '33'], ['s', '34']]);
      return g === w ? null : `the metadata has types ${g}, want ${w}`;
    });
  }
  // Counters through prepared statements: UPDATE ... SET n = n + ?, m = m - ?, a counter batch,
  // read back at QUORUM and ALL (result columns of type counter), INSERT refused, and described
  // by client.metadata as counter.
  async counters() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.hits (k text PRIMARY KEY, n counter, m counter)`);
    const opts = { prepare: true };
    const upd = `UPDATE ${ks}.hits SET n = n + ?, m = m - ? WHERE k = ?`;
    for (let i = 1; i <= 5; i++) {
      await client.execute(upd, [types.Long.fromNumber(i), types.Long.ONE, 'a'], opts);
    }
    await client.batch([{ query: upd, params: [types.Long.fromNumber(100), types.Long.fromNumber(10), 'a'] },
      { query: upd, params: [types.Long.fromNumber(7), types.Long.ZERO, 'b'] }], { prepare: true, counter: true });
    for (const consistency of [types.consistencies.quorum, types.consistencies.all]) {
      const res = await client.execute(`SELECT n, m FROM ${ks}.hits WHERE k = ?`, ['a'], { prepare: true, consistency });
      const codes = res.columns.map((c) => c.type.code).join();
      check(codes === '5,5', `the result's column types are ${codes}, want 5,5 (counter)`);
      const r = res.first();
      check(r && r.n.toString() === '115' && r.m.toString() === '-15', `counter a at ${types.consistencyToString[consistency]} reads ${r && r.n}, ${r && r.m}; want 115, -15`);
    }
    const b = (await client.execute(`SELECT n, m FROM ${ks}.hits WHERE k = ?`, ['b'], opts)).first();
    check(b && b.n.toString() === '7' && b.m.toString() === '0', `counter b reads ${b && b.n}, ${b && b.m}; want 7, 0`);
    let refused = null;
    try {
      await client.execute(`INSERT INTO ${ks}.hits (k, n) VALUES (?, ?)`, ['c', types.Long.ONE], opts);
    } catch (err) {
      refused = err;
    }
    check(refused && refused.code === types.responseErrorCodes.invalid, `INSERT into a counter table answered ${refused}, want Invalid`);
    await waitUntil('client.metadata describes the hits table', async () => {
      const t = await client.metadata.getTable(ks, 'hits');
      if (!t) {
        return 'no table hits in the metadata yet';
      }
      const got = JSON.stringify(t.columns.map((c) => [c.name, c.type.code === 0x0a ? 0x0d : c.type.code]).sort());
      const want = JSON.stringify([['k', 0x0d], ['m', 0x05], ['n', 0x05]]);
      return got === want ? null : `the metadata has columns ${got}, want ${want}`;
    });
  }

  // A non-frozen user type column updated field by field (c.phone = ?), beside a map of a frozen
  // user type, a list of frozen maps and a tuple, all through prepared statements, read back,
  // and described by client.metadata (getUdt with its frozen<set<text>> field; the column not
  // frozen, the map's values and the list's elements frozen).
  async non_frozen_user_types() {
    const { client, ks } = this;
    await client.execute(`CREATE TYPE ${ks}.contact (name text, phone text, tags frozen<set<text>>)`);
    await client.execute(`CREATE TABLE ${ks}.people (k int PRIMARY KEY, c contact, h map<text, frozen<contact>>,
      n list<frozen<map<text, int>>>, t tuple<int, text>)`);
    const opts = { prepare: true };
    await client.execute(`INSERT INTO ${ks}.people (k, c, h, n, t) VALUES (?, ?, ?, ?, ?)`,
      [1, { name: 'ann', phone: '1', tags: ['x', 'a'] }, { home: { name: 'h', phone: '2', tags: null } }, [{ a: 1 }, { b: 2 }], new types.Tuple(3, 't')], opts);
    await client.execute(`UPDATE ${ks}.people SET c.phone = ?, c.tags = ? WHERE k = ?`, ['9', ['y'], 1], opts);
    await client.execute(`UPDATE ${ks}.people SET h[?] = ?, n = n + ?, t = ? WHERE k = ?`,
      ['work', { name: 'w', phone: null, tags: ['z'] }, [{ c: 3 }], new types.Tuple(4, null), 1], opts);
    await client.execute(`DELETE c.name FROM ${ks}.people WHERE k = ?`, [1], opts);
    const res = await client.execute(`SELECT c, h, n, t FROM ${ks}.people WHERE k = ?`, [1], opts);
    const r = res.first();
    check(r !== null, 'row 1 of people is missing');
    const contact = (u) => (u ? [u.name === undefined ? null : u.name, u.phone === undefined ? null : u.phone, [...(u.tags || [])].sort()] : u);
    const got = JSON.stringify([contact(r.c), Object.keys(r.h || {}).sort().map((k) => [k, contact(r.h[k])]), r.n, r.t.values()]);
    const want = JSON.stringify([[null, '9', ['y']], [['home', ['h', '2', []]], ['work', ['w', null, ['z']]]], [{ a: 1 }, { b: 2 }, { c: 3 }], [4, null]]);
    check(got === want, `people reads ${got}, want ${want}`);
    const col = res.columns[0].type;
    check(col.code === 0x30 && col.info.name === 'contact', `the result metadata of c is ${JSON.stringify(col)}, want the UDT contact`);
    await waitUntil('client.metadata describes type contact and table people', async () => {
      const u = await client.metadata.getUdt(ks, 'contact');
      if (!u) {
        return 'no type contact in the metadata yet';
      }
      const fields = JSON.stringify(u.fields.map((f) => [f.name, f.type.code === 0x0a ? 0x0d : f.type.code, !!(f.type.options && f.type.options.frozen)]));
      if (fields !== JSON.stringify([['name', 0x0d, false], ['phone', 0x0d, false], ['tags', 0x22, true]])) {
        return `type contact has fields ${fields}`;
      }
      const t = await client.metadata.getTable(ks, 'people');
      if (!t) {
        return 'no table people in the metadata yet';
      }
      const frozen = (ti) => !!(ti.options && ti.options.frozen);
      const cols = {};
      for (const c of t.columns) {
        cols[c.name] = c.type;
      }
      const shape = JSON.stringify({
        c: [cols.c.code, frozen(cols.c), cols.c.info && cols.c.info.name],
        h: [cols.h.code, cols.h.info[1].code, frozen(cols.h.info[1]), cols.h.info[1].info && cols.h.info[1].info.name],
        n: [cols.n.code, cols.n.info.code, frozen(cols.n.info)],
        t: [cols.t.code, cols.t.info.map((i) => (i.code === 0x0a ? 0x0d : i.code))],
      });
      const wantShape = JSON.stringify({ c: [0x30, false, 'contact'], h: [0x21, 0x30, true, 'contact'], n: [0x20, 0x21, true], t: [0x31, [0x09, 0x0d]] });
      return shape === wantShape ? null : `table people's columns are ${shape}, want ${wantShape}`;
    });
  }

  // fetch runs query prepared with params, unpaged (fetchSize 0: one response, no paging
  // state) or page after page of fetchSize rows following the paging state; it returns the rows
  // as arrays of the columns' values.
  async fetch(query, params, fetchSize) {
    const rows = [];
    let pageState;
    for (let pages = 1; ; pages++) {
      const rs = await this.client.execute(query, params, { prepare: true, fetchSize, pageState });
      if (fetchSize === 0) {
        check(!rs.pageState, `unpaged ${query} returned a paging state`);
      } else {
        check(rs.rows.length <= fetchSize, `${query}: page ${pages} has ${rs.rows.length} rows, more than ${fetchSize}`);
      }
      for (const row of rs.rows) {
        rows.push(row.values().map((v) => (v !== null && typeof v === 'object' && v.toNumber ? v.toNumber() : v)));
      }
      pageState = rs.pageState;
      if (!pageState) {
        return rows;
      }
      check(pages <= 1000, `${query}: paging did not end after ${pages} pages`);
    }
  }

  // both returns the rows of query unpaged, checked equal (in order) to them paged by fetchSize.
  async both(query, params, fetchSize = 2) {
    const whole = await this.fetch(query, params, 0);
    const paged = await this.fetch(query, params, fetchSize);
    check(JSON.stringify(paged) === JSON.stringify(whole),
      `${query} ${JSON.stringify(params)} paged by ${fetchSize} returned ${JSON.stringify(paged)}, unpaged ${JSON.stringify(whole)}`);
    return whole;
  }

  // waitIndexes waits until client.metadata.getTable shows exactly the indexes want
  // ({name: [kind, target]}) on ks.table.
  async waitIndexes(table, want) {
    await waitUntil(`client.metadata shows the indexes ${JSON.stringify(want)} of ${table}`, async () => {
      const t = await this.client.metadata.getTable(this.ks, table);
      if (!t) {
        return `no table ${table} in the metadata yet`;
      }
      const got = {};
      for (const ix of t.indexes || []) {
        got[ix.name] = [ix.isCompositesKind() ? 'COMPOSITES' : `kind ${ix.kind}`, ix.target];
      }
      const norm = (o) => JSON.stringify(Object.entries(o).sort());
      return norm(got) === norm(want) ? null : `indexes ${JSON.stringify(got)}`;
    });
  }

  // waitBuilt waits until the index query runs at ALL (every replica has built the index).
  async waitBuilt(query, params) {
    await waitUntil(`the index of ${query} built on every replica`, async () => {
      try {
        await this.client.execute(query, params, { prepare: true, consistency: types.consistencies.all });
      } catch (err) {
        return String(err);
      }
      return null;
    });
  }

  // refused checks that query is refused with a message matching re.
  async refused(query, params, re) {
    let err = null;
    try {
      await this.client.execute(query, params, { prepare: true });
    } catch (e) {
      err = e;
    }
    check(err !== null && re.test(err.message), `${query}: ${err === null ? 'not refused' : err.message}, want ${re}`);
  }

  // secondary_indexes: CREATE INDEX on a regular column, queried through prepared statements
  // with and without the partition key, unpaged and paged (the same rows in the same order: by
  // token, then clustering), seen in client.metadata (kind COMPOSITES, target v), with an
  // aggregate, GROUP BY and PER PARTITION LIMIT, then DROP INDEX: gone from the metadata, and
  // the query it served refused without ALLOW FILTERING.
  async secondary_indexes() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.idx (k int, c int, v text, n int, PRIMARY KEY (k, c))`);
    for (let k = 0; k < 8; k++) {
      for (let c = 0; c < 4; c++) {
        await client.execute(`INSERT INTO ${ks}.idx (k, c, v, n) VALUES (?, ?, ?, ?)`, [k, c, c % 2 === 0 ? 'even' : 'odd', k * 10 + c], { prepare: true });
      }
    }
    await client.execute(`CREATE INDEX by_v ON ${ks}.idx (v)`);
    await this.waitBuilt(`SELECT k FROM ${ks}.idx WHERE v = ?`, ['even']);
    await this.waitIndexes('idx', { by_v: ['COMPOSITES', 'v'] });
    const rows = await this.both(`SELECT k, c, n FROM ${ks}.idx WHERE v = ?`, ['odd'], 3);
    const want = [];
    for (let k = 0; k < 8; k++) {
      want.push([k, 1, k * 10 + 1], [k, 3, k * 10 + 3]);
    }
    const sorted = (rs) => JSON.stringify(rs.map((r) => JSON.stringify(r)).sort());
    check(sorted(rows) === sorted(want), `WHERE v = 'odd' returned ${JSON.stringify(rows)}`);
    const runs = rows.filter((r, i) => i === 0 || rows[i - 1][0] !== r[0]).length;
    const ordered = rows.every((r, i) => i === 0 || rows[i - 1][0] !== r[0] || rows[i - 1][1] < r[1]);
    check(runs === 8 && ordered, `WHERE v = 'odd': rows not by partition in clustering order: ${JSON.stringify(rows)}`);
    check((await this.both(`SELECT k, c, n FROM ${ks}.idx WHERE v = ?`, ['none'])).length === 0, 'WHERE v = \'none\' returned rows');
    let got = await this.both(`SELECT c, n FROM ${ks}.idx WHERE k = ? AND v = ?`, [5, 'even'], 1);
    check(JSON.stringify(got) === '[[0,50],[2,52]]', `WHERE k = 5 AND v = 'even' returned ${JSON.stringify(got)}`);
    got = await this.both(`SELECT k, c FROM ${ks}.idx WHERE v = ? LIMIT 5`, ['even'], 2);
    check(got.length === 5 && new Set(got.map((r) => r.join())).size === 5 && got.every((r) => r[1] % 2 === 0),
      `WHERE v = 'even' LIMIT 5 returned ${JSON.stringify(got)}`);
    await this.refused(`SELECT k FROM ${ks}.idx WHERE v = ? AND n = ?`, ['even', 10], /ALLOW FILTERING/);
    got = await this.both(`SELECT k, c FROM ${ks}.idx WHERE v = ? AND n > ? ALLOW FILTERING`, ['even', 60], 1);
    check(sorted(got) === sorted([[6, 2], [7, 0], [7, 2]]), `v = 'even' AND n > 60 ALLOW FILTERING returned ${JSON.stringify(got)}`);
    // A scan's shapes over the index: an aggregate, GROUP BY, PER PARTITION LIMIT.
    const order = rows.filter((r, i) => i === 0 || rows[i - 1][0] !== r[0]).map((r) => r[0]);
    got = await this.both(`SELECT count(*), max(n) FROM ${ks}.idx WHERE v = ?`, ['odd'], 3);
    check(JSON.stringify(got) === '[[16,73]]', `count(*), max(n) WHERE v = 'odd' returned ${JSON.stringify(got)}`);
    got = await this.both(`SELECT k, count(*) FROM ${ks}.idx WHERE v = ? GROUP BY k`, ['odd'], 3);
    check(JSON.stringify(got) === JSON.stringify(order.map((k) => [k, 2])), `GROUP BY k WHERE v = 'odd' returned ${JSON.stringify(got)}`);
    got = await this.both(`SELECT k, c FROM ${ks}.idx WHERE v = ? PER PARTITION LIMIT ?`, ['odd', 1], 3);
    check(JSON.stringify(got) === JSON.stringify(order.map((k) => [k, 1])), `WHERE v = 'odd' PER PARTITION LIMIT 1 returned ${JSON.stringify(got)}`);
    await client.execute(`DROP INDEX ${ks}.by_v`);
    await this.waitIndexes('idx', {});
    await this.refused(`SELECT k, c FROM ${ks}.idx WHERE v = ?`, ['odd'], /ALLOW FILTERING/);
  }

  // map_indexes: indexes on a map's keys, values and entries, queried with CONTAINS KEY,
  // CONTAINS and m[k] = v through prepared statements, with and without the partition key,
  // unpaged and paged, and seen in client.metadata with their targets.
  async map_indexes() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.idxmap (k int, c int, m map<text, int>, PRIMARY KEY (k, c))`);
    for (const target of ['keys(m)', 'values(m)', 'entries(m)']) {
      await client.execute(`CREATE INDEX ON ${ks}.idxmap (${target})`);
    }
    for (let k = 0; k < 6; k++) {
      for (let c = 0; c < 3; c++) {
        await client.execute(`INSERT INTO ${ks}.idxmap (k, c, m) VALUES (?, ?, ?)`, [k, c, { [`c${c}`]: k, all: 1 }], { prepare: true });
      }
    }
    await client.execute(`UPDATE ${ks}.idxmap SET m[?] = ? WHERE k = ? AND c = ?`, ['all', 2, 4, 1], { prepare: true });
    await this.waitBuilt(`SELECT k FROM ${ks}.idxmap WHERE m CONTAINS KEY ?`, ['all']);
    await this.waitBuilt(`SELECT k FROM ${ks}.idxmap WHERE m CONTAINS ?`, [1]);
    await this.waitBuilt(`SELECT k FROM ${ks}.idxmap WHERE m[?] = ?`, ['all', 1]);
    await this.waitIndexes('idxmap', { idxmap_m_idx: ['COMPOSITES', 'keys(m)'], idxmap_m_idx_1: ['COMPOSITES', 'values(m)'], idxmap_m_idx_2: ['COMPOSITES', 'entries(m)'] });
    const sorted = (rs) => JSON.stringify(rs.map((r) => JSON.stringify(r)).sort());
    const all = [];
    for (let k = 0; k < 6; k++) {
      for (let c = 0; c < 3; c++) {
        all.push([k, c]);
      }
    }
    for (const [q, params, fetchSize, want] of [
      [`SELECT k, c FROM ${ks}.idxmap WHERE m CONTAINS KEY ?`, ['c2'], 2, all.filter(([, c]) => c === 2)],
      [`SELECT k, c FROM ${ks}.idxmap WHERE m CONTAINS ?`, [1], 2, all.filter(([k, c]) => k !== 4 || c !== 1)], // (4, 1)'s old entry is stale
      [`SELECT k, c FROM ${ks}.idxmap WHERE m CONTAINS ?`, [2], 2, [[2, 0], [2, 1], [2, 2], [4, 1]]],
      [`SELECT k, c FROM ${ks}.idxmap WHERE m[?] = ?`, ['all', 1], 4, all.filter(([k, c]) => k !== 4 || c !== 1)],
      [`SELECT k, c FROM ${ks}.idxmap WHERE m[?] = ?`, ['c1', 3], 1, [[3, 1]]],
      [`SELECT k, c FROM ${ks}.idxmap WHERE k = ? AND m[?] = ?`, [4, 'all', 1], 1, [[4, 0], [4, 2]]],
      [`SELECT k, c FROM ${ks}.idxmap WHERE k = ? AND m CONTAINS KEY ?`, [1, 'c0'], 1, [[1, 0]]],
    ]) {
      const got = await this.both(q, params, fetchSize);
      check(sorted(got) === sorted(want), `${q} ${JSON.stringify(params)} returned ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
    for (const name of ['idxmap_m_idx', 'idxmap_m_idx_1', 'idxmap_m_idx_2']) {
      await client.execute(`DROP INDEX ${ks}.${name}`);
    }
    await this.waitIndexes('idxmap', {});
  }

  // scan_shapes: over a scan, through prepared statements, unpaged and paged: WHERE v = ? ALLOW
  // FILTERING over the whole table, refused without ALLOW FILTERING; GROUP BY the partition key;
  // PER PARTITION LIMIT ?; and materialized views refused, pointing to secondary indexes.
  async scan_shapes() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.scanq (k int, c int, v int, PRIMARY KEY (k, c))`);
    const all = [];
    for (let k = 0; k < 7; k++) {
      for (let c = 0; c < 5; c++) {
        await client.execute(`INSERT INTO ${ks}.scanq (k, c, v) VALUES (?, ?, ?)`, [k, c, (k + c) % 3], { prepare: true });
        all.push([k, c]);
      }
    }
    const sorted = (rs) => JSON.stringify(rs.map((r) => JSON.stringify(r)).sort());
    const ks7 = [0, 1, 2, 3, 4, 5, 6];
    const count = (k, v) => [0, 1, 2, 3, 4].filter((c) => (k + c) % 3 === v).length;
    for (const [q, params, fetchSize, want] of [
      [`SELECT k, c FROM ${ks}.scanq WHERE v = ? ALLOW FILTERING`, [0], 2, all.filter(([k, c]) => (k + c) % 3 === 0)],
      [`SELECT k, c FROM ${ks}.scanq WHERE c = ? ALLOW FILTERING`, [4], 3, ks7.map((k) => [k, 4])],
      [`SELECT k, count(*), max(v) FROM ${ks}.scanq GROUP BY k`, [], 2, ks7.map((k) => [k, 5, 2])],
      [`SELECT k, count(*) FROM ${ks}.scanq WHERE v = ? GROUP BY k ALLOW FILTERING`, [1], 3, ks7.map((k) => [k, count(k, 1)])],
      [`SELECT k, c FROM ${ks}.scanq PER PARTITION LIMIT ?`, [2], 3, all.filter(([, c]) => c < 2)],
      [`SELECT k, c FROM ${ks}.scanq WHERE v = ? PER PARTITION LIMIT 1 ALLOW FILTERING`, [2], 2,
        ks7.map((k) => [k, [0, 1, 2, 3, 4].find((c) => (k + c) % 3 === 2)])],
    ]) {
      const got = await this.both(q, params, fetchSize);
      check(sorted(got) === sorted(want) && new Set(got.map((r) => r.join())).size === got.length,
        `${q} ${JSON.stringify(params)} returned ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
    await this.refused(`SELECT k, c FROM ${ks}.scanq WHERE v = ?`, [0], /ALLOW FILTERING/);
    let err = null;
    try {
      await client.execute(`CREATE MATERIALIZED VIEW ${ks}.by_v AS SELECT * FROM ${ks}.scanq WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)`);
    } catch (e) {
      err = e;
    }
    check(err !== null && /secondary index/.test(err.message), `CREATE MATERIALIZED VIEW: ${err === null ? 'succeeded' : err.message}`);
  }

  // partition_key_filters: part of a composite partition key (=, IN on one column, slices) with
  // ALLOW FILTERING over a scan, and primary key columns (part of the partition key, a
  // clustering column) beside an indexed column with ALLOW FILTERING, through prepared
  // statements, unpaged and paged; without ALLOW FILTERING, and IN on the partition key beside
  // an index, refused with Cassandra 4.1's messages.
  async partition_key_filters() {
    const { client, ks } = this;
    await client.execute(`CREATE TABLE ${ks}.pkf (k1 int, k2 int, c int, v int, PRIMARY KEY ((k1, k2), c))`);
    const rows = [];
    for (let k1 = 0; k1 < 5; k1++) {
      for (let k2 = 0; k2 < 3; k2++) {
        for (let c = 0; c < 3; c++) {
          const r = [k1, k2, c, (k1 + k2 + c) % 3];
          rows.push(r);
          await client.execute(`INSERT INTO ${ks}.pkf (k1, k2, c, v) VALUES (?, ?, ?, ?)`, r, { prepare: true });
        }
      }
    }
    await client.execute(`CREATE INDEX pkf_v ON ${ks}.pkf (v)`);
    await this.waitBuilt(`SELECT k1 FROM ${ks}.pkf WHERE v = ?`, [1]);
    const sorted = (rs) => JSON.stringify(rs.map((r) => JSON.stringify(r)).sort());
    const q = `SELECT k1, k2, c, v FROM ${ks}.pkf WHERE `;
    for (const [where, params, keep] of [
      ['k1 = ? ALLOW FILTERING', [2], (r) => r[0] === 2],
      ['k2 = ? ALLOW FILTERING', [1], (r) => r[1] === 1],
      ['k1 IN ? ALLOW FILTERING', [[1, 4]], (r) => r[0] === 1 || r[0] === 4],
      ['k1 > ? AND k1 <= ? AND k2 = ? ALLOW FILTERING', [1, 3, 0], (r) => r[0] > 1 && r[0] <= 3 && r[1] === 0],
      ['k1 = ? AND c = ? ALLOW FILTERING', [3, 2], (r) => r[0] === 3 && r[2] === 2],
      ['v = ? AND c = ? ALLOW FILTERING', [1, 2], (r) => r[3] === 1 && r[2] === 2],
      ['v = ? AND k1 = ? ALLOW FILTERING', [0, 4], (r) => r[3] === 0 && r[0] === 4],
    ]) {
      const want = rows.filter(keep);
      check(want.length > 0, `the model of ${where} selects no rows`);
      const got = await this.both(q + where, params, 2);
      check(sorted(got) === sorted(want) && new Set(got.map((r) => r.join())).size === got.length,
        `WHERE ${where} ${JSON.stringify(params)} returned ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
    const needs = /Cannot execute this query as it might involve data filtering and thus may have unpredictable performance\. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING/;
    await this.refused(q + 'k1 = ?', [2], needs);
    await this.refused(q + 'k1 > ? AND k2 = ?', [1, 0], needs);
    await this.refused(q + 'v = ? AND c = ?', [1, 2], needs);
    await this.refused(q + 'v = ? AND k1 = ?', [0, 4], needs);
    await this.refused(q + 'v = ? AND k1 IN (1, 2) ALLOW FILTERING', [0], /Select on indexed columns and with IN clause for the PRIMARY KEY are not supported/);
  }
}

async function main() {
  if (process.argv.length !== 3) {
    console.error('usage: node interop.js CONFIG.json');
    process.exit(2);
  }
  const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  console.log(`node ${process.version}, cassandra-driver ${require('cassandra-driver/package.json').version}`);
  const steps = new Steps(cfg);
  const plan = ['connect_and_discover', 'ddl_and_metadata', 'alter_keyspace', 'named_values', 'every_type', 'paging', 'export_by_token_ranges', 'batches', 'expiring_data', 'functions', 'token_aware_routing', 'rate_limit', 'schema_evolution', 'frozen_types', 'user_types', 'user_type_keys', 'select_shapes', 'collections', 'counters', 'non_frozen_user_types',
    'secondary_indexes', 'map_indexes', 'scan_shapes', 'partition_key_filters'];
  let passed = 0;
  let failed = 0;
  try {
    for (const [i, step] of plan.entries()) {
      const name = step.replace(/_/g, ' ');
      try {
        await steps[step]();
        passed++;
        console.log(`PASS ${name}`);
      } catch (err) {
        failed++;
        console.log(`FAIL ${name}:\n${err && err.stack ? err.stack : err}`);
        if (i < 2) { // nothing else can run without a connection and the schema
          console.log(`skipping the remaining ${plan.length - i - 1} steps`);
          break;
        }
      }
    }
  } finally {
    if (steps.client !== null) {
      await steps.client.shutdown();
    }
  }
  console.log(`node: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
