// Types of seen-redis: the SEEN.* methods for ioredis and node-redis clients.

/** An item: a string, bytes, or an integer (IDS INT sets; 0 … 2^64 − 1). */
export type Item = string | Buffer | Uint8Array | number | bigint;

/** A duration: milliseconds, or a string with a unit ("90d", "10m"). */
export type Duration = number | string;

/** Options that shape a key when a call makes it (SEEN.RESERVE / INSERT). */
export interface Policy {
  window?: Duration;
  slices?: number;
  /** False-positive bound in (0, 0.5); give `exact: true` instead for none. */
  error?: number;
  exact?: boolean;
  capacity?: number;
  ids?: 'str' | 'int';
  exactLimit?: number;
  expiry?: boolean;
  jitter?: Duration;
}

export interface AddOptions extends Policy {
  /** When every item was seen (ms since the epoch). */
  at?: number;
  /** When each item was seen, one time per item (SEEN.INSERT … TIMED). */
  times?: Array<number | bigint>;
  /** Refuse to make a missing key. */
  nocreate?: boolean;
}

export interface FilterOptions {
  /** Evaluate as of this time (ms) instead of now. */
  at?: number;
}

export interface SeenOptions {
  /** Items per command (the server's seen.max-batch, default 1,000,000). */
  maxBatch?: number;
}

/** SEEN.INFO as an object: numbers as numbers, names as strings. */
export interface SeenInfo {
  policy: {
    'window-ms': number;
    slices: number;
    error: number;
    capacity: number;
    ids: 'str' | 'int';
    'exact-limit': number;
    expiry: 'on' | 'off';
    'jitter-ms': number;
  };
  items: number;
  bytes: number;
  'serialized-bytes': number;
  error: number;
  'fpr-estimate': number;
  'forget-all-at-ms': number;
  encoding: string;
  keys: 'raw' | 'hashed';
  runs: Array<Record<string, number | string>>;
  slices: Array<Record<string, number>>;
  [field: string]: unknown;
}

export class SeenError extends Error {}
export class CrossSlotError extends SeenError {}

export class Seen {
  /** An ioredis Redis or Cluster, or a node-redis client or cluster. */
  constructor(client: unknown, options?: SeenOptions);
  reserve(key: string, policy?: Policy): Promise<boolean>;
  /** How many of the items were new. */
  add(key: string, items: Item[], options?: AddOptions): Promise<number>;
  /** How many of the items were seen (and are now forgotten). */
  remove(key: string, items: Item[]): Promise<number>;
  /** The items not seen by any of the keys, in order, as given. */
  filter<T extends Item>(keys: string | string[], items: T[], options?: FilterOptions): Promise<T[]>;
  /** One boolean per item: seen by any of the keys. */
  seen(keys: string | string[], items: Item[], options?: FilterOptions): Promise<boolean[]>;
  compact(key: string): Promise<boolean>;
  count(key: string): Promise<number>;
  info(key: string): Promise<SeenInfo>;
  load(key: string, blob: Buffer | Uint8Array, options?: { expiry?: boolean; jitter?: number }): Promise<boolean>;
}

export function seenFor(client: unknown, options?: SeenOptions): Seen;
export function encodeItem(item: Item): Buffer;
