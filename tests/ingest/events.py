"""events.py — event streams for the ingester tests, and the check that
every one of them reached Redis."""
import json
import time


def make_events(n, users=100, start=0, now_ms=None, kinds=("play",), spread_ms=2000):
    """n events, items v<i>, times spread over the last spread_ms; returns (lines,
    expected) with expected = {key: set(items)} under seen:{%user}:%kind."""
    now_ms = now_ms or int(time.time() * 1000)
    lines, expected = [], {}
    for i in range(start, start + n):
        user = "u%d" % (i % users)
        kind = kinds[i % len(kinds)]
        item = "v%d" % i
        ts = now_ms - spread_ms + (i * 7919) % spread_ms
        lines.append(json.dumps({"user": user, "item": item, "ts": ts, "kind": kind}))
        expected.setdefault("seen:{%s}:%s" % (user, kind), set()).add(item)
    return lines, expected


def merge(a, b):
    for key, items in b.items():
        a.setdefault(key, set()).update(items)
    return a


def missing_items(client, expected):
    """Items expected but not seen (SEEN.FILTER answers the unseen ones)."""
    missing = {}
    for key, items in expected.items():
        items = sorted(items)
        for i in range(0, len(items), 1000):
            unseen = client.execute_command("SEEN.FILTER", key, *items[i:i + 1000])
            if unseen:
                missing.setdefault(key, []).extend(u.decode() for u in unseen)
    return missing


def total_count(client, keys):
    return sum(client.execute_command("SEEN.COUNT", k) for k in keys)
