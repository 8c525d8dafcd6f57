'use strict';
// cluster.test.js — on a real 3-master cluster (scripts/cluster.sh), every
// SEEN.* call through ioredis Cluster and node-redis cluster lands on the
// node owning its keys: the nodes count no redirected (MOVED) SEEN.* call
// and no COMMAND GETKEYS.  A raw ioredis Cluster call, for comparison, goes
// to a random node and is redirected often.  CROSSSLOT is caught first.
const test = require('node:test');
const assert = require('node:assert');
const Redis = require('ioredis');
const { createCluster } = require('redis');
const { seenFor, CrossSlotError } = require('..');
const { startCluster } = require('./servers');

const CANDIDATES = Array.from({ length: 2000 }, (_, i) => `v${i}`);

async function routingCounts(nodes) {
  let rejected = 0;
  let getkeys = 0;
  for (const node of nodes) {
    const text = await node.info('commandstats');
    for (const line of text.split('\r\n')) {
      const m = /^cmdstat_([^:]+):(.*)$/.exec(line);
      if (!m) continue;
      const fields = Object.fromEntries(m[2].split(',').map((kv) => kv.split('=')));
      if (m[1].startsWith('seen.')) rejected += Number(fields.rejected_calls || 0);
      if (m[1] === 'command|getkeys') getkeys += Number(fields.calls);
    }
  }
  return { rejected, getkeys };
}

async function resetStats(nodes) {
  for (const node of nodes) await node.config('RESETSTAT');
}

async function workload(seen, user) {
  const played = `{user:${user}}played`;
  const delivered = `{user:${user}}delivered`;
  const mine = CANDIDATES.filter((_, i) => i % 7 === user % 7);
  await seen.add(played, mine);
  await seen.add(delivered, CANDIDATES.slice(0, 50), { capacity: 100, window: 0 });
  const unseen = new Set(await seen.filter([delivered, played], CANDIDATES));
  for (const item of [...mine, ...CANDIDATES.slice(0, 50)]) assert.ok(!unseen.has(item), item);
  await seen.seen(played, CANDIDATES.slice(0, 10));
  await seen.count(played);
  await seen.info(played);
  await seen.remove(played, mine.slice(0, 1));
}

test('routing on a 3-master cluster', { timeout: 240000 }, async (t) => {
  const cluster = await startCluster();
  const nodes = cluster.ports.map((port) => new Redis({ port }));
  const io = new Redis.Cluster([{ host: '127.0.0.1', port: cluster.ports[0] }]);
  const nr = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${cluster.ports[0]}` }] });
  try {
    await nr.connect();
    await io.ping();
    await t.test('ioredis Cluster: no MOVED, no GETKEYS', async () => {
      const seen = seenFor(io);
      await resetStats(nodes);
      for (let user = 0; user < 40; user++) await workload(seen, user);
      assert.deepStrictEqual(await routingCounts(nodes), { rejected: 0, getkeys: 0 });
    });
    await t.test('node-redis cluster: no MOVED, no GETKEYS', async () => {
      const seen = seenFor(nr);
      await resetStats(nodes);
      for (let user = 100; user < 140; user++) await workload(seen, user);
      assert.deepStrictEqual(await routingCounts(nodes), { rejected: 0, getkeys: 0 });
    });
    await t.test('a raw ioredis Cluster call is redirected', async () => {
      await resetStats(nodes);
      for (let user = 0; user < 30; user++) {
        await io.call('SEEN.FILTER', `{user:${user}}played`, 'v1', 'v2');
      }
      const { rejected } = await routingCounts(nodes);
      assert.ok(rejected >= 5, `only ${rejected} redirects of 30 random-node calls`);
    });
    await t.test('CROSSSLOT is caught before sending', async () => {
      await resetStats(nodes);
      await assert.rejects(seenFor(io).filter(['{a}x', '{b}y'], ['v']), CrossSlotError);
      await assert.rejects(seenFor(nr).filter(['{a}x', '{b}y'], ['v']), CrossSlotError);
      assert.deepStrictEqual(await routingCounts(nodes), { rejected: 0, getkeys: 0 });
    });
  } finally {
    io.disconnect();
    await nr.disconnect().catch(() => {});
    nodes.forEach((n) => n.disconnect());
    cluster.stop();
  }
});
