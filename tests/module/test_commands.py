"""test_commands.py — every SEEN.* command, option, reply form and error."""
import random

import pytest
import redis

from conftest import info_map, raw, server_ms
from payloads import dump

ERR = redis.ResponseError
DAY = 86400000


def policy(r, key):
    return info_map(r.execute_command("SEEN.INFO", key))["policy"]


def digest(r, key):
    return r.execute_command("DEBUG", "DIGEST-VALUE", key)[0]


# ---------------------------------------------------------------- RESERVE

def test_reserve_defaults_and_exists(r):
    assert r.execute_command("SEEN.RESERVE", "k") == b"OK"
    p = policy(r, "k")
    assert p["window-ms"] == 90 * DAY and p["slices"] == 4
    assert float(p["error"]) == 0.001 and p["capacity"] == 0 and p["ids"] == b"str"
    assert p["expiry"] == b"off"
    with pytest.raises(ERR, match="key already exists"):
        r.execute_command("SEEN.RESERVE", "k")
    r.set("s", "x")
    with pytest.raises(ERR, match="key already exists"):
        r.execute_command("SEEN.RESERVE", "s")


@pytest.mark.parametrize("text,ms", [
    ("1500", 1500), ("500ms", 500), ("30s", 30000), ("10m", 600000),
    ("36h", 36 * 3600000), ("90d", 90 * DAY), ("7D", 7 * DAY), ("0", 0)])
def test_reserve_window_units(r, text, ms):
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", text)
    assert policy(r, "k")["window-ms"] == ms


def test_reserve_all_options(r):
    r.execute_command("SEEN.RESERVE", "k", "window", "30d", "SLICES", "8", "ERROR", "0.01",
                      "CAPACITY", "1000", "IDS", "INT", "EXACTLIMIT", "64", "EXPIRY", "ON",
                      "JITTER", "1h")
    p = policy(r, "k")
    assert (p["window-ms"], p["slices"], float(p["error"]), p["capacity"], p["ids"],
            p["exact-limit"], p["expiry"], p["jitter-ms"]) == (
        30 * DAY, 8, 0.01, 1000, b"int", 64, b"on", 3600000)
    r.execute_command("SEEN.RESERVE", "e", "EXACT")
    assert float(policy(r, "e")["error"]) == 0.0


@pytest.mark.parametrize("args,message", [
    (["WINDOW", "10x"], "bad window"),
    (["WINDOW", "-5"], "bad window"),
    (["WINDOW", "1.5h"], "bad window"),
    (["WINDOW", "99999999999999999999999"], "bad window"),
    (["WINDOW", "40000d"], "bad window"),
    (["WINDOW", "2", "SLICES", "4"], "bad window"),
    (["WINDOW"], "bad window"),
    (["SLICES", "0"], "bad slices"),
    (["SLICES", "0"], "bad slices"),
    (["SLICES", "65"], "bad slices"),
    (["SLICES", "x"], "bad slices"),
    (["ERROR", "0"], r"error rate must be in \(0, 0.5\)"),
    (["ERROR", "0.5"], r"error rate must be in \(0, 0.5\)"),
    (["ERROR", "0.7"], r"error rate must be in \(0, 0.5\)"),
    (["ERROR", "-0.1"], r"error rate must be in \(0, 0.5\)"),
    (["ERROR", "1e-10"], r"error rate must be in \(0, 0.5\)"),
    (["ERROR", "nan"], r"error rate must be in \(0, 0.5\)"),
    (["ERROR", "x"], r"error rate must be in \(0, 0.5\)"),
    (["CAPACITY", "-1"], "capacity"),
    (["CAPACITY", "4294967297"], "capacity"),
    (["IDS", "FLOAT"], "IDS must be STR or INT"),
    (["EXACTLIMIT", "x"], "EXACTLIMIT"),
    (["EXACTLIMIT", "4294967296"], "EXACTLIMIT must be an integer from 0 to 2147483648"),
    (["EXPIRY", "MAYBE"], "EXPIRY must be ON or OFF"),
    (["WINDOW", "0", "EXPIRY", "ON"], "EXPIRY ON needs a WINDOW"),
    (["JITTER", "x"], "bad jitter"),
    (["NOW", "x"], "bad NOW"),
    (["COLOR", "red"], "unknown option 'COLOR' for SEEN.RESERVE"),
])
def test_reserve_errors(r, args, message):
    with pytest.raises(ERR, match=message):
        r.execute_command("SEEN.RESERVE", "k", *args)
    assert not r.exists("k")


def test_wrong_arity(r):
    for cmd in (["SEEN.RESERVE"], ["SEEN.ADD", "k"], ["SEEN.FILTER", "k"], ["SEEN.DEL", "k"],
                ["SEEN.INSERT", "k", "ITEMS"], ["SEEN.MFILTER", "1", "k", "ITEMS"],
                ["SEEN.COUNT"], ["SEEN.INFO", "a", "b"], ["SEEN.LOAD", "k"],
                ["SEEN.REMOVE", "k", "ITEMS"]):
        with pytest.raises(ERR, match="wrong number of arguments"):
            r.execute_command(*cmd)


