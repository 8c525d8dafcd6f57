"""test_persistence.py — DEBUG RELOAD, restarts from RDB and from AOF
(with and without the RDB preamble, so the SEEN.LOAD rewrite form is
replayed), all giving identical answers and digests."""
import glob
import os
import time

import redis

import workload
from conftest import server_ms


def wait_rewrite(client, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.05)
    raise AssertionError("AOF rewrite did not finish")


def aof_text(server):
    out = b""
    for path in sorted(glob.glob(os.path.join(server.dir, "appendonlydir", "*.aof"))):
        with open(path, "rb") as f:
            out += f.read()
    return out


def test_debug_reload(r):
    now = server_ms(r)
    keys = workload.run(r, now)
    before = workload.snapshot(r, keys, now)
    counters = r.info("seen")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert workload.snapshot(r, keys, now) == before
    after = r.info("seen")
    assert after["seen_keys"] == counters["seen_keys"]
    # A loaded set is allocated to size; a written one may hold spare room.
    assert 0.8 * counters["seen_bytes"] <= after["seen_bytes"] <= counters["seen_bytes"]


def test_restart_from_rdb(make_server):
    server = make_server()
    r = server.client()
    now = server_ms(r)
    keys = workload.run(r, now)
    before = workload.snapshot(r, keys, now)
    r.save()
    server.restart()
    assert workload.snapshot(server.client(), keys, now) == before
    workload.check_clustered(server.client())


def test_restart_from_aof(make_server):
    server = make_server("--appendonly", "yes", "--appendfsync", "always")
    r = server.client()
    now = server_ms(r)
    keys = workload.run(r, now)
    before = workload.snapshot(r, keys, now)
    text = aof_text(server)
    # Clock-dependent writes are logged with the time they were made at.
    assert b"SEEN.INSERT" in text and b"NOW" in text and b"SEEN.REMOVE" in text
    assert b"SEEN.ADD" not in text and b"SEEN.DEL\r" not in text
    server.restart()
    assert workload.snapshot(server.client(), keys, now) == before
    workload.check_clustered(server.client())


def test_restart_from_rewritten_aof_in_chunks(make_server):
    server = make_server("--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    r = server.client()
    now = server_ms(r)
    keys = workload.run(r, now)
    r.config_set("seen.aof-chunk", 4096)  # the compact key spans many chunks
    r.bgrewriteaof()
    wait_rewrite(r)
    text = aof_text(server)
    assert b"SEEN.LOAD" in text and b"OFFSET" in text and b"SEEN.INSERT" not in text
    before = workload.snapshot(r, keys, now)
    server.restart()
    r = server.client()
    assert workload.snapshot(r, keys, now) == before
    assert r.pttl("w:exp") > 0


def test_one_buffered_item_survives_reload_and_copy(r):
    """A set loaded (or copied) while its buffer of recent additions holds a
    single item keeps growing correctly: every addition lands, and the
    dataset stays reloadable (a regression test for a core bug the module
    once had to guard against)."""
    r.execute_command("SEEN.ADD", "k", "a")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    r.copy("k", "k2")
    for key in ("k", "k2"):
        assert r.execute_command("SEEN.ADD", key, "b") == 1
        assert r.execute_command("SEEN.FILTER", key, "a", "b", "c") == [b"c"]
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    for key in ("k", "k2"):
        assert r.execute_command("SEEN.FILTER", key, "a", "b", "c") == [b"c"]
