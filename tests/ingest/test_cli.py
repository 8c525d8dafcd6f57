"""test_cli.py — the command line, configuration file, --check and --help of
seen-ingest, and that docs/ingest.md documents every option."""
import os
import re
import subprocess

from conftest import INGEST, ROOT

DOC = os.path.join(ROOT, "docs", "ingest.md")
EXAMPLE = os.path.join(ROOT, "docs", "ingest.example.conf")


def run(*args, timeout=30):
    return subprocess.run([INGEST, *args], capture_output=True, text=True, timeout=timeout)


def help_options():
    out = run("--help")
    assert out.returncode == 0
    return sorted(set(re.findall(r"^\s+--([a-z-]+)", out.stdout, re.M)))


def test_help_lists_options_and_the_manual_documents_each():
    options = help_options()
    assert {"source", "brokers", "stream", "cluster", "legacy-pattern", "check"} <= set(options)
    with open(DOC) as f:
        doc = f.read()
    undocumented = [o for o in options if "`--%s" % o not in doc]
    assert undocumented == []


def test_example_config_checks():
    out = run("--config", EXAMPLE, "--check")
    assert out.returncode == 0, out.stderr
    assert "configuration OK" in out.stdout
    assert 'key-template = "seen:{%user}:%kind"' in out.stdout
    assert "kafka.session.timeout.ms = \"10000\"" in out.stdout
    # The command line overrides the file, wherever --config stands.
    out = run("--batch-events", "7", "--config", EXAMPLE, "--check")
    assert "batch-events = 7" in out.stdout


def test_check_output_reads_back_as_a_config(tmp_path):
    out = run("--config", EXAMPLE, "--check", "--flush-interval", "1s")
    path = tmp_path / "again.conf"
    path.write_text(out.stdout)
    again = run("--config", str(path), "--check")
    assert again.returncode == 0, again.stderr
    assert again.stdout == out.stdout


def test_errors_name_the_option_and_exit_2(tmp_path):
    cases = [
        (["--source", "kafka"], "--source kafka: needs --brokers and --topic"),
        (["--source", "files"], "--source: must be kafka or stream"),
        (["--source", "stream", "--stream", "s", "--batch-events", "0"], "--batch-events: must be"),
        (["--source", "stream", "--stream", "s", "--flush-interval", "soon"],
         "--flush-interval: must be a duration"),
        (["--source", "stream", "--stream", "s", "--redis", "nohost"], "--redis: want HOST:PORT"),
        (["--source", "stream", "--stream", "s", "--key-template", "a%"], "--key-template:"),
        (["--source", "stream", "--stream", "s", "--policy", "WINDOW"], "--policy: policy option"),
        (["--source", "stream", "--stream", "s", "--policy", "COLOR red"],
         "unknown policy option 'COLOR'"),
        (["--source", "stream", "--stream", "s", "--cluster"], "--stream-redis: required"),
        (["--source", "kafka", "--brokers", "b", "--topic", "t", "--kafka", "novalue"],
         "--kafka: must be NAME=VALUE"),
        (["--bogus"], "--bogus: unknown option"),
        (["stray"], "stray: unexpected argument"),
        (["migrate"], "--legacy-pattern is required"),
        (["migrate", "--legacy-pattern", "p:%u", "--legacy-type", "list"], "--legacy-type"),
        (["--source", "stream"], "needs --stream"),
    ]
    for args, message in cases:
        out = run(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert message in out.stderr, (args, out.stderr)
    conf = tmp_path / "bad.conf"
    conf.write_text("# comment\nsource = kafka\n\nbatch-bytes = huge\n")
    out = run("--config", str(conf))
    assert out.returncode == 2
    assert "bad.conf:4: batch-bytes: must be a size" in out.stderr
    conf.write_text("colour = blue\n")
    assert "bad.conf:1: colour: unknown option" in run("--config", str(conf)).stderr


def test_kafka_property_errors_are_reported_at_startup():
    out = run("--source", "kafka", "--brokers", "127.0.0.1:1", "--topic", "t",
              "--kafka", "no.such.property=1")
    assert out.returncode == 2
    assert "no.such.property" in out.stderr
    out = run("--source", "kafka", "--brokers", "127.0.0.1:1", "--topic", "t",
              "--kafka", "enable.auto.commit=true")
    assert out.returncode == 2
    assert "managed by seen-ingest" in out.stderr


def test_bad_policy_value_is_refused_by_redis_at_startup(redis_server):
    out = run("--source", "stream", "--stream", "s", "--redis",
              "127.0.0.1:%d" % redis_server.port, "--policy", "WINDOW 3months")
    assert out.returncode == 2
    assert "refused by redis: ERR bad window" in out.stderr
    assert not redis_server.client().exists("s")  # nothing started