# ---------------------------------------------------------------- ADD

def test_add_counts_new_items(r):
    assert r.execute_command("SEEN.ADD", "k", "a", "b", "c") == 3
    assert r.execute_command("SEEN.ADD", "k", "a", "d", "d") == 1
    assert r.execute_command("SEEN.COUNT", "k") == 4
    assert r.type("k") == b"seen--set"


def test_add_creates_with_config_defaults(r):
    r.config_set("seen.default-window", "7d")
    r.config_set("seen.default-error", "exact")
    try:
        r.execute_command("SEEN.ADD", "k", "a")
        p = policy(r, "k")
        assert p["window-ms"] == 7 * DAY and float(p["error"]) == 0.0
    finally:
        r.config_set("seen.default-window", "90d")
        r.config_set("seen.default-error", "0.001")


def test_add_at(r):
    now = server_ms(r)
    assert r.execute_command("SEEN.RESERVE", "k", "WINDOW", "1d") == b"OK"
    # Two days old: already forgotten, so ignored.
    assert r.execute_command("SEEN.ADD", "k", "AT", now - 2 * DAY, "old") == 0
    assert r.execute_command("SEEN.ADD", "k", "AT", now - 3600000, "recent") == 1
    # Later than now counts as now.
    assert r.execute_command("SEEN.ADD", "k", "AT", now + 10 * DAY, "future") == 1
    assert r.execute_command("SEEN.FILTER", "k", "old", "recent", "future") == [b"old"]
    with pytest.raises(ERR, match="bad AT"):
        r.execute_command("SEEN.ADD", "k", "AT", "yesterday", "x")
    with pytest.raises(ERR, match="bad AT"):
        r.execute_command("SEEN.ADD", "k", "AT", "-1", "x")
    with pytest.raises(ERR, match="wrong number of arguments"):
        r.execute_command("SEEN.ADD", "k", "AT", now)


def test_add_item_named_like_option(r):
    # Only the argument right after the key can be AT; elsewhere it is an item.
    assert r.execute_command("SEEN.ADD", "k", "x", "AT", "ITEMS") == 3
    assert r.execute_command("SEEN.FILTER", "k", "AT", "ITEMS", "x", "y") == [b"y"]


def test_add_bad_items_change_nothing(r):
    r.execute_command("SEEN.ADD", "k", "a")
    before = digest(r, "k")
    with pytest.raises(ERR, match="1 to 512 bytes"):
        r.execute_command("SEEN.ADD", "k", "b", "x" * 513)
    with pytest.raises(ERR, match="1 to 512 bytes"):
        r.execute_command("SEEN.ADD", "k", "b", "")
    assert digest(r, "k") == before
    with pytest.raises(ERR, match="1 to 512 bytes"):
        r.execute_command("SEEN.ADD", "new", "x" * 513)
    assert not r.exists("new")
    assert r.execute_command("SEEN.ADD", "k", "x" * 512) == 1


def test_add_wrongtype(r):
    r.set("s", "x")
    with pytest.raises(ERR, match="WRONGTYPE"):
        r.execute_command("SEEN.ADD", "s", "a")


def test_int_ids(r):
    r.execute_command("SEEN.RESERVE", "k", "IDS", "INT", "EXACT")
    assert r.execute_command("SEEN.ADD", "k", "0", "42", "18446744073709551615", "042") == 3
    assert r.execute_command("SEEN.FILTER", "k", "42", "43", "18446744073709551615") == [b"43"]
    before = digest(r, "k")
    for bad in ("-1", "18446744073709551616", "4x", "+5", " 5", "1.0"):
        with pytest.raises(ERR, match="decimal integers"):
            r.execute_command("SEEN.ADD", "k", "7", bad)
        with pytest.raises(ERR, match="decimal integers"):
            r.execute_command("SEEN.FILTER", "k", bad)
    assert digest(r, "k") == before
    assert r.execute_command("SEEN.DEL", "k", "42", "43") == 1


def test_batch_limit(r):
    r.config_set("seen.max-batch", 10)
    try:
        items = ["i%d" % i for i in range(11)]
        for cmd in (["SEEN.ADD", "k"], ["SEEN.FILTER", "k"], ["SEEN.DEL", "k"],
                    ["SEEN.MFILTER", "1", "k", "ITEMS"]):
            with pytest.raises(ERR, match=r"larger than seen.max-batch \(10\)"):
                r.execute_command(*cmd, *items)
        with pytest.raises(ERR, match=r"batch of 11 items is larger than seen.max-batch"):
            r.execute_command("SEEN.INSERT", "k", "BULK", "\n".join(items))
        with pytest.raises(ERR, match=r"batch of 40 items is larger than seen.max-batch"):
            r.execute_command("SEEN.INSERT", "k", "BULK", "\n".join("x" * (i % 19 + 1)
                                                                    for i in range(40)))
        assert not r.exists("k")
        assert r.execute_command("SEEN.ADD", "k", *items[:10]) == 10
    finally:
        r.config_set("seen.max-batch", 1000000)


