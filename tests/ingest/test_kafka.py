"""test_kafka.py — seen-ingest from Kafka (librdkafka's mock cluster) into a
real redis-server: every event lands, a SIGKILL and restart loses nothing,
SIGTERM writes and commits, malformed events are counted and dead-lettered,
and memory stays bounded under a fast producer."""
import random
import time

from conftest import FAST_GROUP, INGEST_PLAIN, KafkaMock
from events import make_events, merge, missing_items, total_count


def kafka_args(kafka, server, *extra):
    return ["--source", "kafka", "--brokers", kafka.bootstrap, "--topic", "events",
            "--redis", "127.0.0.1:%d" % server.port, "--key-template", "seen:{%user}:%kind",
            *FAST_GROUP, *extra]


def all_committed(kafka):
    committed, end = kafka.committed()
    return end > 0 and committed == end


def test_all_events_land(kafka, redis_server, ingesters):
    lines, expected = make_events(20000, users=200, kinds=("play", "expose"))
    kafka.produce(lines)
    ing = ingesters(kafka_args(kafka, redis_server)).start()
    ing.wait(lambda: all_committed(kafka), 60, "all offsets committed")
    assert ing.stop() == 0, ing.log()[-3000:]
    client = redis_server.client()
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == 20000
    stats = ing.stats()
    assert stats["phase"] == "exit"
    assert stats["events"] == 20000 and stats["malformed"] == 0
    assert stats["items_new"] == 20000
    # Grouped writes: far fewer commands than events.
    assert stats["commands"] < 20000 / 4
    assert stats["lag"] == 0


def test_kill9_and_restart_lose_nothing(kafka, redis_server, ingesters):
    """SIGKILL at arbitrary points of a run, then a restart: every event is
    in Redis and every offset committed."""
    rng = random.Random(7)
    lines, expected = make_events(60000, users=500)
    kafka.produce(lines)
    args = kafka_args(kafka, redis_server, "--batch-events", "700", "--flush-interval", "20ms")
    kills, produced = 0, 60000
    while kills < 3:
        ing = ingesters(args).start()
        # Let it commit part of the stream, then kill it wherever it is.
        ing.wait(lambda: ing.stats().get("commits", 0) > 0, 60, "a first commit of its own")
        time.sleep(rng.uniform(0.02, 0.3))
        if all_committed(kafka):
            # Too fast to kill mid-run: give it more to do and try again.
            more, exp = make_events(20000, users=500, start=produced)
            produced += kafka.produce(more)
            merge(expected, exp)
        else:
            kills += 1
        ing.kill9()
    ing = ingesters(args).start()
    ing.wait(lambda: all_committed(kafka), 90, "all offsets committed after restart")
    assert ing.stop() == 0, ing.log()[-3000:]
    client = redis_server.client()
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == produced


def test_sigterm_writes_and_commits(kafka, redis_server, ingesters):
    """With a batch that would wait a minute, SIGTERM still writes it and
    commits before exiting."""
    lines, expected = make_events(3000, users=50)
    kafka.produce(lines)
    ing = ingesters(kafka_args(kafka, redis_server, "--flush-interval", "60s",
                               "--batch-events", "100000")).start()
    ing.wait(lambda: ing.stats().get("messages") == 3000, 60, "every message read")
    assert redis_server.client().dbsize() == 0  # nothing written yet
    assert ing.stop() == 0, ing.log()[-3000:]
    assert all_committed(kafka)
    assert missing_items(redis_server.client(), expected) == {}


