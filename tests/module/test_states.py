"""test_states.py — every state a key can reach off the steady path loads
back: histories migrated from legacy ZSETs and SETs spanning one to three
windows, a bulk load at one time then live pages, AT imports in every order, re-add storms and huge batches on capped
keys, the capped EXACT INT fold, a burst far past a light history's plan,
a small capped key whose fingerprints collide as ids are added again,
capped keys backfilled after live writes (their steps' time ranges),
a key settled from three windows of imports taking live adds, keys
planned ahead of what they hold (a capped key without a window while it
fills, one with no limit, a week-long window's first day), a key growing
for weeks (planned for its newest data's rate), and one whose run taking
those adds grows past 4,096 values (coded Elias-Fano
from there), loses some of them and takes more, and one written live from
its first day past 16,384 items (its small runs recoded Elias-Fano), and
one of 4,000 items whose run taking the head is coded Elias-Fano.  After
each workload the answers and bytes of every key must survive DEBUG RELOAD,
a restart from RDB, a restart from AOF, a replica's full sync and
DUMP/RESTORE; nothing may be refused and the server must stay up.  (make test-module-san runs this file against the
module built with ASan and UBSan.)"""
import os
import random
import subprocess

import pytest

from conftest import ROOT
from helpers import info_map, server_ms, wait_compacted, wait_for

DAY = 86_400_000
INGEST = os.path.join(ROOT, "build", "seen-ingest")


def flags(client, key, candidates):
    """SEEN.MFILTER's flags for candidates, in pages of 5,000."""
    out = b""
    for i in range(0, len(candidates), 5000):
        out += client.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "ITEMS",
                                      *candidates[i:i + 5000])
    return out


class Workload:
    """Keys written to a server, what each must still see, and candidates
    that were never added (their answers must not change either)."""

    def __init__(self):
        self.keys = {}  # key -> (items that must be seen, fresh candidates)

    def expect(self, key, seen, fresh_count=300, seed=0):
        rng = random.Random("%s/%d" % (key, seed))
        ints = bool(seen) and isinstance(list(seen)[0], int)
        fresh = [rng.getrandbits(63) if ints else "fresh-%x" % rng.getrandbits(64)
                 for _ in range(fresh_count)]
        self.keys[key] = (list(seen), fresh)

    def snapshot(self, client):
        """Answers and bytes of every key; fails on a missed item."""
        snap = {}
        for key, (seen, fresh) in self.keys.items():
            answers = flags(client, key, seen + fresh) if seen or fresh else b""
            assert answers[:len(seen)] == b"1" * len(seen), "%s lost items" % key
            snap[key] = (answers, client.dump(key))
        return snap


def import_pages(client, key, items, times, page=400, policy=("WINDOW", "90d")):
    client.execute_command("SEEN.RESERVE", key, *policy)
    pipe = client.pipeline(transaction=False)
    for i in range(0, len(items), page):
        for it, t in zip(items[i:i + page], times[i:i + page]):
            pipe.execute_command("SEEN.INSERT", key, "AT", t, "ITEMS", it)
        pipe.execute()


def import_windows(client, key, prefix, n, end):
    """Three 90-day windows ending at `end`, n items each (the second half of
    the names twice, as bench-core builds its steady set), imported in
    time-stamped pages of 100 and each settled before the next.  All of it
    runs as one transaction: the server's timers act at its own clock, where
    the older windows are forgotten (the compaction of an import no write
    has touched for a second, the sweep shedding forgotten slices), and a
    loaded machine can pause the server that long between two pages."""
    window = 90 * DAY
    first = (n, 0, n)
    pipe = client.pipeline(transaction=True)
    for wi in range(3):
        w_end = end - (2 - wi) * window
        for i in range(0, n, 100):
            pairs = []
            for j in range(100):
                pairs += [w_end - window + window * (i + j) // n,
                          "%s%d" % (prefix, first[wi] + i + j)]
            pipe.execute_command("SEEN.INSERT", key, "NOW", pairs[-2], "TIMED", "ITEMS", *pairs)
        pipe.execute_command("SEEN.COMPACT", key, "NOW", w_end)
    pipe.execute()


