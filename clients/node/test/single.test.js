'use strict';
// single.test.js — every method against one real server, through ioredis and
// node-redis: answers equal to the raw commands', Buffers with any bytes,
// integer ids, times, and the errors caught before sending.
const test = require('node:test');
const assert = require('node:assert');
const Redis = require('ioredis');
const { createClient } = require('redis');
const { seenFor, SeenError } = require('..');
const fs = require('node:fs');
const path = require('node:path');
const { startServer, ROOT } = require('./servers');

const DAY = 86400000;
const CANDIDATES = Array.from({ length: 3000 }, (_, i) => `v${i}`);

async function exercise(seen, raw, prefix) {
  const played = `${prefix}{u}played`;
  const delivered = `${prefix}{u}delivered`;
  assert.strictEqual(await seen.reserve(played, { window: '30d', slices: 4, error: 0.001 }), true);
  assert.strictEqual(await seen.add(played, CANDIDATES.filter((_, i) => i % 3 === 0 && i < 1000)), 334);
  assert.strictEqual(await seen.add(played, ['v0', 'new']), 1);
  assert.strictEqual(await seen.count(played), 335);
  const unseen = await seen.filter(played, CANDIDATES);
  const rawUnseen = (await raw('SEEN.FILTER', played, ...CANDIDATES)).map(String);
  assert.deepStrictEqual(unseen, rawUnseen);
  assert.deepStrictEqual(await seen.seen(played, ['v0', 'v1', 'new']), [true, false, true]);
  assert.strictEqual(await seen.add(delivered, ['v1'], { capacity: 100, window: 0 }), 1);
  assert.deepStrictEqual(await seen.filter([delivered, played], ['v0', 'v1', 'v2']), ['v2']);
  const now = Number(await raw('SEEN.INFO', played).then(() => Date.now()));
  assert.deepStrictEqual(await seen.filter(played, ['v0'], { at: now + 40 * DAY }), ['v0']);
  assert.strictEqual(await seen.add(`${prefix}{u}timed`, ['t1', 't2'],
    { times: [now - 1000, now - 5 * DAY], window: '3d' }), 1);
  assert.deepStrictEqual(await seen.filter(`${prefix}{u}timed`, ['t1', 't2']), ['t2']);
  assert.strictEqual(await seen.remove(played, ['v0', 'nope']), 1);
  assert.strictEqual(await seen.compact(played), false);
  const info = await seen.info(played);
  assert.strictEqual(info.items, 334);
  assert.strictEqual(info.policy['window-ms'], 30 * DAY);
  assert.strictEqual(info.policy.ids, 'str');
  assert.ok(Array.isArray(info.runs) && typeof info.slices[0]['start-ms'] === 'number');

  // Buffers with any bytes, and items holding a newline (sent as arguments).
  const binary = [Buffer.from([0, 1]), Buffer.from('a b'), Buffer.from('\r\nx'), Buffer.from('ünï'),
    Buffer.from(Array.from({ length: 254 }, (_, i) => i + 1))];
  assert.strictEqual(await seen.add(`${prefix}bin`, binary), binary.length);
  const probe = [...binary, Buffer.from([0])];
  assert.deepStrictEqual(await seen.filter(`${prefix}bin`, probe), [probe[probe.length - 1]]);
  assert.deepStrictEqual(await seen.seen(`${prefix}bin`, [Buffer.from('x\ny'), binary[2]]), [false, true]);
  // Integer ids: numbers, bigints and decimal strings.
  await seen.reserve(`${prefix}ints`, { ids: 'int', exact: true });
  assert.strictEqual(await seen.add(`${prefix}ints`, [1, 2n, (1n << 64n) - 1n]), 3);
  assert.deepStrictEqual(await seen.filter(`${prefix}ints`, [1, 3, (1n << 64n) - 1n, '2']), [3]);
  for (const bad of [[''], ['x'.repeat(513)], [-1], [1n << 64n], [1.5], [{}]]) {
    await assert.rejects(seen.add(`${prefix}bin`, bad), SeenError);
  }
  await assert.rejects(seen.reserve(`${prefix}p`, { error: 0.01, exact: true }), SeenError);
  await assert.rejects(seen.add(`${prefix}ints`, ['x']), /decimal integers/);
  assert.deepStrictEqual(await seen.filter(played, []), []);
}

test('every method, ioredis and node-redis', async (t) => {
  const server = await startServer();
  const io = new Redis({ port: server.port, lazyConnect: true });
  const nr = createClient({ socket: { port: server.port, host: '127.0.0.1' } });
  try {
    await io.connect();
    await nr.connect();
    await t.test('ioredis', () => exercise(seenFor(io), (...a) => io.call(...a), 'io:'));
    await t.test('node-redis', () => exercise(seenFor(nr), (...a) => nr.sendCommand(a.map(String)), 'nr:'));
    await t.test('load', async () => {
      // A set serialized by the core (format version 1, still loaded): 5,000
      // items "v<i>" over 100 days from t0, a 90-day window.
      const seen = seenFor(io);
      const blob = fs.readFileSync(path.join(ROOT, 'tests', 'unit', 'data', 'v1_window.bin'));
      assert.strictEqual(await seen.load('loaded', blob, { expiry: false }), true);
      const t0 = 1790000000000;
      const recent = Array.from({ length: 4000 }, (_, i) => `v${1000 + i}`);
      assert.deepStrictEqual(await seen.filter('loaded', recent, { at: t0 + 100 * DAY }), []);
      await assert.rejects(seen.load('bad', Buffer.from('SEEN')), /serialized seen set|truncated/);
    });
  } finally {
    io.disconnect();
    await nr.quit().catch(() => {});
    server.stop();
  }
});