def test_bulk_lines_split_at_every_newline(r):
    """A BULK argument's lines are its items wherever the newlines fall
    (the splitter reads sixteen bytes at a time): a missing key has seen
    none, so REPLY BULK hands every line back."""
    rng = random.Random(7)
    for count in (1, 2, 15, 16, 17, 100, 1000):
        lines = ["".join(rng.choice("abcxyz0123") for _ in range(rng.choice((1, 2, 15, 16, 17,
                                                                             rng.randint(1, 60)))))
                 for _ in range(count)]
        for tail in ("", "\n"):
            body = "\n".join(lines) + tail
            assert r.execute_command("SEEN.MFILTER", 1, "nokey", "REPLY", "BULK", "BULK",
                                     body) == ("\n".join(lines) + "\n").encode()
            flags = r.execute_command("SEEN.MFILTER", 1, "nokey", "REPLY", "FLAGS", "BULK", body)
            assert flags == b"0" * count


def test_reply_bulk_copies_runs_of_unseen_lines(r):
    """REPLY BULK copies lines that are unseen one after another at once:
    every pattern of seen and unseen (runs at either end, single lines, all
    or none seen) gives the unseen lines in order, each with its newline,
    from BULK as from ITEMS."""
    rng = random.Random(11)
    stored = ["s%d-%s" % (i, "x" * rng.randint(0, 30)) for i in range(300)]
    r.execute_command("SEEN.ADD", "runs", *stored)
    for share in (0.0, 0.1, 0.5, 0.9, 1.0):
        for count in (1, 2, 3, 50, 400):
            cands = [rng.choice(stored) if rng.random() < share else
                     "u%d-%s" % (rng.randrange(10**9), "y" * rng.randint(0, 30))
                     for _ in range(count)]
            flags = r.execute_command("SEEN.MFILTER", 1, "runs", "REPLY", "FLAGS", "ITEMS", *cands)
            want = "".join(c + "\n" for c, f in zip(cands, flags.decode()) if f == "0").encode()
            for tail in ("", "\n"):
                assert r.execute_command("SEEN.MFILTER", 1, "runs", "REPLY", "BULK", "BULK",
                                         "\n".join(cands) + tail) == want
            assert r.execute_command("SEEN.MFILTER", 1, "runs", "REPLY", "BULK", "ITEMS",
                                     *cands) == want


# ---------------------------------------------------------------- INSERT

def test_insert_items_and_bulk(r):
    assert r.execute_command("SEEN.INSERT", "k", "ITEMS", "a", "b") == 2
    assert r.execute_command("SEEN.INSERT", "k", "BULK", "b\nc\nd\n") == 2
    assert r.execute_command("SEEN.INSERT", "k", "ITEMS", "ITEMS", "BULK", "AT") == 3
    assert r.execute_command("SEEN.COUNT", "k") == 7
    # A write of nothing is refused, as ITEMS with none is: it must not be
    # replicated, logged or touch the key.
    dump = r.dump("k")
    with pytest.raises(ERR, match="BULK holds no items"):
        r.execute_command("SEEN.INSERT", "k", "BULK", "")
    with pytest.raises(ERR, match="BULK holds no items"):
        r.execute_command("SEEN.REMOVE", "k", "BULK", "\n")
    assert r.dump("k") == dump
    with pytest.raises(ERR, match="BULK holds no items"):
        r.execute_command("SEEN.INSERT", "new", "BULK", "")
    # Nothing to hold: no key is made.
    assert r.execute_command("SEEN.ADD", "new", "AT", "0", "too-old") == 0
    assert not r.exists("new")


def test_insert_timed(r):
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "10d", "SLICES", "2")
    # Every item with its own time: arguments in pairs, or "ms item" lines
    # (split at the first space: items may hold spaces).
    assert r.execute_command("SEEN.INSERT", "k", "TIMED", "ITEMS", now - 1000, "a",
                             now - 8 * DAY, "b c") == 2
    lines = "%d x y\n%d old\n%d ahead\n" % (now - 5 * DAY, now - 20 * DAY, now + DAY)
    assert r.execute_command("SEEN.INSERT", "k", "TIMED", "BULK", lines) == 2
    assert r.execute_command("SEEN.FILTER", "k", "a", "b c", "x y", "old", "ahead") == [b"old"]

    # Each item lives by its own time t: seen before t + 10d, forgotten
    # from t + 15d (window * (1 + 1/slices)).
    def unseen_at(t):
        return r.execute_command("SEEN.MFILTER", 1, "k", "AT", t, "ITEMS", "a", "b c", "x y")
    assert unseen_at(now + DAY) == []
    assert unseen_at(now + 7 * DAY) in ([b"b c"], [b"b c", b"x y"])  # never "a"
    assert unseen_at(now + 9 * DAY) in ([b"b c"], [b"b c", b"x y"])
    assert unseen_at(now + 10 * DAY) in ([b"b c", b"x y"], [b"a", b"b c", b"x y"])
    assert unseen_at(now + 15 * DAY) == [b"a", b"b c", b"x y"]

    dump = r.dump("k")
    for args, message in [
        (("TIMED", "ITEMS", now, "a", now), "takes pairs"),
        (("TIMED", "BULK", "%d a\nb" % now), "lines are 'ms item'"),
        (("TIMED", "BULK", "-5 a"), "bad TIMED time"),
        (("TIMED", "ITEMS", "soon", "a"), "bad TIMED time"),
        (("TIMED", "BULK", "%d " % now), "1 to 512 bytes"),
        (("AT", now, "TIMED", "ITEMS", now, "a"), "AT and TIMED exclude each other"),
        (("TIMED", "BULK", ""), "BULK holds no items"),
    ]:
        with pytest.raises(ERR, match=message):
            r.execute_command("SEEN.INSERT", "k", *args)
    assert r.dump("k") == dump
    # The time prefix does not count against the 512-byte item limit.
    assert r.execute_command("SEEN.INSERT", "k", "TIMED", "BULK", "%d %s" % (now, "z" * 512)) == 1


