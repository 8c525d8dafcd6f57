#!/usr/bin/python3
"""lifecycle.py — what a fleet of seen keys costs over its life, against the
same events kept in SETs and in ZSETs trimmed to the window.

A redis-server with the module runs with its wall clock sped up
(build/bench/libfastclock.so, LD_PRELOAD), so 200 days pass in about two
minutes while the server works at normal speed.  A population with seed
003's mix — 60% light users (~100 items held in 90 days), 30% medium
(~1,000), 10% heavy (~20,000) — plus a few users adding 10 a day, and a
steady trickle of new users, each writes pages of up to 20 items at the
server's clock, as a feed does, once a visit's page (VISIT_ITEMS) is due.  The same events go to a SEEN key (default
policy: 90 days, 4 slices, error 0.001), a SET (what keeping everything
costs) and a ZSET scored by time and trimmed with ZREMRANGEBYSCORE on every
write (seed 002's design).  At each checkpoint: MEMORY USAGE of every key,
per class and fleet-wide, bits per live item (items written within the
window, from an exact model kept here), and the SEEN keys' answers checked
against the model: every live item must be seen (a false negative fails
the run) and never-written candidates counted as false positives.  Then
the writes pause until the server's sweep has passed over every key three
times, and the SEEN keys are measured again "at rest": the sweep packs a
large key no command has reached between two of its visits, as it does
for users between sessions.  While the users write, seen.pack-idle-seconds
is a simulated day, which every user with a large key writes well within,
so the first measurement is of every user mid-session.

Then keys in their first hours and days, which the checkpoints ten days
apart step over: heavy users from their first page (a first-day burst of
1,000 an hour, in pages of 20 and of 5, 1,000 a day, migrated SETs of
10,000 and of 2,500 written at one time then 1,000 a day), written on a
server whose clock runs at its normal pace with `SEEN.INSERT … NOW t` at
their own past times, MEMORY USAGE after every page once a key holds 1,000
live items: "every key holding 1,000 items, at every age" is judged on
those and on the fleet's.

  bench/lifecycle.py --out bench/results          the full run (make bench-lifecycle)
  bench/lifecycle.py --short --check --out DIR    a 60-day run for make test

It prints the targets and whether each holds; --check exits 1 if an
enforced one misses (ENFORCED below).
"""
import argparse
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

DAY = 86400000
WINDOW_DAYS = 90
SLICES = 4
SLICE_DAYS = WINDOW_DAYS / SLICES
ERROR = 0.001
# The least a held item can cost in sorted fingerprints: its fingerprint,
# which of the slices a full key holds it in, and log2 e for storing them
# as a set; and what a key carries of its own (Redis's entry, the set's
# header), ~110 bytes.  docs/DESIGN.md, "Known limits".
HELD_ITEM_FLOOR_BITS = math.log2(1 / ERROR) + math.log2(SLICES + 1) + math.log2(math.e)
KEY_FLOOR_BYTES = 110
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Items a day for ~100, ~1,000 and ~20,000 held in the window (seed 003),
# and the light user of the targets (10 a day).
CLASSES = {"light": 100 / WINDOW_DAYS, "medium": 1000 / WINDOW_DAYS,
           "heavy": 20000 / WINDOW_DAYS, "10/day": 10.0}
MIX = [("light", 0.6), ("medium", 0.3), ("heavy", 0.1)]
# A feed shows a page per visit: a user writes once this many items are
# due, so a light user writes ~10 every ~9 days, a medium one ~11 a day
# and a heavy one a few pages every quarter of a day.
VISIT_ITEMS = 10

# name: (description, check(result) -> (holds, measured))
TARGETS = {
    "big keys": "every SEEN key holding >= 1,000 live items: <= 20 bits per item",
    "young keys": "the same from a heavy key's first page, after every page: <= 20 bits per item",
    "fleet": "fleet with users arriving: <= 16 bits per live item at every checkpoint",
    "steady fleet": "fleet once arrivals have stopped for a window: <= 14.5 bits per live item",
    "10 a day": "users adding 10 a day, ~900 held, past their first window: <= 17 bits per item",
    "no false negatives": "every item written within the window is seen",
}
# The targets --check enforces.  The others are measured and reported.
ENFORCED = ["no false negatives"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(factor, module, directory):
    port = free_port()
    env = dict(os.environ, SEEN_FASTCLOCK_FACTOR=str(factor),
               LD_PRELOAD=os.path.join(ROOT, "build", "bench", "libfastclock.so"))
    # One database: the sweep's passes take a tenth of a second, not 16.
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", directory, "--save", "", "--appendonly", "no",
                             "--databases", "1", "--loadmodule", module], env=env,
                            stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.config_set("seen.pack-idle-seconds", 86400)  # see checkpoint()
            return proc, client
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("lifecycle: redis-server did not start")


