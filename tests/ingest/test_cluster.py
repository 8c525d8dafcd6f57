"""test_cluster.py — seen-ingest against a real 3-master Redis Cluster on
loopback: every key is written on the master of its slot, a slot moved
while running is followed through MOVED, and a slot being migrated through
ASK.  Events come from a stream on a separate plain server."""
import time

from conftest import wait_for
from events import make_events, merge
from test_stream import drained, xadd_json


def owner_has_all(cluster, expected):
    """Every key is on the master of its slot, holding all its items."""
    for key, items in expected.items():
        node = cluster.owner(cluster.keyslot(key))
        client = node.client()
        unseen = client.execute_command("SEEN.FILTER", key, *sorted(items))
        if unseen:
            return False
    return True


def move_slot(cluster, slot, src, dst):
    """Moves a slot with its keys, as redis-cli --cluster reshard does."""
    src_id, dst_id = cluster.node_id(src), cluster.node_id(dst)
    s, d = src.client(), dst.client()
    d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    while True:
        keys = s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        if not keys:
            break
        s.execute_command("MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "KEYS", *keys)
    for n in cluster.nodes:
        n.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)


def other(cluster, node):
    return next(n for n in cluster.nodes if n.port != node.port)


def test_routing_moved_and_ask(cluster, make_server, ingesters):
    source = make_server(name="source")
    sc = source.client()
    lines, expected = make_events(6000, users=300)
    xadd_json(sc, lines)
    ing = ingesters(["--source", "stream", "--stream", "events",
                     "--stream-redis", "127.0.0.1:%d" % source.port,
                     "--redis", "127.0.0.1:%d" % cluster.nodes[1].port, "--cluster",
                     "--key-template", "seen:{%user}:%kind"]).start()
    ing.wait(lambda: drained(sc), 60, "first events acknowledged")
    assert owner_has_all(cluster, expected)
    # The keys really are spread over the three masters.
    assert all(n.client().dbsize() > 50 for n in cluster.nodes)

    # MOVED: move the slot of an existing key away while the ingester runs.
    key = "seen:{u7}:play"
    slot = cluster.keyslot(key)
    src = cluster.owner(slot)
    dst = other(cluster, src)
    move_slot(cluster, slot, src, dst)
    more, exp2 = make_events(300, users=300, start=6000)
    xadd_json(sc, more)
    merge(expected, exp2)
    ing.wait(lambda: drained(sc), 30, "events after the move acknowledged")
    # Statistics are written between polls, up to a second after the writes.
    ing.wait(lambda: ing.stats().get("moved", 0) >= 1, 10, "the MOVED reply counted")
    assert dst.client().execute_command("SEEN.COUNT", key) > 0
    assert src.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert owner_has_all(cluster, expected)

    # ASK: a slot half-way through migration; a new key in it lives on the
    # importing node, reached with ASKING.
    new_key = "seen:{fresh-user}:play"
    slot = cluster.keyslot(new_key)
    src = cluster.owner(slot)
    dst = other(cluster, src)
    assert not src.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
    dst.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", cluster.node_id(src))
    src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", cluster.node_id(dst))
    now = int(time.time() * 1000)
    sc.xadd("events", {"event": '{"user": "fresh-user", "item": "v1", "ts": %d, "kind": "play"}'
                                % now})
    ing.wait(lambda: drained(sc), 30, "the migrating slot's event acknowledged")
    ing.wait(lambda: ing.stats().get("ask", 0) >= 1, 10, "the ASK reply counted")
    for n in cluster.nodes:
        n.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", cluster.node_id(dst))
    wait_for(lambda: cluster.owner(slot).port == dst.port, 10, "slot handed over")
    assert dst.client().execute_command("SEEN.FILTER", new_key, "v1") == []
    assert ing.stop() == 0, ing.log()[-3000:]
