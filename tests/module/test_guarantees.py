"""test_guarantees.py — the core library's promises, checked through Redis.

For an item added at t, window W, S slices: seen for every query time
q < t + W; forgotten once q >= t + W * (1 + 1/S); a never-added candidate
is seen with probability at most `error` (0 for exact sets); with a
capacity C the newest C items are always kept.
"""
import random
import time

import pytest

from conftest import info_map, server_ms
from helpers import wait_compacted

DAY = 86400000


def bulk(items):
    return "\n".join(items)


def flags(r, keys, items, at=None):
    args = ["SEEN.MFILTER", len(keys), *keys]
    if at is not None:
        args += ["AT", at]
    return r.execute_command(*args, "REPLY", "FLAGS", "BULK", bulk(items))


def fill_over_time(r, key, items, now, span_ms, batches=20):
    """Add items in batches stamped across the last span_ms, oldest first,
    so the set is past its first slice, and wait for the server to compact
    the import."""
    per = len(items) // batches
    for b in range(batches):
        at = now - span_ms + span_ms * b // batches
        r.execute_command("SEEN.INSERT", key, "AT", at, "BULK", bulk(items[b * per:(b + 1) * per]))
    wait_compacted(r, key)


@pytest.mark.parametrize("error", [0.01, 0.001])
def test_no_false_negatives_and_bounded_fpr(r, error):
    rng = random.Random(error)
    added = ["v%024x" % rng.getrandbits(96) for _ in range(100000)]
    fresh = ["f%024x" % rng.getrandbits(96) for _ in range(200000)]
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "40d", "SLICES", "4", "ERROR", error)
    fill_over_time(r, "k", added, now, 30 * DAY)
    info = info_map(r.execute_command("SEEN.INFO", "k"))
    assert info["encoding"] in (b"compact", b"mixed")
    # Distinct fingerprints: an item whose fingerprint was already stored (a
    # false positive at insert time) is not counted again.
    assert (1 - 2 * error) * len(added) <= info["items"] <= len(added)
    assert float(info["fpr-estimate"]) <= error
    # No false negatives: every added item is seen.
    assert flags(r, ["k"], added) == b"1" * len(added)
    false_positives = flags(r, ["k"], fresh).count(b"1")
    assert false_positives <= 1.2 * error * len(fresh), false_positives
    # Memory is the point: far below a plain SET's ~70 bytes (560 bits) per
    # item, and below 8-byte hashes even for this history imported in
    # twenty time-ordered batches (the core's worst case for run count).
    assert 8 * info["bytes"] / len(added) < 64


def test_several_keys_stay_within_the_sum_of_bounds(r):
    rng = random.Random(7)
    now = server_ms(r)
    for key in ("{u}a", "{u}b"):
        r.execute_command("SEEN.RESERVE", key, "WINDOW", "40d", "ERROR", "0.01")
        fill_over_time(r, key, ["%s%020x" % (key, rng.getrandbits(80)) for _ in range(40000)],
                       now, 30 * DAY, batches=10)
    fresh = ["n%020x" % rng.getrandbits(80) for _ in range(200000)]
    fp = flags(r, ["{u}a", "{u}b"], fresh).count(b"1")
    assert fp <= 1.2 * 0.02 * len(fresh), fp


def test_forgetting_with_past_timestamps(r):
    window, slices = 10000, 2
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", window, "SLICES", slices, "EXACT")
    rng = random.Random(3)
    stamps = {"i%d" % i: now - rng.randrange(0, 20000) for i in range(300)}
    for item, t in stamps.items():
        r.execute_command("SEEN.ADD", "k", "AT", t, item)
    items = list(stamps)
    for q in (now, now + 2000, now + 5000, now + 9000, now + 14000):
        answer = flags(r, ["k"], items, at=q)
        for item, bit in zip(items, answer):
            t = stamps[item]
            if q < t + window and t + window > now:
                assert bit == ord("1"), (item, t, q)
            if q >= t + window * (1 + 1 / slices):
                assert bit == ord("0"), (item, t, q)


