"""test_limits.py — what one request may ask of the server: SEEN.MFILTER
queries a key named twice once and takes at most seen.mfilter-max-keys keys
(with errors that name numkeys), and SEEN.LOAD's chunked uploads belong to
their client and key, are dropped when abandoned, and together hold no more
than seen.load-max-memory."""
import pytest
import redis

from conftest import raw
from helpers import wait_for
from payloads import dump

ERR = redis.exceptions.ResponseError


def info_seen(client):
    return client.info("seen")


def test_mfilter_repeated_keys_and_key_limit(r):
    r.execute_command("SEEN.ADD", "{u}d", "v1", "v2")
    r.execute_command("SEEN.ADD", "{u}p", "v3")
    once = r.execute_command("SEEN.MFILTER", 2, "{u}d", "{u}p", "REPLY", "FLAGS", "ITEMS",
                             "v1", "v3", "v9")
    many = r.execute_command("SEEN.MFILTER", 64, *(["{u}d", "{u}p"] * 32), "REPLY", "FLAGS",
                             "ITEMS", "v1", "v3", "v9")
    assert once == many == b"110"
    with pytest.raises(ERR, match="numkeys 65 is more than seen.mfilter-max-keys"):
        r.execute_command("SEEN.MFILTER", 65, *(["{u}d"] * 65), "ITEMS", "v1")
    r.config_set("seen.mfilter-max-keys", 100)
    try:
        assert r.execute_command("SEEN.MFILTER", 65, *(["{u}d"] * 65), "REPLY", "FLAGS",
                                 "ITEMS", "v1") == b"1"
    finally:
        r.config_set("seen.mfilter-max-keys", 64)
    # numkeys one too large: the error names numkeys, not an item.
    with pytest.raises(ERR, match="numkeys is 3 but 2 keys come before ITEMS"):
        r.execute_command("SEEN.MFILTER", 3, "{u}d", "{u}p", "ITEMS", "v5", "v6")


def test_filters_are_not_flagged_fast(r):
    for name in ("seen.filter", "seen.mfilter"):
        flags = raw(r, "COMMAND", "INFO", name)[0][2]
        assert b"fast" not in flags, name
    assert b"fast" in raw(r, "COMMAND", "INFO", "seen.count")[0][2]


def serialized(r, key):
    """The key's serialized set, as SEEN.LOAD takes it."""
    return dump(r, key).blob


def test_uploads_belong_to_their_client_and_key(r, shared_server):
    r.execute_command("SEEN.ADD", "src1", *["a%d" % i for i in range(500)])
    r.execute_command("SEEN.ADD", "src2", *["b%d" % i for i in range(500)])
    b1, b2 = serialized(r, "src1"), serialized(r, "src2")
    other = shared_server.client()
    half1, half2 = len(b1) // 2, len(b2) // 2
    assert r.execute_command("SEEN.LOAD", "dst1", "OFFSET", 0, "TOTAL", len(b1),
                             b1[:half1]) == b"OK"
    # Another client starts another key: the first upload goes on.
    assert other.execute_command("SEEN.LOAD", "dst2", "OFFSET", 0, "TOTAL", len(b2),
                                 b2[:half2]) == b"OK"
    assert r.execute_command("SEEN.LOAD", "dst1", "OFFSET", half1, "TOTAL", len(b1),
                             b1[half1:]) == b"OK"
    assert other.execute_command("SEEN.LOAD", "dst2", "OFFSET", half2, "TOTAL", len(b2),
                                 b2[half2:]) == b"OK"
    # Each upload holds its own source's set (a count of distinct
    # fingerprints: two of 500 items may share one).
    assert r.execute_command("SEEN.COUNT", "dst1") == r.execute_command("SEEN.COUNT", "src1")
    assert r.execute_command("SEEN.COUNT", "dst2") == r.execute_command("SEEN.COUNT", "src2")
    assert serialized(r, "dst1") == b1 and serialized(r, "dst2") == b2
    assert info_seen(r)["seen_load_upload_bytes"] == 0
    other.close()


