"""test_sizing.py — the sizing table of docs/operations.md still holds: its
10,000-item row is measured again, with scripts/sizing.py's own code, on
fewer keys (the same seeded items as the first keys of the documented run)."""
import os
import re
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import sizing  # noqa: E402


def documented(size):
    with open(os.path.join(ROOT, "docs", "operations.md")) as f:
        m = re.search(r"^\| %d \| (\d+) B \| ([\d.]+) \|" % size, f.read(), re.M)
    assert m, "no row for %d items in the sizing table" % size
    return int(m.group(1))


def test_documented_memory_per_user(shared_cluster):
    rc = shared_cluster.client()
    got = sizing.measure(rc, 10000, 10, sizing.policy_args(90, 4, "0.001"), 90 * sizing.DAY,
                         pattern="live", seed=1)
    want = documented(10000)
    print("10,000 items: %d B per key measured, %d B documented" % (got["memory_usage"], want))
    assert abs(got["memory_usage"] - want) <= 0.05 * want
    assert got["encodings"] == {"compact": 10}
    assert 9900 <= got["items"] <= 10000 * 1.25
