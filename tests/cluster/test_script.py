"""test_script.py — scripts/cluster.sh as users run it: status, a graceful
stop and start that keeps the data, kill and restart of one node, clean;
and the mistakes it refuses before starting anything."""
import os
import subprocess

import pytest
import redis

from conftest import SCRIPT, Cluster


def run(*args):
    return subprocess.run(["bash", SCRIPT, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)


def status(c):
    lines = c.script("status").splitlines()
    rows = {int(line.split()[0]): line.split() for line in lines[1:-1]}
    return rows, lines[-1]


def test_lifecycle(tmp_path):
    c = Cluster(tmp_path / "c").create()
    try:
        rows, state = status(c)
        assert state == "cluster_state: ok" and sorted(rows) == sorted(c.ports)
        assert sorted(r[2] for r in rows.values()) == ["master"] * 3 + ["replica"] * 3
        rc = c.client()
        for i in range(100):
            rc.execute_command("SEEN.ADD", "{s:%d}k" % i, "a", "b")
        rc.close()

        c.stop()
        rows, _ = status(c)
        assert all(r[1] == "down" for r in rows.values())
        for port in c.ports:
            with pytest.raises(redis.ConnectionError):
                redis.Redis(port=port, socket_connect_timeout=1).ping()
        c.drop_clients()
        c.start()  # the same cluster, from the AOFs
        rc = c.client()
        assert all(rc.execute_command("SEEN.FILTER", "{s:%d}k" % i, "a", "b", "c") == [b"c"]
                   for i in range(100))
        rc.close()

        c.kill(c.ports[0])
        assert status(c)[0][c.ports[0]][1] == "down"
        c.start()
        assert status(c)[0][c.ports[0]][1] != "down"

        # Creation options belong to creation.
        with pytest.raises(RuntimeError, match="already holds a cluster"):
            c.script("start", "--masters", "4")
    finally:
        c.teardown()
    c.script("clean")
    assert not os.path.exists(c.dir)


def test_refusals(tmp_path):
    assert run("--help").returncode == 0 and b"usage:" in run("--help").stdout
    assert run("frobnicate").returncode != 0
    d = str(tmp_path / "x")
    for args, message in ((["--masters", "2"], b"at least 3 masters"),
                          (["--", "--dir", "/tmp"], b"the script's to set"),
                          (["--", "port", "1"], b"must start with --name"),
                          (["--appendfsync", "sometimes"], b"always, everysec or no"),
                          (["--ports", "1,2"], b"must list 6 ports")):
        done = run("start", "--dir", d, *args)
        assert done.returncode != 0 and message in done.stdout, done.stdout
        assert not os.path.exists(d)
    done = run("status", "--dir", d)
    assert done.returncode != 0 and b"no cluster in" in done.stdout
    os.makedirs(d)
    open(os.path.join(d, "unrelated"), "w").close()
    done = run("start", "--dir", d)
    assert done.returncode != 0 and b"not empty" in done.stdout
    assert run("clean", "--dir", d).returncode != 0 and os.path.exists(os.path.join(d, "unrelated"))