def test_malformed_events_are_skipped_counted_and_dead_lettered(kafka, redis_server,
                                                                ingesters):
    good, expected = make_events(500, users=20)
    now = int(time.time() * 1000)
    bad = [
        "not json at all",
        '{"user": "u1", "item": "x1", "ts": 1',                   # truncated
        '["an", "array"]',                                         # not an object
        '{"item": "x2", "ts": %d, "kind": "play"}' % now,          # no user
        '{"user": "u1", "ts": %d, "kind": "play"}' % now,          # no item
        '{"user": "u1", "item": "x3", "kind": "play"}',            # no time
        '{"user": "u1", "item": "x4", "ts": -5, "kind": "play"}',  # negative time
        '{"user": "u1", "item": "x5", "ts": 1.5, "kind": "play"}', # fractional time
        '{"user": "u1", "item": "%s", "ts": %d, "kind": "play"}' % ("y" * 513, now),
        '{"user": "u1", "item": "", "ts": %d, "kind": "play"}' % now,
        '{"user": null, "item": "x6", "ts": %d, "kind": "play"}' % now,
        '{"user": "u1", "user": "u2", "item": "x7", "ts": %d, "kind": "play"}' % now,
        '',                                                        # empty message
    ]
    lines = list(good)
    for i, b in enumerate(bad):
        lines.insert(37 * (i + 1), b)
    kafka.produce(lines)
    ing = ingesters(kafka_args(kafka, redis_server, "--dead-letter", "dead")).start()
    ing.wait(lambda: all_committed(kafka), 60, "all offsets committed")
    assert ing.stop() == 0, ing.log()[-3000:]
    stats = ing.stats()
    assert stats["malformed"] == len(bad)
    assert stats["events"] == 500
    assert stats["dead_letters"] == len(bad)
    assert missing_items(redis_server.client(), expected) == {}
    dead = kafka.dump("dead")
    assert sorted(dead) == sorted(bad)
    log = ing.log()
    assert "malformed event at events/" in log and "not json at all" in log


def test_multi_line_messages(kafka, redis_server, ingesters):
    """A message may carry several newline-separated events (blank lines
    and surrounding blanks are fine); a bad line is rejected alone, named by
    its line number, and the rest of its message is written."""
    lines, expected = make_events(300, users=10)
    packed = ["\n".join(lines[i:i + 30]) for i in range(0, 300, 30)]
    packed[3] = packed[3] + "\n\n  \n{broken\n"
    packed[5] = "  " + packed[5].replace("\n", "\r\n", 3)
    kafka.produce(packed, multiline=True)
    ing = ingesters(kafka_args(kafka, redis_server)).start()
    ing.wait(lambda: all_committed(kafka), 60, "all offsets committed")
    assert ing.stop() == 0
    stats = ing.stats()
    assert stats["malformed"] == 1 and stats["events"] == 300
    assert " line 33: bad JSON" in ing.log()
    assert missing_items(redis_server.client(), expected) == {}


def test_memory_stays_bounded_under_a_fast_producer(tmp_path, redis_server, ingesters):
    """200,000 events produced as fast as the mock takes them: the
    unsanitized ingester's peak RSS stays within its bounds (batches of 2000
    events, a 1 MB prefetch queue) however far ahead the producer gets."""
    # 16 partitions keep each under the mock's ~5 MB log, which would
    # otherwise drop the oldest messages before the ingester reads them.
    kafka = KafkaMock(tmp_path, partitions=16)
    try:
        memory_test(kafka, redis_server, ingesters)
    finally:
        kafka.close()


def memory_test(kafka, redis_server, ingesters):
    ing = ingesters(kafka_args(kafka, redis_server, "--batch-events", "2000",
                               "--kafka", "queued.max.messages.kbytes=1024",
                               "--kafka", "queued.min.messages=2000"),
                    binary=INGEST_PLAIN).start()
    peak = 0

    def peak_rss():
        nonlocal peak
        with open("/proc/%d/status" % ing.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
        return True

    ing.wait(lambda: "partitions assigned" in ing.log(), 60, "the partitions assigned")
    total, expected = 0, {}
    for start in range(0, 200000, 50000):
        lines, exp = make_events(50000, users=2000, start=start)
        total += kafka.produce(lines)
        merge(expected, exp)
        peak_rss()
    ing.wait(lambda: peak_rss() and all_committed(kafka), 120, "all offsets committed",
             interval=0.2)
    assert ing.stop() == 0
    client = redis_server.client()
    assert missing_items(client, expected) == {}
    assert total_count(client, expected) == total
    # librdkafka's threads and buffers plus one batch: a few tens of MB, not
    # the ~20 MB of JSON waiting in the topic on top.
    print("seen-ingest peak RSS: %d kB" % peak)
    assert peak < 48 * 1024, "peak RSS %d kB" % peak