def test_insert_creates_with_options_once(r):
    r.execute_command("SEEN.INSERT", "k", "WINDOW", "1h", "SLICES", "2", "ITEMS", "a")
    assert policy(r, "k")["window-ms"] == 3600000
    # Options only shape a key being made, as in BF.INSERT.
    r.execute_command("SEEN.INSERT", "k", "WINDOW", "2h", "ITEMS", "b")
    assert policy(r, "k")["window-ms"] == 3600000


def test_insert_nocreate_checks_the_policy_first(r):
    # Documented: a policy can be checked without making a key.
    with pytest.raises(ERR, match="bad window"):
        r.execute_command("SEEN.INSERT", "nokey", "NOCREATE", "WINDOW", "soon", "ITEMS", "x")
    with pytest.raises(ERR, match=r"no such key \(NOCREATE\)"):
        r.execute_command("SEEN.INSERT", "nokey", "NOCREATE", "WINDOW", "2h", "ITEMS", "x")
    assert r.exists("nokey") == 0


def test_insert_errors(r):
    with pytest.raises(ERR, match="NOCREATE"):
        r.execute_command("SEEN.INSERT", "k", "NOCREATE", "ITEMS", "a")
    with pytest.raises(ERR, match="ITEMS or BULK expected"):
        r.execute_command("SEEN.INSERT", "k", "WINDOW", "1h")
    with pytest.raises(ERR, match="BULK takes exactly one argument"):
        r.execute_command("SEEN.INSERT", "k", "BULK", "a", "b")
    with pytest.raises(ERR, match="1 to 512 bytes"):
        r.execute_command("SEEN.INSERT", "k", "BULK", "a\n\nb")
    with pytest.raises(ERR, match="unknown option 'FOO'"):
        r.execute_command("SEEN.INSERT", "k", "FOO", "ITEMS", "a")
    with pytest.raises(ERR, match="bad window"):
        r.execute_command("SEEN.INSERT", "k", "WINDOW", "x", "ITEMS", "a")
    with pytest.raises(ERR, match="NOW may not be later"):
        r.execute_command("SEEN.INSERT", "k", "NOW", server_ms(r) + DAY, "ITEMS", "a")
    assert not r.exists("k")
    # A NOW in the past is how an AOF replays through a client.
    assert r.execute_command("SEEN.INSERT", "k", "NOW", server_ms(r) - 1000, "ITEMS", "a") == 1


# ---------------------------------------------------------------- FILTER, MFILTER

def test_filter(r):
    assert r.execute_command("SEEN.FILTER", "missing", "a", "b") == [b"a", b"b"]
    r.execute_command("SEEN.ADD", "k", "a", "c")
    assert r.execute_command("SEEN.FILTER", "k", "d", "a", "b", "c", "d") == [b"d", b"b", b"d"]
    r.set("s", "x")
    with pytest.raises(ERR, match="WRONGTYPE"):
        r.execute_command("SEEN.FILTER", "s", "a")


def test_mfilter_reply_forms(r):
    r.execute_command("SEEN.ADD", "{u}delivered", "a", "b")
    r.execute_command("SEEN.RESERVE", "{u}played", "IDS", "STR")
    r.execute_command("SEEN.ADD", "{u}played", "c")
    keys = ["2", "{u}delivered", "{u}played"]
    cands = ["a", "x", "c", "y", "b"]
    assert r.execute_command("SEEN.MFILTER", *keys, "ITEMS", *cands) == [b"x", b"y"]
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "FLAGS", "ITEMS", *cands) == b"10101"
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "INDEXES", "ITEMS", *cands) == [
        0, 2, 4]
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "unseen", "BULK",
                             "\n".join(cands)) == [b"x", b"y"]
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "FLAGS", "BULK", "") == b""
    # The unseen items themselves, in one string: each followed by a newline.
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "BULK", "BULK",
                             "\n".join(cands)) == b"x\ny\n"
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "BULK", "ITEMS", *cands) == b"x\ny\n"
    assert r.execute_command("SEEN.MFILTER", *keys, "REPLY", "BULK", "ITEMS", "a", "b") == b""
    with pytest.raises(ERR, match="REPLY BULK separates items by newlines"):
        r.execute_command("SEEN.MFILTER", *keys, "REPLY", "BULK", "ITEMS", "p\nq")
    # A missing key has seen nothing.
    assert r.execute_command("SEEN.MFILTER", "2", "{u}delivered", "{u}none", "REPLY", "FLAGS",
                             "ITEMS", *cands) == b"10001"


