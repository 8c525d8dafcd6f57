#!/usr/bin/python3
"""adversary.py — random workloads against a redis-server whose wall clock
runs fast, checked against an exact model of what each key must answer.

Every key gets a random policy (window 0 to 90 days, 1 to 64 slices, error
0.01 to 0.0001 or EXACT, a capacity or none, string or integer ids, an
exact limit, the module's own key expiry or not), and the run throws at
them what production and careless clients do: pages of a few items,
batches of up to 300,000 (--huge), imports with AT and TIMED in time order,
newest first, shuffled or all at one time and spanning up to three
windows, deletes, compactions, re-adds, DUMP/RESTORE copies, RENAMEs
(often right after an import's write), keys that
expire themselves and are made again by the next write, DEBUG RELOAD,
writers paused (CLIENT PAUSE WRITE) while the server's timers are due,
restarts from RDB and from AOF (the AOF rewritten now and then, its
SEEN.LOAD commands cut into chunks as small as 1 KB), the resting form's
threshold moved under the keys (seen.pack-max-bytes from 0 to 64 KB), and
time passing by days between them (build/bench/libfastclock.so,
LD_PRELOAD).  A replica follows the server throughout (--no-replica to
leave it out), restarted beside it on its clock.

Checked after each step that asks: no false negatives (an item added at t
is seen at every q < t + W; with a capacity, the newest C written live are
kept; in approximate keys a delete may also take items sharing a deleted
fingerprint, within the odds commands.md gives), items surely forgotten
(q >= t + W(1 + 1/S)) and never-added candidates reported seen at most at
the error rate (never, in EXACT keys, whose SEEN.COUNT must also lie
between what they must see and what they may still hold, and within a
capacity's bound), every key's value on the replica the same as on the
server once it has caught up (DEBUG DIGEST-VALUE: the compaction timer's
and the sweep's writes are replicated too; a key the server dropped as
expired while loading may stay on the replica, as Redis sends no DEL for
it, if the replica's clock has it expired too), no error reply
to a valid command, the server up and its log free of refused loads.  Commands
slower than --slow seconds are listed (not failed: a shared machine stalls).

  tests/adversary/adversary.py --seeds 1,2,3 --steps 150     (make test-adversary)

Exit status 1 on the first violation, with the key's policy, its last
operations and SEEN.INFO.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import redis

DAY = 86_400_000
# DEBUG DIGEST-VALUE's answer for a key the server does not hold.
ABSENT_DIGEST = [b"0" * 40]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "module"))
from helpers import free_port, server_ms  # noqa: E402  (the module tests' helpers)


def expired_or_ttl(replica, name):
    """A key's time to live on a replica, in ms: 0 once the replica's clock
    says it has expired (a replica hides such a key from reads but holds it
    until its master's DEL), -1 if it has no expiry."""
    ttl = replica.pttl(name)
    return 0 if ttl == -2 else ttl


class Server:
    """A redis-server with the module and a fast clock; restarts keep the
    clock going from where it was."""

    def __init__(self, module, directory, factor):
        os.makedirs(directory, exist_ok=True)
        self.module, self.dir, self.factor = module, directory, factor
        self.proc = None
        self.last_ms = None
        self.log_path = os.path.join(directory, "server.log")

    def start(self, aof, extra=()):
        self.port = free_port()
        # REDIS_PRELOAD: a sanitizer runtime the module needs loaded first.
        preload = [os.environ["REDIS_PRELOAD"]] if os.environ.get("REDIS_PRELOAD") else []
        preload.append(os.path.join(ROOT, "build", "bench", "libfastclock.so"))
        env = dict(os.environ, SEEN_FASTCLOCK_FACTOR=str(self.factor), LD_PRELOAD=":".join(preload))
        if self.last_ms is not None:
            # The fast clock starts at the real time: carry it on instead.
            env["SEEN_FASTCLOCK_OFFSET_MS"] = str(self.last_ms - time.time() * 1000 + 1000)
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--save", "", "--appendonly", "yes" if aof else "no", "--appendfsync", "no",
             "--enable-debug-command", "yes", *extra, "--loadmodule", self.module],
            env=env, stdout=log, stderr=log)
        log.close()
        self.c = redis.Redis(port=self.port, socket_timeout=300)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                self.c.ping()
                return
            except redis.exceptions.BusyLoadingError:
                time.sleep(0.05)
            except redis.ConnectionError:
                if self.proc.poll() is not None:
                    fail("redis-server exited while starting (%s)" % self.log_path)
                time.sleep(0.05)
        fail("redis-server did not start in 120 s")

    def now(self):
        self.last_ms = server_ms(self.c)
        return self.last_ms

    def stop(self):
        self.now()
        try:
            self.c.shutdown(nosave=True)
        except redis.ConnectionError:
            pass
        self.proc.wait(timeout=60)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def fail(msg):
    print("adversary: FAIL: " + msg, file=sys.stderr)
    raise SystemExit(1)


