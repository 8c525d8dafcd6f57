'use strict';
/*
 * seen-redis — the seen Redis module's SEEN.* commands as methods of
 * ioredis (Redis and Cluster) and node-redis v4+ (client and cluster).
 *
 * Each method sends the fast form of its command: items in one
 * newline-separated BULK argument (Redis builds an object per argument,
 * which costs more than the filter at 10,000 candidates) and filters
 * answered as REPLY FLAGS, one byte per candidate, from which the caller's
 * own items are picked.  In a cluster every call goes to the node that
 * owns its first key's slot: neither client knows where SEEN.* commands
 * keep their keys (ioredis would pick a random node and follow MOVED),
 * and keys of one call must share a slot, which is checked here first.
 */
const calculateSlot = require('cluster-key-slot');

const MAX_ITEM_BYTES = 512;
const DEFAULT_MAX_BATCH = 1000000; // the module's default seen.max-batch
const ZERO = 0x30;
const ONE = 0x31;

class SeenError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SeenError';
  }
}

class CrossSlotError extends SeenError {
  constructor(message) {
    super(message);
    this.name = 'CrossSlotError';
  }
}

function encodeItem(item) {
  let buf;
  if (typeof item === 'number' || typeof item === 'bigint') {
    if (typeof item === 'number' && !Number.isSafeInteger(item)) {
      throw new SeenError('number items must be safe integers (use a bigint or a string)');
    }
    const n = BigInt(item);
    if (n < 0n || n >= 1n << 64n) throw new SeenError('integer items must be in [0, 2^64)');
    return Buffer.from(n.toString());
  }
  if (typeof item === 'string') buf = Buffer.from(item);
  else if (Buffer.isBuffer(item) || item instanceof Uint8Array) buf = Buffer.from(item);
  else throw new SeenError(`items are strings, Buffers or integers, not ${typeof item}`);
  if (buf.length < 1 || buf.length > MAX_ITEM_BYTES) {
    throw new SeenError(`items must be 1 to ${MAX_ITEM_BYTES} bytes long`);
  }
  return buf;
}

const NEWLINE = Buffer.from('\n');

/* `BULK <lines>` when no item holds a newline, else `ITEMS a b ...`. */
function itemTail(encoded) {
  if (encoded.some((e) => e.includes(0x0a))) return ['ITEMS', ...encoded];
  const parts = [];
  encoded.forEach((e, i) => {
    if (i) parts.push(NEWLINE);
    parts.push(e);
  });
  return ['BULK', Buffer.concat(parts)];
}

function timedTail(encoded, times) {
  if (times.length !== encoded.length) throw new SeenError('times must give one time per item');
  const stamps = times.map((t) => Buffer.from(BigInt(t).toString()));
  if (encoded.some((e) => e.includes(0x0a))) {
    const pairs = [];
    encoded.forEach((e, i) => pairs.push(stamps[i], e));
    return ['TIMED', 'ITEMS', ...pairs];
  }
  const parts = [];
  encoded.forEach((e, i) => {
    if (i) parts.push(NEWLINE);
    parts.push(stamps[i], Buffer.from(' '), e);
  });
  return ['TIMED', 'BULK', Buffer.concat(parts)];
}

function duration(v) {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return String(v);
  if (typeof v === 'string' && v.length) return v;
  throw new SeenError("durations are integer milliseconds or strings like '90d'");
}

function policyArgs(p = {}) {
  const a = [];
  if (p.window !== undefined) a.push('WINDOW', duration(p.window));
  if (p.slices !== undefined) a.push('SLICES', String(p.slices));
  if (p.exact && p.error !== undefined) throw new SeenError('give error or exact, not both');
  if (p.exact) a.push('EXACT');
  else if (p.error !== undefined) a.push('ERROR', String(p.error));
  if (p.capacity !== undefined) a.push('CAPACITY', String(p.capacity));
  if (p.ids !== undefined) {
    if (p.ids !== 'str' && p.ids !== 'int') throw new SeenError("ids is 'str' or 'int'");
    a.push('IDS', p.ids.toUpperCase());
  }
  if (p.exactLimit !== undefined) a.push('EXACTLIMIT', String(p.exactLimit));
  if (p.expiry !== undefined) a.push('EXPIRY', p.expiry ? 'ON' : 'OFF');
  if (p.jitter !== undefined) a.push('JITTER', duration(p.jitter));
  return a;
}

function chunks(arr, size) {
  const out = [];
  for (let i = 0; i < arr.length; i += size) out.push(arr.slice(i, i + size));
  return out;
}

function asText(v) {
  return Buffer.isBuffer(v) ? v.toString() : String(v);
}

/* A reply value of SEEN.INFO: numbers as numbers, names as strings. */
function infoValue(v) {
  if (typeof v === 'number' || typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) {
    if (v.length % 2 === 0 && v.every((x, i) => i % 2 || Buffer.isBuffer(x) || typeof x === 'string')) {
      const o = {};
      for (let i = 0; i < v.length; i += 2) o[asText(v[i])] = infoValue(v[i + 1]);
      return o;
    }
    return v.map(infoValue);
  }
  const text = asText(v);
  return text !== '' && !Number.isNaN(Number(text)) ? Number(text) : text;
}

function infoObject(reply) {
  const out = {};
  for (let i = 0; i < reply.length; i += 2) {
    const name = asText(reply[i]);
    const value = reply[i + 1];
    out[name] = name === 'runs' || name === 'slices' ? value.map(infoValue) : infoValue(value);
  }
  return out;
}

/* ------------------------------------------------------------ clients */

/* How a command reaches the server: (keys, readonly, args) -> Promise of
 * the reply, binary strings as Buffers. */
