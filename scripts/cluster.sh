#!/usr/bin/env bash
# cluster.sh — a local Redis Cluster with seen.so loaded on every node: N
# masters with R replicas each, on 127.0.0.1 only, every node persisting to
# an append-only file.  Each node lives in DIR/node-PORT (redis.conf,
# nodes.conf, appendonlydir/, redis.log, redis.pid); DIR/cluster.env records
# the layout, so `start` on an existing DIR brings the same cluster back.
#
#   scripts/cluster.sh start                   3 masters + 3 replicas, ports 30001-30006,
#                                              data in ./data/cluster
#   scripts/cluster.sh start --masters 4 --replicas 2 --port 31001 --dir /tmp/c
#   scripts/cluster.sh start -- --seen.default-window 30d   extra settings for every node
#   scripts/cluster.sh status                  roles, slots, keys, memory per node
#   scripts/cluster.sh kill 30001              kill -9 one node (a fault drill)
#   scripts/cluster.sh start                   restart whatever is not running
#   scripts/cluster.sh stop                    shut every node down (data kept)
#   scripts/cluster.sh clean                   stop, then delete DIR
#
# `scripts/cluster.sh --help` lists every option; docs/operations.md explains
# the settings.  The tests (tests/cluster) run it on free ports in a
# temporary DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REDIS_SERVER="${REDIS_SERVER:-redis-server}"
REDIS_CLI="${REDIS_CLI:-redis-cli}"

usage() {
  cat <<'TXT'
usage: scripts/cluster.sh COMMAND [options] [-- redis-server settings]

commands:
  start      create the cluster in DIR, or (if DIR holds one) start its nodes
             that are not running; returns once every node agrees the cluster
             is up (cluster_state ok, every replica linked to its master)
  stop       shut every node down gracefully (SIGTERM: the AOF is flushed);
             a node still running after 30 s is killed
  status     one line per node: port, pid, role, its master, slots, keys, memory
  kill PORT  kill -9 the node on PORT (to watch failover and AOF recovery)
  clean      stop, then delete DIR

options (start, when creating; an existing cluster keeps its settings):
  --dir DIR             where the cluster lives (default ./data/cluster, or
                        $SEEN_CLUSTER_DIR); accepted by every command
  --masters N           masters (default 3; at least 3, as Redis Cluster needs)
  --replicas R          replicas per master (default 1)
  --port P              first port; nodes use P, P+1, ... (default 30001)
  --ports P1,P2,...     the nodes' ports, instead of --port (redis-cli --cluster
                        create makes the first N masters)
  --bus-ports B1,B2,... their cluster bus ports (default: each port + 10000)
  --node-timeout MS     cluster-node-timeout: how long a silent node takes to be
                        declared failed (default 5000)
  --appendfsync POLICY  always | everysec | no (default everysec)
  --maxmemory SIZE      per node, e.g. 2gb; 0 = no limit (default 0); the
                        policy is noeviction
  --module PATH         the module (default build/seen.so, built with make if missing)
  --timeout S           how long start waits for the cluster (default 60)
  --                    the rest are redis-server settings for every node,
                        e.g. -- --seen.default-window 30d --seen.key-expiry yes
TXT
}

creating=0
die() {
  echo "cluster.sh: $*" >&2
  # A cluster that failed to come into being leaves no node running.
  if [ "$creating" = 1 ]; then
    creating=0
    kill_all_nodes
    echo "cluster.sh: stopped its nodes; logs kept in $dir (scripts/cluster.sh clean --dir $dir removes it)" >&2
  fi
  exit 1
}

# ------------------------------------------------------------- arguments
command="${1:-}"
[ -n "$command" ] || { usage >&2; exit 2; }
shift
case "$command" in
  -h | --help | help) usage; exit 0 ;;
  start | stop | status | clean | kill) ;;
  *) usage >&2; die "unknown command '$command'" ;;
esac

dir="${SEEN_CLUSTER_DIR:-$root/data/cluster}"
masters=3 replicas=1 first_port=30001 ports=() bus_ports=() node_timeout=5000
appendfsync=everysec maxmemory=0 module="$root/build/seen.so" module_given=0
timeout=60 kill_port="" extra=() creation_opts=()

need() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dir) need "$@"; dir="$2"; shift 2 ;;
    --timeout) need "$@"; timeout="$2"; shift 2 ;;
    --masters) need "$@"; masters="$2"; creation_opts+=("$1"); shift 2 ;;
    --replicas) need "$@"; replicas="$2"; creation_opts+=("$1"); shift 2 ;;
    --port) need "$@"; first_port="$2"; creation_opts+=("$1"); shift 2 ;;
    --ports) need "$@"; IFS=, read -ra ports <<<"$2"; creation_opts+=("$1"); shift 2 ;;
    --bus-ports) need "$@"; IFS=, read -ra bus_ports <<<"$2"; creation_opts+=("$1"); shift 2 ;;
    --node-timeout) need "$@"; node_timeout="$2"; creation_opts+=("$1"); shift 2 ;;
    --appendfsync) need "$@"; appendfsync="$2"; creation_opts+=("$1"); shift 2 ;;
    --maxmemory) need "$@"; maxmemory="$2"; creation_opts+=("$1"); shift 2 ;;
    --module) need "$@"; module="$2"; module_given=1; creation_opts+=("$1"); shift 2 ;;
    --) shift; extra=("$@"); [ $# -eq 0 ] || creation_opts+=(--); break ;;
    *)
      if [ "$command" = kill ] && [ -z "$kill_port" ] && [[ "$1" =~ ^[0-9]+$ ]]; then
        kill_port="$1"; shift
      else
        die "unknown argument '$1' (see --help)"
      fi ;;
  esac
done

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
if ! is_uint "$timeout" || [ "$timeout" -eq 0 ]; then
  die "--timeout must be a positive number of seconds"
fi
dir="$(realpath -m "$dir")"
state="$dir/cluster.env"

# ------------------------------------------------------------- helpers
cli() { # cli PORT ARGS...: one command to a node, bounded in time
  timeout 10 "$REDIS_CLI" -h 127.0.0.1 -p "$1" "${@:2}" 2>/dev/null
}

field() { # field PORT SECTION NAME: one "name:value" line of INFO (or CLUSTER INFO)
  local port="$1" section="$2" name="$3"
  if [ "$section" = cluster ]; then
    cli "$port" cluster info
  else
    cli "$port" info "$section"
  fi | tr -d '\r' | sed -n "s/^$name://p" || true
}

node_dir() { echo "$dir/node-$1"; }

# The pid of the redis-server of node PORT, if it runs: the pid file must
# name a live process whose title says it is redis-server on that port (so
# a stale file never makes us signal another process).
node_pid() {
  local pidfile pid
  pidfile="$(node_dir "$1")/redis.pid"
  [ -f "$pidfile" ] || return 1
  pid="$(cat "$pidfile" 2>/dev/null)" || return 1
  running "$pid" "$1" || return 1
  echo "$pid"
}

running() { # running PID PORT: PID is a live (not zombie) redis-server on PORT
  local ps
  is_uint "$1" || return 1
  ps="$(ps -o stat=,args= -p "$1" 2>/dev/null)" || return 1
  [[ "$ps" != Z* ]] && [[ "$ps" =~ redis-server\ .*:$2([^0-9]|$) ]]
}

load_state() {
  [ -f "$state" ] || die "no cluster in $dir (start one with: scripts/cluster.sh start --dir $dir)"
  local PORTS MASTERS REPLICAS
  # shellcheck source=/dev/null
  . "$state"
  read -ra ports <<<"$PORTS"
  masters="$MASTERS" replicas="$REPLICAS"
}

write_config() { # write_config PORT BUSPORT
  local port="$1" bus="$2" d
  d="$(node_dir "$port")"
  mkdir -p "$d"
  {
    echo "# written by scripts/cluster.sh; the module's settings follow loadmodule"
    echo "port $port"
    echo "bind 127.0.0.1"
    echo "dir $d"
    echo "daemonize yes"
    echo "pidfile $d/redis.pid"
    echo "logfile $d/redis.log"
    echo "cluster-enabled yes"
    echo "cluster-config-file nodes.conf"
    echo "cluster-port $bus"
    echo "cluster-node-timeout $node_timeout"
    echo "appendonly yes"
    echo "appendfsync $appendfsync"
    echo "save \"\""
    echo "maxmemory $maxmemory"
    echo "maxmemory-policy noeviction"
    echo "repl-diskless-sync-delay 0"
    echo "enable-debug-command local"
    echo "loadmodule $module"
    # Extra settings: "--name v1 v2 --other v" becomes one line per name.
    local line=""
    for a in "${extra[@]+"${extra[@]}"}"; do
      if [[ "$a" == --* ]]; then
        [ -z "$line" ] || echo "$line"
        line="${a#--}"
      else
        line="$line \"${a//\"/\\\"}\""
      fi
    done
    [ -z "$line" ] || echo "$line"
  } >"$d/redis.conf"
}

