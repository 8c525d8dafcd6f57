"""client.py — SEEN.* as methods of a redis-py client: `Seen` for
redis.Redis and redis.cluster.RedisCluster, `AsyncSeen` for their asyncio
twins.  Each method sends the fast form of its command (see _commands.py)
and returns Python values.

Cluster routing: redis-py finds the keys of SEEN.* commands in the COMMAND
table it loads, except SEEN.MFILTER's (counted by numkeys), for which it
would ask a node COMMAND GETKEYS — the whole candidate payload once more —
before every call.  These methods tell the client where that command's
first key is (see _route) and check first that every key of a call hashes
to one slot; redis-py then routes, follows MOVED/ASK and retries as for any
command.
"""
from typing import Any, Dict, List, Optional, Sequence

from . import _commands as c
from ._commands import CrossSlotError, Item, SeenError

try:  # redis-py 4.1+
    from redis.cluster import RedisCluster as _SyncCluster
except ImportError:  # pragma: no cover
    _SyncCluster = ()
try:  # redis-py 4.3+
    from redis.asyncio.cluster import RedisCluster as _AsyncCluster
except ImportError:  # pragma: no cover
    _AsyncCluster = ()


# SEEN.MFILTER numkeys key [key ...] ...: where its first key is.
MFILTER_FIRST_KEY = 2


def _check_one_slot(client, keys: Sequence[Any]) -> None:
    slot = client.keyslot(keys[0])
    for k in keys[1:]:
        if client.keyslot(k) != slot:
            raise CrossSlotError("keys of one call must share a hash slot (use a hash tag, "
                                 "e.g. {user:42}played and {user:42}delivered): %r" % (keys,))


def _teach(table, name: str, full: bool) -> None:
    """Write SEEN.MFILTER's key position into a client's command table (the
    sync client's entries are COMMAND's fields, lower-case; the asyncio
    client's only the positions, upper-case)."""
    entry = table.get(name)
    if isinstance(entry, dict) and entry.get("first_key_pos") == MFILTER_FIRST_KEY:
        return
    positions = {"first_key_pos": MFILTER_FIRST_KEY, "last_key_pos": MFILTER_FIRST_KEY,
                 "step_count": 1}
    if full:
        flags = [f for f in (entry or {}).get("flags", ["readonly", "module"])
                 if f != "movablekeys"]
        positions.update(name=name, arity=-5, flags=flags)
    table[name] = positions


def _route(client, keys: Sequence[Any]) -> None:
    """Before a call on a cluster client: its keys share a slot, and the
    client knows where SEEN.MFILTER's first key is.  redis-py finds the
    other SEEN.* commands' keys in the COMMAND table it loads (first key
    at 1); SEEN.MFILTER's follow numkeys, which the table can only flag as
    movable, and then redis-py asks a node COMMAND GETKEYS (with every
    candidate) before each call.  Taught the position, redis-py routes it
    like any command: slot map, MOVED and ASK, retries after a failover.
    (A client that reloads its table loses the entry: it is checked before
    every call.)"""
    if isinstance(client, _SyncCluster):
        _check_one_slot(client, keys)
        _teach(client.commands_parser.commands, "seen.mfilter", full=True)


async def _route_async(client, keys: Sequence[Any]) -> None:
    if isinstance(client, _AsyncCluster):
        _check_one_slot(client, keys)
        await client.initialize()  # loads the table first, so it cannot replace the entry
        _teach(client.commands_parser.commands, "SEEN.MFILTER", full=False)


class _Plan:
    """What a method sends (one or more command lines, all to one node) and
    how the replies make its result."""

    def __init__(self, keys, commands, finish):
        self.keys, self.commands, self.finish = keys, commands, finish


class _Methods:
    """The commands, written once; subclasses say how a plan is sent."""

    def __init__(self, client, max_batch: int = c.DEFAULT_MAX_BATCH):
        self.client = client
        self.max_batch = max_batch

    # ---------------------------------------------------------- writes
    def _reserve(self, key, **policy):
        return _Plan([key], [["SEEN.RESERVE", key, *c.policy_args(**policy)]],
                     lambda replies: replies[0] in (b"OK", "OK", True))

    def _insert(self, key, items, at=None, times=None, nocreate=False, **policy):
        encoded = c.encode_items(items)
        if at is not None and times is not None:
            raise SeenError("give at (one time) or times (one per item), not both")
        head: List[Any] = ["SEEN.INSERT", key]
        if at is not None:
            head += ["AT", int(at)]
        if nocreate:
            head.append("NOCREATE")
        head += c.policy_args(**policy)
        commands = []
        size = self.max_batch
        for i in range(0, len(encoded), size):
            part = encoded[i:i + size]
            if times is not None:
                commands.append(head + c.timed_tail(part, times[i:i + size]))
            else:
                commands.append(head + c.item_tail(part))
        if not commands:
            raise SeenError("no items to add")
        return _Plan([key], commands, lambda replies: sum(int(r) for r in replies))

    def _remove(self, key, items):
        encoded = c.encode_items(items)
        commands = [["SEEN.REMOVE", key, *c.item_tail(part)]
                    for part in c.chunks(encoded, self.max_batch) if part]
        if not commands:
            raise SeenError("no items to remove")
        return _Plan([key], commands, lambda replies: sum(int(r) for r in replies))

    def _compact(self, key):
        return _Plan([key], [["SEEN.COMPACT", key]], lambda replies: bool(int(replies[0])))

    def _load(self, key, blob: bytes, expiry=None, jitter=None):
        args: List[Any] = ["SEEN.LOAD", key]
        if expiry is not None:
            args += ["EXPIRY", "ON" if expiry else "OFF"]
        if jitter is not None:
            args += ["JITTER", int(jitter)]
        return _Plan([key], [args + [blob]], lambda replies: True)

    # ---------------------------------------------------------- reads
    def _flags(self, keys, items, at):
        keys = list(keys)
        encoded = c.encode_items(items)
        commands = [c.mfilter_args(keys, part, at, "FLAGS")
                    for part in c.chunks(encoded, self.max_batch)] if encoded else []
        return keys, commands

    def _filter(self, keys, items, at=None):
        keys, commands = self._flags(keys, items, at)
        return _Plan(keys, commands, lambda replies: c.pick_unseen(items, c.flag_bytes(replies)))

    def _flags_plan(self, keys, items, at=None):
        keys, commands = self._flags(keys, items, at)
        return _Plan(keys, commands, lambda replies: c.to_bools(c.flag_bytes(replies)))

    def _count(self, key):
        return _Plan([key], [["SEEN.COUNT", key]], lambda replies: int(replies[0]))

    def _info(self, key):
        return _Plan([key], [["SEEN.INFO", key]], lambda replies: c.info_dict(replies[0]))


