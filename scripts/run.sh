#!/usr/bin/env bash
# run.sh — build seen and run a local redis-server with the module loaded,
# its data persisted as an append-only file under ./data/ in the checkout,
# listening on 127.0.0.1 only.  Stop it with Ctrl-C (data is kept).
#
#   scripts/run.sh                 port 6379
#   scripts/run.sh 6380            another port (or PORT=6380 scripts/run.sh)
#   scripts/run.sh 6379 --seen.default-window 30d    extra redis-server arguments
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

port="${PORT:-6379}"
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  port="$1"
  shift
fi

bash scripts/deps.sh
make -j2 >/dev/null

mkdir -p data
cat <<TXT
seen: starting redis-server on 127.0.0.1:$port with build/seen.so; data in $root/data
Try it from another terminal:
  redis-cli -p $port SEEN.RESERVE user:42:played WINDOW 90d ERROR 0.001
  redis-cli -p $port SEEN.ADD user:42:played v1 v2 v3
  redis-cli -p $port SEEN.FILTER user:42:played v1 v4 v2 v5      # -> v4 v5
  redis-cli -p $port SEEN.INFO user:42:played
Commands: docs/commands.md.  Ctrl-C stops the server.
TXT

exec redis-server --port "$port" --bind 127.0.0.1 --dir "$root/data" \
  --appendonly yes --appendfsync everysec \
  --loadmodule "$root/build/seen.so" "$@"
