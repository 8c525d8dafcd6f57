"""conftest.py — starts real redis-server processes with seen.so loaded.

Each server listens on a free 127.0.0.1 port in its own temporary directory
and is stopped when its test (or the session, for the shared one) ends.
Every wait is bounded, so a server that does not come up fails the test
instead of hanging the run.
"""
import os
import subprocess
import time

import pytest
import redis

# Re-exported: the tests import them from here.
from helpers import free_port, info_map, info_value, server_ms  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.abspath(os.environ.get("SEEN_MODULE", os.path.join(ROOT, "build", "seen.so")))
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
# A sanitized module needs its runtime loaded before anything else.
REDIS_PRELOAD = os.environ.get("REDIS_PRELOAD")
# Our LD_PRELOAD library that runs a server's wall clock fast (bench/fastclock.c).
FASTCLOCK = os.path.join(ROOT, "build", "bench", "libfastclock.so")


class Server:
    """One redis-server with the module, in `directory`."""

    def __init__(self, directory, *args, module=True, clock_factor=None):
        self.dir = str(directory)
        # The server's wall clock runs this many times fast (None: real time).
        self.clock_factor = clock_factor
        os.makedirs(self.dir, exist_ok=True)
        self.args = list(args)
        self.module = module
        self.port = None
        self.proc = None
        self.log = os.path.join(self.dir, "redis.log")

    def command_line(self):
        cmd = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", self.dir, "--logfile", self.log, "--save", "",
               "--enable-debug-command", "yes", "--daemonize", "no"]
        if self.module:
            cmd += ["--loadmodule", MODULE]
        return cmd + self.args

    def start(self, timeout=10.0):
        for _attempt in range(3):
            if self.port is None:
                self.port = free_port()
            env = dict(os.environ)
            preload = [REDIS_PRELOAD] if REDIS_PRELOAD else []
            if self.clock_factor is not None:
                preload.append(FASTCLOCK)
                env["SEEN_FASTCLOCK_FACTOR"] = str(self.clock_factor)
            if preload:
                env["LD_PRELOAD"] = ":".join(preload)
            self.proc = subprocess.Popen(self.command_line(), stdout=subprocess.DEVNULL,
                                         stderr=open(os.path.join(self.dir, "stderr.log"), "ab"),
                                         env=env)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if self.client().ping():
                        return self
                except (redis.ConnectionError, redis.BusyLoadingError):
                    time.sleep(0.05)
            self.kill()
            self.port = None  # the port may have been taken: try another
        raise RuntimeError("redis-server did not start; log:\n" + self.read_log())

    def client(self, **kwargs):
        kwargs.setdefault("socket_timeout", 30)
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    def read_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, save=False):
        """Shut down (saving if asked) and wait for the process to end."""
        if not self.alive():
            return
        try:
            self.client().shutdown(save=save, nosave=not save)
        except redis.ConnectionError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def restart(self, save=False):
        self.stop(save=save)
        return self.start()


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory):
    # Raw strings in DUMP payloads, so tests can take them apart.
    server = Server(tmp_path_factory.mktemp("shared"), "--rdbcompression", "no").start()
    yield server
    server.stop()


@pytest.fixture
def r(shared_server):
    """A client of the shared server, on an empty database."""
    client = shared_server.client()
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def make_server(tmp_path):
    """Start servers of one's own (extra redis-server arguments allowed)."""
    servers = []

    def make(*args, name=None, module=True, start=True, clock_factor=None):
        server = Server(tmp_path / (name or "s%d" % len(servers)), *args, module=module,
                        clock_factor=clock_factor)
        servers.append(server)
        return server.start() if start else server

    yield make
    for server in servers:
        server.stop()
        server.kill()


def raw(client, *args):
    """Send a command and return the reply as is (no redis-py parsing)."""
    conn = client.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)