def test_forgetting_in_real_time(r):
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "600ms", "SLICES", "2", "EXACT")
    r.execute_command("SEEN.ADD", "k", "a", "b")
    assert r.execute_command("SEEN.FILTER", "k", "a", "b") == []
    time.sleep(1.0)  # past 600 * 1.5 ms
    assert r.execute_command("SEEN.FILTER", "k", "a", "b") == [b"a", b"b"]
    assert r.execute_command("SEEN.COUNT", "k") == 0
    # The next write purges what was forgotten.
    r.execute_command("SEEN.ADD", "k", "c")
    assert info_map(r.execute_command("SEEN.INFO", "k"))["items"] == 1


def test_capacity_keeps_the_newest(r):
    cap, slices = 1000, 4
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "0", "CAPACITY", cap, "SLICES", slices,
                      "EXACT")
    items = ["c%05d" % i for i in range(10000)]
    for b in range(0, len(items), 100):
        r.execute_command("SEEN.ADD", "k", *items[b:b + 100])
    count = r.execute_command("SEEN.COUNT", "k")
    assert cap <= count <= cap + cap // slices
    assert flags(r, ["k"], items[-cap:]) == b"1" * cap
    assert flags(r, ["k"], items[:5000]) == b"0" * 5000


@pytest.mark.parametrize("window,slices", [("0", 4), ("90d", 4), ("90d", 64)])
def test_capacity_keeps_the_newest_of_an_import_in_any_order(r, window, slices):
    """One TIMED write of 1,000 past events, newest first or shuffled (a
    migration page, a replayed stream): the newest 100 by time stay."""
    now = server_ms(r)
    times = [now - 10 * DAY + i * (10 * DAY) // 1000 - 1 for i in range(1000)]
    for order in ("reverse", "shuffled"):
        key = "k:%s:%s:%d" % (order, window, slices)
        idx = list(range(1000))[::-1]
        if order == "shuffled":
            random.Random(5).shuffle(idx)
        r.execute_command("SEEN.RESERVE", key, "WINDOW", window, "SLICES", slices, "CAPACITY",
                          100, "EXACT")
        r.execute_command("SEEN.INSERT", key, "TIMED", "BULK",
                          "\n".join("%d e%d" % (times[i], i) for i in idx))
        assert flags(r, [key], ["e%d" % i for i in range(900, 1000)]) == b"1" * 100
        assert r.execute_command("SEEN.COUNT", key) <= 100 + 100 // slices + 1


@pytest.mark.parametrize("window,slices", [("0", 4), ("90d", 4), ("0", 64)])
def test_capacity_keeps_the_newest_whatever_order_the_writes_come_in(r, window, slices):
    """Live items then a backfill of older ones, or pages of past events
    newest page first, reloaded from RDB between writes: the newest 100 by
    time stay."""
    now = server_ms(r)
    times = [now - 10 * DAY + i * (10 * DAY) // 1000 for i in range(1000)]
    pages = [list(range(p, p + 50)) for p in range(0, 1000, 50)]
    for order in ("backfill", "newest-first"):
        key = "k:%s:%s:%d" % (order, window, slices)
        r.execute_command("SEEN.RESERVE", key, "WINDOW", window, "SLICES", slices, "CAPACITY",
                          100, "EXACT")
        if order == "backfill":
            r.execute_command("SEEN.ADD", key, *["live%d" % i for i in range(100)])
            newest = ["live%d" % i for i in range(100)]
        else:
            pages.reverse()
            newest = ["e%d" % i for i in range(900, 1000)]
        for n, page in enumerate(pages):
            r.execute_command("SEEN.INSERT", key, "TIMED", "BULK",
                              "\n".join("%d e%d" % (times[i], i) for i in page))
            if n % 5 == 4:
                r.execute_command("DEBUG", "RELOAD")
        assert flags(r, [key], newest) == b"1" * 100
        assert r.execute_command("SEEN.COUNT", key) <= 100 + 100 // slices + 1


def test_exact_int_sets_have_no_false_positives(r):
    rng = random.Random(11)
    added = rng.sample(range(1, 10 ** 12), 100000)
    taken = set(added)
    fresh = set()
    while len(fresh) < 200000:
        x = rng.randrange(1, 10 ** 12)
        if x not in taken:
            fresh.add(x)
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "k", "IDS", "INT", "EXACT", "WINDOW", "40d")
    fill_over_time(r, "k", [str(x) for x in added], now, 30 * DAY)
    assert flags(r, ["k"], [str(x) for x in added]) == b"1" * len(added)
    assert flags(r, ["k"], [str(x) for x in fresh]) == b"0" * len(fresh)
    # The estimate is the generic bound (items / 2^64); integers are stored
    # exactly, so the true rate is zero, as measured above.
    info = info_map(r.execute_command("SEEN.INFO", "k"))
    assert float(info["fpr-estimate"]) < 1e-12


def test_large_batch_reply_forms_agree(r):
    rng = random.Random(5)
    seen = ["s%d" % i for i in range(5000)]
    r.execute_command("SEEN.INSERT", "k", "BULK", bulk(seen))
    cands = rng.sample(seen, 2000) + ["u%d" % i for i in range(8000)]
    rng.shuffle(cands)
    f = r.execute_command("SEEN.MFILTER", 1, "k", "REPLY", "FLAGS", "BULK", bulk(cands))
    idx = r.execute_command("SEEN.MFILTER", 1, "k", "REPLY", "INDEXES", "BULK", bulk(cands))
    unseen = r.execute_command("SEEN.MFILTER", 1, "k", "BULK", bulk(cands))
    by_args = r.execute_command("SEEN.FILTER", "k", *cands)
    assert [i for i, b in enumerate(f) if b == ord("1")] == idx
    assert [c.encode() for c, b in zip(cands, f) if b == ord("0")] == unseen == by_args
    assert len(idx) >= 2000


def test_catalogue_int_ids_stay_exact(r):
    """Dense integer ids (300 apps of a 400,000-id catalogue in a 10-minute
    session) are kept as they are: no false positive anywhere in the
    range, through a reload; wide ids added later mix the key into
    fingerprints and nothing added before is lost."""
    rng = random.Random(4)
    apps = rng.sample(range(2700000, 3100000), 300)
    r.execute_command("SEEN.RESERVE", "apps", "IDS", "INT", "WINDOW", "10m")
    for page in range(15):
        r.execute_command("SEEN.ADD", "apps", *apps[page * 20:page * 20 + 20])
    r.execute_command("DEBUG", "RELOAD")
    info = info_map(r.execute_command("SEEN.INFO", "apps"))
    assert info["encoding"] == b"exact"
    assert info["keys"] == b"raw"
    assert float(info["fpr-estimate"]) == 0
    every = [str(x) for x in range(2700000, 3100000)]
    got = flags(r, ["apps"], every)
    held = set(apps)
    assert got == b"".join(b"1" if 2700000 + i in held else b"0" for i in range(400000))
    wide = [str(rng.randrange(1 << 62)) for _ in range(100)]
    r.execute_command("SEEN.ADD", "apps", *wide)
    info = info_map(r.execute_command("SEEN.INFO", "apps"))
    assert info["encoding"] == b"compact"
    assert info["keys"] == b"hashed"
    assert flags(r, ["apps"], [str(x) for x in apps] + wide) == b"1" * 400
    r.execute_command("SEEN.ADD", "titles", "a", "b")
    assert info_map(r.execute_command("SEEN.INFO", "titles"))["keys"] == b"hashed"
