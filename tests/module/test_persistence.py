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


def resp_commands(data):
    """The commands of an AOF in the RESP form Redis writes them in."""
    commands, at = [], 0
    while at < len(data):
        assert data[at:at + 1] == b"*", data[at:at + 20]
        end = data.index(b"\r\n", at)
        argc, at = int(data[at + 1:end]), end + 2
        args = []
        for _ in range(argc):
            end = data.index(b"\r\n", at)
            size = int(data[at + 1:end])
            args.append(data[end + 2:end + 2 + size])
            at = end + 2 + size + 2
        commands.append(args)
    return commands


def resp(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_replay_that_stalls_between_chunks_keeps_the_key(make_server):
    # Uploads idle for seen.load-idle-seconds are dropped: their client has
    # gone.  An AOF replayed at start-up is no client: a replay that stalls
    # between two chunks of a key (a slow disk, a busy machine; here a
    # DEBUG SLEEP put between them) must still load the key whole.
    server = make_server("--appendonly", "yes", "--aof-use-rdb-preamble", "no",
                         "--seen.load-idle-seconds", "1")
    r = server.client()
    now = server_ms(r)
    keys = workload.run(r, now)
    r.config_set("seen.aof-chunk", 1024)
    r.bgrewriteaof()
    wait_rewrite(r)
    before = workload.snapshot(r, keys, now)
    server.stop()
    base = glob.glob(os.path.join(server.dir, "appendonlydir", "*.base.aof"))
    assert len(base) == 1
    with open(base[0], "rb") as f:
        commands = resp_commands(f.read())
    first = next(i for i, c in enumerate(commands)
                 if c[0] == b"SEEN.LOAD" and b"OFFSET" in c and c[c.index(b"OFFSET") + 1] == b"0")
    commands.insert(first + 1, [b"DEBUG", b"SLEEP", b"1.5"])
    with open(base[0], "wb") as f:
        f.write(b"".join(resp(c) for c in commands))
    server.start(timeout=30)
    r = server.client()
    assert workload.snapshot(r, keys, now) == before
    assert "SEEN.LOAD" not in server.read_log()


def test_replay_that_loses_a_key_says_so(make_server):
    # Redis replays an AOF past a command that fails.  A SEEN.LOAD that
    # fails (here: a chunk taken out of the file) loses its key, and the
    # log must say which and why.
    server = make_server("--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    r = server.client()
    r.execute_command("SEEN.ADD", "big", *["item-%d" % i for i in range(3000)])
    r.config_set("seen.aof-chunk", 1024)
    r.bgrewriteaof()
    wait_rewrite(r)
    server.stop()
    base = glob.glob(os.path.join(server.dir, "appendonlydir", "*.base.aof"))[0]
    with open(base, "rb") as f:
        commands = resp_commands(f.read())
    chunks = [i for i, c in enumerate(commands) if c[0] == b"SEEN.LOAD"]
    assert len(chunks) >= 3
    del commands[chunks[1]]
    with open(base, "wb") as f:
        f.write(b"".join(resp(c) for c in commands))
    server.start(timeout=30)
    assert not server.client().exists("big")
    log = server.read_log()
    assert "SEEN.LOAD of key 'big' in the AOF failed: ERR chunk out of order" in log, log