def live_pages(client, key, items, start, span, page=20):
    """SEEN.INSERT of items in pages at times spread over [start, start +
    span), each page at its own time as a live feed writes, pipelined."""
    pages = (len(items) + page - 1) // page
    pipe = client.pipeline(transaction=False)
    for p in range(pages):
        pipe.execute_command("SEEN.INSERT", key, "NOW", start + p * span // pages, "ITEMS",
                             *items[page * p:page * p + page])
    pipe.execute()


def fill_pages(client, key, items, page=20):
    """SEEN.ADD of items in pages, pipelined."""
    pipe = client.pipeline(transaction=False)
    for p in range(0, len(items), page):
        pipe.execute_command("SEEN.ADD", key, *items[p:p + page])
    pipe.execute()


def run_migration(server, tmp_path, pattern, template, policy, *extra):
    if not os.path.exists(INGEST):
        pytest.fail("build/seen-ingest is missing: run `make all` first")
    cmd = [INGEST, "migrate", "--redis", "127.0.0.1:%d" % server.port, "--legacy-pattern",
           pattern, "--key-template", template, "--policy", policy,
           "--state", str(tmp_path / ("%s.state" % pattern.split(":")[0])), *extra]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def write_everything(server, tmp_path):
    """Every workload of the module's off-path states; returns a Workload."""
    c = server.client()
    now = server_ms(c)
    w = Workload()
    rng = random.Random(9)

    # Legacy histories (score = ms), 1 to 3 windows long, and a legacy SET.
    for days in (60, 150, 270):
        plays = {"g%d-%d" % (days, i): now - (i * days * DAY) // (days * 40)
                 for i in range(days * 40)}
        c.zadd("played:z%d" % days, plays)
        w.expect("seen:{z%d}:play" % days,
                 [m for m, t in plays.items() if t > now - 89 * DAY])
    c.sadd("played:set", *["s%d" % i for i in range(3000)])
    w.expect("seen:{set}:play", ["s%d" % i for i in range(3000)])
    run_migration(server, tmp_path, "played:%user", "seen:{%user}:play", "WINDOW 90d")

    # A bulk load in one command, every item at one time (planned for a few
    # times what it holds, not for a day's rate), then live pages.
    bulk = ["bulk%d" % i for i in range(20000)]
    c.execute_command("SEEN.INSERT", "bulk", "BULK", "\n".join(bulk))
    pages = ["bulk-page%d" % i for i in range(400)]
    fill_pages(c, "bulk", pages)
    w.expect("bulk", bulk + pages)

    # AT imports of 150 days in three orders.
    for order in ("time", "reverse", "random"):
        n = 150 * 30
        times = [now - 150 * DAY + i * 150 * DAY // n for i in range(n)]
        items = ["i-%s-%d" % (order, i) for i in range(n)]
        idx = list(range(n))
        if order == "reverse":
            idx.reverse()
        elif order == "random":
            rng.shuffle(idx)
        import_pages(c, "imp:%s" % order, [items[i] for i in idx], [times[i] for i in idx])
        w.expect("imp:%s" % order, [items[i] for i in range(n) if times[i] > now - 89 * DAY])

    # Re-add storm on a capped key: two items in turn.
    c.execute_command("SEEN.RESERVE", "storm", "WINDOW", "0", "CAPACITY", "64", "SLICES", "64")
    pipe = c.pipeline(transaction=False)
    for i in range(4000):
        pipe.execute_command("SEEN.ADD", "storm", "A" if i % 2 else "B")
    pipe.execute()
    w.expect("storm", ["A", "B"])

    # The capped EXACT INT fold: 127 old ids and one new per add.
    c.execute_command("SEEN.RESERVE", "fold", "WINDOW", "0", "CAPACITY", "8192", "SLICES", "64",
                      "EXACT", "IDS", "INT")
    c.execute_command("SEEN.ADD", "fold", *range(128))
    pipe = c.pipeline(transaction=False)
    for k in range(3000):
        pipe.execute_command("SEEN.ADD", "fold", *range(1, 128), 100000 + k)
    pipe.execute()
    w.expect("fold", list(range(128)) + [100000 + k for k in range(3000)])

    # A batch far larger than its cap, and one with a window.
    for name, policy in (("huge", ("WINDOW", "0", "CAPACITY", "10", "SLICES", "64")),
                         ("huge-w", ("WINDOW", "30d", "CAPACITY", "1000", "SLICES", "16"))):
        c.execute_command("SEEN.RESERVE", name, *policy)
        batch = "\n".join("b%d" % i for i in range(100000))
        c.execute_command("SEEN.INSERT", name, "BULK", batch)
        w.expect(name, ["b99999"])

    # Clustered integer ids, a second cluster and a far outlier (a run cut by
    # rank, format version 3), then deletes of its smallest and largest ids
    # and one in the middle (edits that keep the run's base and span).
    ids = [5_000_000 + i for i in range(30000)] + [9_000_000 + 3 * i for i in range(500)]
    ids.append(1 << 60)
    c.execute_command("SEEN.RESERVE", "clustered", "WINDOW", "0", "EXACT", "IDS", "INT")
    c.execute_command("SEEN.INSERT", "clustered", "BULK", "\n".join(map(str, ids)))
    gone = [ids[0], ids[-1], ids[12345]]
    c.execute_command("SEEN.DEL", "clustered", *gone)
    w.expect("clustered", [i for i in ids if i not in gone])

    # A large key (72,000 items over 60 days) then fed live pages of 20: the
    # flushes add into its recent run in place, which keeps that run's fine
    # bucket count as it grows (format version 3 and later hold such runs),
    # beside runs large enough to be coded Elias-Fano (version 4).
    for d in range(60, 0, -1):
        c.execute_command("SEEN.INSERT", "feed", "AT", now - d * DAY, "BULK",
                          "\n".join("h%d-%d" % (d, i) for i in range(1200)))
    c.execute_command("SEEN.COMPACT", "feed")
    pipe = c.pipeline(transaction=False)
    for p in range(300):
        pipe.execute_command("SEEN.ADD", "feed", *["f%d-%d" % (p, i) for i in range(20)])
    pipe.execute()
    dump = c.dump("feed")
    assert dump[dump.find(b"SEEN") + 4] == 4, "the fed key should hold Elias-Fano runs"
    w.expect("feed", ["h%d-%d" % (d, i) for d in range(60, 0, -7) for i in range(0, 1200, 13)] +
             ["f%d-%d" % (p, i) for p in range(300) for i in range(0, 20, 3)])

    # Two slices of 20,000 items each (runs coded Elias-Fano), then deletes
    # from both, which edit such a run in place: 40 at once (its tags
    # re-packed) and then 5 (its tag digits moved word by word).
    for d in (40, 10):
        c.execute_command("SEEN.INSERT", "ef-del", "AT", now - d * DAY, "BULK",
                          "\n".join("e%d-%d" % (d, i) for i in range(20000)))
    c.execute_command("SEEN.COMPACT", "ef-del")
    gone = ["e%d-%d" % (d, i) for d in (40, 10) for i in range(3, 20000, 997)]
    assert c.execute_command("SEEN.DEL", "ef-del", *gone) == len(gone)
    few = ["e%d-%d" % (d, i) for d in (40, 10) for i in (5, 11, 9001) if (d, i) != (10, 9001)]
    assert c.execute_command("SEEN.DEL", "ef-del", *few) == len(few)
    gone += few
    kept = set(gone)
    w.expect("ef-del", [x for d in (40, 10) for x in ("e%d-%d" % (d, i) for i in range(0, 20000, 7))
                        if x not in kept])

    # An older slice of 40,000 items, then 18,000 written now (the run of
    # the current slice is coded Elias-Fano), then live pages of 20: their
    # flushes add into that run in place.
    c.execute_command("SEEN.INSERT", "ef-add", "AT", now - 30 * DAY, "BULK",
                      "\n".join("o%d" % i for i in range(40000)))
    c.execute_command("SEEN.COMPACT", "ef-add")
    c.execute_command("SEEN.INSERT", "ef-add", "BULK", "\n".join("n%d" % i for i in range(18000)))
    pipe = c.pipeline(transaction=False)
    for p in range(200):
        pipe.execute_command("SEEN.ADD", "ef-add", *["a%d-%d" % (p, i) for i in range(20)])
    pipe.execute()
    runs = info_map(c.execute_command("SEEN.INFO", "ef-add"))["runs"]
    assert max(r["items"] for r in runs) > 16384 + 2000, runs
    w.expect("ef-add", ["o%d" % i for i in range(0, 40000, 11)] +
             ["n%d" % i for i in range(0, 18000, 7)] +
             ["a%d-%d" % (p, i) for p in range(200) for i in range(0, 20, 3)])

    # Bursts far past the plan: a light history over the window, then
    # 12,000 items in live pages within seconds (the burst's runs sized for
    # the set to grow four times over).  For these two histories the flush
    # once refused most of the burst's pages as over the budget.
    for v, hist_n in ((6, 62), (8, 76)):
        key = "burst%d" % v
        hist = ["bh%d-%d" % (v, i) for i in range(hist_n)]
        for i, it in enumerate(hist):
            c.execute_command("SEEN.INSERT", key, "AT", now - 89 * DAY + i * (88 * DAY // hist_n),
                              "ITEMS", it)
        c.execute_command("SEEN.COMPACT", key)
        pipe = c.pipeline(transaction=False)
        pages = [["bb%d-%d-%d" % (v, p, i) for i in range(20)] for p in range(600)]
        for page in pages:
            pipe.execute_command("SEEN.ADD", key, *page)
        pipe.execute()  # raises on a refused write
        w.expect(key, hist + [it for page in pages[::7] for it in page])

    # Three windows of history, each imported in time-stamped pages and
    # settled in turn (as bench-core builds its steady set), then live adds
    # in the next slice: the settled runs hold several slices each, and the
    # head starts a run of its own beside them rather than merging into one.
    n, window = 10000, 90 * DAY
    end = now - 10 * DAY
    import_windows(c, "settled", "st", n, end)
    step = window // n
    for i in range(300):
        c.execute_command("SEEN.INSERT", "settled", "NOW", end + step * (i + 1), "ITEMS",
                          "stlive%d" % i)
    runs = info_map(c.execute_command("SEEN.INFO", "settled"))["runs"]
    assert any(r["segments"] >= 2 and r["items"] > 1024 for r in runs), runs
    assert runs[-1]["segments"] == 1 and runs[-1]["items"] < 1024, runs
    # The last window's items younger than 85 days, and the live ones.
    w.expect("settled", ["st%d" % (n + i) for i in range(2000, n, 37)] +
             ["stlive%d" % i for i in range(300)])

    # The same at 24,000 items a window, then 5,200 live adds at that rate
    # in the next slice (the history's first item starts the slices, so one
    # starts where the third window ends): the run that takes the head
    # passes 4,096 values (it is coded Elias-Fano from there), loses some
    # of them (deleted in place) and takes more.  Its history
    # ends 21 days back, so no slice of it is forgotten by the server's
    # own clock while the test runs (that would rewrite it on a timer).
    n, hr_end = 24000, now - 21 * DAY
    import_windows(c, "headrun", "hr", n, hr_end)
    step = window // n
    live = ["hrlive%d" % i for i in range(5200)]
    pipe = c.pipeline(transaction=False)
    for i in range(5000):
        pipe.execute_command("SEEN.INSERT", "headrun", "NOW", hr_end + step * (i + 1), "ITEMS",
                             live[i])
    pipe.execute()
    runs = info_map(c.execute_command("SEEN.INFO", "headrun"))["runs"]
    assert runs[-1]["segments"] == 1 and runs[-1]["items"] > 4096, runs
    c.execute_command("SEEN.REMOVE", "headrun", "NOW", hr_end + step * 5001, "ITEMS",
                      *live[:5000:100])
    for i in range(5000, 5200):
        c.execute_command("SEEN.INSERT", "headrun", "NOW", hr_end + step * (i + 2), "ITEMS",
                          live[i])
    w.expect("headrun", [x for k, x in enumerate(live) if k >= 5000 or k % 100])

    # A key of 4,000 items written live in pages of 20 over 80 days: past
    # 2,048 items the run of the current slice, which every page's flush
    # edits, is coded Elias-Fano from 256 values (SEEN.INFO does not name a
    # run's layout; test_mid_set_head_run_elias_fano checks it in process),
    # beside Golomb-coded runs too small for it.
    mid = ["md%d" % i for i in range(4000)]
    live_pages(c, "midhead", mid, now - 81 * DAY, 80 * DAY)
    runs = info_map(c.execute_command("SEEN.INFO", "midhead"))["runs"]
    assert runs[-1]["segments"] == 1 and runs[-1]["items"] >= 256, runs
    assert all(r["items"] < 8192 for r in runs), runs
    w.expect("midhead", mid)

    # A key written live from its first day past 16,384 items: the runs its
    # first days' and young plans left while it was small are recoded
    # Elias-Fano once it is that large, as every run of 256 values or more
    # is from then on; then deletes (edits of such runs in place) and more
    # pages.
    grown = ["gr%d" % i for i in range(21000)]
    live_pages(c, "grown", grown[:20000], now - 60 * DAY, 59 * DAY)
    runs = info_map(c.execute_command("SEEN.INFO", "grown"))["runs"]
    assert sum(r["items"] for r in runs) >= 16384, runs
    assert any(256 <= r["items"] < 8192 for r in runs[:-1]), runs
    gone = grown[:20000:97]
    assert c.execute_command("SEEN.REMOVE", "grown", "NOW", now - DAY // 2, "ITEMS",
                             *gone) == len(gone)
    pipe = c.pipeline(transaction=False)
    for p in range(1000, 1050):
        pipe.execute_command("SEEN.INSERT", "grown", "NOW", now - DAY // 2 + p, "ITEMS",
                             *grown[20 * p:20 * p + 20])
    pipe.execute()
    kept = set(gone)
    w.expect("grown", [x for x in grown[::3] if x not in kept])

    # A light user: a page of 10 every ~9 days over 85 days (inside the
    # window, so the sweep has nothing to shed from it).  A set this small
    # re-plans by whole factors, so its pages' runs fold into one or two
    # where each page's plan used to leave a run of its own.
    light, t = [], now - 85 * DAY
    while t < now - DAY:
        page = ["lt%d" % (len(light) + k) for k in range(10)]
        c.execute_command("SEEN.INSERT", "light", "NOW", t, "ITEMS", *page)
        light.extend((t, x) for x in page)
        t += DAY * rng.randrange(5, 14)
    runs = info_map(c.execute_command("SEEN.INFO", "light"))["runs"]
    assert len(runs) <= 2, runs
    w.expect("light", [x for _, x in light])

    # A small capped key at a high error, a few ids added again and again:
    # fingerprint collisions move shadow marks (the count must stay safe).
    c.execute_command("SEEN.RESERVE", "collide", "WINDOW", "0", "CAPACITY", "10", "SLICES", "64",
                      "ERROR", "0.01")
    order = [rng.randrange(40) for _ in range(3000)]
    pipe = c.pipeline(transaction=False)
    for i in order:
        pipe.execute_command("SEEN.ADD", "collide", "c%d" % i)
    pipe.execute()
    recent = []
    for i in reversed(order):
        if "c%d" % i not in recent:
            recent.append("c%d" % i)
    w.expect("collide", recent[:8])

    # Capped keys fed live items and then a backfill of older events in
    # shuffled pages: their count steps keep item-time ranges (format
    # version 5), which every path below must carry, or the next write
    # after a reload would place items wrongly.
    for name, policy in (("capped-backfill", ("WINDOW", "0", "SLICES", "8")),
                         ("capped-backfill-w", ("WINDOW", "30d", "SLICES", "4"))):
        c.execute_command("SEEN.RESERVE", name, "CAPACITY", 200, "EXACT", *policy)
        live = ["%s-live%d" % (name, i) for i in range(200)]
        c.execute_command("SEEN.ADD", name, *live)
        pages = [list(range(p, p + 100)) for p in range(0, 2000, 100)]
        rng.shuffle(pages)
        for page in pages:
            c.execute_command("SEEN.INSERT", name, "TIMED", "BULK", "\n".join(
                "%d %s-old%d" % (now - 20 * DAY + i * (10 * DAY) // 2000, name, i) for i in page))
        w.expect(name, live)

    # A user growing for weeks (its rate doubling every ten days, pages of
    # 500 at their times): planned for its newest data's rate it keeps
    # fingerprints; planned for what it held, it ran out of budget and
    # stored its newest items as exact keys.
    grow, owed, start = [], 0.0, now - 110 * DAY
    pipe = c.pipeline(transaction=False)
    for d in range(110):
        owed += 5 * 2 ** (d / 10)
        n = int(owed)
        owed -= n
        pages = (n + 499) // 500
        for k in range(pages):
            at = start + d * DAY + int((k + 0.5) * DAY / pages)
            items = ["grow-%d" % (len(grow) + i) for i in range(min(500, n - k * 500))]
            pipe.execute_command("SEEN.INSERT", "growing", "NOW", at, "BULK", "\n".join(items))
            grow += [(at, x) for x in items]
    pipe.execute()
    runs = info_map(c.execute_command("SEEN.INFO", "growing"))["runs"]
    assert all(r["encoding"] != b"exact" for r in runs), runs
    inside = [x for at, x in grow if at > now - 85 * DAY]
    w.expect("growing", inside[-2000:] + inside[::50])

    # Keys planned ahead of what they hold: a capped key without a window,
    # a quarter full (planned for its cap), one with no limit (planned 16
    # times ahead) and a week-long window's first day (32 times ahead).
    for name, policy in (("capped-filling", ("WINDOW", "0", "CAPACITY", "20000")),
                         ("unbounded-growing", ("WINDOW", "0")),
                         ("week-first-day", ("WINDOW", "7d"))):
        c.execute_command("SEEN.RESERVE", name, *policy)
        items = ["%s-%d" % (name, i) for i in range(5000)]
        fill_pages(c, name, items)
        w.expect(name, items)

    # Removes from large keys.
    c.execute_command("SEEN.REMOVE", "imp:time", "ITEMS", *w.keys["imp:time"][0][:50])
    w.keys["imp:time"] = (w.keys["imp:time"][0][50:], w.keys["imp:time"][1])
    # Imports (the ZSETs' members and the AT pages carry past times) are
    # compacted by the server a second after their last write; the SET's
    # members all got the present, so that key is young and stays exact.
    for key in list(w.keys):
        if key.startswith(("imp:", "seen:{z")):
            wait_compacted(c, key)
    return w


def assert_same(server, w, before):
    assert server.alive()
    after = w.snapshot(server.client())
    assert after == before
    log = server.read_log()
    assert "refusing" not in log and "Unrecoverable" not in log


def test_states_survive_reload_restore_replica_and_rdb(make_server, tmp_path):
    server = make_server("--repl-diskless-sync-delay", "0", name="primary")
    w = write_everything(server, tmp_path)
    before = w.snapshot(server.client())

    server.client().execute_command("DEBUG", "RELOAD")
    assert_same(server, w, before)

    c = server.client()
    copy = Workload()
    for key, (seen, fresh) in w.keys.items():
        c.restore("copy:" + key, 0, before[key][1])
        copy.keys["copy:" + key] = (seen, fresh)
    again = copy.snapshot(c)
    for key in w.keys:
        assert again["copy:" + key] == before[key], key
    for key in w.keys:
        c.delete("copy:" + key)

    replica = make_server(name="replica")
    r = replica.client()
    r.replicaof("127.0.0.1", server.port)
    wait_for(lambda: r.info("replication")["master_link_status"] == "up" and
             not r.info("replication")["master_sync_in_progress"], what="replica sync")
    assert c.wait(1, 10000) == 1
    assert_same(replica, w, before)

    server.restart(save=True)
    assert_same(server, w, before)


def test_states_survive_aof_replay(make_server, tmp_path):
    """The AOF holds the commands (with the server's own SEEN.COMPACT at the
    time it ran): replaying it builds the same bytes."""
    server = make_server("--appendonly", "yes", name="aof")
    w = write_everything(server, tmp_path)
    before = w.snapshot(server.client())
    server.restart()
    assert_same(server, w, before)
    # And once more from the rewritten AOF (SEEN.LOAD of each key).
    c = server.client()
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0 and
             c.info("persistence")["aof_rewrite_scheduled"] == 0, what="AOF rewrite")
    server.restart()
    assert_same(server, w, before)


def test_import_state_loads_before_it_is_compacted(make_server):
    """The exact state an import holds while it runs is a state too: it
    must DUMP, RESTORE and reload as it is."""
    server = make_server(name="importing")
    c = server.client()
    now = server_ms(c)
    n = 120 * 20
    times = [now - 120 * DAY + i * 120 * DAY // n for i in range(n)]
    items = ["x%d" % i for i in range(n)]
    # One transaction: the server compacts an import a second after its
    # last write, and a client stalled that long would dump it compacted.
    tx = c.pipeline(transaction=True)
    tx.execute_command("SEEN.RESERVE", "k", "WINDOW", "90d")
    for it, t in zip(items, times):
        tx.execute_command("SEEN.INSERT", "k", "AT", t, "ITEMS", it)
    tx.dump("k")
    tx.execute_command("SEEN.INFO", "k")
    dump, info = tx.execute()[-2:]
    assert info_map(info)["encoding"] == b"exact"
    c.restore("k2", 0, dump)
    assert c.dump("k2") == dump
    live = [it for it, t in zip(items, times) if t > now - 89 * DAY]
    assert flags(c, "k2", live) == b"1" * len(live)


def test_capped_key_is_compact_while_it_fills(make_server):
    """A key with a cap and no window fills to its cap and stays there: it
    is planned for that from its first pages.  Planned for what it held, it
    went finer at each doubling, down to 64-bit keys (~50 bits an item)
    until the cap turned over."""
    server = make_server(name="capped")
    c = server.client()
    c.execute_command("SEEN.RESERVE", "k", "WINDOW", "0", "CAPACITY", "20000")
    items = ["cf%d" % i for i in range(5000)]
    fill_pages(c, "k", items)
    bits = c.memory_usage("k", samples=0) * 8 / len(items)
    assert bits <= 18, bits
    assert info_map(c.execute_command("SEEN.INFO", "k"))["encoding"] != b"exact"
    assert flags(c, "k", items) == b"1" * len(items)
    c.execute_command("DEBUG", "RELOAD")
    assert flags(c, "k", items) == b"1" * len(items)
