#!/usr/bin/python3
"""sizing.py — measure what seen keys cost in memory on a running cluster
(or single server), for the sizing guide in docs/operations.md.

For each history size it makes USERS keys with the default policy (or the
one given), each holding SIZE items (24-hex ids) from the last window; then
it reads `MEMORY USAGE key SAMPLES 0` of every key and the change of
used_memory summed over the masters, and prints per key and per item
figures with a projection for --project-users users (from MEMORY USAGE,
in decimal units: 1 GB = 10^9 bytes; one copy of the data, replicas not
counted).  The keys are deleted
afterwards unless --keep is given.

Patterns (--pattern):
  live    a user active every day for two windows: SIZE/days items a day,
          each day's batch written with `SEEN.INSERT key NOW t` at that day
          (NOW replays the past as replication does), so the set is in its
          steady state, old slices forgotten as new ones fill (default);
  import  one window of history loaded at today's clock, a batch per day
          stamped with AT, oldest first (a backfill: until its slices turn
          over, such a set holds more runs than a live one).

  scripts/cluster.sh start
  /usr/bin/python3 scripts/sizing.py                       # the cluster on 30001
  /usr/bin/python3 scripts/sizing.py --port 6379 --single  # one redis-server
  /usr/bin/python3 scripts/sizing.py --sizes 10000 --users 50 --error 0.0001

Needs python3-redis (Debian's /usr/bin/python3 has it; scripts/deps.sh
installs it).
"""
import argparse
import random
import sys
import time

import redis
from redis.cluster import ClusterNode, RedisCluster

DAY = 86400000


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30001, help="any node (default 30001)")
    p.add_argument("--single", action="store_true", help="a single server, not a cluster")
    p.add_argument("--sizes", default="100,1000,10000", help="items per user (default %(default)s)")
    p.add_argument("--users", type=int, default=0,
                   help="keys per size (default: about a million items' worth, 20 to 500)")
    p.add_argument("--pattern", choices=("live", "import"), default="live")
    p.add_argument("--window-days", type=int, default=90, help="WINDOW, days (default 90)")
    p.add_argument("--slices", type=int, default=4, help="SLICES (default 4)")
    p.add_argument("--error", default="0.001", help="ERROR rate, or 'exact' (default 0.001)")
    p.add_argument("--project-users", type=int, default=50000000,
                   help="users to project the total for (default 50,000,000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="leave the keys in place")
    return p.parse_args(argv)


def connect(host, port, single):
    if single:
        return redis.Redis(host=host, port=port, socket_timeout=60)
    return RedisCluster(startup_nodes=[ClusterNode(host, port)], socket_timeout=60)


def masters(client):
    if isinstance(client, RedisCluster):
        return [n.redis_connection for n in client.get_primaries()]
    return [client]


def used_memory(client):
    return sum(m.info("memory")["used_memory"] for m in masters(client))


def policy_args(window_days, slices, error):
    err = ["EXACT"] if error == "exact" else ["ERROR", error]
    return ["WINDOW", "%dd" % window_days, "SLICES", slices] + err


def fill(client, keys, size, policy, window_ms, now, rng, pattern="live"):
    """SIZE items per key from the last window (see --pattern)."""
    windows = 2 if pattern == "live" else 1
    days = max(1, window_ms // DAY)
    batches = windows * min(days, size)  # a batch a day, or fewer for small sizes
    total = windows * size
    start = now - windows * window_ms
    pipe = client.pipeline()
    pending = 0
    for key in keys:
        if pattern == "live":
            pipe.execute_command("SEEN.RESERVE", key, *policy, "NOW", start)
        else:
            pipe.execute_command("SEEN.RESERVE", key, *policy)
        for b in range(batches):
            n = total // batches + (b < total % batches)
            items = "\n".join("%024x" % rng.getrandbits(96) for _ in range(n))
            t = min(now, start + (b * windows * window_ms) // batches + DAY // 2)
            stamp = ["NOW", t] if pattern == "live" else ["AT", t]
            pipe.execute_command("SEEN.INSERT", key, *stamp, "BULK", items)
            pending += 1
        if pending >= 1000:
            pipe.execute()
            pending = 0
    pipe.execute()


def measure(client, size, users, policy, window_ms, pattern="live", seed=1, keep=False,
            tag="sizing"):
    """Make `users` keys of `size` items; their memory figures."""
    rng = random.Random(seed * 1000003 + size)
    keys = ["{%s:%d:%d}" % (tag, size, u) for u in range(users)]
    client.delete(*keys)
    now = int(time.time() * 1000)
    before = used_memory(client)
    fill(client, keys, size, policy, window_ms, now, rng, pattern)
    after = used_memory(client)
    usage = [client.memory_usage(k, samples=0) for k in keys]
    counts = [client.execute_command("SEEN.COUNT", k) for k in keys]
    encodings = {}
    for k in keys[:20]:
        info = client.execute_command("SEEN.INFO", k)
        enc = info[info.index(b"encoding") + 1].decode()
        encodings[enc] = encodings.get(enc, 0) + 1
    if not keep:
        client.delete(*keys)
    per_key = sum(usage) / users
    return {"size": size, "users": users, "items": sum(counts) / users,
            "memory_usage": per_key, "bits_per_item": 8 * per_key / size,
            "used_memory_per_key": (after - before) / users, "encodings": encodings}


def human(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return "%.1f %s" % (n, unit)
        n /= 1000.0


def main(argv):
    args = parse_args(argv)
    client = connect(args.host, args.port, args.single)
    policy = policy_args(args.window_days, args.slices, args.error)
    window_ms = args.window_days * DAY
    print("policy: %s; pattern: %s" % (" ".join(map(str, policy)), args.pattern))
    print("| items/user | keys | MEMORY USAGE/key | bits/item | used_memory/key | encoding "
          "| %s users |" % format(args.project_users, ","))
    print("|---:|---:|---:|---:|---:|---|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        users = args.users or max(20, min(500, 1000000 // size))
        r = measure(client, size, users, policy, window_ms, args.pattern, args.seed, args.keep)
        print("| %d | %d | %d B | %.1f | %d B | %s | %s |" % (
            size, users, r["memory_usage"], r["bits_per_item"], r["used_memory_per_key"],
            ", ".join(sorted(r["encodings"])), human(r["memory_usage"] * args.project_users)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
