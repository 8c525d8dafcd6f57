"""test_migrate.py — `seen-ingest migrate`: legacy ZSETs (score = time in
ms) and SETs become SEEN keys with their times; the run is resumable after
a SIGKILL, and a finished run is not repeated."""
import os
import subprocess
import time

from conftest import INGEST
from events import missing_items, total_count

DAY = 86_400_000


def migrate(server, tmp_path, *extra, timeout=120):
    cmd = [INGEST, "migrate", "--redis", "127.0.0.1:%d" % server.port,
           "--legacy-pattern", "played:%user", "--key-template", "seen:{%user}",
           "--state", str(tmp_path / "migrate.state"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_zsets_and_sets_keep_their_times(redis_server, tmp_path):
    client = redis_server.client()
    now = int(time.time() * 1000)
    expected = {}
    for u in range(50):
        fresh = {"v%d" % i: now - i * 60_000 for i in range(40)}
        stale = {"old%d" % i: now - 3 * DAY for i in range(5)}  # outside a 1-day window
        client.zadd("played:%d" % u, {**fresh, **stale})
        expected["seen:{%d}" % u] = set(fresh)
    client.sadd("played:set-user", "a", "b", "c")
    expected["seen:{set-user}"] = {"a", "b", "c"}
    client.set("played:string", "not a collection")       # skipped: wrong type
    client.zadd("other:1", {"x": now})                      # not matched
    client.zadd("played:bad-scores", {"neg": -5, "ok": now})  # one bad score

    run = migrate(redis_server, tmp_path, "--policy", "WINDOW 1d")
    assert run.returncode == 0, run.stderr
    expected["seen:{bad-scores}"] = {"ok"}
    assert missing_items(client, expected) == {}
    # The 3-day-old members were written at their time, so a 1-day window
    # ignored them: times were carried over, not replaced by "now".
    assert total_count(client, expected) == 50 * 40 + 3 + 1
    assert client.execute_command("SEEN.FILTER", "seen:{0}", "old0") == [b"old0"]
    assert "migration complete" in run.stderr
    state = (tmp_path / "migrate.state").read_text()
    assert "done 1" in state and "keys_migrated 52" in state and "malformed 1" in state
    assert "keys_skipped 1" in state

    # A rerun finds the migration complete and writes nothing.
    client.execute_command("SEEN.DEL", "seen:{0}", "v0")
    run = migrate(redis_server, tmp_path, "--policy", "WINDOW 1d")
    assert run.returncode == 0 and "migration complete" in run.stderr
    assert client.execute_command("SEEN.FILTER", "seen:{0}", "v0") == [b"v0"]


def test_resumes_after_kill9(redis_server, tmp_path):
    client = redis_server.client()
    now = int(time.time() * 1000)
    pipe = client.pipeline(transaction=False)
    expected = {}
    for u in range(4000):
        items = {"v%d-%d" % (u, i): now - i for i in range(20)}
        pipe.zadd("played:%d" % u, items)
        expected["seen:{%d}" % u] = set(items)
    pipe.execute()
    state = tmp_path / "migrate.state"
    cmd = [INGEST, "migrate", "--redis", "127.0.0.1:%d" % redis_server.port,
           "--legacy-pattern", "played:%user", "--key-template", "seen:{%user}",
           "--state", str(state), "--scan-count", "20", "--batch-events", "200"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (state.exists() and "keys_scanned" in
                                               state.read_text()):
        time.sleep(0.01)
    proc.kill()
    proc.wait(timeout=10)
    text = state.read_text()
    assert "done 0" in text, "killed too late to test resuming"
    scanned = int(text.split("keys_scanned ")[1].split()[0])
    assert 0 < scanned < 4000
    run = subprocess.run(cmd + ["--stats-format", "json"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "resuming from --state" in run.stderr
    assert '"done":true' in run.stderr
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == 4000 * 20


def test_state_of_another_migration_is_refused(redis_server, tmp_path):
    (tmp_path / "migrate.state").write_text("from 127.0.0.1:1\npattern x:%u\ncursor 5\n")
    run = migrate(redis_server, tmp_path)
    assert run.returncode == 2
    assert "is for --from 127.0.0.1:1" in run.stderr
    os.unlink(tmp_path / "migrate.state")


def test_capped_keys_keep_their_newest_members(redis_server, tmp_path):
    """ZSCAN returns a large ZSET's members in no time order, and a key with
    a cap keeps its newest items by the order its writes bring them: a
    10,000-play history written page by page as scanned lost ~16% of its
    newest 1,000 (the newest one too).  Each key is written oldest first."""
    client = redis_server.client()
    now = int(time.time() * 1000)
    plays = {"g%d" % i: now - 300 * DAY + i * (300 * DAY // 10000) for i in range(10000)}
    client.zadd("played:capped", plays)
    run = migrate(redis_server, tmp_path, "--policy", "WINDOW 0 CAPACITY 1000",
                  "--batch-events", "500")
    assert run.returncode == 0, run.stderr
    newest = ["g%d" % i for i in range(9000, 10000)]
    flags = client.execute_command("SEEN.MFILTER", 1, "seen:{capped}", "REPLY", "FLAGS",
                                   "ITEMS", *newest)
    assert flags == b"1" * len(newest), "%d of the newest 1,000 lost" % flags.count(b"0")


def test_a_key_that_fits_a_batch_is_written_in_one_command(redis_server, tmp_path):
    """A SET's members all get one time (--set-ts): a bulk load, which the
    key plans from what it holds.  Split across two batches, its second
    part was planned again, finer.  Each key that fits a batch is written
    whole, so two keys of 800 members with batches of 1,200 take one
    command each, not three between them."""
    client = redis_server.client()
    expected = {}
    for u in ("a", "b"):
        members = ["%s%d" % (u, i) for i in range(800)]
        client.sadd("played:%s" % u, *members)
        expected["seen:{%s}" % u] = set(members)
    client.config_resetstat()
    run = migrate(redis_server, tmp_path, "--batch-events", "1200")
    assert run.returncode == 0, run.stderr
    assert client.info("commandstats")["cmdstat_seen.insert"]["calls"] == 2
    assert missing_items(client, expected) == {}
    for key in expected:
        info = client.execute_command("SEEN.INFO", key)
        assert len(dict(zip(info[::2], info[1::2]))[b"runs"]) == 1, key
