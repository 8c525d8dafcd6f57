#!/usr/bin/env bash
# test.sh — the whole test run, as CI does it: install the Debian packages,
# build everything, run the core unit tests (optimised and under ASan+UBSan),
# replay the fuzz corpora, and run the module tests against a real
# redis-server on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
make -j2 all
make -j2 test
