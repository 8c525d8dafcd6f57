"""test_compact.py — an import (writes stamped well before the present) is
kept exact while it runs and compacted once it ends: by the server a second
after its last write, by SEEN.COMPACT, or by the next live write.  The
compaction reaches replicas and the AOF as SEEN.COMPACT key NOW ms, so every
copy holds the same bytes."""
import random
import time

import pytest

from helpers import info_map, server_ms, wait_compacted, wait_for

DAY = 86400 * 1000


def import_history(client, key, now, days=150, per_day=140, order="time", seed=1, then=()):
    """A history of days x per_day items ending now, written now with AT =
    each item's time (SEEN.INSERT ... AT t takes one time per call).  One
    transaction, with the commands `then` after the import's last write:
    the server compacts an import a second after that write, and a client
    stalled that long between its pipelines would see it compacted early.
    Returns the items, their times and the replies to `then`."""
    rng = random.Random(seed)
    n = days * per_day
    times = [now - days * DAY + i * days * DAY // n for i in range(n)]
    items = ["h%06d" % i for i in range(n)]
    order_idx = list(range(n))
    if order == "reverse":
        order_idx.reverse()
    elif order == "random":
        rng.shuffle(order_idx)
    client.execute_command("SEEN.RESERVE", key, "WINDOW", "90d", "SLICES", "4", "ERROR", "0.001")
    tx = client.pipeline(transaction=True)
    for i in order_idx:
        tx.execute_command("SEEN.INSERT", key, "AT", times[i], "ITEMS", items[i])
    for command in then:
        tx.execute_command(*command)
    replies = tx.execute()
    return items, times, replies[n:]


def master_and_replica(make_server):
    """A master with the AOF on and a replica in sync with it: the master
    server and both clients."""
    master = make_server("--appendonly", "yes", "--repl-diskless-sync-delay", "0", name="master")
    replica = make_server(name="replica")
    m, s = master.client(), replica.client()
    s.replicaof("127.0.0.1", master.port)
    wait_for(lambda: s.info("replication")["master_link_status"] == "up" and
             not s.info("replication")["master_sync_in_progress"], what="replica sync")
    return master, m, s


def same_on_replica_and_replay(master, m, s, key):
    """The replica, and the master replaying its AOF after a restart, hold
    the key's bytes as the master does now.  Returns the new client."""
    assert m.wait(1, 10000) == 1
    dump = m.dump(key)
    assert s.dump(key) == dump
    master.restart()
    m = master.client()
    assert m.dump(key) == dump
    return m


def live_items(items, times, now):
    return [it for it, t in zip(items, times) if t > now - 90 * DAY]


@pytest.mark.parametrize("order", ["time", "reverse", "random"])
def test_import_is_compacted_after_it_ends(r, order):
    key = "imp:%s" % order
    now = server_ms(r)
    items, times, (info,) = import_history(r, key, now, order=order, seed=len(order),
                                           then=[("SEEN.INFO", key)])
    # While the import runs (and just after it), the key is exact.
    assert info_map(info)["encoding"] == b"exact"
    info = wait_compacted(r, key)
    count = info["items"]
    bits = r.memory_usage(key, samples=0) * 8 / count
    print("import (%s order) of %d items: %d held, %d runs, %.2f bits per item"
          % (order, len(items), count, len(info["runs"]), bits))
    assert len(info["runs"]) <= 3
    # 12,000-16,000 held in one Elias-Fano run: ~0.3 bit more than Rice
    # codes would take, for probes that read words instead of decoding.
    assert bits <= 15.4, bits
    live = live_items(items, times, now)
    flags = r.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "ITEMS", *live)
    assert flags == b"1" * len(live)


def test_compact_command(r):
    now = server_ms(r)
    assert r.execute_command("SEEN.COMPACT", "nothing-here") == 0
    _, _, (compacted,) = import_history(r, "c1", now, days=60, per_day=50,
                                        then=[("SEEN.COMPACT", "c1")])
    assert compacted == 1
    assert r.execute_command("SEEN.COMPACT", "c1") == 0
    assert info_map(r.execute_command("SEEN.INFO", "c1"))["encoding"] == b"compact"
    r.set("plain", "x")
    with pytest.raises(Exception, match="WRONGTYPE"):
        r.execute_command("SEEN.COMPACT", "plain")
    with pytest.raises(Exception, match="NOW"):
        r.execute_command("SEEN.COMPACT", "c1", "NOW", "soon")


