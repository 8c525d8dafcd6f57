"""test_docs.py — the client examples of docs/commands.md (Python, C with
hiredis, redis-cli) and the Python example of docs/clients.md (the
seen_redis package) run as written, against the shared server."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from helpers import free_port

DOC = os.path.join(ROOT, "docs", "commands.md")
CLIENTS_DOC = os.path.join(ROOT, "docs", "clients.md")


def example(heading, language, doc=DOC):
    with open(doc) as f:
        text = f.read()
    section = text[text.index(heading):]
    match = re.search(r"```%s\n(.*?)```" % language, section, re.S)
    return match.group(1)


def test_python_example(shared_server, r):
    code = example("### Python (redis-py)", "python").replace("6379", str(shared_server.port))
    exec(compile(code, "commands.md", "exec"), {})


def test_python_client_example(shared_server, r):
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    code = example("## Python", "python", CLIENTS_DOC).replace("6379", str(shared_server.port))
    exec(compile(code, "clients.md", "exec"), {})


def test_c_example(shared_server, r, tmp_path):
    if shutil.which("cc") is None or not os.path.exists("/usr/include/hiredis/hiredis.h"):
        pytest.skip("needs cc and libhiredis-dev (scripts/deps.sh installs them)")
    source = tmp_path / "example.c"
    source.write_text(example("### C (hiredis)", "c"))
    binary = str(tmp_path / "example")
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", binary, str(source),
                    "-lhiredis"], check=True, timeout=60)
    out = subprocess.run([binary, "127.0.0.1", str(shared_server.port)], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    assert out.splitlines() == ["added 2", "flags 1010", "unseen v9"]
    # Nothing listening, or no module: it says so and fails.
    closed = free_port()
    run = subprocess.run([binary, "127.0.0.1", str(closed)], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode != 0 and "cannot connect to 127.0.0.1:%d" % closed in run.stderr
    r.set("plain", "x")
    r.execute_command("SEEN.ADD", "{user:42}played", "v1")  # the example's key, as before
    source.write_text(example("### C (hiredis)", "c").replace("{user:42}played", "plain"))
    subprocess.run(["cc", "-std=c11", "-o", binary, str(source), "-lhiredis"], check=True,
                   timeout=60)
    run = subprocess.run([binary, "127.0.0.1", str(shared_server.port)], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode != 0 and "WRONGTYPE" in run.stderr


def test_redis_cli_example(shared_server, r):
    lines = example("### redis-cli", "").strip().splitlines()
    outputs = []
    for line in lines:
        line = line.replace("redis-cli", "redis-cli -p %d" % shared_server.port)
        outputs.append(subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                                      timeout=30, check=True).stdout)
    assert outputs == ["3\n", "v4\nv5\n", "1010\n"]
