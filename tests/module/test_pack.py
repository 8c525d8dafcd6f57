"""test_pack.py — small sets rest in their serialized form ("packed").

A set whose serialized form is at most seen.pack-max-bytes is kept as those
bytes between commands: its tables would outweigh its items.  Packing must
change nothing a client can see but memory: the same answers, the same
DUMP, the same INFO totals, in either form and across the threshold.
"""
import random

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
    for n in range(1000, 1120, 20):
        fill(c, "s%d" % n, n, now=now)
    dumps = {k: c.dump(k) for k in c.keys("s*")}
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0 and
             c.info("persistence")["aof_rewrite_scheduled"] == 0, what="the AOF rewrite")
    for save in (False, True):
        server.restart(save=save)
        c = server.client()
        assert {k: c.dump(k) for k in c.keys("s*")} == dumps
        for n in range(1000, 1120, 20):
            info = info_map(c.execute_command("SEEN.INFO", "s%d" % n))
            assert info["bytes"] - 32 - info["serialized-bytes"] < 48, (n, info)
            # Past 2,048 bytes, under the 2,560 one block would take.
            assert 2048 < info["serialized-bytes"] and info["bytes"] - 32 < 2560, (n, info)
