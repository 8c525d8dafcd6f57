"""model.py — a reference model of one seen set, to judge SEEN.* answers.

It holds only what include/seen.h promises.  For an item last added at a
time t that the client knows to lie in [lo, hi] (the server's clock while
the command ran), window W, S slices, capacity C:

- seen (must) while q < lo + W, if the add surely stored it (lo + W is
  past the write's own clock, else the item may have been ignored as
  already forgotten), and, with a capacity, while it is among the C most
  recently added distinct items;
- not seen (must) once q >= hi + W * (1 + 1/S), after it was removed, or if
  it was never added — except, in a set with an error rate, as a false
  positive, which the caller counts instead of failing;
- anything in between may go either way.

Capacity keys are written without AT, so "most recent" is arrival order.
Removed items keep their place in that order: counting them can only make
fewer items "must be kept", never more.
"""
import bisect
from dataclasses import dataclass

DAY = 86400000
# Client and server read the same clock, but not at the same instant.
SLACK_MS = 3


@dataclass(frozen=True)
class Policy:
    window: int          # ms; 0: no time limit
    slices: int
    error: float         # 0: exact
    capacity: int        # 0: no cap
    ids: str             # "str" or "int"
    exact_limit: int = 128
    expiry: bool = False
    jitter: int = 0

    @property
    def approx(self):
        return self.error > 0

    def args(self):
        """The options that make a key with this policy."""
        a = ["WINDOW", self.window, "SLICES", self.slices]
        a += ["EXACT"] if self.error == 0 else ["ERROR", repr(self.error)]
        a += ["CAPACITY", self.capacity, "IDS", self.ids.upper(), "EXACTLIMIT", self.exact_limit,
              "EXPIRY", "ON" if self.expiry else "OFF"]
        return a + (["JITTER", self.jitter] if self.expiry else [])

    def matches_info(self, policy):
        """Does SEEN.INFO's policy map (bytes keys) describe this policy?"""
        return (policy["window-ms"] == self.window and policy["slices"] == self.slices and
                float(policy["error"]) == self.error and policy["capacity"] == self.capacity and
                policy["ids"].decode() == self.ids and policy["exact-limit"] == self.exact_limit
                and policy["expiry"] == (b"on" if self.expiry else b"off"))


class Entry:
    __slots__ = ("lo", "hi", "seq", "removed")

    def __init__(self, lo, hi, seq):
        self.lo, self.hi, self.seq, self.removed = lo, hi, seq, False