def _single_key(keys):
    return [keys] if isinstance(keys, (str, bytes)) else list(keys)


class Seen(_Methods):
    """SEEN.* on a redis.Redis or redis.cluster.RedisCluster.

    >>> seen = Seen(redis.Redis())
    >>> seen.add("{u:42}played", ["v1", "v2"])
    2
    >>> seen.filter("{u:42}played", ["v1", "v3"])
    ['v3']
    """

    def _run(self, plan: _Plan):
        _route(self.client, plan.keys)
        replies = [self.client.execute_command(*cmd) for cmd in plan.commands]
        return plan.finish(replies)

    def reserve(self, key, **policy) -> bool:
        """SEEN.RESERVE: window (ms or '90d'), slices, error | exact=True,
        capacity, ids ('str'|'int'), exact_limit, expiry (bool), jitter."""
        return self._run(self._reserve(key, **policy))

    def add(self, key, items: Sequence[Item], at: Optional[int] = None,
            times: Optional[Sequence[int]] = None, nocreate: bool = False, **policy) -> int:
        """Add items seen now, at `at` (ms), or each at times[i]; returns how
        many were new.  Policy options shape the key if this makes it."""
        return self._run(self._insert(key, items, at, times, nocreate, **policy))

    def remove(self, key, items: Sequence[Item]) -> int:
        """Forget items; returns how many were seen."""
        return self._run(self._remove(key, items))

    def filter(self, keys, items: Sequence[Item], at: Optional[int] = None) -> List[Item]:
        """The items not seen by any of `keys` (one key or several sharing a
        hash tag), in input order, as the objects given."""
        if not items:
            return []
        return self._run(self._filter(_single_key(keys), items, at))

    def seen(self, keys, items: Sequence[Item], at: Optional[int] = None) -> List[bool]:
        """One bool per item: seen by any of `keys`."""
        if not items:
            return []
        return self._run(self._flags_plan(_single_key(keys), items, at))

    def compact(self, key) -> bool:
        return self._run(self._compact(key))

    def count(self, key) -> int:
        return self._run(self._count(key))

    def info(self, key) -> Dict[str, Any]:
        return self._run(self._info(key))

    def load(self, key, blob: bytes, expiry: Optional[bool] = None,
             jitter: Optional[int] = None) -> bool:
        return self._run(self._load(key, blob, expiry, jitter))


class AsyncSeen(_Methods):
    """The same methods, awaitable, on redis.asyncio.Redis or
    redis.asyncio.cluster.RedisCluster."""

    async def _run(self, plan: _Plan):
        await _route_async(self.client, plan.keys)
        replies = [await self.client.execute_command(*cmd) for cmd in plan.commands]
        return plan.finish(replies)

    async def reserve(self, key, **policy) -> bool:
        return await self._run(self._reserve(key, **policy))

    async def add(self, key, items: Sequence[Item], at: Optional[int] = None,
                  times: Optional[Sequence[int]] = None, nocreate: bool = False,
                  **policy) -> int:
        return await self._run(self._insert(key, items, at, times, nocreate, **policy))

    async def remove(self, key, items: Sequence[Item]) -> int:
        return await self._run(self._remove(key, items))

    async def filter(self, keys, items: Sequence[Item], at: Optional[int] = None) -> List[Item]:
        if not items:
            return []
        return await self._run(self._filter(_single_key(keys), items, at))

    async def seen(self, keys, items: Sequence[Item], at: Optional[int] = None) -> List[bool]:
        if not items:
            return []
        return await self._run(self._flags_plan(_single_key(keys), items, at))

    async def compact(self, key) -> bool:
        return await self._run(self._compact(key))

    async def count(self, key) -> int:
        return await self._run(self._count(key))

    async def info(self, key) -> Dict[str, Any]:
        return await self._run(self._info(key))

    async def load(self, key, blob: bytes, expiry: Optional[bool] = None,
                   jitter: Optional[int] = None) -> bool:
        return await self._run(self._load(key, blob, expiry, jitter))
