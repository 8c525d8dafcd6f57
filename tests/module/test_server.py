"""test_server.py — how the module fits the server: ACL key patterns,
maxmemory, Cluster routing of multi-key filters, configs at load time."""
import time

import pytest
import redis

from conftest import Server


def test_acl_key_patterns(shared_server, r):
    r.execute_command("SEEN.ADD", "user:alice:played", "v1")
    r.execute_command("SEEN.ADD", "user:bob:played", "v2")
    r.acl_setuser("alice", enabled=True, passwords=["+pw"], keys=["user:alice:*"],
                  commands=["+@all"])
    try:
        alice = shared_server.client(username="alice", password="pw")
        assert alice.execute_command("SEEN.FILTER", "user:alice:played", "v1", "v3") == [b"v3"]
        assert alice.execute_command("SEEN.ADD", "user:alice:new", "v9") == 1
        denied = [
            ["SEEN.FILTER", "user:bob:played", "v2"],
            ["SEEN.ADD", "user:bob:played", "v3"],
            ["SEEN.INSERT", "user:bob:played", "ITEMS", "v3"],
            ["SEEN.DEL", "user:bob:played", "v2"],
            ["SEEN.REMOVE", "user:bob:played", "ITEMS", "v2"],
            ["SEEN.RESERVE", "user:bob:other"],
            ["SEEN.INFO", "user:bob:played"],
            ["SEEN.COUNT", "user:bob:played"],
            ["SEEN.LOAD", "user:bob:x", "blob"],
            ["SEEN.MFILTER", "2", "user:alice:played", "user:bob:played", "ITEMS", "v2"],
            ["SEEN.MFILTER", "1", "user:bob:played", "BULK", "v2"],
        ]
        for cmd in denied:
            with pytest.raises(redis.exceptions.NoPermissionError):
                alice.execute_command(*cmd)
        assert alice.execute_command("SEEN.MFILTER", "2", "user:alice:played", "user:alice:new",
                                     "ITEMS", "v1", "v9", "v2") == [b"v2"]
        # Read-only key permissions: filtering is allowed, adding is not.
        r.acl_setuser("reader", enabled=True, passwords=["+pw"], keys=["%R~user:*"],
                      commands=["+@all"])
        reader = shared_server.client(username="reader", password="pw")
        assert reader.execute_command("SEEN.MFILTER", "1", "user:bob:played", "ITEMS", "v2") == []
        with pytest.raises(redis.exceptions.NoPermissionError):
            reader.execute_command("SEEN.ADD", "user:bob:played", "v5")
        assert r.execute_command("SEEN.COUNT", "user:bob:played") == 1
    finally:
        r.acl_deluser("alice", "reader")


def test_maxmemory_refuses_writes_cleanly(r):
    r.execute_command("SEEN.ADD", "k", "a", "c")
    before = r.execute_command("DEBUG", "DIGEST-VALUE", "k")
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", 1)
    try:
        for cmd in (["SEEN.ADD", "k", "b"], ["SEEN.INSERT", "k", "ITEMS", "b"],
                    ["SEEN.RESERVE", "k2"], ["SEEN.ADD", "k3", "x"],
                    ["SEEN.LOAD", "k4", "blob"]):
            with pytest.raises(redis.ResponseError, match="OOM command not allowed"):
                r.execute_command(*cmd)
        assert r.execute_command("DEBUG", "DIGEST-VALUE", "k") == before
        assert not r.exists("k2", "k3", "k4")
        # Reads go on, and so does forgetting, which frees memory.
        assert r.execute_command("SEEN.FILTER", "k", "a", "b") == [b"b"]
        assert r.execute_command("SEEN.DEL", "k", "c") == 1
    finally:
        r.config_set("maxmemory", 0)
    assert r.execute_command("SEEN.ADD", "k", "b") == 1


def test_cluster_routing(make_server):
    """Keys of one filter must share a slot; Redis finds them through the
    command's getkeys answer (7.0 Cluster does not read key specs)."""
    node = make_server("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
    c = node.client()
    c.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    deadline = time.monotonic() + 20
    while c.cluster("info")["cluster_state"] != "ok":
        assert time.monotonic() < deadline, "cluster did not come up"
        time.sleep(0.1)
    c.execute_command("SEEN.ADD", "{u1}delivered", "a")
    c.execute_command("SEEN.ADD", "{u1}played", "b")
    assert c.execute_command("SEEN.MFILTER", 2, "{u1}delivered", "{u1}played", "ITEMS", "a",
                             "b", "c") == [b"c"]
    with pytest.raises(redis.ResponseError, match="CROSSSLOT"):
        c.execute_command("SEEN.MFILTER", 2, "{u1}delivered", "{u2}played", "ITEMS", "a")
    # A malformed numkeys yields no keys for routing and an error from the command.
    with pytest.raises(redis.ResponseError, match="numkeys"):
        c.execute_command("SEEN.MFILTER", "x", "{u1}delivered", "ITEMS", "a")


def test_configs_at_load_time(make_server):
    server = make_server("--seen.default-window", "30d", "--seen.default-slices", "6",
                         "--seen.default-error", "exact", "--seen.default-ids", "int",
                         "--seen.max-batch", "100", "--seen.key-expiry", "yes",
                         "--seen.expiry-jitter", "0")
    c = server.client()
    assert c.config_get("seen.default-window") == {"seen.default-window": "30d"}
    c.execute_command("SEEN.ADD", "k", "5")
    info = c.execute_command("SEEN.INFO", "k")
    policy = dict(zip(info[1][0::2], info[1][1::2]))
    assert policy[b"window-ms"] == 30 * 86400000 and policy[b"slices"] == 6
    assert policy[b"ids"] == b"int" and float(policy[b"error"]) == 0
    assert policy[b"expiry"] == b"on" and policy[b"jitter-ms"] == 0
    assert c.pttl("k") > 29 * 86400000


@pytest.mark.parametrize("name,value", [
    ("seen.default-window", "forever"), ("seen.default-error", "0.5"),
    ("seen.default-error", "0"), ("seen.default-slices", "0"), ("seen.default-slices", "65"),
    ("seen.max-batch", "0"), ("seen.max-batch", "2000000"), ("seen.expiry-jitter", "-1"),
    ("seen.default-ids", "float"), ("seen.aof-chunk", "10"),
])
def test_bad_config_values(r, name, value):
    before = r.config_get("seen.*")
    with pytest.raises(redis.ResponseError):
        r.config_set(name, value)
    assert r.config_get("seen.*") == before


def test_window_and_slices_must_agree(r):
    with pytest.raises(redis.ResponseError, match="window"):
        r.config_set("seen.default-window", "3")  # 3 ms for 4 slices
    assert r.config_get("seen.default-window")["seen.default-window"] == "90d"
    r.config_set("seen.default-window", "3", "seen.default-slices", "2")
    r.config_set("seen.default-window", "90d", "seen.default-slices", "4")


def test_bad_config_at_load_time_refuses_to_start(tmp_path):
    server = Server(tmp_path / "bad", "--seen.default-error", "2")
    with pytest.raises(RuntimeError):
        server.start(timeout=3)
    assert "seen" in server.read_log()


def test_module_arguments_are_refused(tmp_path):
    from conftest import MODULE
    server = Server(tmp_path / "args", "--loadmodule", MODULE, "window", "30d", module=False)
    with pytest.raises(RuntimeError):
        server.start(timeout=3)
    assert "seen takes no module arguments" in server.read_log()