class KeyModel:
    """What one key must, may and must not answer."""

    def __init__(self, policy):
        self.policy = policy
        self.items = {}
        self.seq = 0
        self._order = None  # sorted seqs, for capacity ranks

    def copy(self):
        other = KeyModel(self.policy)
        for item, e in self.items.items():
            c = Entry(e.lo, e.hi, e.seq)
            c.removed = e.removed
            other.items[item] = c
        other.seq = self.seq
        return other

    def surely_stored(self, lo, hi, at):
        """Is an add at [lo, hi] (AT at) kept, not ignored as forgotten?"""
        t_lo = lo if at is None else min(at, lo)
        return self.policy.window == 0 or t_lo - SLACK_MS + self.policy.window > hi + SLACK_MS

    def add(self, items, lo, hi, at=None):
        """Items added by a write the server ran at a time in [lo, hi]."""
        sure = self.surely_stored(lo, hi, at)
        lo, hi = lo - SLACK_MS, hi + SLACK_MS
        t_lo = lo if at is None else min(at, lo)
        t_hi = hi if at is None else min(at, hi)
        for item in items:
            self.seq += 1
            e = self.items.get(item)
            if e is None or e.removed:
                self.items[item] = Entry(t_lo if sure else None, t_hi, self.seq)
                continue
            if sure and (e.lo is None or t_lo > e.lo):
                e.lo = t_lo
            e.hi = max(e.hi, t_hi)
            e.seq = self.seq
        self._order = None

    def remove(self, items):
        for item in items:
            e = self.items.get(item)
            if e is not None:
                e.removed = True

    def _rank(self, seq):
        """How many distinct items were added after this one."""
        if self._order is None:
            self._order = sorted(e.seq for e in self.items.values())
        return len(self._order) - bisect.bisect_right(self._order, seq)

    def expect(self, item, q_lo, q_hi):
        """1: must be seen, 0: must not (but for false positives), None:
        either, for a query the server ran at a time in [q_lo, q_hi]."""
        e = self.items.get(item)
        if e is None or e.removed:
            return 0
        p = self.policy
        q_lo, q_hi = q_lo - SLACK_MS, q_hi + SLACK_MS
        if p.window and q_lo >= e.hi + p.window * (1 + 1 / p.slices):
            return 0
        must = p.window == 0 or (e.lo is not None and q_hi < e.lo + p.window)
        if must and p.capacity:
            must = self._rank(e.seq) < p.capacity
        return 1 if must else None

    def add_bounds(self, items, lo, hi, at=None):
        """SEEN.ADD's reply (distinct items not seen before), asked before
        the add: at least those that must be new and are surely stored (an
        approximate set may find a fingerprint already there), at most
        those not certainly seen."""
        exp = [self.expect(item, lo, hi) for item in items]
        new = exp.count(0) if self.surely_stored(lo, hi, at) and not self.policy.approx else 0
        return new, len(exp) - exp.count(1)

    def remove_bounds(self, items, lo, hi):
        """SEEN.DEL's reply (distinct items that were seen)."""
        exp = [self.expect(item, lo, hi) for item in items]
        return exp.count(1), len(exp) - exp.count(0)

    def count_bounds(self, q_lo, q_hi):
        """SEEN.COUNT's range: the items that must be held, to those that may."""
        exp = [self.expect(item, q_lo, q_hi) for item in self.items]
        must, may = exp.count(1), len(exp) - exp.count(0)
        if self.policy.approx:  # items sharing a fingerprint count once
            must = int(must * (1 - 4 * self.policy.error)) - 2
        return must, may


def expect_any(models, item, q_lo, q_hi):
    """A multi-key filter's expectation: seen if any key has seen it."""
    exp = [m.expect(item, q_lo, q_hi) for m in models if m is not None]
    if 1 in exp:
        return 1
    return 0 if all(e == 0 for e in exp) else None


class Judge:
    """Counts checks, tolerated false positives (with their budget: the sum
    of the error rates they were allowed at) and mismatches."""

    def __init__(self):
        self.checks = 0
        self.false_positives = 0
        self.fp_budget = 0.0
        self.failures = 0
        self.mismatches = []

    def merge(self, other):
        self.checks += other.checks
        self.false_positives += other.false_positives
        self.fp_budget += other.fp_budget
        self.failures += other.failures
        self.mismatches += other.mismatches

    def flags(self, where, models, cands, got, q_lo, q_hi):
        """got: one 0/1 per candidate, as the server answered."""
        errors = sum(m.policy.error for m in models if m is not None)
        for item, seen in zip(cands, got):
            want = expect_any(models, item, q_lo, q_hi)
            self.checks += 1
            if want == 0 and errors:
                self.fp_budget += errors
            if want is None or want == seen:
                continue
            if want == 0 and errors:
                self.false_positives += 1
            else:
                self.fail(where, "%s: want %s, got %s" % (item, want, seen))

    def within(self, where, what, value, bounds):
        self.check(where, bounds[0] <= value <= bounds[1],
                   "%s %s not in %s" % (what, value, bounds))

    def check(self, where, ok, text):
        self.checks += 1
        if not ok:
            self.fail(where, text)

    def fail(self, where, text):
        self.failures += 1
        if len(self.mismatches) < 50:
            self.mismatches.append("%s: %s" % (where, text))

    def fp_ok(self):
        return self.false_positives <= 2 * self.fp_budget + 10