start_node() { # start_node PORT: start it unless it runs; wait until it answers
  local port="$1" d pid deadline
  d="$(node_dir "$port")"
  node_pid "$port" >/dev/null && return 0
  rm -f "$d/redis.pid"
  "$REDIS_SERVER" "$d/redis.conf" || die "redis-server refused $d/redis.conf"
  deadline=$((SECONDS + timeout))
  while :; do
    # It must be our process that answers, not another server on the port.
    if pid="$(node_pid "$port")" && [ "$(field "$port" server process_id)" = "$pid" ] &&
      [ "$(field "$port" persistence loading)" = 0 ]; then
      return 0
    fi
    if [ $SECONDS -ge $deadline ] || { [ -f "$d/redis.pid" ] && ! node_pid "$port" >/dev/null; }; then
      tail -n 20 "$d/redis.log" >&2 || true
      die "node $port did not start (log: $d/redis.log)"
    fi
    sleep 0.1
  done
}

# Up means: every node says cluster_state:ok, sees every other node
# connected and not failing, and as many nodes as the layout has replicas
# are replicas with their link to the master up (a master restarted after
# its replica took over is up only once it has turned into a replica), and
# every node's view already shows them as replicas (gossip lags behind the
# replication link; a client asking any node must see the layout).
cluster_up() {
  local port nodes linked=0
  for port in "${ports[@]}"; do
    [ "$(field "$port" cluster cluster_state)" = ok ] || return 1
    nodes="$(cli "$port" cluster nodes)" || return 1
    [ "$(echo "$nodes" | grep -c ' connected')" -eq ${#ports[@]} ] || return 1
    ! echo "$nodes" | grep -Eq 'fail|handshake|noaddr|disconnected' || return 1
    [ "$(echo "$nodes" | awk '$3 ~ /slave/' | wc -l)" -eq $((masters * replicas)) ] || return 1
    if [ "$(field "$port" replication role)" = slave ]; then
      [ "$(field "$port" replication master_link_status)" = up ] || return 1
      [ "$(field "$port" replication master_sync_in_progress)" = 0 ] || return 1
      linked=$((linked + 1))
    fi
  done
  [ "$linked" -eq $((masters * replicas)) ]
}

wait_up() {
  local deadline=$((SECONDS + timeout))
  until cluster_up; do
    if [ $SECONDS -ge $deadline ]; then
      cli "${ports[0]}" cluster nodes >&2 || true
      die "the cluster in $dir was not up within $timeout s"
    fi
    sleep 0.2
  done
}

# ------------------------------------------------------------- commands
do_start() {
  local port i n bus
  if [ -f "$state" ]; then
    [ ${#creation_opts[@]} -eq 0 ] ||
      die "$dir already holds a cluster; ${creation_opts[*]} apply only when creating one (clean it first)"
    load_state
    for port in "${ports[@]}"; do start_node "$port"; done
    wait_up
    echo "cluster.sh: cluster in $dir is up on ports ${ports[*]}"
    return
  fi

  for v in "$masters" "$replicas" "$first_port" "$node_timeout"; do
    is_uint "$v" || die "--masters, --replicas, --port and --node-timeout take whole numbers"
  done
  [ "$masters" -ge 3 ] || die "Redis Cluster needs at least 3 masters"
  case "$appendfsync" in always | everysec | no) ;; *) die "--appendfsync: always, everysec or no" ;; esac
  n=$((masters * (replicas + 1)))
  if [ ${#ports[@]} -eq 0 ]; then
    read -ra ports <<<"$(seq "$first_port" $((first_port + n - 1)) | tr '\n' ' ')"
  fi
  [ ${#ports[@]} -eq "$n" ] || die "--ports must list $n ports ($masters masters x $((replicas + 1)))"
  if [ ${#bus_ports[@]} -gt 0 ]; then
    [ ${#bus_ports[@]} -eq "$n" ] || die "--bus-ports must list $n ports"
  else
    for port in "${ports[@]}"; do bus_ports+=($((port + 10000))); done
  fi
  for port in "${ports[@]}" "${bus_ports[@]}"; do
    if ! is_uint "$port" || [ "$port" -eq 0 ] || [ "$port" -ge 65536 ]; then die "bad port '$port'"; fi
  done
  if [ ! -f "$module" ]; then
    [ "$module_given" = 0 ] || die "no module at $module"
    make -C "$root" module >/dev/null
  fi
  module="$(cd "$(dirname "$module")" && pwd)/$(basename "$module")"
  command -v "$REDIS_SERVER" >/dev/null || die "$REDIS_SERVER not found (scripts/deps.sh installs it)"

  for a in "${extra[@]+"${extra[@]}"}"; do
    case "$a" in
      --port | --bind | --dir | --daemonize | --pidfile | --logfile | --cluster-enabled | \
        --cluster-config-file | --cluster-port | --loadmodule)
        die "$a is the script's to set (see --help)" ;;
    esac
  done
  [ ${#extra[@]} -eq 0 ] || [[ "${extra[0]}" == --* ]] ||
    die "redis-server settings after -- must start with --name"

  mkdir -p "$dir"
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty and holds no cluster.env"
  creating=1
  for i in "${!ports[@]}"; do write_config "${ports[$i]}" "${bus_ports[$i]}"; done
  for port in "${ports[@]}"; do start_node "$port"; done

  local addrs=()
  for port in "${ports[@]}"; do addrs+=("127.0.0.1:$port"); done
  # All nodes share one host, which redis-cli warns about; that is expected.
  if ! timeout "$timeout" "$REDIS_CLI" --cluster create "${addrs[@]}" \
    --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log" 2>&1; then
    tail -n 20 "$dir/create.log" >&2
    die "redis-cli --cluster create failed (log: $dir/create.log); scripts/cluster.sh clean --dir $dir removes it"
  fi
  printf 'PORTS="%s"\nMASTERS=%s\nREPLICAS=%s\n' "${ports[*]}" "$masters" "$replicas" >"$state"
  wait_up
  creating=0
  echo "cluster.sh: $masters masters + $((masters * replicas)) replicas up on ports ${ports[*]}; data in $dir"
  echo "  redis-cli -c -p ${ports[0]} SEEN.ADD user:42:played v1 v2 v3"
}

do_stop() {
  local port pid pids=() deadline
  load_state
  for port in "${ports[@]}"; do
    if pid="$(node_pid "$port")"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$port:$pid")
    fi
  done
  deadline=$((SECONDS + 30))
  for entry in "${pids[@]+"${pids[@]}"}"; do
    port="${entry%%:*}" pid="${entry#*:}"
    # Redis removes its pid file before it exits: watch the process itself.
    while running "$pid" "$port"; do
      if [ $SECONDS -ge $deadline ]; then
        echo "cluster.sh: node $port did not stop; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.1
    done
  done
  echo "cluster.sh: stopped ${#pids[@]} node(s) in $dir"
}

do_status() {
  local port pid role master slots keys mem myid state_seen=""
  load_state
  printf '%-6s %-8s %-7s %-40s %-6s %-9s %-8s\n' port pid role "node id / master" slots keys memory
  for port in "${ports[@]}"; do
    if ! pid="$(node_pid "$port")"; then
      printf '%-6s %-8s\n' "$port" down
      continue
    fi
    role="$(field "$port" replication role | sed 's/slave/replica/')"
    myid="$(cli "$port" cluster myid || true)"
    if [ "$role" = master ]; then
      master="$myid"
      slots="$(cli "$port" cluster nodes | awk '/myself/ {n=0; for (i=9;i<=NF;i++) {
        if ($i ~ /^\[/) continue; split($i,r,"-"); n += (r[2]==""?1:r[2]-r[1]+1)} print n}')"
    else
      master="-> $(field "$port" replication master_port) ($(field "$port" replication master_link_status))"
      slots=-
    fi
    keys="$(cli "$port" dbsize | tr -dc 0-9)"
    mem="$(field "$port" memory used_memory_human)"
    printf '%-6s %-8s %-7s %-40s %-6s %-9s %-8s\n' "$port" "$pid" "$role" "$master" "$slots" "$keys" "$mem"
    [ -n "$state_seen" ] || state_seen="$(field "$port" cluster cluster_state)"
  done
  echo "cluster_state: ${state_seen:-unknown}"
}

do_kill() {
  local pid
  load_state
  [ -n "$kill_port" ] || die "kill needs a PORT"
  [[ " ${ports[*]} " == *" $kill_port "* ]] || die "$kill_port is not a node of the cluster in $dir"
  pid="$(node_pid "$kill_port")" || die "node $kill_port is not running"
  kill -KILL "$pid"
  while running "$pid" "$kill_port"; do sleep 0.05; done
  echo "cluster.sh: killed node $kill_port (pid $pid) with SIGKILL"
}

kill_all_nodes() { # SIGKILL every node of DIR still running, by its pid file
  local d port pid
  for d in "$dir"/node-*; do
    [ -d "$d" ] || continue
    port="${d##*/node-}"
    if pid="$(node_pid "$port")"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

do_clean() {
  if [ -f "$state" ]; then
    do_stop
  elif [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    # A creation that failed half-way.
    [ -n "$(ls -d "$dir"/node-* 2>/dev/null)" ] || die "$dir holds no cluster; not deleting it"
    kill_all_nodes
  fi
  rm -rf "$dir"
  echo "cluster.sh: removed $dir"
}

case "$command" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  kill) do_kill ;;
  clean) do_clean ;;
esac
