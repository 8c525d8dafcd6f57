"""workload.py — a mixed workload of SEEN.* writes, and a snapshot of its answers.

Used by the persistence and replication tests: whatever path the data takes
(RDB, AOF replay, AOF rewrite, replication), the snapshot taken afterwards
must equal the one taken before.  Answers are asked at a fixed query time
(MFILTER AT) so that the clock moving on between two snapshots cannot
change them.
"""
import random

DAY = 86400000


def bulk(items):
    return "\n".join(items)


def run(r, now, seed=1, prefix="w"):
    """Write a variety of keys; returns their names."""
    rng = random.Random(seed)
    k = lambda name: "%s:%s" % (prefix, name)  # noqa: E731
    compact = ["c%020x" % rng.getrandbits(80) for _ in range(30000)]
    r.execute_command("SEEN.RESERVE", k("compact"), "WINDOW", "40d", "ERROR", "0.01")
    for b in range(10):
        r.execute_command("SEEN.INSERT", k("compact"), "AT", now - 30 * DAY + b * 3 * DAY,
                          "BULK", bulk(compact[b * 3000:(b + 1) * 3000]))
    r.execute_command("SEEN.ADD", k("compact"), *compact[:10], "late1", "late2")
    r.execute_command("SEEN.REMOVE", k("compact"), "BULK", bulk(compact[100:200]))

    r.execute_command("SEEN.ADD", k("small"), *["s%d" % i for i in range(50)])
    r.execute_command("SEEN.DEL", k("small"), "s1", "s2", "nope")

    ints = [str(rng.randrange(10 ** 15)) for _ in range(5000)]
    r.execute_command("SEEN.RESERVE", k("int"), "IDS", "INT", "EXACT", "WINDOW", "10d")
    r.execute_command("SEEN.INSERT", k("int"), "AT", now - 5 * DAY, "BULK", bulk(ints[:2500]))
    r.execute_command("SEEN.INSERT", k("int"), "BULK", bulk(ints[2500:]))

    r.execute_command("SEEN.RESERVE", k("cap"), "WINDOW", "0", "CAPACITY", "500", "SLICES", "5")
    for b in range(0, 3000, 250):
        r.execute_command("SEEN.ADD", k("cap"), *["cap%d" % i for i in range(b, b + 250)])

    r.execute_command("SEEN.RESERVE", k("exp"), "WINDOW", "30d", "EXPIRY", "ON")
    r.execute_command("SEEN.ADD", k("exp"), "AT", now - DAY, "e1", "e2")
    r.execute_command("SEEN.ADD", k("exp"), "e3")

    # Small exact sets hold their keys raw in the head, up to 24 and their
    # exact limit: 14 items in pages of 2, one removed; 22 under a limit of 24.
    for page in range(7):
        r.execute_command("SEEN.INSERT", k("headonly"), "NOW", now - (7 - page) * 3600000,
                          "ITEMS", "h%d" % (2 * page), "h%d" % (2 * page + 1))
    r.execute_command("SEEN.DEL", k("headonly"), "h3")
    r.execute_command("SEEN.RESERVE", k("headonly24"), "EXACTLIMIT", "24")
    for page in range(11):
        r.execute_command("SEEN.ADD", k("headonly24"), "g%d" % (2 * page), "g%d" % (2 * page + 1))
    r.execute_command("SEEN.INSERT", k("ins"), "WINDOW", "1h", "SLICES", "3", "ITEMS", "i1", "i2")
    r.execute_command("SEEN.INSERT", k("ins"), "NOCREATE", "AT", now - 1000, "ITEMS", "i3")
    # Each item with its own time (a back-filled stream), in both forms.
    timed = ["t%d %d" % (i, rng.randrange(1000)) for i in range(4000)]
    lines = ["%d %s" % (now - rng.randrange(20 * DAY), t) for t in timed]
    r.execute_command("SEEN.INSERT", k("timed"), "WINDOW", "30d", "TIMED", "BULK", "\n".join(lines))
    r.execute_command("SEEN.INSERT", k("timed"), "TIMED", "ITEMS", now - DAY, "t-a", now, "t-b")
    # An import ends with SEEN.COMPACT, as a migration would: otherwise the
    # server compacts it a second later, between two snapshots.
    r.execute_command("SEEN.COMPACT", k("timed"))
    # Clustered integer ids and a far outlier: a run cut by rank (format 3).
    r.execute_command("SEEN.RESERVE", k("clustered"), "IDS", "INT", "EXACT", "WINDOW", "0")
    r.execute_command("SEEN.INSERT", k("clustered"), "BULK",
                      bulk([str(5000000 + 2 * i) for i in range(20000)] + [str(1 << 60)]))
    r.execute_command("SEEN.DEL", k("clustered"), 5000000 + 2 * 777, 5000000 + 2 * 15000)
    # Integer ids with an error bound: dense ids stay exact, keyed as they
    # are (format 6); "apps-wide" then gets wide ids and mixes them.
    apps = [str(2700000 + i) for i in rng.sample(range(400000), 600)]
    for name in ("apps", "apps-wide"):
        r.execute_command("SEEN.RESERVE", k(name), "IDS", "INT", "WINDOW", "10m")
        for page in range(15):
            r.execute_command("SEEN.ADD", k(name), *apps[page * 20:page * 20 + 20])
    r.execute_command("SEEN.DEL", k("apps"), apps[3], apps[50])
    r.execute_command("SEEN.ADD", k("apps-wide"), *[str(rng.randrange(1 << 62)) for _ in range(40)])
    r.execute_command("SEEN.COMPACT", k("apps-wide"))  # else the server does, between snapshots
    # 20,000 dense ids: kept raw, in an exact run coded Elias-Fano.
    r.execute_command("SEEN.RESERVE", k("dense"), "IDS", "INT", "WINDOW", "0")
    r.execute_command("SEEN.INSERT", k("dense"), "BULK",
                      bulk([str(7000000 + 3 * i + rng.randrange(3)) for i in range(20000)]))
    r.execute_command("SEEN.DEL", k("dense"), 7000000 + 3 * 5, 7000000 + 3 * 15000)
    # A first session's burst (its plan halves as it grows, and the runs of
    # each halving fold), and a light user turned heavy past its first
    # slice (runs of older plans beside the burst's): pages of 20 written
    # at their own times, all within the window.
    pipe = r.pipeline(transaction=False)
    for page in range(300):
        pipe.execute_command("SEEN.INSERT", k("burst"), "NOW", now - 60000 + page * 100, "ITEMS",
                             *["b%d-%d" % (page, i) for i in range(20)])
    # The same in pages of 5: its young runs take other divisors, and it
    # passes 8 KB with four runs (an Elias-Fano recent run cut in two
    # blocks) before they fold.
    for page in range(1000):
        pipe.execute_command("SEEN.INSERT", k("burst5"), "NOW", now - 60000 + page * 30, "ITEMS",
                             *["b5-%d-%d" % (page, i) for i in range(5)])
    day, times = 0.0, []
    for page in range(1060):
        day += 20 / (30 if day < 40 else 3000)
        times.append(day)
    for page, t in enumerate(times):
        pipe.execute_command("SEEN.INSERT", k("turned"), "NOW",
                             now - int((times[-1] - t) * DAY) - 1000, "ITEMS",
                             *["h%d-%d" % (page, i) for i in range(20)])
    # A light user's binge: 60 items over 88 days, then 12,000 within a
    # minute (the burst's runs sized for four times the set, squeezed runs
    # left as they are).  All of it within the window at the server's
    # clock, so no timer forgets any of it between two snapshots.
    for d in range(60):
        pipe.execute_command("SEEN.INSERT", k("binge"), "NOW",
                             now - 88 * DAY + d * (88 * DAY // 60), "ITEMS", "light%d" % d)
    for page in range(600):
        pipe.execute_command("SEEN.INSERT", k("binge"), "NOW", now - 60000 + page * 50, "ITEMS",
                             *["binge%d-%d" % (page, i) for i in range(20)])
    # Integer ids handed out in sequence: a month-old import of 8,000, then
    # pages of 20 now.  Past 1,024 the run that takes the head appends each
    # page after its codes (a run cut by rank); one id goes from the middle.
    pipe.execute()
    seq = random.Random(seed + 1)
    last, old = 9000000, []
    for _ in range(8000):
        last += 1 + seq.randrange(3)
        old.append(str(last))
    r.execute_command("SEEN.RESERVE", k("sequence"), "IDS", "INT", "WINDOW", "90d")
    r.execute_command("SEEN.INSERT", k("sequence"), "AT", now - 30 * DAY, "BULK", bulk(old))
    r.execute_command("SEEN.COMPACT", k("sequence"))
    for page in range(120):
        ids = []
        for _ in range(20):
            last += 1 + seq.randrange(3)
            ids.append(str(last))
        pipe.execute_command("SEEN.INSERT", k("sequence"), "NOW", now - 60000 + page * 100,
                             "ITEMS", *ids)
    pipe.execute_command("SEEN.DEL", k("sequence"), ids[0])
    pipe.execute()
    # A compact run of 8,192-16,383 values, the smallest coded Elias-Fano
    # (a day-old import of 10,000, compacted), then pages of adds.
    mid_rng = random.Random(seed + 2)
    mid = ["m%020x" % mid_rng.getrandbits(80) for _ in range(10000)]
    r.execute_command("SEEN.INSERT", k("mid"), "AT", now - DAY, "BULK", bulk(mid))
    r.execute_command("SEEN.COMPACT", k("mid"))
    for page in range(30):
        pipe.execute_command("SEEN.ADD", k("mid"), *["mid%d-%d" % (page, i) for i in range(20)])
    pipe.execute()
    # Items shown again while the key still holds them: 100 a day for 80
    # days at their own times, 3 in 10 of each page first written up to 60
    # days before (older copies stored until their slice's fold, and the
    # plan sized for them).
    again_rng = random.Random(seed + 3)
    written = []
    for page in range(400):
        t = now - 80 * DAY + page * (80 * DAY // 400)
        items = []
        for i in range(20):
            if written and again_rng.random() < 0.3:
                # About 60 days' worth of items written before this page.
                back = min(len(written), 4200)
                items.append(written[len(written) - 1 - again_rng.randrange(back)])
            else:
                items.append("again%d-%d" % (page, i))
                written.append(items[-1])
        pipe.execute_command("SEEN.INSERT", k("again"), "NOW", t, "ITEMS", *items)
    pipe.execute()
    return [k(n) for n in ("compact", "small", "int", "cap", "exp", "ins", "timed", "clustered",
                           "burst", "burst5", "turned", "binge", "apps", "apps-wide", "dense", "sequence",
                           "mid", "again", "headonly", "headonly24")]


def candidates(seed=1):
    rng = random.Random(seed)
    out = ["c%020x" % rng.getrandbits(80) for _ in range(300)]
    out += ["s%d" % i for i in range(60)] + ["cap%d" % i for i in range(0, 3000, 7)]
    out += ["e1", "e2", "e3", "i1", "i2", "i3", "late1", "nothing", "x" * 300]
    out += ["t%d %d" % (i, rng.randrange(1000)) for i in range(0, 4000, 13)] + ["t-a", "t-b"]
    out += [str(5000000 + i) for i in range(0, 40010, 97)] + [str(1 << 60), "7"]
    out += [str(5000000 + 2 * 777), str(5000000 + 2 * 15000)]
    out += [str(2700000 + i) for i in range(0, 400000, 331)]
    out += [str(7000000 + i) for i in range(0, 60000, 37)]
    out += ["b%d-%d" % (p, p % 20) for p in range(0, 300, 7)]
    out += ["b5-%d-%d" % (p, p % 5) for p in range(0, 1000, 17)] + ["b5-9999-0"]
    out += ["h%d-%d" % (p, p % 20) for p in range(0, 1060, 11)] + ["h9999-0"]
    out += ["light%d" % d for d in range(0, 60, 3)]
    out += ["binge%d-%d" % (p, p % 20) for p in range(0, 600, 13)] + ["binge9999-0"]
    out += ["again%d-%d" % (p, p % 20) for p in range(0, 400, 9)]
    return out


def snapshot(r, keys, q, seed=1):
    """Per key: value digest, and which candidates are seen at time q."""
    cands = candidates(seed)
    snap = {}
    for key in keys:
        info_kind = r.execute_command("SEEN.INFO", key)
        ids = dict(zip(info_kind[1][0::2], info_kind[1][1::2]))[b"ids"]
        cs = [c for c in cands if c.isdigit()] if ids == b"int" else cands
        if ids == b"int":
            cs = cs or ["1", "2", "3"]
        snap[key] = (r.execute_command("DEBUG", "DIGEST-VALUE", key)[0],
                     r.execute_command("SEEN.MFILTER", 1, key, "AT", q, "REPLY", "FLAGS", "BULK",
                                       bulk(cs)))
    snap["*"] = r.execute_command("DEBUG", "DIGEST")
    return snap


def check_clustered(r, prefix="w"):
    """The clustered-ids key answers exactly (what it holds, what it lost)."""
    key = "%s:clustered" % prefix
    held = [5000000, 5000002, 5000000 + 2 * 19999, 1 << 60]
    absent = [5000001, 5000000 + 2 * 777, 5000000 + 2 * 15000, 5000000 + 2 * 20000, 7]
    flags = r.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "ITEMS",
                              *[str(x) for x in held + absent])
    assert flags == b"1" * len(held) + b"0" * len(absent)
    assert r.execute_command("SEEN.COUNT", key) == 20001 - 2