function transportFor(client) {
  if (typeof client.callBuffer === 'function') {
    const { Command } = require('ioredis');
    if (client.isCluster) {
      return (keys, readonly, [name, ...args]) => {
        const cmd = new Command(name, args, { replyEncoding: null });
        cmd.slot = calculateSlot(keys[0]); // what Cluster routes by
        return client.sendCommand(cmd);
      };
    }
    return (keys, readonly, [name, ...args]) =>
      client.sendCommand(new Command(name, args, { replyEncoding: null }));
  }
  if (isNodeRedisCluster(client)) {
    // node-redis cluster: sendCommand(firstKey, isReadonly, args, options)
    return (keys, readonly, args) =>
      client.sendCommand(keys[0], readonly, args, { returnBuffers: true });
  }
  if (typeof client.sendCommand === 'function') {
    return (keys, readonly, args) => client.sendCommand(args, { returnBuffers: true });
  }
  throw new SeenError('not an ioredis or node-redis client');
}

function isNodeRedisCluster(client) {
  return typeof client.getSlotMaster === 'function' && typeof client.sendCommand === 'function';
}

function isCluster(client) {
  if (typeof client.callBuffer === 'function') return Boolean(client.isCluster);
  return isNodeRedisCluster(client);
}

class Seen {
  constructor(client, options = {}) {
    this.send = transportFor(client);
    this.cluster = isCluster(client);
    this.maxBatch = options.maxBatch || DEFAULT_MAX_BATCH;
  }

  async run(keys, readonly, commands) {
    if (this.cluster) {
      const slot = calculateSlot(keys[0]);
      for (const k of keys) {
        if (calculateSlot(k) !== slot) {
          throw new CrossSlotError(
            `keys of one call must share a hash slot (use a hash tag, e.g. {user:42}played): ${keys.join(' ')}`);
        }
      }
    }
    const replies = [];
    for (const args of commands) replies.push(await this.send(keys, readonly, args));
    return replies;
  }

  async reserve(key, policy = {}) {
    const [r] = await this.run([key], false, [['SEEN.RESERVE', key, ...policyArgs(policy)]]);
    return asText(r) === 'OK';
  }

  /* Add items (seen now, at `options.at`, or each at options.times[i]);
   * how many were new.  Policy options shape the key if this makes it. */
  async add(key, items, options = {}) {
    const { at, times, nocreate, ...policy } = options;
    if (at !== undefined && times !== undefined) {
      throw new SeenError('give at (one time) or times (one per item), not both');
    }
    const encoded = items.map(encodeItem);
    if (!encoded.length) throw new SeenError('no items to add');
    const head = ['SEEN.INSERT', key];
    if (at !== undefined) head.push('AT', String(at));
    if (nocreate) head.push('NOCREATE');
    head.push(...policyArgs(policy));
    const commands = [];
    for (let i = 0; i < encoded.length; i += this.maxBatch) {
      const part = encoded.slice(i, i + this.maxBatch);
      commands.push(head.concat(times !== undefined ? timedTail(part, times.slice(i, i + this.maxBatch))
                                                    : itemTail(part)));
    }
    const replies = await this.run([key], false, commands);
    return replies.reduce((s, r) => s + Number(r), 0);
  }

  async remove(key, items) {
    const encoded = items.map(encodeItem);
    if (!encoded.length) throw new SeenError('no items to remove');
    const commands = chunks(encoded, this.maxBatch).map((part) => ['SEEN.REMOVE', key, ...itemTail(part)]);
    const replies = await this.run([key], false, commands);
    return replies.reduce((s, r) => s + Number(r), 0);
  }

  async flags(keys, items, at) {
    keys = Array.isArray(keys) ? keys : [keys];
    if (!keys.length) throw new SeenError('at least one key');
    const encoded = items.map(encodeItem);
    const commands = chunks(encoded, this.maxBatch).map((part) => {
      const args = ['SEEN.MFILTER', String(keys.length), ...keys];
      if (at !== undefined) args.push('AT', String(at));
      return args.concat(['REPLY', 'FLAGS'], itemTail(part));
    });
    const replies = await this.run(keys, true, commands);
    return Buffer.concat(replies.map((r) => (Buffer.isBuffer(r) ? r : Buffer.from(String(r)))));
  }

  /* The items not seen by any of `keys`, in order, as the objects given. */
  async filter(keys, items, options = {}) {
    if (!items.length) return [];
    const f = await this.flags(keys, items, options.at);
    return items.filter((_, i) => f[i] === ZERO);
  }

  /* One boolean per item: seen by any of `keys`. */
  async seen(keys, items, options = {}) {
    if (!items.length) return [];
    const f = await this.flags(keys, items, options.at);
    return Array.from(f, (b) => b === ONE);
  }

  async compact(key) {
    const [r] = await this.run([key], false, [['SEEN.COMPACT', key]]);
    return Number(r) === 1;
  }

  async count(key) {
    const [r] = await this.run([key], true, [['SEEN.COUNT', key]]);
    return Number(r);
  }

  async info(key) {
    const [r] = await this.run([key], true, [['SEEN.INFO', key]]);
    return infoObject(r);
  }

  async load(key, blob, options = {}) {
    const args = ['SEEN.LOAD', key];
    if (options.expiry !== undefined) args.push('EXPIRY', options.expiry ? 'ON' : 'OFF');
    if (options.jitter !== undefined) args.push('JITTER', String(options.jitter));
    args.push(Buffer.from(blob));
    const [r] = await this.run([key], false, [args]);
    return asText(r) === 'OK';
  }
}

function seenFor(client, options) {
  return new Seen(client, options);
}

module.exports = { seenFor, Seen, SeenError, CrossSlotError, encodeItem };
