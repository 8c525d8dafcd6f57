"""conftest.py — local Redis Clusters for the cluster tests, made with
scripts/cluster.sh on free 127.0.0.1 ports in temporary directories.

`shared_cluster` (3 masters + 3 replicas, one per test file) serves the
tests that leave the cluster usable; tests that kill nodes make their own
with `make_cluster`.
Every cluster is stopped when its fixture ends, pass or fail: the script
shuts the nodes down, and any node still running afterwards is killed by
the pid its own pid file names.  Every wait is bounded.
"""
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "module"))

from helpers import wait_for  # noqa: E402

# redis-py logs every MOVED it follows, with a traceback.
logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)

SCRIPT = os.path.join(ROOT, "scripts", "cluster.sh")
MODULE = os.path.abspath(os.environ.get("SEEN_MODULE", os.path.join(ROOT, "build", "seen.so")))
REDIS_CLI = os.environ.get("REDIS_CLI", "redis-cli")
NSLOTS = 16384


def free_ports(n):
    """n distinct ports free right now (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def parse_nodes(text):
    """CLUSTER NODES as a list of dicts: id, port, flags, master, slots."""
    nodes = []
    for line in text.strip().splitlines():
        parts = line.split()
        addr, flags = parts[1], parts[2].split(",")
        slots = []
        for s in parts[8:]:
            if s.startswith("["):
                continue  # a slot being imported or migrated
            lo, _, hi = s.partition("-")
            slots.append((int(lo), int(hi or lo)))
        nodes.append({"id": parts[0], "port": int(addr.split("@")[0].rsplit(":", 1)[1]),
                      "flags": flags, "master": None if parts[3] == "-" else parts[3],
                      "role": "master" if "master" in flags else "replica",
                      "failed": "fail" in flags or "fail?" in flags,
                      "connected": parts[7] == "connected", "slots": slots})
    return nodes


class Cluster:
    """A cluster run by scripts/cluster.sh in `directory`."""

    def __init__(self, directory, masters=3, replicas=1, node_timeout=2000,
                 appendfsync="everysec", maxmemory=None, extra=()):
        self.dir = str(directory)
        self.masters_wanted, self.replicas_wanted = masters, replicas
        self.options = ["--masters", str(masters), "--replicas", str(replicas),
                        "--node-timeout", str(node_timeout), "--appendfsync", appendfsync,
                        "--module", MODULE]
        if maxmemory:
            self.options += ["--maxmemory", str(maxmemory)]
        self.extra = list(extra)
        self.ports = []
        self.clients = {}

    # --------------------------------------------------------- the script
    def script(self, *args, timeout=120):
        cmd = ["bash", SCRIPT, args[0], "--dir", self.dir, *args[1:]]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), done.stdout.decode()[-3000:]))
        return done.stdout.decode()

    def create(self):
        n = self.masters_wanted * (1 + self.replicas_wanted)
        for attempt in range(3):
            ports = free_ports(2 * n)
            try:
                self.script("start", "--ports", ",".join(map(str, ports[:n])), "--bus-ports",
                            ",".join(map(str, ports[n:])), *self.options, "--", *self.extra)
                self.ports = ports[:n]
                return self
            except RuntimeError:
                # A port taken between the choice and the bind: start over.
                self.teardown()
                if attempt == 2:
                    raise
                shutil.rmtree(self.dir)

    def start(self):
        """Start every node that is not running; wait until the cluster is up."""
        self.script("start")

    def stop(self):
        self.script("stop")

    def kill(self, port):
        """kill -9 one node."""
        self.drop_client(port)
        self.script("kill", str(port))

    def teardown(self):
        try:
            if os.path.exists(os.path.join(self.dir, "cluster.env")):
                self.script("stop", timeout=60)
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        self.kill_leftovers()
        for c in self.clients.values():
            c.close()
        self.clients.clear()

    def kill_leftovers(self):
        """SIGKILL any node still running, by its pid file (checked to be a
        redis-server of this directory's ports)."""
        if not os.path.isdir(self.dir):
            return
        for name in os.listdir(self.dir):
            if not name.startswith("node-"):
                continue
            port = name[5:]
            try:
                with open(os.path.join(self.dir, name, "redis.pid")) as f:
                    pid = int(f.read().strip())
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    title = f.read()
            except (OSError, ValueError):
                continue
            if b"redis-server" in title and (b":" + port.encode()) in title:
                os.kill(pid, signal.SIGKILL)

    # --------------------------------------------------------- clients
    def node(self, port):
        """A plain client of one node (cached)."""
        if port not in self.clients:
            self.clients[port] = redis.Redis(host="127.0.0.1", port=port, socket_timeout=30)
        return self.clients[port]

    def drop_clients(self):
        for port in list(self.clients):
            self.drop_client(port)

    def drop_client(self, port):
        c = self.clients.pop(port, None)
        if c is not None:
            c.close()

    def client(self, **kwargs):
        """A redis-py cluster client."""
        kwargs.setdefault("socket_timeout", 30)
        return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in self.ports],
                            **kwargs)

    def alive_ports(self):
        out = []
        for port in self.ports:
            try:
                if self.node(port).ping():
                    out.append(port)
            except redis.RedisError:
                self.drop_client(port)
        return out

    # --------------------------------------------------------- topology
    def topology(self, port=None):
        """CLUSTER NODES as seen by `port` (or the first node that answers)."""
        for p in [port] if port else self.ports:
            try:
                return parse_nodes(self.node(p).execute_command("CLUSTER", "NODES").decode())
            except redis.RedisError:
                self.drop_client(p)
        raise AssertionError("no node answers CLUSTER NODES")

    def masters(self):
        return [n for n in self.topology() if n["role"] == "master" and n["slots"]]

    def replicas_of(self, master):
        return [n for n in self.topology() if n["master"] == master["id"]]

    def master_of_slot(self, slot):
        for n in self.masters():
            if any(lo <= slot <= hi for lo, hi in n["slots"]):
                return n
        raise AssertionError("no master serves slot %d" % slot)

    def wait_state_ok(self, timeout=30):
        """Every running node says cluster_state:ok and agrees on who
        serves every slot."""
        def ok():
            views = []
            for port in self.alive_ports():
                if self.node(port).cluster("info")["cluster_state"] != "ok":
                    return False
                views.append(sorted((n["port"], tuple(n["slots"]))
                                    for n in self.topology(port) if n["role"] == "master"
                                    and n["slots"] and not n["failed"]))
            return views and all(v == views[0] for v in views)
        wait_for(ok, timeout=timeout, what="cluster_state ok on every node", interval=0.1)

    def wait_replicas_synced(self, timeout=30):
        """Every replica's data equals its master's (DEBUG DIGEST)."""
        def synced():
            for m in self.masters():
                want = self.node(m["port"]).execute_command("DEBUG", "DIGEST")
                for r in self.replicas_of(m):
                    if self.node(r["port"]).execute_command("DEBUG", "DIGEST") != want:
                        return False
            return True
        wait_for(synced, timeout=timeout, what="replicas equal to their masters", interval=0.1)


def redis_cli(*args, timeout=300):
    """Run redis-cli (e.g. --cluster reshard); its output on failure."""
    done = subprocess.run([REDIS_CLI, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError("redis-cli %s failed:\n%s" % (args, done.stdout.decode()[-3000:]))
    return done.stdout.decode()


@pytest.fixture
def make_cluster(tmp_path):
    """Make clusters of one's own (stopped when the test ends)."""
    clusters = []

    def make(name="c%d", **kwargs):
        c = Cluster(tmp_path / (name % len(clusters)), **kwargs)
        clusters.append(c)
        return c.create()

    yield make
    for c in clusters:
        c.teardown()


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("shared"))
    try:
        yield c.create()
    finally:
        c.teardown()
