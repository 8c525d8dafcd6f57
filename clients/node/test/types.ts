// types.ts — compiled (not run) by `tsc --noEmit`: the declarations in
// index.d.ts accept the documented uses and reject wrong ones.
import Redis from 'ioredis';
import { createClient } from 'redis';
import { seenFor, Seen, SeenInfo, CrossSlotError } from '..';

async function uses(): Promise<void> {
  const seen: Seen = seenFor(new Redis());
  const fromNodeRedis: Seen = seenFor(createClient());
  const added: number = await seen.add('{u:1}played', ['a', Buffer.from([0]), 7, 8n],
    { window: '90d', error: 0.001, times: [1, 2, 3, 4] });
  const unseen: string[] = await seen.filter(['{u:1}d', '{u:1}p'], ['a', 'b'], { at: 5 });
  const buffers: Buffer[] = await fromNodeRedis.filter('{u:1}p', [Buffer.from('x')]);
  const flags: boolean[] = await seen.seen('{u:1}p', ['a']);
  const info: SeenInfo = await seen.info('{u:1}p');
  const window: number = info.policy['window-ms'];
  const ok: boolean = await seen.reserve('k', { slices: 4, exact: true, ids: 'int' });
  // @ts-expect-error: ids is 'str' or 'int'
  await seen.reserve('k', { ids: 'bytes' });
  // @ts-expect-error: items are strings, Buffers or integers
  await seen.add('k', [{}]);
  const e: Error = new CrossSlotError('x');
  void [added, unseen, buffers, flags, window, ok, e];
}
void uses;
