"""test_client_python.py — the Python client (clients/python) on a real
3-master cluster: every command it sends lands on the node that owns its
keys, so the nodes count no redirected (MOVED) SEEN.* call and no COMMAND
GETKEYS; plain redis-py, for comparison, asks GETKEYS before every
SEEN.MFILTER.  Also the asyncio cluster client, and CROSSSLOT caught before
anything is sent."""
import asyncio
import os
import sys

import pytest
import redis.asyncio.cluster

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
from seen_redis import AsyncSeen, CrossSlotError, Seen  # noqa: E402

USERS = 60
CANDIDATES = ["v%d" % i for i in range(2000)]


def routing_counts(cluster):
    """(SEEN.* calls refused with a redirect, COMMAND GETKEYS calls), summed
    over every node, from INFO commandstats."""
    rejected = getkeys = 0
    for port in cluster.ports:
        stats = cluster.node(port).info("commandstats")
        for name, s in stats.items():
            if name.startswith("cmdstat_seen."):
                rejected += s.get("rejected_calls", 0)
            if name == "cmdstat_command|getkeys":
                getkeys += s["calls"]
    return rejected, getkeys


def reset_stats(cluster):
    for port in cluster.ports:
        cluster.node(port).config_resetstat()


def workload(seen, user):
    played, delivered = "{user:%d}played" % user, "{user:%d}delivered" % user
    seen.add(played, CANDIDATES[user::7])
    seen.add(delivered, CANDIDATES[:50], capacity=100, window=0)
    unseen = seen.filter([delivered, played], CANDIDATES)
    added = set(CANDIDATES[user::7]) | set(CANDIDATES[:50])
    assert not added & set(unseen)  # no false negatives
    never = [c for c in CANDIDATES if c not in added]
    assert len(unseen) >= len(never) * 0.99  # false positives at most about ERROR
    seen.seen(played, CANDIDATES[:10])
    seen.count(played)
    seen.info(played)
    seen.remove(played, CANDIDATES[user:user + 1])


def test_no_redirects_and_no_getkeys(shared_cluster):
    rc = shared_cluster.client()
    seen = Seen(rc)
    rc.get_node_from_key("warm")  # the slot map is loaded once, up front
    reset_stats(shared_cluster)
    for user in range(USERS):
        workload(seen, user)
    assert routing_counts(shared_cluster) == (0, 0)

    # The same MFILTER through plain redis-py (a client seen_redis has not
    # touched): it asks a node which are the keys (GETKEYS, with every
    # candidate) before each call.
    plain = shared_cluster.client()
    reset_stats(shared_cluster)
    for user in range(10):
        plain.execute_command("SEEN.MFILTER", 2, "{user:%d}delivered" % user,
                           "{user:%d}played" % user, "REPLY", "FLAGS", "BULK",
                           "\n".join(CANDIDATES))
    rejected, getkeys = routing_counts(shared_cluster)
    assert getkeys == 10, getkeys


def test_moved_is_followed_without_getkeys(shared_cluster):
    # After a slot moves, the client follows MOVED and refreshes its slot
    # map; knowing SEEN.MFILTER's key position, it needs no GETKEYS for that.
    rc = shared_cluster.client()
    seen = Seen(rc)
    key = "{moving}played"
    seen.add(key, ["a", "b"])
    slot = rc.keyslot(key)
    source = rc.get_node_from_key(key)
    target = next(n for n in rc.get_primaries() if n.name != source.name)
    src, dst = shared_cluster.node(source.port), shared_cluster.node(target.port)
    src_id, dst_id = src.cluster("MYID"), dst.cluster("MYID")
    dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", key)
    for node in (src, dst):
        node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    reset_stats(shared_cluster)
    assert seen.filter([key], ["a", "c"]) == ["c"]
    assert seen.filter([key], ["b", "d"]) == ["d"]
    rejected, getkeys = routing_counts(shared_cluster)
    assert rejected == 1 and getkeys == 0, (rejected, getkeys)


def test_crossslot_is_caught_before_sending(shared_cluster):
    seen = Seen(shared_cluster.client())
    reset_stats(shared_cluster)
    with pytest.raises(CrossSlotError, match="hash slot"):
        seen.filter(["{a}x", "{b}y"], ["v"])
    assert routing_counts(shared_cluster) == (0, 0)


def test_asyncio_cluster(shared_cluster):
    async def main():
        rc = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=shared_cluster.ports[0])
        seen = AsyncSeen(rc)
        await rc.initialize()
        reset_stats(shared_cluster)
        for user in range(20):
            key = "{auser:%d}played" % user
            assert await seen.add(key, ["a", "b"]) == 2
            assert await seen.filter([key], ["a", "c"]) == ["c"]
            assert await seen.count(key) == 2
        await rc.close()
    asyncio.run(main())
    assert routing_counts(shared_cluster) == (0, 0)
