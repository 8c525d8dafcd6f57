"""router.py — a small cluster client whose writes are acknowledged the
way the tests need: each command goes to the master of its key's slot on
one connection per node, followed on that same connection by
`WAIT replicas ms` (WAIT counts the replicas that have this connection's
writes), and it says exactly what it knows about a write's outcome.

It follows MOVED (refreshing the slot map), ASK (ASKING on the target, where
the WAIT then goes too), TRYAGAIN, CLUSTERDOWN and LOADING (retrying), and
for a read a broken connection (retrying on the refreshed map).  A write whose
connection breaks, or that no replica acknowledges in time, raises
Uncertain: it may or may not have happened.  A write refused with an
error (OOM included) happened not at all: ResponseError.  No command is
ever sent twice on its own.
"""
import time

import redis
from redis.cluster import ClusterParser
from redis.crc import key_slot
from redis.exceptions import (AskError, BusyLoadingError, ClusterDownError, MasterDownError,
                              MovedError, TryAgainError)

RETRY = (TryAgainError, ClusterDownError, MasterDownError)
BROKEN = (redis.ConnectionError, redis.TimeoutError)


class Uncertain(Exception):
    """A write that may or may not have been applied (and replicated)."""


class Router:
    def __init__(self, ports, acks=1, wait_ms=1000, timeout=60.0):
        self.known = list(ports)
        self.acks = acks
        self.wait_ms = wait_ms
        self.timeout = timeout
        self.pools = {}
        self.slot_port = [None] * 16384
        self.redirects = {"moved": 0, "ask": 0, "retry": 0, "broken": 0}
        self.refresh(time.monotonic() + timeout)

    # ------------------------------------------------------------ nodes
    def pool(self, port):
        """The one connection to a node, as a pool of one: a second
        concurrent user would be an error, not a silent second connection
        that WAIT would not know about."""
        if port not in self.pools:
            self.pools[port] = redis.ConnectionPool(
                host="127.0.0.1", port=port, parser_class=ClusterParser, max_connections=1,
                socket_timeout=15, socket_connect_timeout=2)
        return self.pools[port]

    def conn(self, port):
        return redis.Redis(connection_pool=self.pool(port))

    def drop(self, port):
        pool = self.pools.pop(port, None)
        if pool is not None:
            pool.disconnect()

    def close(self):
        for port in list(self.pools):
            self.drop(port)

    def refresh(self, deadline):
        """Reload the slot map from the first node that answers with every
        slot covered."""
        while True:
            for port in list(self.known):
                try:
                    ranges = self.conn(port).execute_command("CLUSTER", "SLOTS")
                except (redis.RedisError, OSError):
                    self.drop(port)
                    continue
                table = [None] * 16384
                for lo, hi, master, *replicas in ranges:
                    for node in [master, *replicas]:
                        if node[1] not in self.known:
                            self.known.append(node[1])
                    table[lo:hi + 1] = [master[1]] * (hi - lo + 1)
                if None not in table:
                    self.slot_port = table
                    return
            if time.monotonic() > deadline:
                raise AssertionError("no node gives a full slot map")
            time.sleep(0.1)

    # ------------------------------------------------------------ commands
    def write(self, key, *args):
        return self.call(key, args, write=True)

    def read(self, key, *args):
        return self.call(key, args, write=False)

    def call(self, key, args, write):
        deadline = time.monotonic() + self.timeout
        slot = key_slot(key.encode() if isinstance(key, str) else key)
        ask = None
        while True:
            if time.monotonic() > deadline:
                if write:
                    raise Uncertain("gave up on %s after %ss" % (args[0], self.timeout))
                raise AssertionError("gave up on %s after %ss" % (args[0], self.timeout))
            port = ask or self.slot_port[slot]
            try:
                # Connect first: a command that never left cannot be uncertain.
                pool = self.pool(port)
                pool.release(pool.get_connection("_"))
            except BROKEN:
                self.redirects["broken"] += 1
                self.drop(port)
                time.sleep(0.1)
                self.refresh(deadline)
                ask = None
                continue
            pipe = self.conn(port).pipeline(transaction=False)
            if ask:
                pipe.execute_command("ASKING")
            pipe.execute_command(*args)
            if write and self.acks:
                pipe.execute_command("WAIT", self.acks, self.wait_ms)
            try:
                replies = pipe.execute(raise_on_error=False)
            except BusyLoadingError:
                # A restarted node still loading its data refused the
                # command (redis-py raises this one at once, and drops the
                # connection with the replies after it).
                self.redirects["retry"] += 1
                time.sleep(0.1)
                continue
            except BROKEN as e:
                self.redirects["broken"] += 1
                self.drop(port)
                if write:
                    raise Uncertain("%s: %s" % (args[0], e))
                time.sleep(0.1)
                self.refresh(deadline)
                ask = None
                continue
            reply = replies[1 if ask else 0]
            ask = None
            if isinstance(reply, MovedError):
                self.redirects["moved"] += 1
                self.refresh(deadline)
                continue
            if isinstance(reply, AskError):
                self.redirects["ask"] += 1
                ask = reply.port
                continue
            if isinstance(reply, RETRY):
                self.redirects["retry"] += 1
                time.sleep(0.05)
                continue
            if isinstance(reply, Exception):
                raise reply
            if write and self.acks:
                self.await_acks(port, replies[-1], deadline)
            return reply

    def await_acks(self, port, acked, deadline):
        """WAIT again on the same connection until enough replicas have the
        write (a new master may have none until the old one rejoins)."""
        while isinstance(acked, Exception) or acked < self.acks:
            if time.monotonic() > deadline:
                raise Uncertain("no replica acknowledged a write on %d" % port)
            try:
                acked = self.conn(port).execute_command("WAIT", self.acks, self.wait_ms)
            except BROKEN as e:
                self.drop(port)
                raise Uncertain("WAIT on %d: %s" % (port, e))