def test_mfilter_items_named_like_keywords(r):
    r.execute_command("SEEN.ADD", "k", "REPLY")
    assert r.execute_command("SEEN.MFILTER", "1", "k", "ITEMS", "REPLY", "FLAGS", "AT",
                             "BULK") == [b"FLAGS", b"AT", b"BULK"]


def test_mfilter_at(r):
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "10s", "SLICES", "2")
    r.execute_command("SEEN.ADD", "k", "AT", now - 1000, "a")
    assert r.execute_command("SEEN.MFILTER", "1", "k", "AT", now, "ITEMS", "a") == []
    # Forgotten for sure once window * (1 + 1/slices) has passed.
    assert r.execute_command("SEEN.MFILTER", "1", "k", "AT", now - 1000 + 15000, "ITEMS",
                             "a") == [b"a"]


def test_mfilter_mixed_kinds(r):
    r.execute_command("SEEN.RESERVE", "ints", "IDS", "INT")
    r.execute_command("SEEN.ADD", "ints", "5")
    r.execute_command("SEEN.ADD", "strs", "6")
    assert r.execute_command("SEEN.MFILTER", "2", "ints", "strs", "ITEMS", "5", "6", "7") == [
        b"7"]
    with pytest.raises(ERR, match="decimal integers"):
        r.execute_command("SEEN.MFILTER", "2", "ints", "strs", "ITEMS", "5", "x")


def test_mfilter_errors(r):
    r.set("s", "x")
    with pytest.raises(ERR, match="WRONGTYPE"):
        r.execute_command("SEEN.MFILTER", "2", "k", "s", "ITEMS", "a")
    for numkeys in ("0", "x", "-1", "9"):
        with pytest.raises(ERR, match="numkeys"):
            r.execute_command("SEEN.MFILTER", numkeys, "k", "ITEMS", "a")
    with pytest.raises(ERR, match="REPLY must be"):
        r.execute_command("SEEN.MFILTER", "1", "k", "REPLY", "ALL", "ITEMS", "a")
    with pytest.raises(ERR, match="unknown option"):
        r.execute_command("SEEN.MFILTER", "1", "k", "LIMIT", "3", "ITEMS", "a")
    with pytest.raises(ERR, match="ITEMS or BULK expected"):
        r.execute_command("SEEN.MFILTER", "1", "k", "REPLY", "FLAGS")
    with pytest.raises(ERR, match="bad AT"):
        r.execute_command("SEEN.MFILTER", "1", "k", "AT", "x", "ITEMS", "a")
    # Items a set could never hold are refused by queries as by writes (the
    # library hashes any string it is asked about).
    r.execute_command("SEEN.ADD", "k", "a")
    for bad in ("", "x" * 513):
        with pytest.raises(ERR, match="1 to 512 bytes"):
            r.execute_command("SEEN.FILTER", "k", "a", bad)
        with pytest.raises(ERR, match="1 to 512 bytes"):
            r.execute_command("SEEN.MFILTER", "1", "k", "ITEMS", bad, "a")
        with pytest.raises(ERR, match="1 to 512 bytes"):
            r.execute_command("SEEN.MFILTER", "1", "k", "REPLY", "FLAGS", "BULK", "a\n" + bad + "\nb")


def test_mfilter_keys_for_acl_and_cluster(r):
    assert raw(r, "COMMAND", "GETKEYS", "SEEN.MFILTER", "3", "a", "b", "c", "ITEMS", "x") == [
        b"a", b"b", b"c"]
    assert raw(r, "COMMAND", "GETKEYS", "SEEN.ADD", "k", "AT", "5", "x") == [b"k"]


def test_command_flags(r):
    info = {c[0]: c for c in raw(r, "COMMAND", "INFO", "seen.add", "seen.filter", "seen.del",
                                 "seen.mfilter", "seen.info")}
    assert {b"write", b"denyoom"} <= set(info[b"seen.add"][2])
    # A filter's cost grows with its candidates (and keys): not "fast".
    assert b"readonly" in info[b"seen.filter"][2] and b"fast" not in info[b"seen.filter"][2]
    assert b"denyoom" not in info[b"seen.del"][2]
    assert b"movablekeys" in info[b"seen.mfilter"][2]


# ---------------------------------------------------------------- DEL, REMOVE