def server_ms(client):
    s, us = client.time()
    return s * 1000 + us // 1000


class User:
    def __init__(self, uid, kind, arrives):
        self.uid, self.kind, self.arrives = uid, kind, arrives
        self.rate = CLASSES[kind]
        self.owed = 0.0
        self.written = []  # (ms, item)
        self.seen_key, self.set_key, self.zset_key = ("seen:%d" % uid, "set:%d" % uid,
                                                      "zset:%d" % uid)

    def live(self, now):
        return [it for t, it in self.written if t > now - WINDOW_DAYS * DAY]


def population(users, arrivals, arrive_until, rng):
    out = []
    for i in range(users + arrivals):
        r, kind = rng.random(), "light"
        for k, share in MIX:
            if r < share:
                kind = k
                break
            r -= share
        arrives = 0.0 if i < users else rng.uniform(0, arrive_until)
        out.append(User(i, kind, arrives))
    for j in range(max(2, users // 20)):  # a few users adding 10 a day
        out.append(User(users + arrivals + j, "10/day", 0.0))
    return out


def write_step(client, people, day, now, step_days):
    pipe = client.pipeline(transaction=False)
    for u in people:
        if u.arrives > day:
            continue
        u.owed += u.rate * step_days
        if u.owed < VISIT_ITEMS:
            continue  # the user comes back once a page's worth is due
        n = int(u.owed)
        u.owed -= n
        for start in range(0, n, 20):
            page = ["u%d-%016x" % (u.uid, len(u.written) + k) for k in range(min(20, n - start))]
            u.written.extend((now, it) for it in page)
            pipe.execute_command("SEEN.ADD", u.seen_key, *page)
            pipe.sadd(u.set_key, *page)
            pipe.zadd(u.zset_key, {it: now for it in page})
            pipe.zremrangebyscore(u.zset_key, "-inf", now - WINDOW_DAYS * DAY)
    pipe.execute()


def key_floor_bits(memory_usage, info):
    """The least a SEEN key holding what this one holds could take as
    sorted fingerprints, in bits: for each item it holds (live slices,
    the oldest one's items past the window included, as the key holds
    them until that slice goes), log2(1/error) for its fingerprint and
    log2 e for coding a sorted set of them, plus the entropy of how its
    items spread over its slices (which slice to forget each with); and
    Redis's own part of the key (MEMORY USAGE beyond the value's bytes).
    A young key's premium (fingerprints sized for the peak it projects)
    is left out, so this is below what any key could reach, never
    above."""
    fields = dict(zip(info[::2], info[1::2]))
    counts = [dict(zip(sl[::2], sl[1::2]))[b"items"] for sl in fields[b"slices"]]
    held = sum(counts)
    spread = -sum(c / held * math.log2(c / held) for c in counts if c) if held else 0.0
    per_item = math.log2(1 / ERROR) + math.log2(math.e) + spread
    return held * per_item + 8 * max(0, memory_usage - fields[b"bytes"])


def checkpoint(client, people, day, now, rng):
    """Memory per design and class, bits per live item, and the SEEN keys'
    answers against the model."""
    active = [u for u in people if u.written]
    pipe = client.pipeline(transaction=False)
    for u in active:
        for key in (u.seen_key, u.set_key, u.zset_key):
            pipe.memory_usage(key, samples=0)
        pipe.execute_command("SEEN.INFO", u.seen_key)
    usage = pipe.execute()
    row = {"day": day, "classes": {}, "worst_big": 0.0, "false_negatives": 0, "fp": 0, "probes": 0}
    totals = {"seen": 0, "set": 0, "zset": 0}
    live_total = 0
    floor_bits = 0.0
    for i, u in enumerate(active):
        mem = [x or 0 for x in usage[4 * i:4 * i + 3]]
        floor_bits += key_floor_bits(mem[0], usage[4 * i + 3])
        live = u.live(now)
        # Young: younger than one slice; otherwise the user's class.
        kind = "young" if day - max(u.arrives, 0) < SLICE_DAYS else u.kind
        c = row["classes"].setdefault(kind, {"users": 0, "live": 0, "seen": 0, "set": 0,
                                             "zset": 0})
        c["users"] += 1
        c["live"] += len(live)
        for name, m in zip(("seen", "set", "zset"), mem):
            c[name] += m
            totals[name] += m
        live_total += len(live)
        if len(live) >= 1000 and mem[0] * 8 / len(live) > row["worst_big"]:
            row["worst_big"] = mem[0] * 8 / len(live)
            row["worst_big_key"] = "%s user, %d live items, %d bytes, day %d" % (
                u.kind, len(live), mem[0], day)
        # Items well inside the window must be seen; fresh ones counted.
        inside = [it for t, it in u.written if t > now - WINDOW_DAYS * DAY + DAY]
        sample = rng.sample(inside, min(200, len(inside)))
        fresh = ["never-%d-%d" % (u.uid, rng.getrandbits(48)) for _ in range(100)]
        flags = client.execute_command("SEEN.MFILTER", 1, u.seen_key, "REPLY", "FLAGS", "BULK",
                                       "\n".join(sample + fresh)) if sample else b""
        row["false_negatives"] += flags[:len(sample)].count(b"0")
        row["fp"] += flags[len(sample):].count(b"1")
        row["probes"] += len(fresh) if sample else 0
    row["live"] = live_total
    row["users"] = len(active)
    row["floor_bits"] = floor_bits / live_total if live_total else 0.0
    for name in totals:
        row[name] = totals[name]
        row[name + "_bits"] = totals[name] * 8 / live_total if live_total else 0.0
    # At rest: no command for three passes of the sweep (bounded: a slow
    # machine's sweep is waited for at most 10 s).
    client.config_set("seen.pack-idle-seconds", 0)
    passes = client.info("seen")["seen_sweep_passes"]
    deadline = time.monotonic() + 10
    while client.info("seen")["seen_sweep_passes"] < passes + 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    client.config_set("seen.pack-idle-seconds", 86400)
    later = server_ms(client)
    pipe = client.pipeline(transaction=False)
    for u in active:
        pipe.memory_usage(u.seen_key, samples=0)
    rest = [x or 0 for x in pipe.execute()]
    live_rest = sum(len(u.live(later)) for u in active)
    row["seen_rest"] = sum(rest)
    row["seen_rest_bits"] = sum(rest) * 8 / live_rest if live_rest else 0.0
    for u, m in zip(active, rest):
        live = len(u.live(later))
        if live >= 1000:
            row["worst_big_rest"] = max(row.get("worst_big_rest", 0.0), m * 8 / live)
    return row


# Heavy keys from their first page: (name, phases), each phase a number of
# items written in pages (of 20, or of a third number) spread evenly over a
# span of hours (0: all in one command at one time, as `seen-ingest migrate
# --set-ts now` writes a legacy SET).  The page size moves a young key's
# plan: pages of 5 take its first runs through other divisors.
YOUNG_PATTERNS = [
    ("a first-day burst: 1,000 an hour for 24 hours", [(24000, 24)]),
    ("the same burst in pages of 5", [(24000, 24, 5)]),
    ("a heavy user from day one: 1,000 a day for 30 days", [(30000, 30 * 24)]),
    ("a migrated SET: 10,000 at one time, then 1,000 a day for 30 days",
     [(10000, 0), (30000, 30 * 24)]),
    ("a migrated SET: 2,500 at one time, then 1,000 a day for 30 days",
     [(2500, 0), (30000, 30 * 24)]),
]
YOUNG_AGES_H = [1, 6, 24, 7 * 24, 30 * 24]


def young_keys(module, directory, short):
    """Bits per item (MEMORY USAGE) of each young pattern's key after every
    page once it holds 1,000 items; its worst, and its value at the ages
    YOUNG_AGES_H (the first page at or past each)."""
    proc, client = start_server(1, module, directory)
    results = []
    try:
        end = server_ms(client) - 1000
        for index, (name, phases) in enumerate(YOUNG_PATTERNS):
            if short:  # the same rates for a quarter of the time
                phases = [(p[0] // 4 if p[1] else p[0], p[1] / 4) + tuple(p[2:]) for p in phases]
            start = end - int(sum(p[1] for p in phases) * 3600000)
            # Every page: its time and the items the key holds after it.
            pages, t_at, written = [], start, 0
            for items, hours, *page in phases:
                # All at one time: one command, as the migration writes a
                # legacy key.
                per = (page[0] if page else 20) if hours else items
                count = (items + per - 1) // per
                for k in range(count):
                    t = t_at + int(hours * 3600000 * (k + 1) / count)
                    n = min(per, items - per * k)
                    pages.append((t, ["y%d-%016x" % (index, written + j) for j in range(n)]))
                    written += n
                t_at += int(hours * 3600000)
            key = "young:%d" % index
            worst, at_age, samples, over, held = None, {}, 0, 0, 0
            ages = list(YOUNG_AGES_H)
            for chunk in range(0, len(pages), 100):
                pipe = client.pipeline(transaction=False)
                for t, page in pages[chunk:chunk + 100]:
                    pipe.execute_command("SEEN.INSERT", key, "NOW", t, "ITEMS", *page)
                    pipe.memory_usage(key, samples=0)
                replies = pipe.execute()
                for (t, page), mem in zip(pages[chunk:chunk + 100], replies[1::2]):
                    held += len(page)
                    bits, age_h = mem * 8 / held, (t - start) / 3600000
                    # The first page at or past each age (a key then
                    # holding under 1,000 items is not judged).
                    while ages and age_h >= ages[0]:
                        at_age[ages.pop(0)] = (bits, held) if held >= 1000 else None
                    if held < 1000:
                        continue
                    samples += 1
                    over += bits > 20
                    if worst is None or bits > worst[0]:
                        worst = (bits, held, age_h)
            results.append({"name": name, "worst": worst, "at_age": at_age, "samples": samples,
                            "over": over, "items": written})
            client.delete(key)
    finally:
        proc.kill()
        proc.wait()
    return results


def judge(rows, young, arrive_until, days):
    results = {}
    big = max(rows, key=lambda r: r["worst_big"])
    rest_big = max(r.get("worst_big_rest", 0.0) for r in rows)
    results["big keys"] = (big["worst_big"] <= 20, "in the fleet, worst %.1f bits%s; at rest %.1f"
                           % (big["worst_big"], " (%s)" % big["worst_big_key"]
                              if "worst_big_key" in big else "", rest_big))
    judged = [y for y in young if y["worst"]]
    if judged:
        y = max(judged, key=lambda y: y["worst"][0])
        results["young keys"] = (y["worst"][0] <= 20, "worst %.1f bits (%s: %d items, %.1f hours"
                                 " in; %d of its %d pages over 20)" % (
                                     y["worst"][0], y["name"], y["worst"][1], y["worst"][2],
                                     y["over"], y["samples"]))
    arriving = [r for r in rows if r["day"] <= arrive_until and r["live"]]
    worst = max(arriving, key=lambda r: r["seen_bits"], default=None)
    rest = max((r["seen_rest_bits"] for r in arriving), default=0)
    results["fleet"] = (worst["seen_bits"] <= 16 if worst else None,
                        "worst %.1f bits on day %g, where the floor is %.1f; at rest %.1f" % (
                            worst["seen_bits"], worst["day"], worst["floor_bits"], rest)
                        if worst else "no checkpoint")
    steady = [r for r in rows if r["day"] >= arrive_until + WINDOW_DAYS]
    if steady:
        w = max(steady, key=lambda r: r["seen_bits"])
        wr = max(r["seen_rest_bits"] for r in steady)
        results["steady fleet"] = (w["seen_bits"] <= 14.5, "worst %.1f bits on day %g, where the "
                                   "floor is %.1f (%.1f-%.1f over these checkpoints); at rest %.1f"
                                   % (w["seen_bits"], w["day"], w["floor_bits"],
                                      min(r["floor_bits"] for r in steady),
                                      max(r["floor_bits"] for r in steady), wr))
    else:
        results["steady fleet"] = (None, "run shorter than arrivals + a window")
    tens = [r["classes"]["10/day"] for r in rows
            if r["day"] >= WINDOW_DAYS + SLICE_DAYS and "10/day" in r["classes"]]
    if tens:
        w = max(c["seen"] * 8 / c["live"] for c in tens)
        mean = sum(c["seen"] * 8 / c["live"] for c in tens) / len(tens)
        # Live: a window of items; held: from a window's to a window and a
        # slice's just before the oldest slice goes.
        live = 10 * WINDOW_DAYS
        held_peak = 10 * (WINDOW_DAYS + SLICE_DAYS)
        held_mean = 10 * (WINDOW_DAYS + SLICE_DAYS / 2)
        floor_peak = (held_peak * HELD_ITEM_FLOOR_BITS + KEY_FLOOR_BYTES * 8) / live
        floor_mean = (held_mean * HELD_ITEM_FLOOR_BITS + KEY_FLOOR_BYTES * 8) / live
        results["10 a day"] = (w <= 17, "worst %.1f bits, mean %.1f; the floor of sorted "
                               "fingerprints: %.1f before the oldest slice goes, %.1f averaged"
                               % (w, mean, floor_peak, floor_mean))
    else:
        results["10 a day"] = (None, "run shorter than a window and a slice")
    fn = sum(r["false_negatives"] for r in rows)
    results["no false negatives"] = (fn == 0, "%d false negatives" % fn)
    return results


def age_label(hours):
    return "%d h" % hours if hours < 24 else "%d d" % (hours // 24)


def write_report(out, rows, young, results, args, elapsed):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "lifecycle.dat"), "w") as f:
        f.write("day\tseen\tset\tzset\n")
        for r in rows:
            n = max(r["users"], 1)
            f.write("%g\t%.1f\t%.1f\t%.1f\n" % (r["day"], r["seen"] / n, r["set"] / n,
                                              r["zset"] / n))
    lines = ["# Lifecycle: memory of a fleet of keys over %d simulated days" % args.days, "",
             "Command: `%s` (%.0f s of wall time; server clock x%d). Machine: %s." % (
                 args.command, elapsed, args.factor, machine()), "",
             "Population: %d users from day 0 and %d arriving until day %d (60%% light ~100 held,"
             " 30%% medium ~1,000, 10%% heavy ~20,000), plus %d adding 10 a day; pages of up to"
             " 20 at the server's clock, a user writing once 10 items are due (a light user ~10"
             " every ~9 days). SEEN: default policy (90 days, 4 slices, error 0.001). "
             "SET: never trimmed. ZSET: score = time, ZREMRANGEBYSCORE to the window on every "
             "write. Bytes: MEMORY USAGE; bits per live item: bytes x 8 / items written in the "
             "last 90 days. The columns are of every user mid-session (each writes within a "
             "simulated day), except *at rest*: the same SEEN keys once the sweep has found them "
             "idle (packed), as users between sessions hold them (targets are judged on the "
             "first). *Floor*: the least sorted fingerprints of what the keys hold could take, "
             "per live item (key_floor_bits: per held item log2(1/error) + log2 e + which slice "
             "it is in, plus Redis's own part of each key; young keys' premium left out)."
             % (args.users, args.arrivals,
                                                     args.arrive_until,
                                                     max(2, args.users // 20)), "",
             "| day | users | live items | SEEN bits/item | at rest | floor | SET bits/item | "
             "ZSET bits/item | SEEN B/user | ZSET B/user | young SEEN B/user | light | medium | "
             "heavy | 10/day | FP rate |", "|" + "---:|" * 16]
    for r in rows:
        def per_user(kind, design="seen"):
            c = r["classes"].get(kind)
            return "%.0f" % (c[design] / c["users"]) if c else "–"
        lines.append("| %g | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %s | %s | "
                     "%s | %s | %s | %.5f |" % (r["day"], r["users"], r["live"], r["seen_bits"],
                                                r["seen_rest_bits"], r["floor_bits"], r["set_bits"],
                                 r["zset_bits"], r["seen"] / max(r["users"], 1),
                                 r["zset"] / max(r["users"], 1), per_user("young"),
                                 per_user("light"), per_user("medium"), per_user("heavy"),
                                 per_user("10/day"), r["fp"] / max(r["probes"], 1)))
    if young:
        lines += ["", "Young heavy keys (MEMORY USAGE bits per item after every page once a key "
                  "holds 1,000 items, written at their own times on a server at its normal "
                  "pace; at an age: the first page at or past it, – while under 1,000 items%s):"
                  % ("; this short form writes each pattern for a quarter of its time"
                     if args.short else ""),
                  "", "| pattern | items | worst bits/item | at (items, hours) | pages over 20 | "
                  + " | ".join(age_label(a) for a in YOUNG_AGES_H) + " |",
                  "|---|---:|---:|---|---:|" + "---:|" * len(YOUNG_AGES_H)]
        for y in young:
            cells = []
            for a in YOUNG_AGES_H:
                v = y["at_age"].get(a, "n/a")
                cells.append("n/a" if v == "n/a" else "–" if v is None else
                             "%.1f (%d)" % v)
            w = y["worst"]
            lines.append("| %s | %d | %s | %s | %d of %d | %s |" % (
                y["name"], y["items"], "%.1f" % w[0] if w else "–",
                "%d, %.1f" % (w[1], w[2]) if w else "–", y["over"], y["samples"],
                " | ".join(cells)))
    lines += ["", "Targets:", ""]
    for name, (holds, measured) in results.items():
        mark = "n/a" if holds is None else ("holds" if holds else "MISSED")
        lines.append("- %s — %s: **%s** (%s)%s" % (name, TARGETS[name], mark, measured,
                                                  " [enforced]" if name in ENFORCED else ""))
    if os.path.exists(os.path.join(out, "lifecycle.png")) or shutil.which("gnuplot"):
        lines += ["", "![memory per user](lifecycle.png)"]
    with open(os.path.join(out, "lifecycle.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", "-e", "dir='%s'" % out, os.path.join(HERE, "lifecycle.gp")],
                       check=True, timeout=60)
    return "\n".join(lines)


def machine():
    try:
        with open("/proc/cpuinfo") as f:
            model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        model = "unknown CPU"
    return "%s, %d logical CPUs" % (model, os.cpu_count() or 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", type=int, default=200)
    p.add_argument("--seconds", type=float, default=150, help="wall time the days take")
    p.add_argument("--users", type=int, default=120)
    p.add_argument("--arrivals", type=int, default=80)
    p.add_argument("--arrive-until", type=int, default=100)
    p.add_argument("--every", type=float, default=10, help="days between checkpoints")
    p.add_argument("--short", action="store_true", help="60 days, fewer users (make test)")
    p.add_argument("--check", action="store_true", help="exit 1 if an enforced target misses")
    p.add_argument("--module", default=os.path.join(ROOT, "build", "seen.so"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--command", default="make bench-lifecycle")
    args = p.parse_args()
    if args.short:
        args.days, args.seconds, args.users, args.arrivals = 60, 40, 40, 20
        args.arrive_until, args.every = 40, 5
    args.factor = int(args.days * 86400 / args.seconds)
    rng = random.Random(args.seed)
    people = population(args.users, args.arrivals, args.arrive_until, rng)
    directory = tempfile.mkdtemp(prefix="seen-lifecycle-")
    proc, client = start_server(args.factor, args.module, directory)
    started = time.time()
    try:
        t0 = server_ms(client)
        rows, step, next_check, day_done = [], 0.25, args.every, 0.0
        while day_done < args.days:
            now = server_ms(client)
            day = (now - t0) / DAY
            if day < day_done + step:
                time.sleep(0.002)
                continue
            write_step(client, people, day, now, day - day_done)
            day_done = day
            if day >= next_check:
                rows.append(checkpoint(client, people, round(day), server_ms(client), rng))
                r = rows[-1]
                print("day %3d: %d users, %d live items; bits per live item SEEN %.1f (floor"
                      " %.1f), SET %.1f, ZSET %.1f; false negatives %d" % (
                          r["day"], r["users"], r["live"], r["seen_bits"], r["floor_bits"],
                          r["set_bits"], r["zset_bits"], r["false_negatives"]), flush=True)
                next_check += args.every
        proc.kill()
        proc.wait()
        young = young_keys(args.module, directory, args.short)
        results = judge(rows, young, args.arrive_until, args.days)
        print(write_report(args.out, rows, young, results, args, time.time() - started))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(directory, ignore_errors=True)
    missed = [n for n in ENFORCED if results[n][0] is False]
    if args.check and missed:
        print("lifecycle: enforced targets missed: %s" % ", ".join(missed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
