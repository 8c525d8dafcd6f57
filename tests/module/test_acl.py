"""test_acl.py — ACL users get what docs/commands.md ("ACL") promises: on a
server that lets modules set ACL categories (Redis 7.2+), +@read allows the
filters and nothing that writes, +@all -@write allows no write and
-@dangerous excludes SEEN.LOAD; on Redis 7.0, which gives module commands
no categories, the documented rules that name the commands do the same."""
import pytest
import redis

from conftest import raw

READS = [("SEEN.FILTER", "user:1", "a"), ("SEEN.MFILTER", 1, "user:1", "ITEMS", "a"),
         ("SEEN.COUNT", "user:1"), ("SEEN.INFO", "user:1")]
WRITES = [("SEEN.ADD", "user:1", "b"), ("SEEN.INSERT", "user:1", "ITEMS", "c"),
          ("SEEN.DEL", "user:1", "b"), ("SEEN.REMOVE", "user:1", "ITEMS", "c"),
          ("SEEN.RESERVE", "user:2"), ("SEEN.COMPACT", "user:1")]


def categories_supported(r):
    cats = raw(r, "COMMAND", "INFO", "seen.filter")[0][6]
    return b"@read" in cats


def allowed(client, command):
    try:
        client.execute_command(*command)
        return True
    except redis.exceptions.NoPermissionError:
        return False
    except redis.exceptions.ResponseError as e:
        if "NOPERM" in str(e):
            return False
        return True  # allowed, but the call itself failed (e.g. a bad blob)


def user(shared_server, r, name, *rules):
    r.execute_command("ACL", "SETUSER", name, "reset", "on", ">pw", *rules)
    return shared_server.client(username=name, password="pw")


def check(client, reads, writes, load):
    for command in READS:
        assert allowed(client, command) == reads, command
    for command in WRITES:
        assert allowed(client, command) == writes, command
    assert allowed(client, ("SEEN.LOAD", "user:3", b"not a set")) == load


@pytest.fixture
def users(shared_server, r):
    r.execute_command("SEEN.ADD", "user:1", "a")
    yield
    for name in ("reader", "nowrite", "nodanger"):
        r.execute_command("ACL", "DELUSER", name)


def test_categories_or_named_rules(shared_server, r, users):
    if categories_supported(r):
        reader = user(shared_server, r, "reader", "~*", "+@read")
        nowrite = user(shared_server, r, "nowrite", "~*", "+@all", "-@write")
        nodanger = user(shared_server, r, "nodanger", "~*", "+@all", "-@dangerous")
    else:
        # Redis 7.0: module commands have no categories...
        reader = user(shared_server, r, "reader", "~*", "+@read")
        check(reader, reads=False, writes=False, load=False)
        nowrite = user(shared_server, r, "nowrite", "~*", "+@all", "-@write")
        assert allowed(nowrite, WRITES[0])
        # ...so the documented rules name them.
        reader = user(shared_server, r, "reader", "~user:*", "+seen.filter", "+seen.mfilter",
                      "+seen.count", "+seen.info")
        nowrite = user(shared_server, r, "nowrite", "~*", "+@all", "-seen.reserve", "-seen.add",
                       "-seen.insert", "-seen.del", "-seen.remove", "-seen.compact",
                       "-seen.load")
        nodanger = user(shared_server, r, "nodanger", "~*", "+@all", "-seen.load")
    check(reader, reads=True, writes=False, load=False)
    check(nowrite, reads=True, writes=False, load=False)
    check(nodanger, reads=True, writes=True, load=False)
    for c in (reader, nowrite, nodanger):
        c.close()
