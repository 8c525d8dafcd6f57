"""test_durability.py — kill -9 of nodes running appendfsync always loses
nothing they acknowledged.

With appendfsync always a node writes and fsyncs its AOF before it replies,
so a reply is the acknowledgement.  Writers add, re-add and remove items of
exact sets (some keys with module-managed expiry, some items stamped in the
past).  Then, writers still running:

1. a master and its replica are killed together — no failover can hide a
   loss, the master must come back from its own AOF (rewritten once with
   the RDB preamble);
2. every node is killed, after an AOF rewrite in the module's own form
   (SEEN.LOAD, aof-use-rdb-preamble no), and the cluster is started again
   with scripts/cluster.sh.

After each, every acknowledged write is there (an item added is seen, one
removed is not); only the writes in flight at the kill may go either way.
"""
import random
import threading
import time

from redis.crc import key_slot

from helpers import wait_for
from router import Router, Uncertain

DAY = 86400000


class Writer(threading.Thread):
    """Writes to its own keys; a reply is an acknowledgement (no WAIT)."""

    def __init__(self, ports, name, seed):
        super().__init__(daemon=True)
        self.ports, self.name = ports, name
        self.rng = random.Random(seed)
        self.keys = ["{d:%s:%d}" % (name, i) for i in range(100)]
        self.ops = {}    # item -> [(key, "add"|"remove", acked: True | None)]
        self.held = {}   # key -> items whose last acknowledged op is an add
        self.used = set()
        self.expiring = set()
        self.acked = self.in_flight = 0
        self.n = 0
        self.go = threading.Event()    # cleared: pause after the current write
        self.idle = threading.Event()  # set while paused
        self.quit = False
        self.error = None

    def run(self):
        router = Router(self.ports, acks=0, timeout=90)
        try:
            while not self.quit:
                if not self.go.is_set():
                    self.idle.set()
                    self.go.wait(timeout=300)
                    self.idle.clear()
                    continue
                self.step(router)
        except BaseException as e:
            self.error = e
        finally:
            self.idle.set()
            router.close()

    def hold(self):
        self.go.clear()
        wait_for(self.idle.is_set, timeout=120, what="writer %s to pause" % self.name)

    def step(self, router):
        key = self.rng.choice(self.keys)
        held = self.held.setdefault(key, [])
        self.n += 1
        if key not in self.used and self.rng.random() < 0.2:
            # A key with expiry, made before anything is added to it.
            self.record(router, key, [], "reserve", "SEEN.RESERVE", key, "EXACT", "WINDOW", "30d",
                        "EXPIRY", "ON", "JITTER", "1h")
        elif held and self.rng.random() < 0.25:
            items = self.rng.sample(held, min(len(held), 3))
            self.record(router, key, items, "remove", "SEEN.REMOVE", key, "ITEMS", *items)
        else:
            items = ["%s-%d-%d" % (self.name, self.n, j) for j in range(4)]
            items += self.rng.sample(held, min(len(held), 1))  # a re-add
            at = ["AT", int(time.time() * 1000) - self.rng.randrange(5 * DAY)] \
                if self.rng.random() < 0.3 else []
            self.record(router, key, items, "add", "SEEN.INSERT", key, *at, "EXACT", "ITEMS",
                        *items)

    def record(self, router, key, items, op, *cmd):
        self.used.add(key)
        try:
            router.write(key, *cmd)
            acked = True
            self.acked += 1
        except Uncertain:
            acked = None
            self.in_flight += 1
        if op == "reserve":
            if acked:
                self.expiring.add(key)
            return
        for item in items:
            self.ops.setdefault(item, []).append((key, op, acked))
        held = self.held[key]
        for item in items:
            if item in held:
                held.remove(item)
            if op == "add" and acked:
                held.append(item)

    def expected(self):
        """key -> {item: 1 (seen), 0 (not seen) or None (in flight at a kill)}."""
        out = {}
        for item, ops in self.ops.items():
            state = 0
            for key, op, acked in ops:
                state = None if acked is None else int(op == "add")
            out.setdefault(ops[0][0], {})[item] = state
        return out


def check_everything(cluster, writers):
    rc = cluster.client()
    pipe = rc.pipeline()
    expected = []
    for w in writers:
        for key, items in w.expected().items():
            cands = list(items) + ["never-" + key]
            expected.append((key, [items.get(c, 0) for c in cands]))
            pipe.execute_command("SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "BULK", "\n".join(cands))
        for key in w.expiring:
            assert rc.pttl(key) > 0, key
    for (key, want), got in zip(expected, pipe.execute()):
        for wbit, g in zip(want, got):
            assert wbit is None or wbit == g - ord("0"), key
    rc.close()


def run_for(writers, acked_more):
    """Let the writers run until each has `acked_more` more acknowledgements."""
    marks = [w.acked for w in writers]
    for w in writers:
        w.go.set()
    wait_for(lambda: all(w.acked >= m + acked_more for w, m in zip(writers, marks)),
             timeout=120, what="acknowledged writes")


def hold(writers):
    for w in writers:
        w.hold()


def rewrite_aof(cluster, ports, preamble):
    for port in ports:
        node = cluster.node(port)
        node.config_set("aof-use-rdb-preamble", preamble)
        node.bgrewriteaof()
    def done(port):
        info = cluster.node(port).info("persistence")
        return not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]
    for port in ports:
        wait_for(lambda: done(port), timeout=30, what="AOF rewrite")  # noqa: B023


def test_kill9_loses_nothing_acknowledged(make_cluster):
    c = make_cluster(appendfsync="always", node_timeout=2000)
    writers = [Writer(c.ports, "w%d" % i, seed=i) for i in range(3)]
    for w in writers:
        w.start()
    try:
        # 1. One shard, master and replica at once, writers still writing.
        run_for(writers, 300)
        victim = c.master_of_slot(key_slot(writers[0].keys[0].encode()))
        rewrite_aof(c, [victim["port"]], "yes")
        run_for(writers, 200)
        for node in [victim] + c.replicas_of(victim):
            c.kill(node["port"])
        time.sleep(0.5)  # writers of the other shards go on
        c.start()
        roles = {n["port"]: n["role"] for n in c.topology()}
        assert roles[victim["port"]] == "master", "the master's own AOF must have served"
        run_for(writers, 100)
        hold(writers)
        check_everything(c, writers)
        c.wait_replicas_synced()

        # 2. Every node, after a rewrite to SEEN.LOAD commands.
        rewrite_aof(c, [m["port"] for m in c.masters()], "no")
        run_for(writers, 300)
        for port in c.ports:
            c.kill(port)
        c.start()
        hold(writers)
        check_everything(c, writers)
        c.wait_replicas_synced()
    finally:
        for w in writers:
            w.quit = True
            w.go.set()
        for w in writers:
            w.join(timeout=120)
    for w in writers:
        assert w.error is None, w.error
    print("%d writes acknowledged; %d in flight at the kills" % (
        sum(w.acked for w in writers), sum(w.in_flight for w in writers)))
