"""helpers.py — small helpers shared by the module tests (tests/module) and
the cluster tests (tests/cluster, which put this directory on sys.path):
free ports, the server's clock, bounded waits, SEEN.INFO replies as dicts."""
import random
import socket
import time

_ports = random.SystemRandom()


def _bindable(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port():
    """A free loopback port whose +10,000 is free too: a Cluster node needs
    that one for its bus, and refuses ports above 55535.  Both lie below the
    kernel's ephemeral range (32768 up), so outgoing connections do not take
    them between this check and the server's bind."""
    for _ in range(500):
        port = _ports.randrange(10000, 22768)
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free loopback port in 10000-22767")


def server_ms(client):
    """The server's clock, in ms since the epoch."""
    sec, usec = client.time()
    return sec * 1000 + usec // 1000


def wait_for(predicate, timeout=20, what="condition", interval=0.05):
    """Poll predicate() until it is true; fail after timeout seconds.
    Returns the predicate's (true) value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


def info_map(reply):
    """SEEN.INFO's RESP2 flat list as a dict (nested maps too)."""
    if isinstance(reply, list) and len(reply) % 2 == 0 and all(
            isinstance(k, bytes) for k in reply[0::2]):
        return {k.decode(): info_value(v) for k, v in zip(reply[0::2], reply[1::2])}
    return reply


def info_value(v):
    if isinstance(v, list):
        as_map = info_map(v)
        if isinstance(as_map, dict):
            return as_map
        return [info_value(x) for x in v]
    return v


def wait_compacted(client, key, timeout=10):
    """Wait for the server to compact an import into `key`: a set written
    with past AT times keeps them exact until about a second after its last
    write.  Returns SEEN.INFO as a dict."""
    def compacted():
        info = info_map(client.execute_command("SEEN.INFO", key))
        exact_by_policy = info["policy"]["error"] == b"0"
        return info if exact_by_policy or info["encoding"] == b"compact" else None
    return wait_for(compacted, timeout, "the import into %r to be compacted" % key)
