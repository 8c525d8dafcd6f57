"""test_stream.py — seen-ingest from Redis Streams: every event lands and
is acknowledged, SIGKILL and restart lose nothing (the restarted consumer
re-reads its own pending entries), entries left by a vanished consumer are
claimed, malformed entries are dead-lettered, and the field-pairs form."""
import json
import time

from events import make_events, missing_items, total_count


def stream_args(server, *extra):
    return ["--source", "stream", "--stream", "events", "--redis", "127.0.0.1:%d" % server.port,
            "--key-template", "seen:{%user}:%kind", *extra]


def xadd_json(client, lines, stream="events", per_entry=1):
    pipe = client.pipeline(transaction=False)
    for i in range(0, len(lines), per_entry):
        pipe.xadd(stream, {"event": "\n".join(lines[i:i + per_entry])})
        if len(pipe) >= 1000:
            pipe.execute()
    pipe.execute()


def pending(client, group="seen-ingest", stream="events"):
    return client.xpending(stream, group)["pending"]


def drained(client, group="seen-ingest", stream="events"):
    """Every entry delivered to the group and acknowledged."""
    groups = {g["name"].decode(): g for g in client.xinfo_groups(stream)}
    g = groups.get(group)
    return g is not None and g["pending"] == 0 and g["lag"] == 0


def test_all_events_land_and_are_acknowledged(redis_server, ingesters):
    client = redis_server.client()
    lines, expected = make_events(20000, users=300, kinds=("play", "expose"))
    xadd_json(client, lines, per_entry=4)  # several events per entry too
    ing = ingesters(stream_args(redis_server)).start()
    ing.wait(lambda: drained(client), 60, "all entries acknowledged")
    assert ing.stop() == 0, ing.log()[-3000:]
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == 20000
    stats = ing.stats()
    assert stats["events"] == 20000 and stats["messages"] == 5000
    assert stats["lag"] == 0


def entries_read(client, group="seen-ingest", stream="events"):
    groups = {g["name"].decode(): g for g in client.xinfo_groups(stream)}
    g = groups.get(group)
    return (g and g["entries-read"]) or 0