def test_live_write_ends_an_import(r):
    now = server_ms(r)
    import_history(r, "c2", now, days=60, per_day=50)
    r.execute_command("SEEN.ADD", "c2", "fresh")
    assert info_map(r.execute_command("SEEN.INFO", "c2"))["encoding"] == b"compact"


def test_compaction_reaches_replica_and_aof(make_server):
    master, m, s = master_and_replica(make_server)
    now = server_ms(m)
    import_history(m, "k", now, days=120, per_day=60)
    wait_compacted(m, "k")
    m = same_on_replica_and_replay(master, m, s, "k")
    assert info_map(m.execute_command("SEEN.INFO", "k"))["encoding"] == b"compact"


@pytest.mark.parametrize("persistence", ["rdb", "aof"])
def test_import_cut_short_by_a_restart_is_compacted_after_loading(make_server, persistence):
    # The server stops within the second after an import's last write, before
    # its compaction: the key comes back exact, and must not stay so until
    # its user writes again.
    args = ("--appendonly", "yes") if persistence == "aof" else ("--appendonly", "no")
    server = make_server(*args, name="restart-" + persistence)
    c = server.client()
    now = server_ms(c)
    items, times, (info,) = import_history(c, "k", now, days=60, per_day=50,
                                           then=[("SEEN.INFO", "k")])
    assert info_map(info)["encoding"] == b"exact"
    server.restart(save=persistence == "rdb")
    c = server.client()
    info = wait_compacted(c, "k")
    assert len(info["runs"]) <= 3
    live = live_items(items, times, now)
    assert c.execute_command("SEEN.MFILTER", 1, "k", "REPLY", "FLAGS", "ITEMS", *live) == \
        b"1" * len(live)


def held_entries(client, key):
    """Entries the key stores (runs and buffer), forgotten ones included."""
    info = info_map(client.execute_command("SEEN.INFO", key))
    return sum(info_map(run)["items"] for run in info["runs"]), info["items"]


def write_then_fall_idle(client, key, now, tx=None):
    """Items in a slice that was forgotten 2.5 days ago, then items of the
    next slice; no write since, so only the sweep can drop the first.  One
    transaction, so the sweep (at the server's time) cannot come between
    writes stamped in the past; given one (`tx`), the writes join it and
    the caller executes it."""
    start = now - 115 * DAY
    own = tx is None
    if own:
        tx = client.pipeline(transaction=True)
    tx.execute_command("SEEN.RESERVE", key, "WINDOW", "90d", "SLICES", "4", "ERROR", "0.001")
    for page in range(40):
        tx.execute_command("SEEN.INSERT", key, "NOW", start + page * DAY // 4, "ITEMS",
                           *["old-%d-%d" % (page, i) for i in range(20)])
    for page in range(40):
        tx.execute_command("SEEN.INSERT", key, "NOW", start + 25 * DAY + page * DAY // 4,
                           "ITEMS", *["kept-%d-%d" % (page, i) for i in range(20)])
    if own:
        tx.execute()


def test_idle_key_drops_forgotten_slices(make_server):
    master, m, s = master_and_replica(make_server)
    write_then_fall_idle(m, "idle", server_ms(m))
    # Forgotten at once for queries; held until the sweep finds the key.
    old = ["old-%d-%d" % (p, i) for p in range(40) for i in range(20)]
    kept = ["kept-%d-%d" % (p, i) for p in range(40) for i in range(20)]
    flags = m.execute_command("SEEN.MFILTER", 1, "idle", "REPLY", "FLAGS", "ITEMS", *old, *kept)
    assert flags[len(old):] == b"1" * len(kept) and flags[:len(old)].count(b"1") < 5
    # Held entries come down to the live items (800, less the odd two that
    # share a fingerprint).
    wait_for(lambda: held_entries(m, "idle")[0] == held_entries(m, "idle")[1], timeout=10,
             what="the sweep to drop the forgotten slice")
    assert 790 <= held_entries(m, "idle")[1] <= 800
    stats = m.info("seen")
    assert stats["seen_sweep_keys_reclaimed"] == 1 and stats["seen_sweep_keys_visited"] >= 1
    wait_for(lambda: m.info("seen")["seen_sweep_passes"] >= 1, what="a whole pass")
    # Replicas apply the master's SEEN.COMPACT (they sweep only to pack idle
    # keys, which writes nothing).
    assert s.info("seen")["seen_sweep_keys_reclaimed"] == 0
    assert m.execute_command("SEEN.COUNT", "idle") == held_entries(m, "idle")[1]
    assert m.execute_command("SEEN.MFILTER", 1, "idle", "REPLY", "FLAGS", "ITEMS",
                             *kept) == b"1" * len(kept)
    same_on_replica_and_replay(master, m, s, "idle")


