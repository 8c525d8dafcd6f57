"""test_lifetime.py — keys living through weeks of a feed, on a server whose
wall clock runs fast (bench/fastclock.c), checked for the shape they end in
as well as for their answers.

A feed's events reach the module late and out of order (ingesters write
each event's own time with AT): a key's second page can carry times older
than its first.  Such a key must live like one written in order — as many
runs, as many bytes — not be mistaken for an older one and re-planned at
every flush.
"""
import time

from conftest import server_ms

DAY = 86400000
# Ten simulated days a second: 50 days in about 5 s.
FACTOR = 864000
PAGES = 2500
PAGE_EVERY_MS = DAY // 50


def runs_of(client, key):
    info = client.execute_command("SEEN.INFO", key)
    fields = dict(zip(info[::2], info[1::2]))
    runs = fields[b"runs"]
    return len(runs) if isinstance(runs, list) else int(runs)


def test_late_first_page_lives_like_in_order(make_server):
    server = make_server("--appendonly", "yes", clock_factor=FACTOR)
    c = server.client()
    before = server_ms(c)
    time.sleep(0.05)
    t0 = server_ms(c)
    assert t0 - before > 1000 * 50, "the server's clock does not run fast"
    most = {"in-order": 0, "late": 0}
    deadline = time.monotonic() + 120
    for k in range(PAGES):
        assert time.monotonic() < deadline, "the fast clock did not advance"
        page = [f"p{k}-{i}" for i in range(20)]
        c.execute_command("SEEN.ADD", "in-order", *page)
        if k == 1:
            # A minute older than the key's first page.
            c.execute_command("SEEN.ADD", "late", "AT", t0 - 60000, *page)
        else:
            c.execute_command("SEEN.ADD", "late", *page)
        if k % 25 == 0 or k == PAGES - 1:
            for key in most:
                most[key] = max(most[key], runs_of(c, key))
        while server_ms(c) < t0 + (k + 1) * PAGE_EVERY_MS:
            assert time.monotonic() < deadline, "the fast clock did not advance"
            time.sleep(0.0005)
    sizes = {key: c.memory_usage(key) for key in most}
    print(f"50 days at 1,000 a day: {most} runs at most, {sizes} bytes")
    assert most["late"] <= most["in-order"] + 1
    assert sizes["late"] <= sizes["in-order"] * 1.03
    # Every page is still seen (50 days < the 90-day window), also after a
    # reload from RDB and a restart from the AOF.
    probe = [f"p{k}-{i}" for k in range(0, PAGES, 7) for i in (0, 19)]
    for phase in ("live", "rdb", "aof"):
        if phase == "rdb":
            c.execute_command("DEBUG", "RELOAD")
        elif phase == "aof":
            server.restart()
            c = server.client()
        for key in most:
            assert c.execute_command("SEEN.FILTER", key, *probe) == [], (phase, key)
        assert runs_of(c, "late") <= most["in-order"] + 1, phase
