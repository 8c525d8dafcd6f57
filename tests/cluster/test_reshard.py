"""test_reshard.py — redis-cli --cluster reshard moves a slot range holding
seen keys from one master to another.  Keys travel by MIGRATE, i.e. the
type's DUMP/RESTORE form; every key must arrive byte-identical (digest),
with its TTL, and answer exactly as before — also while it moves, to a
cluster client that follows ASK and TRYAGAIN."""
import random
import threading

from redis.crc import key_slot

import workload
from conftest import redis_cli
from helpers import info_map, server_ms

MOVE = 1000  # slots


def slots_of(node):
    return {s for lo, hi in node["slots"] for s in range(lo, hi + 1)}


def keys_in(slots, fmt, per_slot=1):
    """Keys fmt % n, the first per_slot of them in each of the slots."""
    need = {s: per_slot for s in slots}
    out, n = [], 0
    while need:
        key = fmt % n
        s = key_slot(key.encode())
        if s in need:
            out.append(key)
            need[s] -= 1
            if not need[s]:
                del need[s]
        n += 1
    return out


def owner(cluster, key):
    return cluster.node(cluster.master_of_slot(key_slot(key.encode()))["port"])


def candidates_for(cluster, keys, cands):
    """Per key, the candidates it can be asked (integers for IDS INT)."""
    out = {}
    for key in keys:
        ids = info_map(owner(cluster, key).execute_command("SEEN.INFO", key))["policy"]["ids"]
        out[key] = "\n".join(c for c in cands if c.isdigit() or ids == b"str")
    return out


def answers(cluster, q, cands):
    """Per key: digest, expiry time, and which candidates it has seen at q,
    asked of its master."""
    out = {}
    for key, cs in cands.items():
        node = owner(cluster, key)
        out[key] = (node.execute_command("DEBUG", "DIGEST-VALUE", key), node.pexpiretime(key),
                    node.execute_command("SEEN.MFILTER", 1, key, "AT", q, "REPLY", "FLAGS",
                                         "BULK", cs))
    return out


class Reader(threading.Thread):
    """Asks filters of moving keys through a cluster client until stopped."""

    def __init__(self, rc, expected, q, cands):
        super().__init__(daemon=True)
        self.rc, self.expected, self.q, self.cands = rc, expected, q, cands
        self.stop = threading.Event()
        self.reads, self.wrong, self.error = 0, [], None

    def run(self):
        keys = sorted(self.expected)
        rng = random.Random(4)
        try:
            while not self.stop.is_set():
                key = rng.choice(keys)
                got = self.rc.execute_command("SEEN.MFILTER", 1, key, "AT", self.q, "REPLY",
                                              "FLAGS", "BULK", self.cands[key])
                self.reads += 1
                if got != self.expected[key][2]:
                    self.wrong.append(key)
        except BaseException as e:
            self.error = e


def test_reshard_moves_seen_keys(shared_cluster):
    c = shared_cluster
    rc = c.client()
    src, dst = sorted(c.masters(), key=lambda n: n["port"])[:2]
    first = sorted(slots_of(src))[:MOVE]  # redis-cli moves a source's lowest slots
    now = server_ms(c.node(src["port"]))

    # Every policy the module test workload makes, under three hash tags in
    # the range, a large compact key, and a small key in every moving slot.
    tags = keys_in(first[::400], "{mv%d}")
    keys = []
    for i, tag in enumerate(tags):
        keys += workload.run(rc, now, seed=10 + i, prefix=tag)
    rng = random.Random(5)
    big = "{%s}big" % tags[0][1:-1]
    rc.execute_command("SEEN.RESERVE", big, "ERROR", "0.001")
    big_items = ["b%024x" % rng.getrandbits(96) for _ in range(300000)]
    for i in range(0, len(big_items), 100000):
        rc.execute_command("SEEN.INSERT", big, "BULK", "\n".join(big_items[i:i + 100000]))
    small = keys_in(first, "mv:%d")
    pipe = rc.pipeline()
    for k in small:
        pipe.execute_command("SEEN.ADD", k, "a", k)
    pipe.execute()
    keys += [big] + small

    cands = candidates_for(c, keys, workload.candidates(1) + big_items[:2000] + ["a"] +
                           small[:300])
    before = answers(c, now, cands)
    counts = {s: c.node(src["port"]).execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
              for s in first}
    assert sum(counts.values()) >= len(keys)

    reader = Reader(c.client(), before, now, cands)
    reader.start()
    try:
        out = redis_cli("--cluster", "reshard", "127.0.0.1:%d" % src["port"], "--cluster-from",
                        src["id"], "--cluster-to", dst["id"], "--cluster-slots", MOVE,
                        "--cluster-yes", timeout=300)
    finally:
        reader.stop.set()
        reader.join(timeout=60)
    assert "Moving slot %d " % first[-1] in out
    c.wait_state_ok()
    redis_cli("--cluster", "check", "127.0.0.1:%d" % dst["port"], timeout=60)

    # The range is the destination's now, keys and all.
    owners = {n["id"]: slots_of(n) for n in c.masters()}
    assert set(first) <= owners[dst["id"]] and not set(first) & owners[src["id"]]
    for s in first:
        assert c.node(dst["port"]).execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == counts[s]
        assert c.node(src["port"]).execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0
    after = answers(c, now, cands)
    def digests_and_answers(snapshot):
        return {key: (digest, flags) for key, (digest, _, flags) in snapshot.items()}
    assert digests_and_answers(after) == digests_and_answers(before)
    # MIGRATE carries a TTL as time left, so the absolute expiry may shift by
    # the moments between the two nodes' clocks (the module sets it again at
    # the key's next write).
    for key, (_, expires, _) in before.items():
        assert (after[key][1] < 0) == (expires < 0) and abs(after[key][1] - expires) < 2000, key
    assert reader.error is None, reader.error
    print("%d reads while the slots moved" % reader.reads)
    assert reader.reads > 0 and not reader.wrong, reader.wrong[:10]

    # The moved keys take writes where they are now, and replicas follow.
    assert rc.execute_command("SEEN.ADD", big, "after-move") == 1
    assert rc.execute_command("SEEN.FILTER", big, "after-move", big_items[7]) == []
    c.wait_replicas_synced()
