"""test_auth.py — seen-ingest against a Redis with ACLs: it authenticates
as the configured user with the password from a file or the environment,
needs no more than the commands docs/ingest.md lists, and a refused AUTH is
logged, retried and writes nothing."""
import os
import subprocess

import pytest
import redis

from conftest import INGEST
from events import make_events, missing_items, total_count
from test_stream import drained, stream_args, xadd_json

# Exactly the commands docs/ingest.md says a stream ingester needs.
INGEST_ACL = ["on", ">s3cret", "~seen:*", "~events", "resetchannels", "-@all", "+seen.add",
              "+seen.insert", "+xreadgroup", "+xack", "+xautoclaim", "+xgroup", "+xinfo", "+xadd"]


@pytest.fixture
def acl_server(redis_server):
    """The server with an `ingest` user, an `admin` user, and the default
    user switched off (so an unauthenticated connection gets nowhere).
    Yields an admin client; the default user is back on for teardown."""
    plain = redis_server.client()
    plain.execute_command("ACL", "SETUSER", "ingest", *INGEST_ACL)
    plain.execute_command("ACL", "SETUSER", "admin", "on", ">adm1n", "~*", "&*", "+@all")
    admin = redis_server.client(username="admin", password="adm1n")
    admin.execute_command("ACL", "SETUSER", "default", "off")
    with pytest.raises(redis.AuthenticationError):
        redis_server.client().ping()
    yield admin
    admin.execute_command("ACL", "SETUSER", "default", "on", "nopass")


def ingest_all(server, admin, ingesters, n, *args):
    """n events through the stream, the ingester started with args; all
    must land and be acknowledged."""
    lines, expected = make_events(n, users=max(1, n // 50))
    xadd_json(admin, lines)
    ing = ingesters(stream_args(server, *args)).start()
    ing.wait(lambda: drained(admin), 60, "all entries acknowledged")
    assert ing.stop() == 0, ing.log()[-3000:]
    assert missing_items(admin, expected) == {}
    assert total_count(admin, expected) == n


def test_user_and_password_file(redis_server, acl_server, ingesters, tmp_path):
    secret = tmp_path / "redis.password"
    secret.write_text("s3cret\n")
    ingest_all(redis_server, acl_server, ingesters, 3000, "--redis-user", "ingest",
               "--redis-password-file", str(secret))


def test_password_from_the_environment(redis_server, acl_server, ingesters, monkeypatch):
    monkeypatch.setenv("SEEN_INGEST_REDIS_PASSWORD", "s3cret")
    ingest_all(redis_server, acl_server, ingesters, 500, "--redis-user", "ingest")


def test_refused_auth_is_logged_and_retried_and_writes_nothing(redis_server, acl_server,
                                                               ingesters, tmp_path):
    lines, _ = make_events(200, users=5)
    xadd_json(acl_server, lines)
    secret = tmp_path / "wrong.password"
    secret.write_text("not-it\n")
    ing = ingesters(stream_args(redis_server, "--redis-user", "ingest",
                                "--redis-password-file", str(secret))).start()
    ing.wait(lambda: ing.log().count("AUTH as ingest refused") >= 2, 30,
             "a refused AUTH, logged and retried")
    ing.stop()
    assert "WRONGPASS" in ing.log()
    assert acl_server.keys("seen:*") == []
    assert acl_server.xinfo_groups("events") == []  # it never got as far as the group


def test_credential_errors_are_usage_errors(tmp_path):
    base = [INGEST, "--source", "stream", "--stream", "events"]
    env = {k: v for k, v in os.environ.items() if k != "SEEN_INGEST_REDIS_PASSWORD"}
    out = subprocess.run(base + ["--redis-user", "ingest"], capture_output=True, text=True,
                         env=env, timeout=30)
    assert out.returncode == 2 and "--redis-user: needs a password" in out.stderr
    out = subprocess.run(base + ["--redis-password-file", str(tmp_path / "absent")],
                         capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 2 and "--redis-password-file: cannot read" in out.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    out = subprocess.run(base + ["--redis-password-file", str(empty)], capture_output=True,
                         text=True, env=env, timeout=30)
    assert out.returncode == 2 and "has no password" in out.stderr
