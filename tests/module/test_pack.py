"""test_pack.py — small sets rest in their serialized form ("packed").

A set whose serialized form is at most seen.pack-max-bytes is kept as those
bytes between commands: its tables would outweigh its items.  Packing must
change nothing a client can see but memory: the same answers, the same
DUMP, the same INFO totals, in either form and across the threshold.
"""
import random
import time

from helpers import info_map, server_ms, wait_for

ITEMS = ["item-%08d-abcdefghij" % i for i in range(3000)]


def answers(r, key, candidates):
    return r.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "BULK",
                             "\n".join(candidates))


def fill(r, key, n, page=20, now=None):
    for i in range(0, n, page):
        if now is None:
            r.execute_command("SEEN.ADD", key, *ITEMS[i:i + page])
        else:  # at a given time, so that two keys can be byte-identical
            r.execute_command("SEEN.INSERT", key, "NOW", now + i, "ITEMS", *ITEMS[i:i + page])


def test_small_keys_take_less_memory_and_answer_the_same(r):
    now = server_ms(r) - 10000
    r.config_set("seen.pack-max-bytes", 0)
    fill(r, "loose", 100, now=now)
    r.config_set("seen.pack-max-bytes", 4096)
    fill(r, "packed", 100, now=now)
    candidates = ITEMS[:200]
    assert answers(r, "packed", candidates) == answers(r, "loose", candidates)
    assert r.dump("packed") == r.dump("loose")
    loose, packed = r.memory_usage("loose", samples=0), r.memory_usage("packed", samples=0)
    assert packed <= loose - 200, (packed, loose)  # the tables, whatever the allocator
    # SEEN.INFO reports what the key holds as it rests.
    info = info_map(r.execute_command("SEEN.INFO", "packed"))
    assert info["bytes"] <= packed < info["bytes"] + 100


def test_small_keys_cost_little(r):
    # The fixed part of a key: its 32-byte record and the header of its
    # packed set (format version 4 leaves out the usual policy), on top of
    # Redis's own 32 bytes for a one-letter key (dictEntry and key string).
    # Under jemalloc 64 and 80 bytes are ours; less where the allocator
    # reports the bytes asked for (the sanitizer build's).
    r.execute_command("SEEN.RESERVE", "e")
    r.execute_command("SEEN.ADD", "k", "x")
    ours = {key: info_map(r.execute_command("SEEN.INFO", key))["bytes"] for key in ("e", "k")}
    assert ours["e"] <= 64 and ours["k"] <= 80, ours
    assert r.memory_usage("e", samples=0) <= 104
    assert r.memory_usage("k", samples=0) <= 120
    # What a page of items costs on top stays as it was.
    fill(r, "h", 100)
    assert r.memory_usage("h", samples=0) <= 450


def test_keys_cross_the_threshold_both_ways(r):
    r.config_set("seen.pack-max-bytes", 1024)
    rng = random.Random(5)
    fill(r, "k", 2000, page=100)  # grows past 1 KB: stays unpacked
    big = r.memory_usage("k", samples=0)
    r.execute_command("SEEN.REMOVE", "k", "BULK", "\n".join(ITEMS[:1950]))
    small = r.memory_usage("k", samples=0)
    assert small < big / 4
    probe = ITEMS[:2000] + ["never-%d" % rng.randrange(10 ** 9) for _ in range(200)]
    flags = answers(r, "k", probe)
    assert flags[1950:2000] == b"1" * 50 and flags[:1950].count(b"1") < 10
    r.config_set("seen.pack-max-bytes", 4096)


def test_info_totals_follow_the_resting_form(r):
    for n in (0, 1, 50, 400, 2000):
        if n == 0:
            r.execute_command("SEEN.RESERVE", "t0")
        else:
            fill(r, "t%d" % n, n, page=50)
    keys = ["t0", "t1", "t50", "t400", "t2000"]
    total = sum(info_map(r.execute_command("SEEN.INFO", k))["bytes"] for k in keys)
    assert r.info("seen")["seen_bytes"] == total
    r.execute_command("SEEN.FILTER", "t50", "a", "b")  # a read changes nothing
    assert r.info("seen")["seen_bytes"] == total
    r.delete(*keys)
    assert r.info("seen")["seen_bytes"] == 0 and r.info("seen")["seen_keys"] == 0


def test_copy_and_reads_of_packed_keys(r):
    fill(r, "src", 60)
    assert r.copy("src", "dst")
    r.execute_command("SEEN.ADD", "dst", "only-in-dst")
    assert r.execute_command("SEEN.FILTER", "src", "only-in-dst", ITEMS[0]) == [b"only-in-dst"]
    assert r.execute_command("SEEN.FILTER", "dst", "only-in-dst", ITEMS[0]) == []
    assert r.execute_command("SEEN.COUNT", "src") == 60
    # MFILTER over the same packed key twice, and over two packed keys.
    assert r.execute_command("SEEN.MFILTER", 3, "src", "dst", "src", "ITEMS", "only-in-dst",
                             "x") == [b"x"]