def test_del_and_remove(r):
    assert r.execute_command("SEEN.DEL", "missing", "a") == 0
    assert not r.exists("missing")
    r.execute_command("SEEN.ADD", "k", "a", "b", "c", "d")
    assert r.execute_command("SEEN.DEL", "k", "a", "x") == 1
    assert r.execute_command("SEEN.REMOVE", "k", "ITEMS", "b") == 1
    assert r.execute_command("SEEN.REMOVE", "k", "BULK", "c\nd\ny") == 2
    assert r.execute_command("SEEN.FILTER", "k", "a", "b", "c", "d") == [b"a", b"b", b"c", b"d"]
    assert r.execute_command("SEEN.COUNT", "k") == 0
    assert r.exists("k")  # the key keeps its policy
    r.set("s", "x")
    with pytest.raises(ERR, match="WRONGTYPE"):
        r.execute_command("SEEN.DEL", "s", "a")
    with pytest.raises(ERR, match="unknown option"):
        r.execute_command("SEEN.REMOVE", "k", "FOO", "ITEMS", "a")


# ---------------------------------------------------------------- COUNT, INFO

def test_count_and_info(r):
    assert r.execute_command("SEEN.COUNT", "missing") == 0
    with pytest.raises(ERR, match="no such key"):
        r.execute_command("SEEN.INFO", "missing")
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "1h", "SLICES", "4", "ERROR", "0.01")
    r.execute_command("SEEN.INSERT", "k", "BULK", "\n".join("item%d" % i for i in range(1000)))
    info = info_map(r.execute_command("SEEN.INFO", "k"))
    # Items count distinct fingerprints: at ERROR 0.01 a few of 1,000 may
    # share one.
    assert 990 <= info["items"] <= 1000
    assert r.execute_command("SEEN.COUNT", "k") == info["items"]
    assert float(info["error"]) == 0.01
    assert 0 <= float(info["fpr-estimate"]) <= 0.01
    assert info["encoding"] in (b"exact", b"compact", b"mixed")
    assert sum(run["items"] for run in info["runs"]) >= info["items"]
    assert len(info["slices"]) == 1 and info["slices"][0]["items"] == info["items"]
    assert 0 <= info["slices"][0]["age-ms"] < 60000
    usage = r.memory_usage("k", samples=0)
    assert info["bytes"] <= usage < info["bytes"] + 200
    r.set("s", "x")
    with pytest.raises(ERR, match="WRONGTYPE"):
        r.execute_command("SEEN.COUNT", "s")


def test_info_runs_fit_size_classes(r):
    # 10,000 items of a month's history settle into one run past 12 KB:
    # jemalloc would round it to 14 KB, so it is held in two blocks that
    # waste less.
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "90d", "SLICES", "4", "ERROR", "0.001")
    now = server_ms(r)
    # One transaction: the server would compact the import itself a second
    # after its last write, and SEEN.COMPACT would then find nothing to do.
    tx = r.pipeline(transaction=True)
    for b in range(10):
        tx.execute_command("SEEN.INSERT", "k", "AT", now - (30 - 3 * b) * DAY, "BULK",
                           "\n".join("item%d" % i for i in range(b * 1000, (b + 1) * 1000)))
    tx.execute_command("SEEN.COMPACT", "k")
    assert tx.execute()[-1] == 1
    info = info_map(r.execute_command("SEEN.INFO", "k"))
    runs = info["runs"]
    for run in runs:
        assert run["bytes"] <= run["held-bytes"] and run["blocks"] in (1, 2)
    assert sum(run["held-bytes"] for run in runs) <= info["bytes"]
    assert any(run["blocks"] == 2 for run in runs)
    stored = sum(run["bytes"] for run in runs if run["encoding"] != b"buffer")
    held = sum(run["held-bytes"] for run in runs if run["encoding"] != b"buffer")
    assert held < stored * 1.05


def test_info_section(r):
    before = r.info("seen")
    r.execute_command("SEEN.ADD", "k", "a", "b")
    r.execute_command("SEEN.FILTER", "k", "a", "x", "y")
    after = r.info("seen")
    assert after["seen_keys"] == 1 and after["seen_items"] == 2
    assert after["seen_bytes"] > 0
    assert after["seen_filter_calls"] == before["seen_filter_calls"] + 1
    assert after["seen_candidates_checked"] == before["seen_candidates_checked"] + 3
    assert after["seen_candidates_seen"] == before["seen_candidates_seen"] + 1
    r.delete("k")
    assert r.info("seen")["seen_keys"] == 0 and r.info("seen")["seen_bytes"] == 0


# ---------------------------------------------------------------- LOAD, COPY

