"""test_routing.py — SEEN.* through redis-py's RedisCluster: a user in every
one of the 16384 slots, multi-key filters whose keys share a hash tag (and
CROSSSLOT for keys that do not), and replicas answering read-only queries
after READONLY while refusing writes."""
import random

import pytest
import redis
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from conftest import NSLOTS
from helpers import info_map


def one_user_per_slot(fmt):
    """For every slot, the first n whose key fmt % n hashes to it."""
    users = [None] * NSLOTS
    missing, n = NSLOTS, 0
    while missing:
        slot = key_slot((fmt % n).encode())
        if users[slot] is None:
            users[slot] = n
            missing -= 1
        n += 1
    return users


def in_batches(items, size=2000):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def pipelined(rc, commands):
    """Run commands through cluster pipelines; their replies in order."""
    out = []
    for batch in in_batches(commands):
        pipe = rc.pipeline()
        for cmd in batch:
            pipe.execute_command(*cmd)
        out += pipe.execute()
    return out


def test_a_user_in_every_slot(shared_cluster):
    rc = shared_cluster.client()
    users = one_user_per_slot("user:%d:played")
    key = lambda n: "user:%d:played" % n  # noqa: E731
    items = {n: ["v%d-%d" % (n, j) for j in range(1 + n % 7)] for n in users}
    assert pipelined(rc, [("SEEN.ADD", key(n), *items[n]) for n in users]) == \
        [len(items[n]) for n in users]

    # Every slot holds a seen key, on the master that serves it.
    for m in shared_cluster.masters():
        node = shared_cluster.node(m["port"])
        slots = [s for lo, hi in m["slots"] for s in range(lo, hi + 1)]
        pipe = node.pipeline(transaction=False)
        for s in slots:
            pipe.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
        counts = pipe.execute()
        assert min(counts) >= 1, "a slot of %d holds no key" % m["port"]
        assert node.info("seen")["seen_keys"] >= len(slots)

    # Exact answers for every user (small sets are exact).
    replies = pipelined(rc, [("SEEN.FILTER", key(n), *items[n], "new%d" % n) for n in users])
    assert replies == [[b"new%d" % n] for n in users]
    counts = pipelined(rc, [("SEEN.COUNT", key(n)) for n in users])
    assert counts == [len(items[n]) for n in users]
    info = rc.execute_command("SEEN.INFO", key(users[NSLOTS - 1]))
    assert info[info.index(b"encoding") + 1] == b"exact"


def test_hash_tags_keep_a_users_keys_together(shared_cluster):
    rc = shared_cluster.client()
    rng = random.Random(2)
    users = rng.sample(range(10 ** 6), 2000)
    delivered = {u: ["d%d" % i for i in rng.sample(range(300), 120)] for u in users}
    played = {u: ["d%d" % i for i in rng.sample(range(300), 20)] for u in users}
    writes = []
    for u in users:
        writes.append(("SEEN.INSERT", "{user:%d}delivered" % u, "CAPACITY", 100, "WINDOW", 0,
                       "EXACT", "ITEMS", *delivered[u]))
        writes.append(("SEEN.INSERT", "{user:%d}played" % u, "EXACT", "BULK",
                       "\n".join(played[u])))
    pipelined(rc, writes)

    cands = ["d%d" % i for i in range(300)]
    replies = pipelined(rc, [("SEEN.MFILTER", 2, "{user:%d}delivered" % u, "{user:%d}played" % u,
                              "REPLY", "FLAGS", "BULK", "\n".join(cands)) for u in users])
    for u, flags in zip(users, replies):
        # The newest 100 delivered are kept; the 20 older may be too.
        must = set(delivered[u][20:]) | set(played[u])
        may = must | set(delivered[u])
        for c, f in zip(cands, flags):
            assert (c in must) <= (f == ord("1")) <= (c in may), (u, c)

    # Keys without a common tag: refused by the client, and by the server.
    with pytest.raises(RedisClusterException, match="same key slot"):
        rc.execute_command("SEEN.MFILTER", 2, "user:1:delivered", "user:1:played", "ITEMS", "x")
    for m in shared_cluster.masters():
        node = shared_cluster.node(m["port"])
        lo, hi = m["slots"][0]
        mine = [k for k in ("k%d" % i for i in range(100000)) if lo <= key_slot(k.encode()) <= hi]
        other = next(k for k in ("o%d" % i for i in range(100000))
                     if not lo <= key_slot(k.encode()) <= hi)
        for keys in (mine[:2], [mine[0], other]):
            with pytest.raises(redis.ResponseError, match="CROSSSLOT"):
                node.execute_command("SEEN.MFILTER", 2, *keys, "ITEMS", "x")
        with pytest.raises(redis.ResponseError, match="MOVED"):
            node.execute_command("SEEN.MFILTER", 1, other, "ITEMS", "x")
        assert node.execute_command("SEEN.MFILTER", 1, mine[0], "ITEMS", "x") == [b"x"]


def stable_info(node, key):
    """SEEN.INFO without what depends on the moment asked or on the
    allocator (ages, bytes)."""
    info = info_map(node.execute_command("SEEN.INFO", key))
    del info["bytes"]
    for s in info["slices"]:
        del s["age-ms"]
    return info


def test_replicas_answer_reads(shared_cluster):
    rc = shared_cluster.client()
    rng = random.Random(3)
    keys = ["{r:%d}played" % i for i in range(600)]
    items = {k: ["%d" % x for x in rng.sample(range(10 ** 9), 300)] for k in keys}
    pipelined(rc, [("SEEN.INSERT", k, "ERROR", "0.01", "EXACTLIMIT", 16, "BULK",
                    "\n".join(items[k])) for k in keys])
    shared_cluster.wait_replicas_synced()
    cands = ["%d" % x for x in rng.sample(range(10 ** 9), 2000)]
    for m in shared_cluster.masters():
        master = shared_cluster.node(m["port"])
        mine = [k for k in keys if any(lo <= key_slot(k.encode()) <= hi for lo, hi in m["slots"])]
        assert len(mine) > 100
        for r in shared_cluster.replicas_of(m):
            replica = redis.Redis(host="127.0.0.1", port=r["port"], single_connection_client=True)
            try:
                with pytest.raises(redis.ResponseError, match="^MOVED"):
                    replica.execute_command("SEEN.FILTER", mine[0], "x")
                assert replica.execute_command("READONLY")
                for k in mine[:100]:
                    for cmd in (("SEEN.FILTER", k, *items[k][:50], *cands[:50]),
                                ("SEEN.MFILTER", 1, k, "REPLY", "FLAGS", "BULK",
                                 "\n".join(items[k] + cands)),
                                ("SEEN.COUNT", k)):
                        assert replica.execute_command(*cmd) == master.execute_command(*cmd)
                    assert stable_info(replica, k) == stable_info(master, k)
                # Writes, and keys of other masters, still go to their master.
                with pytest.raises(redis.ResponseError, match="^MOVED"):
                    replica.execute_command("SEEN.ADD", mine[0], "new")
                other = next(k for k in keys if k not in mine)
                with pytest.raises(redis.ResponseError, match="^MOVED"):
                    replica.execute_command("SEEN.FILTER", other, "x")
            finally:
                replica.close()
        assert master.execute_command("SEEN.FILTER", mine[0], "new") == [b"new"]