def test_packed_bytes_are_not_rounded_up_much(r):
    # The allocator's classes are a quarter apart at a few KB: a set whose
    # bytes just pass a class (2,048) rests in a chain of blocks (2,048,
    # then 448 and 32, say) instead of one of the next class (2,560).
    # Whatever its size, a packed key holds its bytes, its record and
    # under 48 bytes of rounding and chain addresses.
    now = server_ms(r) - 10000
    r.config_set("seen.pack-max-bytes", 0)
    fill(r, "loose", 1300, page=100, now=now)
    r.config_set("seen.pack-max-bytes", 4096)
    candidates = ITEMS[:1400]
    wastes = []
    for n in range(500, 1300, 20):
        key = "p%d" % n
        fill(r, key, n, now=now)
        info = info_map(r.execute_command("SEEN.INFO", key))
        waste = info["bytes"] - 32 - info["serialized-bytes"]
        wastes.append(waste)
        assert waste < 48, (n, info)
        flags = answers(r, key, candidates)
        assert flags[:n] == b"1" * n and flags[n:].count(b"1") < 10
    # One block of the class above would have wasted 135 bytes at worst,
    # two blocks 71; the mean is what a fleet of small keys pays.
    assert sum(wastes) / len(wastes) < 28, wastes
    # Every path that reads the bytes as they rest, for chains of every
    # length: DUMP and RESTORE, COPY, a write, a reload, DEBUG DIGEST
    # (replicas compare it).
    keys = ["p%d" % n for n in range(500, 1300, 20)]
    blobs = {key: r.dump(key) for key in keys}
    held = {key: r.memory_usage(key, samples=0) for key in keys}
    for key in keys:
        r.restore("restored", 0, blobs[key], replace=True)
        assert r.dump("restored") == blobs[key]
        assert r.copy(key, "copied", replace=True) and r.dump("copied") == blobs[key]
        digest = r.execute_command("DEBUG", "DIGEST-VALUE", key)
        assert r.execute_command("DEBUG", "DIGEST-VALUE", "copied") == digest
    key = "p1060"
    r.copy(key, "copied", replace=True)
    r.execute_command("SEEN.INSERT", "copied", "NOW", now + 2000, "ITEMS", "late-item")
    assert r.execute_command("SEEN.FILTER", "copied", "late-item", ITEMS[0]) == []
    assert r.execute_command("SEEN.FILTER", key, "late-item") == [b"late-item"]
    r.execute_command("DEBUG", "RELOAD")
    for key in keys:
        assert r.dump(key) == blobs[key] and r.memory_usage(key, samples=0) == held[key]
    assert answers(r, "p1060", candidates)[:1060] == b"1" * 1060


def test_split_packed_keys_survive_aof_rewrite_and_rdb(make_server):
    # Keys whose packed bytes rest in a chain of blocks, through an AOF rewrite
    # (SEEN.LOAD of the joined bytes) and a restart from it, then an RDB
    # save and a restart from that.
    server = make_server("--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    c = server.client()
    now = server_ms(c) - 10000
    for n in range(1040, 1160, 20):
        fill(c, "s%d" % n, n, now=now)
    dumps = {k: c.dump(k) for k in c.keys("s*")}
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0 and
             c.info("persistence")["aof_rewrite_scheduled"] == 0, what="the AOF rewrite")
    for save in (False, True):
        server.restart(save=save)
        c = server.client()
        assert {k: c.dump(k) for k in c.keys("s*")} == dumps
        for n in range(1040, 1160, 20):
            info = info_map(c.execute_command("SEEN.INFO", "s%d" % n))
            assert info["bytes"] - 32 - info["serialized-bytes"] < 48, (n, info)
            # Past 2,048 bytes, under the 2,560 one block would take.
            assert 2048 < info["serialized-bytes"] and info["bytes"] - 32 < 2560, (n, info)


# Idle large keys: seen.pack-idle-seconds 0 makes a key idle as soon as a
# whole sweep pass has gone by without a command reaching it, and
# pack-max-bytes 1024 makes a 3,000-item key large (one database: short
# passes).
IDLE_NOW = ("--seen.pack-idle-seconds", "0", "--seen.pack-max-bytes", "1024", "--databases", "1")


def packed_count(c):
    return c.info("seen")["seen_sweep_keys_packed"]


def wait_packed(c, at_least):
    wait_for(lambda: packed_count(c) >= at_least, what="%d idle keys packed" % at_least)


