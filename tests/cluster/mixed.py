"""mixed.py — a seeded mixed SEEN.* workload over a cluster, every answer
held against the reference model (model.py).

Each worker thread owns its users outright (no other thread touches their
keys), so its model of them is exact in order.  A user has three keys
sharing the hash tag {u:N}; each is made with a policy drawn from TEMPLATES
(exact and approximate, windows of seconds or days, count caps, integer
ids, module-managed key expiry).  Operations: SEEN.INSERT (ITEMS/BULK, AT
in the past), SEEN.ADD, SEEN.DEL/REMOVE (on exact keys), SEEN.RESERVE,
SEEN.FILTER, SEEN.MFILTER over the user's keys (AT, every reply form),
SEEN.COUNT, SEEN.INFO, COPY and DEL of whole keys, and large bulk inserts
that push memory to maxmemory.  Every write is acknowledged by a replica
(router.py's WAIT); a write refused (OOM under maxmemory) changes nothing;
a write whose outcome is unknown (its master was killed) resets the key
with DEL, and the model forgets it.  All items are decimal integers, so
STR and INT keys can be filtered together.
"""
import random
import threading
import time
import traceback

import redis

from model import DAY, Judge, KeyModel, Policy
from router import Router, Uncertain

TEMPLATES = [
    Policy(window=90 * DAY, slices=4, error=0.01, capacity=0, ids="str", exact_limit=32),
    Policy(window=0, slices=4, error=0, capacity=100, ids="str"),
    Policy(window=20000, slices=4, error=0, capacity=0, ids="int", expiry=True, jitter=1000),
    Policy(window=30000, slices=2, error=0, capacity=0, ids="str"),
    Policy(window=40000, slices=3, error=0.001, capacity=300, ids="str", exact_limit=16),
    Policy(window=0, slices=1, error=0, capacity=0, ids="int"),
]
BIG = Policy(window=90 * DAY, slices=4, error=0.001, capacity=0, ids="str")
KEYS = ("a", "b", "c")
POOL = 3000            # a user's items come from 1..POOL, so they repeat
FRESH = 10 ** 12       # candidates from here up were never added
OPS = {"insert": 24, "add": 10, "remove": 8, "filter": 18, "mfilter": 18, "count": 6,
       "info": 3, "delkey": 3, "reserve": 3, "copy": 2, "bulk": 5}


def now_ms():
    return time.time() * 1000


class Stats:
    def __init__(self):
        self.ops = dict.fromkeys(OPS, 0)
        self.writes_acked = 0
        self.oom = 0
        self.acked_after_oom = 0
        self.uncertain = 0
        self.resets = 0