def test_uploads_of_one_key_name_stay_apart(r, shared_server):
    # Two clients loading the same key name, and one client the same name in
    # two databases: each upload goes on, none starts another over.
    r.execute_command("SEEN.ADD", "s1", *["a%d" % i for i in range(300)])
    r.execute_command("SEEN.ADD", "s2", *["b%d" % i for i in range(700)])
    b1, b2 = serialized(r, "s1"), serialized(r, "s2")
    h1, h2 = len(b1) // 2, len(b2) // 2
    a = shared_server.client(single_connection_client=True)
    b = shared_server.client(single_connection_client=True)
    try:
        assert a.execute_command("SEEN.LOAD", "dst", "OFFSET", 0, "TOTAL", len(b1),
                                 b1[:h1]) == b"OK"
        assert b.execute_command("SEEN.LOAD", "dst", "OFFSET", 0, "TOTAL", len(b2),
                                 b2[:h2]) == b"OK"
        a.execute_command("SELECT", 1)
        assert a.execute_command("SEEN.LOAD", "dst", "OFFSET", 0, "TOTAL", len(b2),
                                 b2[:h2]) == b"OK"
        a.execute_command("SELECT", 0)
        assert a.execute_command("SEEN.LOAD", "dst", "OFFSET", h1, "TOTAL", len(b1),
                                 b1[h1:]) == b"OK"
        assert serialized(r, "dst") == b1
        r.delete("dst")
        assert b.execute_command("SEEN.LOAD", "dst", "OFFSET", h2, "TOTAL", len(b2),
                                 b2[h2:]) == b"OK"
        assert serialized(r, "dst") == b2
        a.execute_command("SELECT", 1)
        assert a.execute_command("SEEN.LOAD", "dst", "OFFSET", h2, "TOTAL", len(b2),
                                 b2[h2:]) == b"OK"
        assert serialized(a, "dst") == b2
        a.execute_command("FLUSHDB")
    finally:
        a.close()
        b.close()
    assert info_seen(r)["seen_load_upload_bytes"] == 0


def test_abandoned_upload_is_dropped_and_memory_bounded(r):
    r.execute_command("SEEN.ADD", "src", *["a%d" % i for i in range(500)])
    blob = serialized(r, "src")
    r.config_set("seen.load-idle-seconds", 1)
    try:
        r.execute_command("SEEN.LOAD", "gone", "OFFSET", 0, "TOTAL", len(blob) + 100, blob)
        assert info_seen(r)["seen_load_upload_bytes"] == len(blob)
        wait_for(lambda: info_seen(r)["seen_load_upload_bytes"] == 0, timeout=10,
                 what="the abandoned upload to be dropped")
        with pytest.raises(ERR, match="out of order"):
            r.execute_command("SEEN.LOAD", "gone", "OFFSET", len(blob), "TOTAL",
                              len(blob) + 100, b"x" * 100)
    finally:
        r.config_set("seen.load-idle-seconds", 60)
    r.config_set("seen.load-max-memory", 1 << 20)
    try:
        chunk = b"\0" * (700 << 10)
        r.execute_command("SEEN.LOAD", "big1", "OFFSET", 0, "TOTAL", 4 << 20, chunk)
        with pytest.raises(ERR, match="seen.load-max-memory"):
            r.execute_command("SEEN.LOAD", "big2", "OFFSET", 0, "TOTAL", 4 << 20, chunk)
        # Starting the first one over frees what it held.
        r.execute_command("SEEN.LOAD", "big1", "OFFSET", 0, "TOTAL", len(blob), blob)
        assert r.execute_command("SEEN.COUNT", "big1") == r.execute_command("SEEN.COUNT", "src")
        assert info_seen(r)["seen_load_upload_bytes"] == 0
    finally:
        r.config_set("seen.load-max-memory", 1 << 30)