def test_idle_large_keys_rest_packed(make_server):
    # A large key unpacked while commands use it rests as its bytes once
    # idle, answers the same and keeps its DUMP and digest; a read brings
    # its tables back for the commands that follow, and a write goes on
    # from there.
    server = make_server("--appendonly", "yes", *IDLE_NOW)
    c = server.client()
    c.config_set("seen.pack-idle-seconds", 3600)
    fill(c, "big", 3000, page=100)
    candidates = ITEMS[:3000] + ["never-%d" % i for i in range(3000)]
    hot = c.memory_usage("big", samples=0)
    dump, digest = c.dump("big"), c.execute_command("DEBUG", "DIGEST-VALUE", "big")
    flags = answers(c, "big", candidates)
    assert flags[:3000] == b"1" * 3000
    # Not idle for an hour: a whole pass leaves it as it is.
    passes = c.info("seen")["seen_sweep_passes"]
    wait_for(lambda: c.info("seen")["seen_sweep_passes"] >= passes + 2, what="two passes")
    assert packed_count(c) == 0 and c.memory_usage("big", samples=0) == hot

    c.config_set("seen.pack-idle-seconds", 0)
    wait_packed(c, 1)
    rest = c.memory_usage("big", samples=0)
    assert rest < hot - 300, (rest, hot)  # the set's tables, at least
    assert c.dump("big") == dump
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "big") == digest
    info = info_map(c.execute_command("SEEN.INFO", "big"))
    assert info["bytes"] - 32 - info["serialized-bytes"] < 48, info  # as it rested
    assert c.memory_usage("big", samples=0) > rest  # the read unpacked it
    assert answers(c, "big", candidates) == flags
    wait_packed(c, 2)
    assert c.memory_usage("big", samples=0) == rest

    c.execute_command("SEEN.ADD", "big", "after-rest")
    assert c.execute_command("SEEN.FILTER", "big", "after-rest", "never-1") == [b"never-1"]
    wait_packed(c, 3)
    dump, rest = c.dump("big"), c.memory_usage("big", samples=0)
    # A restart from the AOF replays the commands: the key is packed once
    # idle.  A set idle when saved to an RDB file loads packed at once.
    server.restart()
    c = server.client()
    assert c.dump("big") == dump
    wait_packed(c, 1)
    assert c.memory_usage("big", samples=0) == rest
    c.config_set("seen.pack-idle-seconds", 3600)
    c.execute_command("DEBUG", "RELOAD")
    assert c.memory_usage("big", samples=0) > rest  # written a moment ago: not idle
    c.config_set("seen.pack-idle-seconds", 0)
    c.execute_command("DEBUG", "RELOAD")
    assert c.memory_usage("big", samples=0) == rest
    assert c.dump("big") == dump
    assert c.execute_command("SEEN.FILTER", "big", "after-rest", "never-1") == [b"never-1"]


def test_keys_in_use_are_not_packed(make_server):
    # A key that commands keep reaching stays unpacked however long ago its
    # last write was; keys above seen.pack-idle-max-bytes never pack.
    server = make_server(*IDLE_NOW)
    c = server.client()
    now = server_ms(c) - 60000
    fill(c, "busy", 3000, page=100, now=now)
    fill(c, "huge", 3000, page=100, now=now)
    c.config_set("seen.pack-idle-max-bytes", 2048)
    c.execute_command("SEEN.FILTER", "huge", "x")
    passes = c.info("seen")["seen_sweep_passes"]
    deadline = time.monotonic() + 60
    while c.info("seen")["seen_sweep_passes"] < passes + 3:
        assert time.monotonic() < deadline, "the sweep made no three passes in 60 s"
        c.execute_command("SEEN.FILTER", "busy", "x")
    assert packed_count(c) == 0
    c.config_set("seen.pack-idle-max-bytes", 0)
    passes = c.info("seen")["seen_sweep_passes"]
    wait_for(lambda: c.info("seen")["seen_sweep_passes"] >= passes + 2, what="two passes")
    assert packed_count(c) == 0
    c.config_set("seen.pack-idle-max-bytes", 1 << 20)
    wait_packed(c, 2)


def test_replica_packs_its_own_idle_keys(make_server):
    # Packing is how a key is held, not what it holds: nothing is
    # replicated for it, and a replica packs its idle keys itself.
    master = make_server("--repl-diskless-sync-delay", "0", *IDLE_NOW, name="master")
    replica = make_server(*IDLE_NOW, name="replica")
    m, s = master.client(), replica.client()
    s.replicaof("127.0.0.1", master.port)
    wait_for(lambda: s.info("replication")["master_link_status"] == "up" and
             not s.info("replication")["master_sync_in_progress"], what="replica sync")
    fill(m, "big", 3000, page=100)
    assert m.wait(1, 10000) == 1
    hot = s.memory_usage("big", samples=0)
    wait_packed(m, 1)
    wait_packed(s, 1)
    assert s.memory_usage("big", samples=0) < hot - 300
    assert "cmdstat_seen.compact" not in s.info("commandstats")
    assert s.execute_command("DEBUG", "DIGEST-VALUE", "big") == \
        m.execute_command("DEBUG", "DIGEST-VALUE", "big")