class Worker(threading.Thread):
    def __init__(self, ports, users, seed, deadline, big_every=10):
        super().__init__(daemon=True)
        self.router = Router(ports, acks=1)
        self.users = users
        self.rng = random.Random(seed)
        self.deadline = deadline
        self.big_every = big_every
        self.models = {}       # key -> KeyModel (absent: no key)
        self.unsure = set()    # keys whose existence is unknown (module expiry)
        self.judge = Judge()
        self.stats = Stats()
        self.error = None

    # ------------------------------------------------------------ plumbing
    def key(self, user, name):
        return "{u:%d}%s" % (user, name)

    def user_keys(self, user):
        return [self.key(user, n) for n in KEYS]

    def run(self):
        try:
            ops, weights = list(OPS), list(OPS.values())
            while time.monotonic() < self.deadline and self.judge.failures == 0:
                op = self.rng.choices(ops, weights)[0]
                user = self.rng.choice(self.users)
                getattr(self, "op_" + op)(user)
                self.stats.ops[op] += 1
        except BaseException:
            self.error = traceback.format_exc()
        finally:
            self.router.close()

    def write(self, key, *args, reset_on_uncertain=True):
        """A write acknowledged by a replica; None if it was refused for
        memory (OOM); raises ResponseError for other refusals.  An unknown
        outcome resets the key."""
        try:
            reply = self.router.write(key, *args)
        except Uncertain:
            self.stats.uncertain += 1
            if reset_on_uncertain:
                self.reset(key)
            return Uncertain
        except redis.ResponseError as e:
            if str(e).startswith("OOM"):
                self.stats.oom += 1
                if self.rng.random() < 0.5:
                    self.free_memory()
                return None
            raise
        self.stats.writes_acked += 1
        if self.stats.oom:
            self.stats.acked_after_oom += 1
        return reply

    def reset(self, key):
        """DEL the key until a replica acknowledges it; forget it."""
        for _ in range(20):
            try:
                self.router.write(key, "DEL", key)
                break
            except Uncertain:
                time.sleep(0.2)
        else:
            raise AssertionError("could not reset %s" % key)
        self.stats.resets += 1
        self.models.pop(key, None)
        self.unsure.discard(key)

    def free_memory(self):
        """Drop this worker's largest key (DEL is allowed over maxmemory)."""
        if self.models:
            key = max(self.models, key=lambda k: len(self.models[k].items))
            self.reset(key)

    def items(self, n, model=None):
        """n distinct items: some the key holds, the rest from the pool."""
        out = set()
        if model is not None and model.items and self.rng.random() < 0.5:
            known = list(model.items)
            out.update(self.rng.sample(known, min(len(known), n // 2)))
        while len(out) < n:
            out.add(str(self.rng.randrange(1, POOL)))
        return list(out)

    def candidates(self, models):
        cands = set()
        for m in models:
            if m is not None and m.items:
                known = list(m.items)
                cands.update(self.rng.sample(known, min(len(known), 25)))
        cands.update(str(self.rng.randrange(1, POOL)) for _ in range(15))
        cands.update(str(FRESH + self.rng.randrange(FRESH)) for _ in range(20))
        cands = list(cands)
        self.rng.shuffle(cands)
        return cands

    def existing(self, key):
        """The model of a key known to exist (not one that may have expired)."""
        return None if key in self.unsure else self.models.get(key)

    def new_model(self, key, policy):
        self.models[key] = KeyModel(policy)
        if policy.expiry:
            # The module may delete it whenever all it holds is forgotten.
            self.unsure.add(key)
        else:
            self.unsure.discard(key)
        return self.models[key]

    def pick_policy(self, user, name):
        if name == "c" and user % self.big_every == 0:
            return BIG
        return self.rng.choice(TEMPLATES)

    # ------------------------------------------------------------ writes
    def op_insert(self, user, name=None, n=None, bulk=None):
        name = name or self.rng.choice(KEYS)
        key = self.key(user, name)
        model = self.models.get(key)
        policy = model.policy if model else self.pick_policy(user, name)
        items = self.items(n or self.rng.choice([1, 2, 5, 20, 100]), model)
        at = None
        if policy.window and not policy.capacity and self.rng.random() < 0.3:
            at = int(now_ms() - self.rng.random() * 1.3 * min(policy.window, 60000))
        args = ["SEEN.INSERT", key] + (["AT", at] if at is not None else []) + policy.args()
        if bulk if bulk is not None else self.rng.random() < 0.5:
            args += ["BULK", "\n".join(items)]
        else:
            args += ["ITEMS", *items]
        lo = now_ms()
        reply = self.write(key, *args)
        hi = now_ms()
        if reply is None or reply is Uncertain:
            return
        model = model or self.new_model(key, policy)
        self.judge.within(key, "INSERT reply", reply, model.add_bounds(items, lo, hi, at))
        model.add(items, lo, hi, at)

    def op_add(self, user):
        key = self.key(user, self.rng.choice(KEYS))
        model = self.existing(key)
        if model is None:
            return self.op_insert(user)
        items = self.items(self.rng.choice([1, 3, 10]), model)
        at = None
        if model.policy.window and not model.policy.capacity and self.rng.random() < 0.3:
            at = int(now_ms() - self.rng.random() * 1.3 * min(model.policy.window, 60000))
        lo = now_ms()
        reply = self.write(key, "SEEN.ADD", key, *(["AT", at] if at is not None else []), *items)
        hi = now_ms()
        if reply is None or reply is Uncertain:
            return
        self.judge.within(key, "ADD reply", reply, model.add_bounds(items, lo, hi, at))
        model.add(items, lo, hi, at)

    def op_bulk(self, user):
        """Thousands of new items into the user's big key: memory grows."""
        big = [u for u in self.users if u % self.big_every == 0]
        if not big:
            return
        user = self.rng.choice(big)
        key = self.key(user, "c")
        model = self.models.get(key)
        if model is not None and model.policy != BIG:
            self.reset(key)
        n = self.rng.randrange(2000, 6000)
        items = [str(self.rng.randrange(POOL, FRESH)) for _ in range(n)]
        lo = now_ms()
        reply = self.write(key, "SEEN.INSERT", key, *BIG.args(), "BULK", "\n".join(items))
        hi = now_ms()
        if reply is None or reply is Uncertain:
            return
        (self.models.get(key) or self.new_model(key, BIG)).add(items, lo, hi)

    def op_remove(self, user):
        key = self.key(user, self.rng.choice(KEYS))
        model = self.models.get(key)
        if model is None or model.policy.approx:
            return  # removing from an approximate set may forget a twin
        items = self.items(self.rng.choice([1, 3, 10]), model)
        lo = now_ms()
        if self.rng.random() < 0.5:
            reply = self.write(key, "SEEN.DEL", key, *items)
        else:
            reply = self.write(key, "SEEN.REMOVE", key, "BULK", "\n".join(items))
        hi = now_ms()
        if reply is Uncertain:
            return
        self.judge.within(key, "DEL reply", reply, model.remove_bounds(items, lo, hi))
        model.remove(items)

    def op_reserve(self, user):
        name = self.rng.choice(KEYS)
        key = self.key(user, name)
        policy = self.pick_policy(user, name)
        try:
            reply = self.write(key, "SEEN.RESERVE", key, *policy.args())
        except redis.ResponseError as e:
            self.judge.check(key, "already exists" in str(e) and key in self.models,
                             "RESERVE refused: %s" % e)
            return
        if reply is None or reply is Uncertain:
            return
        self.judge.check(key, key not in self.models or key in self.unsure,
                         "RESERVE made a key the model holds")
        self.new_model(key, policy)

    def op_delkey(self, user):
        key = self.key(user, self.rng.choice(KEYS))
        reply = self.write(key, "DEL", key)
        if reply is Uncertain:
            return
        if key not in self.unsure:
            self.judge.within(key, "DEL", reply, (int(key in self.models),) * 2)
        self.models.pop(key, None)
        self.unsure.discard(key)

    def op_copy(self, user):
        src, dst = self.rng.sample(self.user_keys(user), 2)
        model = self.existing(src)
        if model is None:
            return
        reply = self.write(dst, "COPY", src, dst, "REPLACE", reset_on_uncertain=False)
        if reply is Uncertain:
            self.reset(dst)
            return
        if reply is None:
            return
        self.judge.check(dst, reply == 1, "COPY answered %r" % reply)
        self.models[dst] = model.copy()
        self.unsure.discard(dst)

    # ------------------------------------------------------------ reads
    def op_filter(self, user):
        key = self.key(user, self.rng.choice(KEYS))
        model = self.models.get(key)
        cands = self.candidates([model])
        lo = now_ms()
        unseen = self.router.read(key, "SEEN.FILTER", key, *cands)
        hi = now_ms()
        unseen = {x.decode() for x in unseen}
        self.judge.flags(key, [model], cands, [int(c not in unseen) for c in cands], lo, hi)

    def op_mfilter(self, user, keys=None, at=None):
        keys = keys or self.rng.sample(self.user_keys(user), self.rng.randrange(1, 4))
        models = [self.models.get(k) for k in keys]
        cands = self.candidates(models)
        form = self.rng.choice(["UNSEEN", "FLAGS", "INDEXES"])
        args = ["SEEN.MFILTER", len(keys), *keys]
        if at is None and self.rng.random() < 0.3:
            at = int(now_ms() + self.rng.random() * 40000)
        if at is not None:
            args += ["AT", at]
        args += ["REPLY", form]
        args += ["BULK", "\n".join(cands)] if self.rng.random() < 0.5 else ["ITEMS", *cands]
        lo = now_ms()
        reply = self.router.read(keys[0], *args)
        hi = now_ms()
        if at is not None:
            lo = hi = at
        if form == "FLAGS":
            got = [b - ord("0") for b in reply]
        elif form == "INDEXES":
            got = [0] * len(cands)
            for i in reply:
                got[i] = 1
        else:
            unseen = {x.decode() for x in reply}
            got = [int(c not in unseen) for c in cands]
        self.judge.flags(",".join(keys), models, cands, got, lo, hi)

    def op_count(self, user):
        key = self.key(user, self.rng.choice(KEYS))
        model = self.models.get(key)
        lo = now_ms()
        count = self.router.read(key, "SEEN.COUNT", key)
        hi = now_ms()
        bounds = model.count_bounds(lo, hi) if model else (0, 0)
        self.judge.within(key, "COUNT", count, bounds)

    def op_info(self, user):
        key = self.key(user, self.rng.choice(KEYS))
        model = self.models.get(key)
        try:
            info = self.router.read(key, "SEEN.INFO", key)
        except redis.ResponseError as e:
            if "no such key" in str(e) and (model is None or key in self.unsure):
                return
            raise
        policy = dict(zip((k.decode() for k in info[1][0::2]), info[1][1::2]))
        self.judge.check(key, model is not None and model.policy.matches_info(policy),
                         "INFO policy %r" % policy)

    # ------------------------------------------------------------ the end
    def verify_all(self):
        """Every model item of every key, and fresh candidates, one last time."""
        router = Router(self.router.known, acks=1)
        try:
            for user in self.users:
                for key in self.user_keys(user):
                    model = self.models.get(key)
                    cands = list(model.items) if model else []
                    cands += [str(FRESH + self.rng.randrange(FRESH)) for _ in range(50)]
                    lo = now_ms()
                    flags = router.read(key, "SEEN.MFILTER", 1, key, "REPLY", "FLAGS", "BULK",
                                        "\n".join(cands))
                    hi = now_ms()
                    self.judge.flags("final " + key, [model], cands, [b - ord("0") for b in flags],
                                     lo, hi)
        finally:
            router.close()


def run_workers(ports, seconds, workers=3, users_per_worker=150, seed=1):
    """Start the workers (they stop by themselves after `seconds`)."""
    deadline = time.monotonic() + seconds
    out = []
    for w in range(workers):
        users = list(range(w, workers * users_per_worker, workers))
        out.append(Worker(ports, users, seed * 1000 + w, deadline))
    for w in out:
        w.start()
    return out
