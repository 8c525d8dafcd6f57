"""test_replication.py — a replica ends with byte-identical sets.

Part of the workload is written before the replica attaches (it arrives by
RDB), the rest after (it arrives as the replicated command stream).  The
replica is given other defaults on purpose: a key made by SEEN.ADD must
still get the master's policy, because the master replicates it explicitly.
"""
import time

import workload
from helpers import server_ms, wait_for
from payloads import dump


def test_replica_digests_match(make_server):
    master = make_server("--repl-diskless-sync-delay", "0", name="master")
    replica = make_server("--seen.default-window", "1d", "--seen.default-error", "exact",
                          name="replica")
    m, s = master.client(), replica.client()
    now = server_ms(m)
    keys = workload.run(m, now, seed=1, prefix="before")

    s.replicaof("127.0.0.1", master.port)
    wait_for(lambda: s.info("replication")["master_link_status"] == "up" and
             not s.info("replication")["master_sync_in_progress"], what="replica sync")

    keys += workload.run(m, now, seed=2, prefix="after")
    # Writes resolved on the master's clock, a key made with its defaults,
    # deletions, and writes to keys that came by RDB.
    m.execute_command("SEEN.ADD", "auto", "a", "b", "c")
    m.execute_command("SEEN.DEL", "auto", "b")
    m.execute_command("SEEN.ADD", "before:compact", "new1", "new2")
    m.execute_command("SEEN.REMOVE", "before:small", "ITEMS", "s3")
    m.config_set("seen.key-expiry", "yes")
    m.execute_command("SEEN.ADD", "auto-exp", "a")
    m.config_set("seen.key-expiry", "no")
    keys += ["auto", "auto-exp"]
    assert m.wait(1, 10000) == 1

    assert workload.snapshot(s, keys, now) == workload.snapshot(m, keys, now)
    for key in keys:
        assert s.pexpiretime(key) == m.pexpiretime(key), key
    assert s.execute_command("SEEN.INFO", "auto")[1] == m.execute_command("SEEN.INFO", "auto")[1]



def test_replica_keeps_an_upload_its_master_kept(make_server):
    # A chunked SEEN.LOAD whose chunks the master takes within its
    # seen.load-idle-seconds may reach a replica further apart (a delayed
    # stream; here, the replica's own limit set shorter).  The replica must
    # not drop the upload its master went on with: it would lose the key.
    master = make_server("--repl-diskless-sync-delay", "0", "--seen.load-idle-seconds", "5",
                         name="master")
    replica = make_server("--seen.load-idle-seconds", "1", name="replica")
    m, s = master.client(), replica.client()
    s.replicaof("127.0.0.1", master.port)
    wait_for(lambda: s.info("replication")["master_link_status"] == "up" and
             not s.info("replication")["master_sync_in_progress"], what="replica sync")
    m.execute_command("SEEN.ADD", "src", *["a%d" % i for i in range(500)])
    blob = dump(m, "src").blob
    half = len(blob) // 2
    m.execute_command("SEEN.LOAD", "dst", "OFFSET", 0, "TOTAL", len(blob), blob[:half])
    time.sleep(2.5)  # past the replica's limit, within the master's
    m.execute_command("SEEN.LOAD", "dst", "OFFSET", half, "TOTAL", len(blob), blob[half:])
    assert m.wait(1, 10000) == 1
    assert s.exists("dst") == 1
    assert s.execute_command("DEBUG", "DIGEST-VALUE", "dst") == \
        m.execute_command("DEBUG", "DIGEST-VALUE", "dst")
    # An upload the master abandons is dropped on the replica too, later.
    m.execute_command("SEEN.LOAD", "gone", "OFFSET", 0, "TOTAL", len(blob), blob[:half])
    assert m.wait(1, 10000) == 1
    assert s.info("seen")["seen_load_upload_bytes"] == half