class Run:
    def __init__(self, seed, args, directory):
        self.rng = random.Random(seed)
        self.seed = seed
        self.args = args
        self.srv = Server(args.module, directory, args.factor)
        self.replica = None
        if args.replica:
            self.replica = Server(args.module, os.path.join(directory, "replica"), args.factor)
        self.keys = {}
        self.slow = []
        self.fp = {}     # key -> [hits, tries]
        self.uid = 0
        self.checked = 0
        self.counted = 0
        self.replicated = 0  # keys compared with the replica
        self.dropped_at_load = 0  # expired keys a load dropped, the replica kept
        self.names = 0

    # ---------------------------------------------------------- commands
    def cmd(self, *a):
        key = a[1] if len(a) > 1 else None
        if key in self.keys:
            self.keys[key]["log"].append("%s %s (%d args) at %s" % (
                a[0], " ".join(str(x)[:40] for x in a[2:5]), len(a), self.srv.last_ms))
        t0 = time.time()
        try:
            reply = self.srv.c.execute_command(*a)
        except redis.ResponseError as e:
            self.report(key, "error reply %r to %s" % (str(e), " ".join(str(x)[:30] for x in a[:5])))
        dt = time.time() - t0
        if dt > self.args.slow:
            self.slow.append((round(dt, 3), a[0], key, len(a)))
        return reply

    def report(self, key, what):
        print("adversary: seed %d: %s" % (self.seed, what), file=sys.stderr)
        if key in self.keys:
            k = self.keys[key]
            print("  key %s policy %s" % (key, k["policy"]), file=sys.stderr)
            for line in k["log"][-25:]:
                print("  op " + line, file=sys.stderr)
            try:
                print("  SEEN.INFO: %r" % self.srv.c.execute_command("SEEN.INFO", key)[:20],
                      file=sys.stderr)
            except redis.RedisError:
                pass
        # Again last: a log cut to its tail still says what failed.
        fail("seed %d: %s" % (self.seed, what))

    # ---------------------------------------------------------- the model
    def make_key(self, capped=False, exact=None):
        """A key of a random policy; `capped` forces a capacity, `exact`
        (True or False) EXACT or an error rate with no capacity."""
        rng = self.rng
        name = self.new_name()
        window = rng.choice([0, 3_600_000, DAY, 7 * DAY, 30 * DAY, 90 * DAY])
        slices = rng.choice([1, 2, 4, 4, 8, 16, 64])
        error = rng.choice(["0.001", "0.01", "EXACT", "0.001", "0.0001"])
        cap = rng.choice([0, 0, 0, 10, 100, 1000, 5000])
        if (window == 0 and cap == 0 and rng.random() < 0.5) or (capped and cap == 0):
            cap = rng.choice([50, 2000])
        if exact is not None:
            error = "EXACT" if exact else rng.choice(["0.01", "0.001"])
            cap = 0
        ints = rng.random() < 0.3
        limit = rng.choice([None, None, 0, 16, 128, 1000])
        policy = ["WINDOW", window, "SLICES", slices]
        policy += ["EXACT"] if error == "EXACT" else ["ERROR", error]
        policy += ["CAPACITY", cap] if cap else []
        policy += ["IDS", "INT" if ints else "STR"]
        policy += ["EXACTLIMIT", limit] if limit is not None else []
        # The module's own key expiry (a TTL at forget-all-at): a key must
        # not vanish while it holds anything it must still see.
        expiry = bool(window) and rng.random() < 0.3
        policy += ["EXPIRY", "ON"] if expiry else []
        self.keys[name] = dict(W=window, S=slices, error=0.0 if error == "EXACT" else float(error),
                               cap=cap, ints=ints, items={}, order=0, log=[], lost=0.0,
                               cap_unmodelled=False, policy=" ".join(map(str, policy)),
                               # A key that expired is made again by the next
                               # write: with its policy, as a client would.
                               remake=policy if expiry else [])
        self.cmd("SEEN.RESERVE", name, *policy)

    def new_item(self, k):
        self.uid += 1
        if k["ints"]:
            u = self.uid
            return self.rng.choice([u, 2_700_000 + u, (1 << 63) + u * 7919, u * 1_000_003])
        return "i%x-%d" % (self.rng.getrandbits(40), self.uid)

    def record(self, k, item, t, t_hi=None):
        """Item written at a time from t to t_hi (a live write's time is
        the server's clock somewhere during the command)."""
        k["order"] += 1
        old = k["items"].get(item)
        if old is None or t >= old[0]:
            k["items"][item] = (t, k["order"], t if t_hi is None else t_hi)

    def must_see(self, k, q):
        """Items the key must report seen at a query time up to q."""
        if k["cap"] and k["cap_unmodelled"]:
            return []
        live = [it for it, (t, _, _) in k["items"].items() if k["W"] == 0 or q < t + k["W"]]
        if k["cap"] and len(k["items"]) > k["cap"]:
            # The newest C by (time, arrival); at a tie on the boundary time
            # only the strictly newer ones.
            ranked = sorted(((t, o, it) for it, (t, o, _) in k["items"].items()), reverse=True)
            edge = ranked[k["cap"]][0]
            newest = set(it for t, _, it in ranked[:k["cap"]] if t > edge)
            live = [it for it in live if it in newest]
        return live

    def surely_forgotten(self, k, q):
        if k["W"] == 0:
            return []
        late = k["W"] + (k["W"] + k["S"] - 1) // k["S"]
        return [it for it, (_, _, t_hi) in k["items"].items() if q >= t_hi + late + 1]

    # ---------------------------------------------------------- operations
    def add_live(self, name, n, reuse=0.1):
        k = self.keys[name]
        pool = list(k["items"])
        items = [self.rng.choice(pool) if pool and self.rng.random() < reuse else self.new_item(k)
                 for _ in range(n)]
        t = self.srv.now()
        if n > 2000 or self.rng.random() < 0.3 or k["remake"]:
            self.cmd("SEEN.INSERT", name, *k["remake"], "BULK", "\n".join(map(str, items)))
        else:
            self.cmd("SEEN.ADD", name, *items)
        t_hi = self.srv.now()
        for it in items:
            self.record(k, it, t, t_hi)

    def add_past(self, name, n):
        """An import: AT one time, or TIMED in some order, up to three
        windows back."""
        k = self.keys[name]
        # Across writes a capped key orders by slice, then arrival: not
        # modelled.  A first write is: its items go in time order.
        if k["items"] or k["log"][1:]:
            k["cap_unmodelled"] = True
        now = self.srv.now()
        span = int((k["W"] or 30 * DAY) * self.rng.choice([0.5, 1, 2, 3]))
        items = [self.new_item(k) for _ in range(n)]
        order = self.rng.choice(["time", "reverse", "shuffled", "one"])
        if order == "one":
            t = now - self.rng.randrange(span)
            self.cmd("SEEN.INSERT", name, "AT", t, *k["remake"], "BULK",
                     "\n".join(map(str, items)))
            for it in items:
                self.record(k, it, t)
            return
        times = sorted(now - self.rng.randrange(span) for _ in range(n))
        if order == "reverse":
            times.reverse()
        elif order == "shuffled":
            self.rng.shuffle(times)
        self.cmd("SEEN.INSERT", name, "TIMED", *k["remake"], "BULK",
                 "\n".join("%d %s" % (t, it) for t, it in zip(times, items)))
        for t, it in sorted(zip(times, items), key=lambda x: x[0]):
            self.record(k, it, t)

    def delete(self, name):
        k = self.keys[name]
        if not k["items"]:
            return
        gone = self.rng.sample(list(k["items"]), min(len(k["items"]),
                                                     self.rng.choice([1, 5, 50, 500])))
        if self.rng.random() < 0.5:
            self.cmd("SEEN.DEL", name, *gone)
        else:
            self.cmd("SEEN.REMOVE", name, "BULK", "\n".join(map(str, gone)))
        held = len(k["items"])
        for g in gone:
            del k["items"][g]
        # Evictions are permanent: deleting newer items brings none back.
        k["cap_unmodelled"] = True
        # A fingerprint deleted also forgets any other item that shares it
        # (commands.md, SEEN.DEL): each, with a chance up to error / items.
        k["lost"] += len(gone) * k["error"] / max(held, 1)

    def check(self, name, sample=400):
        k = self.keys[name]
        rng = self.rng
        q_lo = self.srv.now()
        must = self.must_see(k, q_lo + int(0.05 * self.args.factor))
        gone = self.surely_forgotten(k, q_lo)
        must = rng.sample(must, min(sample, len(must)))
        gone = rng.sample(gone, min(200, len(gone)))
        fresh = [rng.getrandbits(62) + 5 if k["ints"] else "never-%x" % rng.getrandbits(60)
                 for _ in range(200)]
        ask = must + gone + fresh
        flags = self.cmd("SEEN.MFILTER", 1, name, "REPLY", "FLAGS", "BULK",
                         "\n".join(map(str, ask))) if ask else b""
        q_hi = self.srv.now()
        still = set(self.must_see(k, q_hi))
        missed = [it for i, it in enumerate(must) if flags[i:i + 1] != b"1" and it in still]
        # What deletes may have taken with them (approximate keys only).
        expected = min(k["lost"], 1.0) * len(must)
        if len(missed) > expected + 3 * expected ** 0.5 + (1 if k["lost"] else 0):
            self.report(name, "%d of %d items that must be seen were not (e.g. %r, written at %r,"
                        " asked between %d and %d)" % (len(missed), len(must), missed[0],
                                                       k["items"][missed[0]], q_lo, q_hi))
        self.checked += len(must)
        hits = flags[len(must):].count(b"1")
        if k["error"] == 0 and hits:
            self.report(name, "an EXACT key reported %d forgotten or never-added items seen" % hits)
        tally = self.fp.setdefault(name, [0, 0])
        tally[0] += hits
        tally[1] += len(gone) + len(fresh)
        if k["error"] == 0:
            self.check_count(name, k)

    def check_count(self, name, k):
        """An EXACT key counts at least the items it must still see and at
        most those not surely forgotten; with a cap C, at most C and one
        count step (commands.md: about C (1 + 1/S))."""
        q_lo = self.srv.now()
        count = self.cmd("SEEN.COUNT", name)
        q_hi = self.srv.now()
        least = len(self.must_see(k, q_hi))
        most = len(k["items"]) - len(self.surely_forgotten(k, q_lo))
        if k["cap"]:
            most = min(most, k["cap"] + (k["cap"] + k["S"] - 1) // k["S"])
        self.counted += 1
        if not least <= count <= most:
            self.report(name, "SEEN.COUNT %d, outside [%d, %d]" % (count, least, most))

    def new_name(self):
        self.names += 1
        return "k%d" % self.names

    def rename(self, name):
        """RENAME a key, often right after an import's write (its
        compaction was noted under the old name): the key answers as before
        under its new one."""
        new = self.new_name()
        try:
            self.srv.c.rename(name, new)
        except redis.ResponseError as e:
            if "no such key" not in str(e):
                self.report(name, "error reply %r to RENAME" % str(e))
            return  # expired with everything it held
        self.keys[new] = self.keys.pop(name)
        self.keys[new]["log"].append("RENAME %s %s" % (name, new))
        if name in self.fp:
            self.fp[new] = self.fp.pop(name)

    def copy(self, name):
        """DUMP a key and RESTORE it under a new name: the copy answers as
        the key does, and lives on as a key of its own."""
        k = self.keys[name]
        dump = self.srv.c.dump(name)
        if dump is None:
            return  # expired with everything it held
        copy = self.new_name()
        ttl = self.srv.c.pttl(name)
        self.srv.c.restore(copy, ttl if ttl > 0 else 0, dump)
        probe = self.rng.sample(list(k["items"]), min(300, len(k["items"])))
        probe += ["copy-probe-%d" % i if not k["ints"] else 10 ** 15 + i for i in range(100)]
        body = "\n".join(map(str, probe))
        # Both asked as of one moment: on a fast clock a slice may end
        # between the two commands.
        digest = lambda: [self.srv.c.execute_command("DEBUG", "DIGEST-VALUE", x)
                          for x in (name, copy)]
        before = digest()
        at = self.srv.now() + 1
        a = self.cmd("SEEN.MFILTER", 1, name, "AT", at, "REPLY", "FLAGS", "BULK", body)
        b = self.srv.c.execute_command("SEEN.MFILTER", 1, copy, "AT", at, "REPLY", "FLAGS", "BULK",
                                       body)
        if a != b:
            # The same bytes answer the same.  A key and its copy may hold
            # different bytes when one was compacted after the DUMP (an
            # import's compaction is due for the key, found later by the
            # sweep for the copy): then only false positives may differ.
            digests = before + digest()
            must = set(self.must_see(k, at))
            differ = [i for i in range(len(probe)) if a[i:i + 1] != b[i:i + 1]]
            if (len(set(map(tuple, digests))) == 1 or k["error"] == 0 or
                    any(probe[i] in must for i in differ)):
                self.report(name, "a RESTOREd copy answers otherwise than its key: %d of %d"
                            " candidates, e.g. %r" % (len(differ), len(probe), probe[differ[0]]))
        self.keys[copy] = dict(k, items=dict(k["items"]), log=["RESTORE of %s" % name])

    def wait_no_child(self):
        """Until no RDB save or AOF rewrite runs (SAVE refuses to run
        beside one; an AOF grown past its limit starts one by itself)."""
        deadline = time.time() + 120
        while time.time() < deadline:
            p = self.srv.c.info("persistence")
            if not (p["rdb_bgsave_in_progress"] or p["aof_rewrite_in_progress"] or
                    p.get("aof_rewrite_scheduled")):
                return
            time.sleep(0.05)
        fail("a save or rewrite still running after 120 s")

    def save(self):
        """SAVE once no child runs.  A replica's full resync starts a
        background save of its own, between wait_no_child() and the SAVE
        too, which SAVE then refuses: wait for it and ask again."""
        deadline = time.time() + 120
        while True:
            self.wait_no_child()
            try:
                self.srv.c.save()
                return
            except redis.ResponseError as e:
                if "in progress" not in str(e) or time.time() > deadline:
                    raise
            time.sleep(0.05)

    def turn_knobs(self):
        """Move the resting forms' thresholds under the keys (and how soon
        an idle large key packs), and rewrite the AOF in chunks of some
        size, which the next restart from AOF then loads."""
        rng = self.rng
        c = self.srv.c
        c.config_set("seen.pack-max-bytes", rng.choice([0, 256, 2048, 8192, 8192, 65536]))
        c.config_set("seen.pack-idle-max-bytes", rng.choice([0, 4096, 1 << 20, 1 << 20]))
        c.config_set("seen.pack-idle-seconds", rng.choice([0, 0, 10, 86400]))
        if rng.random() < 0.5:
            self.wait_no_child()
            c.config_set("seen.aof-chunk", rng.choice([1024, 4096, 65536, 64 << 20]))
            # Without the RDB preamble the rewrite is commands: SEEN.LOAD.
            c.config_set("aof-use-rdb-preamble", rng.choice(["no", "no", "yes"]))
            c.bgrewriteaof()
            self.wait_no_child()

    def start_replica(self):
        """(Re)start the replica of the server as it now runs, its fast
        clock set to the server's: only then do keys that expire by TTL
        expire at about the same moment on both."""
        rep = self.replica
        if rep is None:
            return
        if rep.proc is not None and rep.proc.poll() is None:
            rep.stop()
        rep.last_ms = self.srv.now()
        rep.start(aof=False, extra=("--replicaof", "127.0.0.1", str(self.srv.port)))

    def compare_replica(self):
        """Once the replica has caught up, every key holds the same value
        on both (DEBUG DIGEST-VALUE hashes the serialized set), or is gone
        from both.  The server's own timers may write between the two
        digests: a difference counts only if the server wrote nothing
        meanwhile."""
        if self.replica is None:
            return
        m, rc = self.srv.c, self.replica.c
        # While writers are paused the server deletes no expired key: it
        # only hides it, and the replica keeps it until the DEL comes.  The
        # pause ends here, so the PTTL below deletes (and replicates) them.
        m.execute_command("CLIENT", "UNPAUSE")
        # The replica's clock is the server's give or take the moments
        # between their starts (hours, on a fast clock): a key that expires
        # by TTL within that of now is left out.
        skew = abs(server_ms(rc) - server_ms(m)) + 2 * DAY
        for name in self.keys:
            ttl = m.pttl(name)
            if 0 <= ttl < skew:
                continue
            for attempt in range(50):
                before = self.caught_up()
                ours = m.execute_command("DEBUG", "DIGEST-VALUE", name)
                theirs = rc.execute_command("DEBUG", "DIGEST-VALUE", name)
                if ours == theirs:
                    break
                if ours == ABSENT_DIGEST and 0 <= expired_or_ttl(rc, name) < skew:
                    # Redis itself drops a key found expired when it loads
                    # an RDB (DEBUG RELOAD, a restart) and sends no DEL: the
                    # replica keeps it, hidden from reads, for good.  Only a
                    # key that has expired, or will within the clocks'
                    # skew, by the replica's clock is excused.
                    self.dropped_at_load += 1
                    break
                if m.info("replication")["master_repl_offset"] == before:
                    self.report(name, "the replica holds another value (digest %s, the"
                                " server's %s)" % (theirs, ours))
            self.replicated += 1

    def caught_up(self):
        """Wait for the replica to have all the server has replicated;
        returns the server's offset it caught up with."""
        m, rc = self.srv.c, self.replica.c
        deadline = time.time() + 120
        while True:
            target = m.info("replication")["master_repl_offset"]
            info = rc.info("replication")
            if info.get("master_link_status") == "up" and info.get("slave_repl_offset",
                                                                    -1) >= target:
                return target
            if time.time() > deadline:
                fail("seed %d: the replica did not catch up in 120 s (%s)" % (
                    self.seed, self.replica.log_path))
            time.sleep(0.02)

    def restart(self):
        if self.rng.random() < 0.5:
            self.save()
            self.srv.stop()
            self.srv.start(aof=False)
            self.srv.c.config_set("appendonly", "yes")
            self.wait_no_child()
        else:
            self.srv.stop()
            self.srv.start(aof=True)
        self.start_replica()

    def run(self):
        self.srv.start(aof=True)
        self.start_replica()
        try:
            # Every run holds at least an EXACT key, an approximate one and
            # a capped one without a window, whatever the dice say later.
            self.make_key(exact=True)
            self.make_key(exact=False)
            self.make_key(capped=True)
            for _ in range(3):
                self.make_key()
            started = time.time()
            for step in range(self.args.steps):
                if time.time() - started > self.args.max_seconds:
                    print("adversary: seed %d: time limit after %d steps" % (self.seed, step))
                    break
                self.step()
            for name in self.keys:
                self.check(name, sample=2000)
            self.judge_fp()
            self.compare_replica()
            if self.replica:
                self.replica.stop()
            self.srv.stop()
        finally:
            self.srv.kill()
            if self.replica:
                self.replica.kill()
        log = open(self.srv.log_path).read()
        if self.replica:
            log += open(self.replica.log_path).read()
        for bad in ("refusing", "Unrecoverable", "crashed by signal", "ASSERTION", "Bad file format",
                    "Short read", "in the AOF failed"):
            if bad in log:
                fail("seed %d: the server log says %r (%s)" % (self.seed, bad, self.srv.log_path))
        print("adversary: seed %d: %d keys, %d steps, %d answers checked, %d candidates for"
              " false positives, %d counts, %d values compared with the replica (%d expired"
              " keys a load dropped left on it); slowest commands: %s" % (
            self.seed, len(self.keys), self.args.steps, self.checked,
            sum(t for _, t in self.fp.values()), self.counted, self.replicated,
            self.dropped_at_load,
            sorted(self.slow, reverse=True)[:3] or "none over %.2f s" % self.args.slow))

    def step(self):
        rng = self.rng
        name = rng.choice(list(self.keys))
        r = rng.random()
        if r < 0.30:
            self.add_live(name, rng.choice([1, 5, 20, 20, 20, 100]))
        elif r < 0.36:
            self.add_live(name, rng.choice([2000, 20000]), reuse=0.05)
        elif r < 0.37:
            self.add_live(name, self.args.huge, reuse=0.0)
        elif r < 0.49:
            self.add_past(name, rng.choice([10, 200, 5000, 30000]))
        elif r < 0.54:
            self.delete(name)
        elif r < 0.59:
            self.cmd("SEEN.COMPACT", name)
        elif r < 0.73:
            self.check(name)
        elif r < 0.74:
            self.compare_replica()
        elif r < 0.77:
            self.wait_no_child()
            self.srv.c.execute_command("DEBUG", "RELOAD")
        elif r < 0.79:
            self.restart()
        elif r < 0.81:
            self.make_key()
        elif r < 0.83:
            # A fresh capped key whose first write is an import.
            self.make_key(capped=True)
            name = list(self.keys)[-1]
            self.add_past(name, rng.choice([300, 3000]))
            self.check(name)
        elif r < 0.85:
            self.copy(name)
        elif r < 0.86:
            self.turn_knobs()
        elif r < 0.87:
            if rng.random() < 0.5:
                self.add_past(name, rng.choice([10, 200, 5000]))
            self.rename(name)
        elif r < 0.90:
            # Hours to days pass, now and then with writers paused (as
            # FAILOVER and SHUTDOWN pause them): the server's own timers
            # must wait, and the writes after it wait for the pause's end.
            pause = rng.random() < 0.3
            if pause:
                self.srv.c.execute_command("CLIENT", "PAUSE", rng.choice([100, 500, 1500]), "WRITE")
            time.sleep(rng.choice([0.05, 0.3, 1.0]))
        else:
            self.add_live(name, 20)

    def judge_fp(self):
        for name, (hits, tries) in self.fp.items():
            e = self.keys[name]["error"]
            allowed = e * tries + 4 * (e * tries) ** 0.5 + 2
            if hits > allowed:
                self.report(name, "%d of %d candidates (forgotten or never added) reported seen;"
                            " the error rate allows about %.0f" % (hits, tries, allowed))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3", help="comma-separated seeds, one run each")
    ap.add_argument("--steps", type=int, default=150, help="steps per seed")
    ap.add_argument("--factor", type=float, default=20000, help="how fast the clock runs")
    ap.add_argument("--huge", type=int, default=300000, help="items in the largest batch")
    ap.add_argument("--max-seconds", type=float, default=150, help="per seed, then stop early")
    ap.add_argument("--slow", type=float, default=0.25, help="list commands slower than this")
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "seen.so"))
    ap.add_argument("--no-replica", dest="replica", action="store_false",
                    help="run without a replica following the server")
    args = ap.parse_args()
    args.module = os.path.abspath(args.module)  # the server runs in its own directory
    for seed in [int(s) for s in args.seeds.split(",")]:
        directory = tempfile.mkdtemp(prefix="seen-adversary-")
        Run(seed, args, directory).run()  # on a failure the directory stays, log and all
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