def test_kill9_and_restart_lose_nothing(redis_server, ingesters):
    client = redis_server.client()
    total = 80000
    lines, expected = make_events(total, users=400, spread_ms=3_600_000)
    xadd_json(client, lines)
    args = stream_args(redis_server, "--consumer", "c1", "--batch-events", "500",
                       "--flush-interval", "10ms")
    # Kill on progress, not on a timer: the ingester drains tens of thousands
    # of entries in a fraction of a second, so any fixed sleep is a race.
    for kill_after in (total // 8, total // 3):
        ing = ingesters(args).start()
        deadline = time.monotonic() + 30
        while entries_read(client) < kill_after:
            assert time.monotonic() < deadline, "no progress to %d entries" % kill_after
            time.sleep(0.0005)
        ing.kill9()
    assert not drained(client), "the kills should have come before the end"
    ing = ingesters(args).start()
    ing.wait(lambda: drained(client), 90, "all entries acknowledged after restart")
    assert ing.stop() == 0, ing.log()[-3000:]
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == total


def test_entries_of_a_vanished_consumer_are_claimed(redis_server, ingesters):
    """Entries read by a consumer that never comes back (another name) are
    taken over after --claim-idle and written."""
    client = redis_server.client()
    lines, expected = make_events(1000, users=20)
    xadd_json(client, lines)
    client.xgroup_create("events", "seen-ingest", id="0")
    # A consumer that reads everything and dies before acknowledging.
    client.xreadgroup("seen-ingest", "ghost", {"events": ">"}, count=2000)
    assert pending(client) == 1000
    ing = ingesters(stream_args(redis_server, "--consumer", "alive", "--claim-idle",
                                "300ms")).start()
    ing.wait(lambda: pending(client) == 0, 30, "the ghost's entries claimed and acknowledged")
    assert ing.stop() == 0
    assert missing_items(client, expected) == {}
    assert "claimed" in ing.log()


def test_malformed_entries_are_dead_lettered(redis_server, ingesters):
    client = redis_server.client()
    lines, expected = make_events(200, users=10)
    xadd_json(client, lines)
    client.xadd("events", {"event": "{oops"})
    client.xadd("events", {"other": "field"})
    client.xadd("events", {"event": json.dumps({"user": "u1", "item": "x", "ts": "soon", "kind": "play"})})
    ing = ingesters(stream_args(redis_server, "--dead-letter", "dead")).start()
    ing.wait(lambda: drained(client), 30, "all entries acknowledged")
    assert ing.stop() == 0
    stats = ing.stats()
    assert stats["malformed"] == 3 and stats["dead_letters"] == 3 and stats["events"] == 200
    dead = client.xrange("dead")
    assert len(dead) == 3
    errors = sorted(fields[b"error"].decode() for _, fields in dead)
    assert any("bad JSON" in e for e in errors)
    assert any("no field 'event'" in e for e in errors)
    assert any("'ts' must be" in e for e in errors)
    assert all(fields[b"origin"].startswith(b"events@") for _, fields in dead)
    assert missing_items(client, expected) == {}


def test_entry_fields_as_the_event(redis_server, ingesters):
    """--stream-field "": the entry's own fields are the event."""
    client = redis_server.client()
    now = int(time.time() * 1000)
    for i in range(100):
        client.xadd("events", {"uid": "u%d" % (i % 5), "vid": "v%d" % i, "t": now // 1000})
    client.xadd("events", {"uid": "u1", "vid": "v1"})  # no time: malformed
    ing = ingesters(["--source", "stream", "--stream", "events", "--redis",
                     "127.0.0.1:%d" % redis_server.port, "--stream-field", "",
                     "--key-template", "played:%uid", "--item-field", "vid",
                     "--ts-field", "t", "--ts-unit", "s"]).start()
    ing.wait(lambda: drained(client), 30, "all entries acknowledged")
    assert ing.stop() == 0
    assert ing.stats()["malformed"] == 1
    expected = {"played:u%d" % u: {"v%d" % i for i in range(u, 100, 5)} for u in range(5)}
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == 100


def test_write_errors_do_not_block(redis_server, ingesters):
    """A key that holds another type (WRONGTYPE) refuses its items for good:
    they are counted and dead-lettered, the rest is written and acknowledged."""
    client = redis_server.client()
    client.set("seen:{u3}:play", "legacy string")
    lines, expected = make_events(100, users=10)
    xadd_json(client, lines)
    ing = ingesters(stream_args(redis_server, "--dead-letter", "dead")).start()
    ing.wait(lambda: drained(client), 30, "all entries acknowledged")
    assert ing.stop() == 0
    stats = ing.stats()
    assert stats["write_errors"] == 10
    del expected["seen:{u3}:play"]
    assert missing_items(client, expected) == {}
    dead = client.xrange("dead")
    assert len(dead) == 10 and all(f[b"error"].startswith(b"WRONGTYPE") for _, f in dead)
    assert json.loads(dead[0][1][b"event"])["key"] == "seen:{u3}:play"


def test_redis_outage_holds_acks_and_sigterm_gives_up_in_time(make_server, ingesters):
    """While the target Redis is down nothing is acknowledged; SIGTERM then
    gives up after --shutdown-timeout with exit status 3, and a restart once
    Redis is back writes everything."""
    source = make_server(name="source")
    target = make_server("--seen.default-error", "exact", name="target")
    sc = source.client()
    lines, expected = make_events(500, users=20)
    args = ["--source", "stream", "--stream", "events", "--consumer", "c1",
            "--stream-redis", "127.0.0.1:%d" % source.port,
            "--redis", "127.0.0.1:%d" % target.port, "--key-template", "seen:{%user}:%kind",
            "--shutdown-timeout", "1s", "--redis-timeout", "500ms"]
    ing = ingesters(args).start()
    ing.wait(lambda: sc.exists("events"), 10, "the group created")
    target.stop()
    xadd_json(sc, lines)
    ing.wait(lambda: ing.stats().get("messages") == 500 and ing.stats().get("retries", 0) > 2,
             30, "events read and writes retried")
    assert pending(sc) == 500
    started = time.monotonic()
    assert ing.stop() == 3, ing.log()[-3000:]
    assert time.monotonic() - started < 10
    assert pending(sc) == 500
    target.start()
    ing = ingesters(args).start()
    ing.wait(lambda: drained(sc), 30, "all entries acknowledged once Redis is back")
    assert ing.stop() == 0
    assert missing_items(target.client(), expected) == {}


def test_backfill_is_one_command_per_key(redis_server, ingesters):
    # A back-filled stream: events spread over 30 days, every one at a
    # different second.  Each item carries its own time (TIMED), so a batch
    # costs one command per key; grouping by time bucket (--ts-granularity)
    # costs about one per event.
    client = redis_server.client()
    day = 86_400_000
    start = int(time.time() * 1000) - 30 * day
    lines, expected = [], {}
    for i in range(6000):
        event = {"user": "u%d" % (i % 20), "item": "v%d" % i, "ts": start + i * (30 * day // 6000),
                 "kind": "play"}
        lines.append(json.dumps(event))
        expected.setdefault("seen:{%s}:play" % event["user"], set()).add(event["item"])
    xadd_json(client, lines, per_entry=50)
    ing = ingesters(stream_args(redis_server, "--flush-interval", "5s")).start()
    ing.wait(lambda: drained(client), 60, "all entries acknowledged")
    assert ing.stop() == 0, ing.log()[-3000:]
    assert missing_items(client, expected) == {}
    stats = ing.stats()
    assert stats["events"] == 6000
    assert stats["commands"] <= 20 * stats["batches"] and stats["batches"] <= 3, stats

    # Each item lives by its own time: the oldest ones are forgotten first.
    now = int(client.execute_command("TIME")[0]) * 1000
    by_time = sorted((json.loads(x)["ts"], json.loads(x)) for x in lines)
    oldest, newest = by_time[0][1], by_time[-1][1]
    key = lambda e: "seen:{%s}:%s" % (e["user"], e["kind"])  # noqa: E731
    at = oldest["ts"] + int(90 * day * 1.25)  # past the oldest's forgetting bound
    assert client.execute_command("SEEN.MFILTER", 1, key(oldest), "AT", at, "ITEMS",
                                  oldest["item"]) == [oldest["item"].encode()]
    assert at < newest["ts"] + 90 * day and now < at
    assert client.execute_command("SEEN.MFILTER", 1, key(newest), "AT", at, "ITEMS",
                                  newest["item"]) == []

    client.delete(*expected.keys(), "events")
    xadd_json(client, lines, per_entry=50)
    ing = ingesters(stream_args(redis_server, "--flush-interval", "5s", "--ts-granularity",
                                "1s", "--group", "bucketed")).start()
    ing.wait(lambda: drained(client, group="bucketed"), 60, "all entries acknowledged")
    assert ing.stop() == 0, ing.log()[-3000:]
    assert missing_items(client, expected) == {}
    assert ing.stats()["commands"] > 5000
