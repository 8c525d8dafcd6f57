#!/usr/bin/env bash
# deps.sh — install the Debian 12 packages seen needs to build, run, test and
# benchmark.  Safe to run repeatedly: it only calls apt-get when a package is
# missing.  Uses sudo when not root.
set -euo pipefail

PACKAGES=(
  build-essential pkg-config clang-14 libclang-rt-14-dev libfuzzer-14-dev clang-format
  redis-server redis-tools
  libxxhash-dev libcmocka-dev libhiredis-dev librdkafka-dev libjansson-dev
  python3 python3-redis python3-pytest python3-pip python3-venv python3-setuptools python3-wheel
  gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# The Node.js client's tests need node and npm; a machine that has them
# from elsewhere (e.g. NodeSource, which bundles npm) keeps its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "deps.sh: installing ${missing[*]}" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
