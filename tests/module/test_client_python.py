"""test_client_python.py — the Python client (clients/python, seen_redis)
against a real server: every method on redis.Redis and redis.asyncio.Redis,
answers equal to the raw commands', str/bytes/int items (binary bytes
included), its errors, and the package installing with pip from the
checkout into a fresh virtual environment (no index: Debian's setuptools).
"""
import asyncio
import os
import shutil
import subprocess
import sys

import pytest
import redis
import redis.asyncio

import payloads
from conftest import ROOT
from helpers import server_ms

sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
from seen_redis import AsyncSeen, Seen, SeenError  # noqa: E402

DAY = 86400000
CANDIDATES = ["v%d" % i for i in range(3000)]


def test_every_method(r):
    seen = Seen(r)
    assert seen.reserve("{u}played", window="30d", slices=4, error=0.001)
    assert seen.add("{u}played", CANDIDATES[:1000:3]) == 334
    assert seen.add("{u}played", ["v0", "new"]) == 1
    assert seen.count("{u}played") == 335
    # filter: the caller's own objects, in order; matches the raw command.
    unseen = seen.filter("{u}played", CANDIDATES)
    raw = r.execute_command("SEEN.FILTER", "{u}played", *CANDIDATES)
    assert unseen == [x.decode() for x in raw]
    assert seen.seen("{u}played", ["v0", "v1", "new"]) == [True, False, True]
    # Several keys sharing a hash tag, and AT.
    assert seen.add("{u}delivered", ["v1"], capacity=100, window=0) == 1
    assert seen.filter(["{u}delivered", "{u}played"], ["v0", "v1", "v2"]) == ["v2"]
    assert seen.filter("{u}played", ["v0"], at=server_ms(r) + 40 * DAY) == ["v0"]
    # Times: one for all, or one per item.
    now = server_ms(r)
    assert seen.add("{u}old", ["o1"], at=now - 2 * DAY, window="1d") == 0  # past the window
    assert seen.add("{u}timed", ["t1", "t2"], times=[now - 1000, now - 5 * DAY],
                    window="3d") == 1
    assert seen.filter("{u}timed", ["t1", "t2"]) == ["t2"]
    # Removal, compaction, info.
    assert seen.remove("{u}played", ["v0", "nope"]) == 1
    assert seen.compact("{u}played") is False
    info = seen.info("{u}played")
    assert info["items"] == 334 and info["policy"]["window-ms"] == 30 * DAY
    assert info["policy"]["ids"] == "str" and isinstance(info["error"], float)
    assert isinstance(info["runs"], list) and isinstance(info["slices"][0]["start-ms"], int)
    # load: the serialized set out of a DUMP payload makes the same key.
    blob = payloads.dump(r, "{u}played").blob
    assert seen.load("{u}copy", blob, expiry=False)
    assert seen.filter("{u}copy", CANDIDATES) == seen.filter("{u}played", CANDIDATES)
    assert seen.filter("{u}played", []) == [] and seen.seen("{u}played", []) == []


def test_items_of_every_kind(r):
    seen = Seen(r)
    binary = [b"\x00\x01", b"a b", b"\r\n-not-bulk", bytes(range(1, 255)), "ünï".encode()]
    assert seen.add("bin", binary) == len(binary)
    assert seen.filter("bin", binary + [b"\x00"]) == [b"\x00"]
    # Items with a newline go as arguments; the others in one BULK.
    assert seen.seen("bin", [b"\r\n-not-bulk", b"x\ny"]) == [True, False]
    seen.reserve("ints", ids="int", exact=True)
    assert seen.add("ints", [1, 2, 2 ** 64 - 1]) == 3
    assert seen.filter("ints", [1, 3, 2 ** 64 - 1]) == [3]
    assert seen.filter("ints", ["1", "3"]) == ["3"]
    for bad in ([""], ["x" * 513], [-1], [2 ** 64], [True], [1.5]):
        with pytest.raises(SeenError):
            seen.add("bin", bad)
    with pytest.raises(SeenError):
        seen.reserve("p", error=0.01, exact=True)
    with pytest.raises(SeenError):
        seen.add("bin", ["a"], at=1, times=[1])
    with pytest.raises(redis.ResponseError, match="decimal integers"):
        seen.add("ints", ["x"])


def test_batches_past_the_server_limit_are_split(r):
    r.config_set("seen.max-batch", 1000)
    try:
        seen = Seen(r, max_batch=1000)
        # Exact, so the counts are: a fingerprinted key may count a fresh
        # item as seen (at most its error rate).
        assert seen.reserve("big", exact=True)
        items = ["b%d" % i for i in range(2500)]
        assert seen.add("big", items) == 2500
        assert seen.filter("big", items + ["none"]) == ["none"]
        assert seen.remove("big", items[:1500]) == 1500
    finally:
        r.config_set("seen.max-batch", 1000000)


def test_clients_that_decode_responses(shared_server, r):
    seen = Seen(redis.Redis(host="127.0.0.1", port=shared_server.port, decode_responses=True))
    assert seen.reserve("d", window="1d")
    assert seen.add("d", ["x", "y"]) == 2
    assert seen.filter("d", ["x", "z"]) == ["z"]
    assert seen.seen("d", ["x", "z"]) == [True, False]
    info = seen.info("d")
    assert info["items"] == 2 and info["policy"]["window-ms"] == 86400000
    assert isinstance(info["error"], float)


def test_asyncio(shared_server, r):
    async def main():
        client = redis.asyncio.Redis(host="127.0.0.1", port=shared_server.port)
        seen = AsyncSeen(client)
        assert await seen.reserve("a", window="1d")
        assert await seen.add("a", ["x", "y"]) == 2
        assert await seen.filter("a", ["x", "z"]) == ["z"]
        assert await seen.seen("a", ["x", "z"]) == [True, False]
        assert await seen.count("a") == 2
        assert (await seen.info("a"))["items"] == 2
        assert await seen.remove("a", ["x"]) == 1
        assert await seen.compact("a") is False
        await client.close()
    asyncio.run(main())


def test_pip_installs_from_the_checkout(tmp_path):
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)],
                   check=True, timeout=120)
    py = str(env_dir / "bin" / "python")
    # A copy: building writes build/ and *.egg-info next to the sources.
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "clients", "python"), str(src),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                    str(src)], check=True, timeout=300, cwd=str(tmp_path))
    out = subprocess.run([py, "-c", "import seen_redis, sys; print(seen_redis.__file__)"],
                         capture_output=True, text=True, check=True, timeout=60,
                         cwd=str(tmp_path)).stdout
    assert str(env_dir) in out
