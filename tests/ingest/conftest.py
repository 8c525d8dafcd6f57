"""conftest.py — fixtures for the seen-ingest tests.

Real redis-server processes with seen.so (the module tests' Server class,
loaded from tests/module/conftest.py), a librdkafka mock cluster in its own
process (build/tests/kafka_mock), a 3-master Redis Cluster on loopback, and
a helper that runs the ingester and reads its JSON statistics.  Every wait
is bounded: a test fails instead of hanging.
"""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The module tests' conftest imports its neighbour helpers.py.
sys.path.insert(0, os.path.join(ROOT, "tests", "module"))
_spec = importlib.util.spec_from_file_location(
    "seen_module_fixtures", os.path.join(ROOT, "tests", "module", "conftest.py"))
module_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(module_fixtures)
Server = module_fixtures.Server
free_port = module_fixtures.free_port

INGEST = os.path.abspath(os.environ.get("SEEN_INGEST", os.path.join(ROOT, "build", "seen-ingest")))
INGEST_PLAIN = os.path.join(ROOT, "build", "seen-ingest")  # unsanitized, for memory figures
KAFKA_MOCK = os.path.join(ROOT, "build", "tests", "kafka_mock")
REDIS_CLI = os.environ.get("REDIS_CLI", "redis-cli")

# Exact sets, so SEEN.COUNT counts items exactly and a test can compare.
EXACT = ("--seen.default-error", "exact")


def wait_for(predicate, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


class KafkaMock:
    """build/tests/kafka_mock: brokers that outlive the ingesters."""

    def __init__(self, directory, topics=("events", "dead"), partitions=4):
        self.dir = str(directory)
        args = [KAFKA_MOCK, "--partitions", str(partitions)]
        for t in topics:
            args += ["--topic", t]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(self.dir, "mock.log"), "wb"),
                                     text=True, bufsize=1)
        line = self.proc.stdout.readline()
        assert line.startswith("bootstrap "), line
        self.bootstrap = line.split()[1]
        self.files = 0

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def produce(self, lines, multiline=False):
        """One message per entry of lines (which may hold newlines if
        multiline)."""
        self.files += 1
        path = os.path.join(self.dir, "batch%d.jsonl" % self.files)
        sep = "\0" if multiline else "\n"
        with open(path, "w") as f:
            for line in lines:
                f.write(line + sep)
        reply = self.ask(("produce0 " if multiline else "produce ") + path)
        assert reply == "produced %d" % len(lines), reply
        return len(lines)

    def committed(self, group="seen-ingest", topic="events"):
        reply = self.ask("committed %s %s" % (group, topic)).split()
        assert reply[0] == "committed", reply
        # The mock keeps about 5 MB per partition and drops older messages:
        # a test must stay under that, or it would count them as lost.
        assert int(reply[5]) == 0, "the mock's log dropped messages: " + " ".join(reply)
        return int(reply[1]), int(reply[3])

    def dump(self, topic):
        self.proc.stdin.write("dump %s\n" % topic)
        self.proc.stdin.flush()
        values = []
        while True:
            line = self.proc.stdout.readline()
            assert line, "kafka_mock died"
            if line.startswith("end "):
                return values
            values.append(line[4:].rstrip("\n"))

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def kafka(tmp_path):
    mock = KafkaMock(tmp_path, partitions=8)
    yield mock
    mock.close()


# librdkafka settings that let a restarted ingester take the partitions over
# quickly from the member that was killed (the mock honours session timeouts).
FAST_GROUP = ["--kafka", "session.timeout.ms=2500", "--kafka", "heartbeat.interval.ms=300"]


class Ingester:
    """One seen-ingest process with JSON statistics in a file."""

    def __init__(self, directory, args, binary=None, name="ingest"):
        self.dir = str(directory)
        self.stats_path = os.path.join(self.dir, name + ".stats")
        self.log_path = os.path.join(self.dir, name + ".log")
        self.args = [binary or INGEST] + list(args)
        self.proc = None

    def start(self, extra=()):
        cmd = self.args + ["--stats-format", "json", "--stats-file", self.stats_path,
                           "--stats-interval", "100ms"] + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "ab"))
        return self

    def stats(self):
        """The last statistics line written, or {}."""
        try:
            with open(self.stats_path) as f:
                lines = f.read().splitlines()
        except OSError:
            return {}
        for line in reversed(lines):
            try:
                return json.loads(line)
            except ValueError:
                continue  # a line being written
        return {}

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait(self, predicate, timeout, what, interval=0.05):
        """wait_for, failing at once (with the log) if the ingester exits."""
        def check():
            if self.proc.poll() is not None:
                raise AssertionError("seen-ingest exited with %s while waiting for %s; log:\n%s"
                                     % (self.proc.returncode, what, self.log()[-3000:]))
            return predicate()
        return wait_for(check, timeout, what, interval)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout=30):
        """SIGTERM and the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError("seen-ingest did not stop on SIGTERM; log:\n" + self.log()[-3000:])


@pytest.fixture
def ingesters(tmp_path):
    made = []

    def make(args, **kwargs):
        ing = Ingester(tmp_path, args, name="ingest%d" % len(made), **kwargs)
        made.append(ing)
        return ing

    yield make
    for ing in made:
        if ing.alive():
            ing.proc.kill()
            ing.proc.wait(timeout=10)


@pytest.fixture
def redis_server(make_server):
    return make_server(*EXACT)


@pytest.fixture
def make_server(tmp_path):
    servers = []

    def make(*args, name=None, module=True):
        server = Server(tmp_path / (name or "s%d" % len(servers)), *args, module=module)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()
        server.kill()


class Cluster:
    """Three masters with the module, created by redis-cli --cluster create."""

    def __init__(self, directory):
        self.nodes = []
        for i in range(3):
            node = Server(os.path.join(str(directory), "node%d" % i), *EXACT,
                          "--cluster-enabled", "yes", "--cluster-node-timeout", "5000",
                          "--cluster-config-file", "nodes.conf")
            node.start()
            self.nodes.append(node)
        addrs = ["127.0.0.1:%d" % n.port for n in self.nodes]
        subprocess.run([REDIS_CLI, "--cluster", "create"] + addrs +
                       ["--cluster-replicas", "0", "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                       timeout=60)
        wait_for(self.ready, 30, "cluster state ok on every node")

    def ready(self):
        for n in self.nodes:
            info = n.client().execute_command("CLUSTER", "INFO").decode()
            if "cluster_state:ok" not in info:
                return False
        return True

    def node_id(self, node):
        return node.client().execute_command("CLUSTER", "MYID").decode()

    def owner(self, slot):
        """The node serving a slot, as every node now sees it from node 0."""
        for start, end, master, *_ in self.nodes[0].client().execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                for n in self.nodes:
                    if n.port == master[1]:
                        return n
        raise AssertionError("slot %d has no owner" % slot)

    def keyslot(self, key):
        return self.nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key)

    def stop(self):
        for n in self.nodes:
            n.stop()
            n.kill()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.stop()