def test_load_roundtrip_and_errors(r):
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "1h", "EXPIRY", "ON", "JITTER", "5s")
    r.execute_command("SEEN.ADD", "k", "a", "b")
    blob = dump(r, "k").blob
    assert r.execute_command("SEEN.LOAD", "k2", "EXPIRY", "ON", "JITTER", "5000", blob) == b"OK"
    assert digest(r, "k2") == digest(r, "k")
    assert r.pttl("k2") > 3600000
    with pytest.raises(ERR, match="key already exists"):
        r.execute_command("SEEN.LOAD", "k2", blob)
    with pytest.raises(ERR, match="checksum"):
        r.execute_command("SEEN.LOAD", "k3", blob[:-1] + bytes([blob[-1] ^ 1]))
    with pytest.raises(ERR, match="truncated|checksum"):
        r.execute_command("SEEN.LOAD", "k3", blob[:50])
    with pytest.raises(ERR, match="magic"):
        r.execute_command("SEEN.LOAD", "k3", b"x" * 200)
    with pytest.raises(ERR, match="syntax error"):
        r.execute_command("SEEN.LOAD", "k3", "EXPIRY", blob)
    # A set without a window is never forgotten: a key that expired with it
    # would be written to RDB with flags its own load refuses.
    r.execute_command("SEEN.RESERVE", "nowin", "WINDOW", "0")
    r.execute_command("SEEN.ADD", "nowin", "a")
    with pytest.raises(ERR, match="EXPIRY ON needs a set with a window"):
        r.execute_command("SEEN.LOAD", "k3", "EXPIRY", "ON", dump(r, "nowin").blob)
    assert not r.exists("k3")


def test_load_in_chunks(r):
    r.execute_command("SEEN.INSERT", "k", "BULK", "\n".join("i%d" % i for i in range(5000)))
    blob = dump(r, "k").blob
    step = 1000
    for off in range(0, len(blob), step):
        assert r.execute_command("SEEN.LOAD", "k2", "OFFSET", off, "TOTAL", len(blob),
                                 blob[off:off + step]) == b"OK"
    assert digest(r, "k2") == digest(r, "k")
    with pytest.raises(ERR, match="out of order"):
        r.execute_command("SEEN.LOAD", "k3", "OFFSET", 10, "TOTAL", len(blob), blob[10:20])
    with pytest.raises(ERR, match="past TOTAL"):
        r.execute_command("SEEN.LOAD", "k3", "OFFSET", 0, "TOTAL", 5, blob[:10])
    with pytest.raises(ERR, match="OFFSET and TOTAL"):
        r.execute_command("SEEN.LOAD", "k3", "OFFSET", 0, blob)
    # No upload is begun for a TOTAL of nothing, or of more than an
    # address space's half.
    for total in (0, 1 << 63, (1 << 64) - 1):
        with pytest.raises(ERR, match="bad TOTAL"):
            r.execute_command("SEEN.LOAD", "k3", "OFFSET", 0, "TOTAL", total, blob[:10])
    assert r.info("seen")["seen_load_upload_bytes"] == 0 and not r.exists("k3")


def test_load_chunks_join_only_their_upload(r):
    # A chunk joins the upload begun for its key with the same TOTAL and at
    # the offset it has reached; anything else starts nothing and changes
    # no upload in progress, even one it would fit.
    r.execute_command("SEEN.INSERT", "k", "BULK", "\n".join("i%d" % i for i in range(3000)))
    blob = dump(r, "k").blob
    half = len(blob) // 2
    for key in ("a", "b"):
        assert r.execute_command("SEEN.LOAD", key, "OFFSET", 0, "TOTAL", len(blob),
                                 blob[:half]) == b"OK"
    assert r.execute_command("SEEN.LOAD", "a", "OFFSET", half, "TOTAL", len(blob),
                             blob[half:]) == b"OK"
    # b's upload fits this chunk, but no upload was begun for c.
    with pytest.raises(ERR, match="out of order"):
        r.execute_command("SEEN.LOAD", "c", "OFFSET", half, "TOTAL", len(blob), blob[half:])
    # b's own next chunk under another TOTAL.
    with pytest.raises(ERR, match="out of order"):
        r.execute_command("SEEN.LOAD", "b", "OFFSET", half, "TOTAL", len(blob) + 1,
                          blob[half:] + b"x")
    assert not r.exists("c") and not r.exists("b")
    assert r.execute_command("SEEN.LOAD", "b", "OFFSET", half, "TOTAL", len(blob),
                             blob[half:]) == b"OK"
    assert digest(r, "a") == digest(r, "k") and digest(r, "b") == digest(r, "k")


def test_copy_and_rename(r):
    r.execute_command("SEEN.ADD", "k", "a", "b")
    assert r.copy("k", "k2")
    r.execute_command("SEEN.ADD", "k2", "c")
    assert r.execute_command("SEEN.FILTER", "k", "c") == [b"c"]
    assert r.execute_command("SEEN.FILTER", "k2", "a", "c", "d") == [b"d"]
    r.rename("k2", "k3")
    assert r.execute_command("SEEN.COUNT", "k3") == 3
    assert r.info("seen")["seen_keys"] == 2