def test_nothing_is_written_while_clients_are_paused(make_server):
    # CLIENT PAUSE WRITE (like FAILOVER, a manual cluster failover and a
    # SHUTDOWN waiting for its replicas) must find the data standing still:
    # Redis stops the server if a timer replicates a write meanwhile.  An
    # import's compaction and the sweep wait for the pause to end.  One
    # transaction, so neither timer runs between the writes and the pause.
    master, m, s = master_and_replica(make_server)
    now = server_ms(m)
    tx = m.pipeline(transaction=True)
    write_then_fall_idle(m, "idle", now, tx)
    tx.execute_command("SEEN.INSERT", "imp", "AT", now - 5 * DAY, "ITEMS",
                       *["imp-%d" % i for i in range(500)])
    tx.execute_command("CLIENT", "PAUSE", 5000, "WRITE")
    tx.execute()
    # Both timers are due within 2 s; the pause outlasts that with room
    # for a slow (sanitized, shared) machine.
    time.sleep(2.0)
    assert m.ping()
    assert info_map(m.execute_command("SEEN.INFO", "imp"))["encoding"] == b"exact"
    held, live = held_entries(m, "idle")
    assert held > live
    # Once the pause ends, both happen, and reach the replica and the AOF.
    wait_compacted(m, "imp")
    wait_for(lambda: held_entries(m, "idle")[0] == held_entries(m, "idle")[1], timeout=10,
             what="the sweep to drop the forgotten slice")
    m = same_on_replica_and_replay(master, m, s, "imp")
    assert s.dump("idle") == m.dump("idle")


def test_renamed_or_restored_import_is_compacted_by_the_sweep(make_server):
    # The compaction timer notes the name an import was written under.  A
    # key renamed (or RESTOREd under another name) within its second keeps
    # the import exact under the new name, for good if its user never
    # writes again: the sweep compacts it once no write has touched it for
    # that second.  One transaction, so the timer cannot come first.
    master, m, s = master_and_replica(make_server)
    now = server_ms(m)
    tx = m.pipeline(transaction=True)
    tx.execute_command("SEEN.RESERVE", "imp", "WINDOW", "90d", "SLICES", "4", "ERROR", "0.001")
    for day in range(50):
        tx.execute_command("SEEN.INSERT", "imp", "AT", now - (60 - day) * DAY, "ITEMS",
                           *["i%d-%d" % (day, i) for i in range(100)])
    tx.rename("imp", "renamed")
    tx.dump("renamed")
    payload = tx.execute()[-1]
    m.restore("restored", 0, payload)
    for key in ("renamed", "restored"):
        info = wait_compacted(m, key)
        assert len(info["runs"]) <= 2
        assert m.memory_usage(key, samples=0) * 8 / 5000 <= 16
        items = ["i%d-%d" % (day, i) for day in range(50) for i in range(100)]
        flags = m.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "ITEMS", *items)
        assert flags == b"1" * len(items)
    assert m.info("seen")["seen_sweep_keys_reclaimed"] == 2
    dump = m.dump("restored")
    m = same_on_replica_and_replay(master, m, s, "renamed")
    assert s.dump("restored") == dump and m.dump("restored") == dump


def test_import_compacted_across_a_failover(make_server):
    # FAILOVER pauses the master's writers until its replica has caught up,
    # then swaps the two.  An import written just before: the old master's
    # timer must not write during the pause, and loses its note once it is
    # a replica; the new master's sweep compacts the import instead.
    master, m, s = master_and_replica(make_server)
    now = server_ms(m)
    tx = m.pipeline(transaction=True)
    tx.execute_command("SEEN.INSERT", "imp", "AT", now - 5 * DAY, "ITEMS",
                       *["imp-%d" % i for i in range(3000)])
    tx.execute_command("FAILOVER")
    tx.execute()
    wait_for(lambda: s.info("replication")["role"] == "master" and
             m.info("replication")["role"] == "slave" and
             m.info("replication")["master_link_status"] == "up", timeout=20,
             what="the failover")
    info = wait_compacted(s, "imp")
    assert len(info["runs"]) == 1
    assert s.wait(1, 10000) == 1
    assert m.dump("imp") == s.dump("imp")
    assert m.ping()
