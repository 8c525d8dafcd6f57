"""test_failover.py — a master is killed (SIGKILL) while writers keep
writing; its replica takes over; every write that a replica acknowledged
(WAIT 1 on the writing connection) is there afterwards, nothing never
written is, and the old master comes back as a replica of the new one
with the same data."""
import threading
import time

from redis.crc import key_slot

from helpers import wait_for
from router import Router, Uncertain

KEYS = 3000


class Writer(threading.Thread):
    """SEEN.INSERT of new items into its keys, round robin, each write
    acknowledged by a replica: acked, uncertain (killed in flight) or
    refused (an error: the test fails)."""

    def __init__(self, ports, keys, name):
        super().__init__(daemon=True)
        self.router = Router(ports, acks=1)
        self.keys, self.name = keys, name
        self.sent = {k: [] for k in keys}  # key -> [(items, acked?)]
        self.acked_at = []                 # (monotonic time, key) of acked writes
        self.stop = threading.Event()
        self.error = None

    def run(self):
        n = 0
        try:
            while not self.stop.is_set():
                key = self.keys[n % len(self.keys)]
                items = ["%s-%d-%d" % (self.name, n, j) for j in range(5)]
                n += 1
                try:
                    assert self.router.write(key, "SEEN.INSERT", key, "EXACT", "ITEMS",
                                             *items) == 5
                    self.sent[key].append((items, True))
                    self.acked_at.append((time.monotonic(), key))
                except Uncertain:
                    self.sent[key].append((items, None))
        except BaseException as e:
            self.error = e
        finally:
            self.router.close()


def test_replica_takes_over_with_every_acknowledged_write(make_cluster):
    c = make_cluster(node_timeout=2000)
    keys = ["{f:%d}seen" % i for i in range(KEYS)]
    writers = [Writer(c.ports, keys[w::2], "w%d" % w) for w in range(2)]
    victim = c.master_of_slot(key_slot(keys[0].encode()))
    replica = c.replicas_of(victim)[0]
    victim_keys = {k for k in keys
                   if any(lo <= key_slot(k.encode()) <= hi for lo, hi in victim["slots"])}

    def acked_on_victim(since):
        return sum(1 for w in writers for t, k in w.acked_at if t > since and k in victim_keys)

    for w in writers:
        w.start()
    try:
        wait_for(lambda: acked_on_victim(0) >= 200, timeout=30, what="writes before the kill")
        c.kill(victim["port"])
        killed = time.monotonic()
        wait_for(lambda: any(m["port"] == replica["port"] for m in c.masters()), timeout=30,
                 what="the replica to take over", interval=0.05)
        took_over = time.monotonic() - killed
        # The new master has no replica to acknowledge writes until the old
        # one is back: bring it back, and see writes acknowledged again.
        c.start()
        wait_for(lambda: acked_on_victim(killed) >= 200, timeout=60,
                 what="writes acknowledged after the failover")
    finally:
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join(timeout=90)
    for w in writers:
        assert not w.is_alive() and w.error is None, w.error

    def roles_swapped():
        nodes = {n["port"]: n for n in c.topology()}
        return (nodes[replica["port"]]["role"] == "master" and
                nodes[victim["port"]]["master"] == replica["id"])
    wait_for(roles_swapped, timeout=30, what="every node to see the old master as a replica")

    rc = c.client()
    acked = uncertain = 0
    pipe = rc.pipeline()
    expected = []
    for w in writers:
        for key, writes in w.sent.items():
            cands, want = ["never-%s" % key], [ord("0")]
            for items, ok in writes:
                cands += items
                want += [ord("1") if ok else None] * len(items)
                acked += bool(ok)
                uncertain += ok is None
            pipe.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "BULK", "\n".join(cands))
            expected.append((key, want))
    for (key, want), got in zip(expected, pipe.execute()):
        for w, g in zip(want, got):
            assert w is None or w == g, key
    print("failover after %.1fs; %d writes acknowledged, %d in flight at the kill" % (
        took_over, acked, uncertain))
    assert uncertain <= 2 * len(writers)  # at most one write in flight per writer, and its WAIT
    c.wait_replicas_synced()
    # The cluster takes writes everywhere again.
    for k in keys[:50]:
        assert rc.execute_command("SEEN.ADD", k, "last") == 1