def test_key_expiry(r):
    now = server_ms(r)
    r.execute_command("SEEN.RESERVE", "k", "WINDOW", "10s", "SLICES", "2", "EXPIRY", "ON",
                      "JITTER", "0")
    # Empty: one window from now.
    assert 9000 < r.pttl("k") <= 10000
    r.execute_command("SEEN.ADD", "k", "AT", now - 9000, "a")
    info = info_map(r.execute_command("SEEN.INFO", "k"))
    assert r.pexpiretime("k") == info["forget-all-at-ms"]
    # With jitter from the config: spread, but never before everything is forgotten.
    r.config_set("seen.key-expiry", "yes")
    r.config_set("seen.default-window", "1h")
    r.config_set("seen.expiry-jitter", "10m")
    try:
        times = []
        for i in range(20):
            r.execute_command("SEEN.ADD", "u%d" % i, "AT", now, "a")
            forget = info_map(r.execute_command("SEEN.INFO", "u%d" % i))["forget-all-at-ms"]
            at = r.pexpiretime("u%d" % i)
            assert forget <= at <= forget + 600000
            times.append(at)
        assert len(set(times)) > 10
    finally:
        r.config_set("seen.key-expiry", "no")
        r.config_set("seen.default-window", "90d")
        r.config_set("seen.expiry-jitter", "1d")
    r.execute_command("SEEN.ADD", "plain", "a")
    assert r.pttl("plain") == -1


def test_keyspace_events(shared_server, r):
    r.config_set("notify-keyspace-events", "Kd")
    try:
        sub = shared_server.client().pubsub()
        sub.psubscribe("__keyspace@0__:ev")
        sub.get_message(timeout=5)  # the subscription confirmation
        r.execute_command("SEEN.RESERVE", "ev")
        r.execute_command("SEEN.INSERT", "ev", "ITEMS", "a")
        r.execute_command("SEEN.DEL", "ev", "a")
        events = []
        for _ in range(20):
            m = sub.get_message(timeout=1)
            if m and m["type"] == "pmessage":
                events.append(m["data"])
            if len(events) == 3:
                break
        assert events == [b"seen.reserve", b"seen.add", b"seen.del"]
        sub.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_now_option_everywhere(r):
    future = server_ms(r) + DAY
    past = server_ms(r) - 1000
    for cmd in (["SEEN.RESERVE", "n1", "NOW", future],
                ["SEEN.REMOVE", "n1", "NOW", future, "ITEMS", "a"],
                ["SEEN.INSERT", "n1", "NOW", future, "ITEMS", "a"]):
        with pytest.raises(ERR, match="NOW may not be later"):
            r.execute_command(*cmd)
    assert r.execute_command("SEEN.RESERVE", "n1", "NOW", past) == b"OK"
    assert r.execute_command("SEEN.INSERT", "n1", "NOW", past, "ITEMS", "a") == 1
    assert r.execute_command("SEEN.REMOVE", "n1", "NOW", past, "BULK", "a") == 1
    blob = dump(r, "n1").blob
    with pytest.raises(ERR, match="NOW may not be later"):
        r.execute_command("SEEN.LOAD", "n2", "NOW", future, blob)
    assert r.execute_command("SEEN.LOAD", "n2", "NOW", past, blob) == b"OK"
    with pytest.raises(ERR, match="bad NOW"):
        r.execute_command("SEEN.REMOVE", "n1", "NOW", "soon", "ITEMS", "a")


def test_exact_limit_config(r):
    assert r.config_get("seen.exact-limit") == {"seen.exact-limit": "16"}  # the default
    r.config_set("seen.exact-limit", 1000)
    try:
        r.execute_command("SEEN.ADD", "k", "a")
        assert policy(r, "k")["exact-limit"] == 1000
    finally:
        r.config_set("seen.exact-limit", 16)


def test_options_named_once_and_numbers_strict(r):
    for args, message in [(("ERROR", "0.01", "EXACT"), "ERROR given twice"),
                          (("EXACT", "ERROR", "0.01"), "ERROR given twice"),
                          (("WINDOW", "1d", "WINDOW", "2d"), "WINDOW given twice"),
                          (("SLICES", "4", "SLICES", "4"), "SLICES given twice"),
                          (("IDS", "INT", "IDS", "STR"), "IDS given twice")]:
        with pytest.raises(ERR, match=message):
            r.execute_command("SEEN.RESERVE", "k", *args)
        with pytest.raises(ERR, match=message):
            r.execute_command("SEEN.INSERT", "k", *args, "ITEMS", "a")
    assert not r.exists("k")
    # Plain decimals only: no spaces, hex floats, infinities or dangling
    # exponents.
    for bad in (" 0.01", "0.01 ", "0x1p-7", "inf", "1e", "1e+", ".", "1..2", "+0.01", "0.01e-"):
        with pytest.raises(ERR, match="error rate"):
            r.execute_command("SEEN.RESERVE", "k", "ERROR", bad)
    for good in ("0.01", ".01", "1e-3", "1E-3", "2.5e-2"):
        r.execute_command("SEEN.RESERVE", "k" + good, "ERROR", good)
    for bad in (" 4", "4 ", "+4", "0x4"):
        with pytest.raises(ERR, match="slices"):
            r.execute_command("SEEN.RESERVE", "k", "SLICES", bad)
