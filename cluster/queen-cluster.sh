#!/usr/bin/env bash
# Runs a local Queen cluster on loopback: one PostgreSQL, N brokers that share it and know
# each other as mesh peers, and a real load balancer (nginx or HAProxy) in front.
#
#   queen-cluster.sh start [N]     start N brokers (default 3)
#   queen-cluster.sh stop          stop the balancer, the brokers and our PostgreSQL (idempotent)
#   queen-cluster.sh status        what runs, and whether each node answers /health
#   queen-cluster.sh logs [node]   the tail of every log, or one node's whole log (node1, lb, pg)
#   queen-cluster.sh clean         stop, then delete the state folder
#
# Everything lives in one state folder ($QUEEN_CLUSTER_DIR): PostgreSQL's data, pid files,
# logs and the balancer's config. `stop`, `status` and `logs` read what `start` recorded
# there, so they need the same QUEEN_CLUSTER_DIR. The brokers inherit this script's
# environment, so any broker setting (RUST_LOG, QUEEN_HOTLIST, ...) can be passed through.
# The knobs are listed in cluster/README.md and cluster/example.env.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$SCRIPT_DIR")"
readonly SCRIPT_DIR REPO_DIR

# Optional env file with the knobs below (see cluster/example.env).
if [[ -n "${QUEEN_CLUSTER_ENV_FILE:-}" ]]; then
  set -a
  # shellcheck source=/dev/null
  . "$QUEEN_CLUSTER_ENV_FILE"
  set +a
fi

STATE_DIR="${QUEEN_CLUSTER_DIR:-/tmp/queen-cluster}"
HTTP_BASE_PORT="${QUEEN_CLUSTER_HTTP_BASE_PORT:-6632}"
# Mesh ports sit 100 above the HTTP ports so up to 100 nodes never collide with them.
MESH_BASE_PORT="${QUEEN_CLUSTER_MESH_BASE_PORT:-6732}"
LB_PORT="${QUEEN_CLUSTER_LB_PORT:-8080}"
LB_KIND="${QUEEN_LB:-nginx}"
# Only names the socket file (.s.PGSQL.<port>): our PostgreSQL never listens on TCP.
PG_PORT="${QUEEN_CLUSTER_PG_PORT:-5440}"
# Long-polls wait up to the client's timeout (30 s by default), so the balancer must wait longer.
LB_READ_TIMEOUT_SECS="${QUEEN_CLUSTER_LB_READ_TIMEOUT_SECS:-120}"
# Brokers drain parked long-polls on SIGTERM; past this they get SIGKILL.
STOP_TIMEOUT_SECS="${QUEEN_CLUSTER_STOP_TIMEOUT_SECS:-15}"
# First start includes schema installation; a cold debug build on a busy machine is slow.
START_TIMEOUT_SECS="${QUEEN_CLUSTER_START_TIMEOUT_SECS:-90}"
CLUSTER_NAME="${QUEEN_CLUSTER_NAME:-queen-local}"

RECORD="$STATE_DIR/cluster.env"
PG_DIR="$STATE_DIR/pg"
NODES_DIR="$STATE_DIR/nodes"
LB_DIR="$STATE_DIR/lb"

# The unprivileged user that runs PostgreSQL when we are root (initdb refuses root).
readonly PG_OS_USER=postgres

main() {
  local command="${1:-}"
  shift || true
  case "$command" in
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    logs) cmd_logs "$@" ;;
    clean) cmd_clean ;;
    -h | --help | help | "") usage ;;
    *)
      usage >&2
      die "unknown command '$command'"
      ;;
  esac
}

usage() {
  sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ---------------------------------------------------------------------------------- start

cmd_start() {
  local nodes="${1:-3}"
  if ! [[ "$nodes" =~ ^[0-9]+$ ]] || ((10#$nodes < 1 || 10#$nodes > 100)); then
    die "the node count must be a whole number from 1 to 100, not '$nodes'"
  fi
  nodes=$((10#$nodes))
  check_port_settings

  if [[ -f "$RECORD" ]] && anything_running; then
    die "a cluster is already running from $STATE_DIR: run '$0 stop' first"
  fi

  local bin
  bin="$(broker_binary)"
  need curl
  local lb_program
  lb_program="$(balancer_program)"
  check_ports_free "$nodes"

  local own_pg=0 pg_bin=""
  if [[ -z "${DATABASE_URL:-}" ]]; then
    own_pg=1
    pg_bin="$(postgres_bin_dir)"
  fi

  mkdir -p "$STATE_DIR" "$NODES_DIR" "$LB_DIR"
  # As root, PostgreSQL and the nginx workers run as other users that must reach the folder.
  [[ "$(id -u)" != 0 ]] || chmod 755 "$STATE_DIR"
  write_record "$nodes" "$bin" "$own_pg" "$pg_bin" "$lb_program"
  # Any failure from here on (die included) stops what was started: nothing is left behind.
  trap 'on_start_failure' EXIT

  local database_url
  if ((own_pg)); then
    start_postgres "$pg_bin" "$nodes"
    database_url="host='$PG_DIR/socket' port=$PG_PORT user=queen dbname=queen"
  else
    database_url="$DATABASE_URL"
    say "using the PostgreSQL server given by DATABASE_URL"
  fi

  local peers i
  peers="$(peer_list "$nodes")"
  for ((i = 1; i <= nodes; i++)); do
    start_node "$i" "$bin" "$database_url" "$peers"
  done
  for ((i = 1; i <= nodes; i++)); do
    wait_healthy "$i"
  done

  start_balancer "$lb_program" "$nodes"
  wait_for "the balancer to answer /health on port $LB_PORT" "$START_TIMEOUT_SECS" \
    http_ok "http://127.0.0.1:$LB_PORT/health"
  trap - EXIT

  say "cluster up: $nodes node(s) behind $LB_KIND at http://127.0.0.1:$LB_PORT"
  cmd_status
}

on_start_failure() {
  trap - EXIT
  warn "start failed; stopping what was started (logs stay in $STATE_DIR)"
  cmd_stop || true
}

# Refuses to start over ports that are already taken, naming the port and its role.
check_ports_free() {
  local nodes="$1" i
  for ((i = 1; i <= nodes; i++)); do
    port_free "$(http_port "$i")" || die "HTTP port $(http_port "$i") of node$i is taken (set QUEEN_CLUSTER_HTTP_BASE_PORT)"
    port_free "$(mesh_port "$i")" || die "mesh port $(mesh_port "$i") of node$i is taken (set QUEEN_CLUSTER_MESH_BASE_PORT)"
  done
  port_free "$LB_PORT" || die "balancer port $LB_PORT is taken (set QUEEN_CLUSTER_LB_PORT)"
}

check_port_settings() {
  local name value
  for name in HTTP_BASE_PORT MESH_BASE_PORT LB_PORT PG_PORT LB_READ_TIMEOUT_SECS STOP_TIMEOUT_SECS START_TIMEOUT_SECS; do
    value="${!name}"
    [[ "$value" =~ ^[0-9]+$ ]] || die "$name must be a whole number, not '$value'"
  done
  case "$LB_KIND" in
    nginx | haproxy) ;;
    *) die "QUEEN_LB must be nginx or haproxy, not '$LB_KIND'" ;;
  esac
  [[ "$STATE_DIR" != *"'"* ]] || die "QUEEN_CLUSTER_DIR must not contain a single quote"
}

# The broker binary: QUEEN_BIN, else the release build (built here when missing).
broker_binary() {
  if [[ -n "${QUEEN_BIN:-}" ]]; then
    [[ -x "$QUEEN_BIN" ]] || die "QUEEN_BIN=$QUEEN_BIN is not an executable file"
    realpath "$QUEEN_BIN"
    return
  fi
  local bin="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/queen"
  if [[ ! -x "$bin" ]]; then
    need cargo
    say "no broker binary at $bin: building it (cargo build --release)" >&2
    (cd "$REPO_DIR" && cargo build --release --bin queen) >&2
  fi
  realpath "$bin"
}

peer_list() {
  local nodes="$1" i peers=""
  for ((i = 1; i <= nodes; i++)); do
    peers+="${peers:+,}127.0.0.1:$(mesh_port "$i")"
  done
  printf '%s\n' "$peers"
}

start_node() {
  local i="$1" bin="$2" database_url="$3" peers="$4"
  local log="$NODES_DIR/node$i.log"
  # These override anything inherited (QUEEN_MESH_SECRET is inherited only when set: an
  # empty secret is not the same as none). QUEEN_CLUSTER_DIR marks the process as this
  # cluster's; NO_COLOR keeps colour codes out of the log file unless asked for.
  PORT="$(http_port "$i")" \
    QUEEN_BIND_ADDR=127.0.0.1 \
    DATABASE_URL="$database_url" \
    QUEEN_MESH_PORT="$(mesh_port "$i")" \
    QUEEN_PEERS="$peers" \
    QUEEN_NODE_ID="node$i" \
    QUEEN_CLUSTER_NAME="$CLUSTER_NAME" \
    QUEEN_CLUSTER_DIR="$STATE_DIR" \
    FILE_BUFFER_DIR="$NODES_DIR/spool$i" \
    NO_COLOR="${NO_COLOR:-1}" \
    nohup "$bin" </dev/null >>"$log" 2>&1 &
  echo "$!" >"$NODES_DIR/node$i.pid"
  say "node$i: pid $!, http 127.0.0.1:$(http_port "$i"), mesh 127.0.0.1:$(mesh_port "$i"), log $log"
}

wait_healthy() {
  local i="$1" pid
  pid="$(<"$NODES_DIR/node$i.pid")"
  local deadline=$((SECONDS + START_TIMEOUT_SECS))
  until http_ok "http://127.0.0.1:$(http_port "$i")/health"; do
    if ! alive "$pid"; then
      warn "node$i exited during start; the end of its log:"
      tail -n 20 "$NODES_DIR/node$i.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      warn "node$i did not answer /health within ${START_TIMEOUT_SECS}s; the end of its log:"
      tail -n 20 "$NODES_DIR/node$i.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------- PostgreSQL

# Creates (first time) and starts a private PostgreSQL under $PG_DIR, socket only.
start_postgres() {
  local bin="$1" nodes="$2"
  local data="$PG_DIR/data" socket="$PG_DIR/socket" log="$PG_DIR/postgres.log"
  if [[ "$(id -u)" == 0 ]]; then
    ensure_pg_os_user
    # The server runs as $PG_OS_USER, which must be able to reach its folder.
    if ! runuser -u "$PG_OS_USER" -- test -x "$STATE_DIR"; then
      die "the '$PG_OS_USER' user cannot reach $STATE_DIR (a parent folder is private); choose another QUEEN_CLUSTER_DIR"
    fi
  fi
  mkdir -p "$PG_DIR" "$socket"
  touch "$log"
  give_to_pg "$PG_DIR" "$socket" "$log"

  if [[ ! -f "$data/PG_VERSION" ]]; then
    say "creating a PostgreSQL cluster in $data"
    rm -rf "$data"
    mkdir -p "$data"
    chmod 700 "$data"
    give_to_pg "$data"
    as_pg "$bin/initdb" --pgdata="$data" --username=queen --auth=trust \
      --encoding=UTF8 --no-instructions >"$PG_DIR/initdb.log" 2>&1 ||
      {
        cat "$PG_DIR/initdb.log" >&2
        die "initdb failed"
      }
    echo "include_if_exists = 'queen-cluster.conf'" >>"$data/postgresql.conf"
  fi

  # Rewritten on every start, so the socket, port and connection limit follow the knobs.
  # Each broker keeps up to DB_POOL_SIZE connections, plus a few for tools.
  local max_connections=$((nodes * ${DB_POOL_SIZE:-20} + 20))
  cat >"$data/queen-cluster.conf" <<EOF
# Written by cluster/queen-cluster.sh on every start.
listen_addresses = ''
unix_socket_directories = '$socket'
port = $PG_PORT
max_connections = $max_connections
EOF
  give_to_pg "$data/queen-cluster.conf"

  say "starting PostgreSQL (socket $socket, log $log)"
  as_pg "$bin/pg_ctl" start --pgdata="$data" --log="$log" --wait --timeout="$START_TIMEOUT_SECS" \
    --silent || {
    tail -n 20 "$log" >&2
    die "PostgreSQL did not start"
  }

  local exists
  exists="$(as_pg "$bin/psql" --host="$socket" --port="$PG_PORT" --username=queen \
    --dbname=postgres --no-psqlrc --tuples-only --no-align \
    --command="SELECT 1 FROM pg_database WHERE datname = 'queen'")"
  if [[ "$exists" != 1 ]]; then
    as_pg "$bin/psql" --host="$socket" --port="$PG_PORT" --username=queen --dbname=postgres \
      --no-psqlrc --quiet --command="CREATE DATABASE queen" >/dev/null
    say "created database 'queen'"
  fi
}

# A fast shutdown, then an immediate one if that fails. pg_ctl returns once the pid file is
# gone, and the postmaster removes it on its way out, before the process has exited: under
# load the process outlives pg_ctl by a moment, so wait for the process itself.
stop_postgres() {
  local bin="$1" data="$PG_DIR/data" pid
  [[ -f "$data/postmaster.pid" ]] || return 0
  pid="$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)"
  say "stopping PostgreSQL"
  if ! as_pg "$bin/pg_ctl" stop --pgdata="$data" --mode=fast --wait \
    --timeout="$STOP_TIMEOUT_SECS" --silent; then
    warn "pg_ctl stop failed; stopping it immediately (see $PG_DIR/postgres.log)"
    as_pg "$bin/pg_ctl" stop --pgdata="$data" --mode=immediate --wait --silent || true
  fi
  local deadline=$((SECONDS + STOP_TIMEOUT_SECS))
  while alive "$pid"; do
    if ((SECONDS >= deadline)); then
      warn "PostgreSQL (pid $pid) still running ${STOP_TIMEOUT_SECS}s after pg_ctl stop"
      return 0
    fi
    sleep 0.1
  done
}

# initdb and pg_ctl: in PATH, else the newest /usr/lib/postgresql/<version>/bin.
postgres_bin_dir() {
  local dir
  if [[ -n "${QUEEN_PG_BIN_DIR:-}" ]]; then
    [[ -x "$QUEEN_PG_BIN_DIR/initdb" ]] || die "no initdb in QUEEN_PG_BIN_DIR=$QUEEN_PG_BIN_DIR"
    printf '%s\n' "$QUEEN_PG_BIN_DIR"
    return
  fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    # Resolve symlinks: psql sits beside the real initdb even when PATH only links initdb.
    dirname "$(realpath "$(command -v initdb)")"
    return
  fi
  for dir in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
    if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
      printf '%s\n' "$dir"
      return
    fi
  done
  die "PostgreSQL server programs (initdb, pg_ctl) not found in PATH or /usr/lib/postgresql/*/bin; install them (Debian: apt-get install postgresql) or set DATABASE_URL"
}

ensure_pg_os_user() {
  id "$PG_OS_USER" >/dev/null 2>&1 && return 0
  say "creating the system user '$PG_OS_USER' to run PostgreSQL (initdb refuses root)"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_OS_USER"
}

# Runs a PostgreSQL program as the server's OS user (ourselves unless we are root), from /
# so the tools never complain about an unreadable working folder.
as_pg() {
  if [[ "$(id -u)" == 0 ]]; then
    (cd / && runuser -u "$PG_OS_USER" -- "$@")
  else
    (cd / && "$@")
  fi
}

give_to_pg() {
  [[ "$(id -u)" == 0 ]] || return 0
  chown "$PG_OS_USER:" "$@"
}

# ------------------------------------------------------------------------------- balancer

# The balancer's program, installed from the distribution when missing and we are root.
balancer_program() {
  local program package
  case "$LB_KIND" in
    nginx) program=nginx package=nginx ;;
    haproxy) program=haproxy package=haproxy ;;
  esac
  if ! find_program "$program" >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
      say "installing $package from the distribution (apt-get install -y $package)" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >&2 || {
        apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >&2
      }
    else
      die "$program is not installed; install it (Debian: sudo apt-get install $package) or choose the other balancer with QUEEN_LB"
    fi
  fi
  find_program "$program" || die "$program is still not found after installing $package"
}

# A program in PATH or in sbin (which a non-root PATH often leaves out).
find_program() {
  local name="$1" dir
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    return
  fi
  for dir in /usr/sbin /sbin /usr/local/sbin; do
    if [[ -x "$dir/$name" ]]; then
      printf '%s\n' "$dir/$name"
      return
    fi
  done
  return 1
}

start_balancer() {
  local program="$1" nodes="$2"
  case "$LB_KIND" in
    nginx)
      write_nginx_conf "$nodes"
      "$program" -t -q -p "$LB_DIR" -c "$LB_DIR/nginx.conf" -e "$LB_DIR/error.log" ||
        die "nginx rejected $LB_DIR/nginx.conf"
      # Daemonised: its output must not hold the caller's pipes open.
      "$program" -p "$LB_DIR" -c "$LB_DIR/nginx.conf" -e "$LB_DIR/error.log" \
        </dev/null >>"$LB_DIR/nginx.out" 2>&1
      ;;
    haproxy)
      write_haproxy_conf "$nodes"
      "$program" -c -q -f "$LB_DIR/haproxy.cfg" || die "haproxy rejected $LB_DIR/haproxy.cfg"
      "$program" -D -f "$LB_DIR/haproxy.cfg" -p "$LB_DIR/haproxy.pid" \
        </dev/null >>"$LB_DIR/haproxy.log" 2>&1
      ;;
  esac
  say "$LB_KIND: http://127.0.0.1:$LB_PORT round-robin over $nodes node(s), config in $LB_DIR"
}

write_nginx_conf() {
  local nodes="$1" i servers=""
  for ((i = 1; i <= nodes; i++)); do
    # Passive health: one failed connection takes the node out for 5 s, then nginx tries it again.
    servers+="        server 127.0.0.1:$(http_port "$i") max_fails=1 fail_timeout=5s;"$'\n'
  done
  local user_line=""
  # As root the workers would switch to a default user; run them as nobody explicitly.
  [[ "$(id -u)" == 0 ]] && user_line="user nobody nogroup;"
  mkdir -p "$LB_DIR/temp"
  cat >"$LB_DIR/nginx.conf" <<EOF
# Written by cluster/queen-cluster.sh; rewritten on every start.
$user_line
worker_processes 1;
daemon on;
pid $LB_DIR/nginx.pid;
error_log $LB_DIR/error.log warn;

events {
    worker_connections 1024;
}

http {
    access_log $LB_DIR/access.log;
    client_body_temp_path $LB_DIR/temp/client_body;
    proxy_temp_path $LB_DIR/temp/proxy;
    fastcgi_temp_path $LB_DIR/temp/fastcgi;
    uwsgi_temp_path $LB_DIR/temp/uwsgi;
    scgi_temp_path $LB_DIR/temp/scgi;
    # Matches the broker's QUEEN_MAX_BODY_BYTES default (64 MiB).
    client_max_body_size 64m;

    upstream queen {
        # Round-robin is nginx's default.
$servers
        # Idle HTTP/1.1 connections kept to the brokers, so requests skip the TCP handshake.
        keepalive 32;
    }

    server {
        listen 127.0.0.1:$LB_PORT;

        location / {
            proxy_pass http://queen;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            # Long-polls hold the request open until the pop's timeout; answers stream through.
            proxy_read_timeout ${LB_READ_TIMEOUT_SECS}s;
            proxy_send_timeout ${LB_READ_TIMEOUT_SECS}s;
            proxy_buffering off;
            # A dead node refuses at once; try the next one (nginx never resends a POST
            # whose body already reached a broker).
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout http_502;
            # Which node served the request: for demos and the integration test.
            add_header X-Queen-Upstream \$upstream_addr always;
        }
    }
}
EOF
}

write_haproxy_conf() {
  local nodes="$1" i servers=""
  for ((i = 1; i <= nodes; i++)); do
    servers+="    server node$i 127.0.0.1:$(http_port "$i") check inter 1s fall 2 rise 1"$'\n'
  done
  cat >"$LB_DIR/haproxy.cfg" <<EOF
# Written by cluster/queen-cluster.sh; rewritten on every start.
global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client ${LB_READ_TIMEOUT_SECS}s
    timeout server ${LB_READ_TIMEOUT_SECS}s
    timeout http-keep-alive 60s
    # A refused connection is retried on another node.
    retries 2
    option redispatch

frontend queen_in
    bind 127.0.0.1:$LB_PORT
    default_backend queen

backend queen
    balance roundrobin
    # Active health plus passive: a node that fails /health or real traffic is skipped.
    option httpchk GET /health/ready
    default-server observe layer4 error-limit 1 on-error mark-down
    http-response set-header X-Queen-Upstream %si:%sp
$servers
EOF
}

stop_balancer() {
  local kind="$1" program="$2" pid_file
  case "$kind" in
    nginx) pid_file="$LB_DIR/nginx.pid" ;;
    haproxy) pid_file="$LB_DIR/haproxy.pid" ;;
    *) return 0 ;;
  esac
  [[ -f "$pid_file" ]] || return 0
  say "stopping $kind"
  local pid
  pid="$(<"$pid_file")"
  stop_pid "$kind" "$pid" "$program"
  rm -f "$pid_file"
}

# ----------------------------------------------------------------------- stop, status, logs

cmd_stop() {
  if [[ ! -f "$RECORD" ]]; then
    say "nothing to stop in $STATE_DIR"
    return 0
  fi
  load_record
  stop_balancer "$REC_LB_KIND" "$REC_LB_PROGRAM"
  local pid_file node pid
  for pid_file in "$NODES_DIR"/node*.pid; do
    [[ -f "$pid_file" ]] || continue
    node="$(basename "$pid_file" .pid)"
    pid="$(<"$pid_file")"
    stop_pid "$node" "$pid" "$REC_BIN"
    rm -f "$pid_file"
  done
  if [[ "$REC_OWN_PG" == 1 ]]; then
    stop_postgres "$REC_PG_BIN"
  fi
  say "stopped"
}

# SIGTERM, then SIGKILL after STOP_TIMEOUT_SECS; only if the pid still runs `program`
# (a pid file left by a crash may name an unrelated process by now).
stop_pid() {
  local name="$1" pid="$2" program="$3"
  if ! alive "$pid" || ! runs_program "$pid" "$program"; then
    say "$name (pid $pid) was not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + STOP_TIMEOUT_SECS))
  while alive "$pid"; do
    if ((SECONDS >= deadline)); then
      warn "$name (pid $pid) did not stop within ${STOP_TIMEOUT_SECS}s: killing it"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  say "$name (pid $pid) stopped"
}

cmd_status() {
  if [[ ! -f "$RECORD" ]]; then
    say "no cluster in $STATE_DIR"
    return 0
  fi
  load_record
  local i pid state health
  status_row NAME PID STATE HTTP MESH HEALTH
  for ((i = 1; i <= REC_NODES; i++)); do
    pid="-" state=down health="-"
    if [[ -f "$NODES_DIR/node$i.pid" ]]; then
      pid="$(<"$NODES_DIR/node$i.pid")"
      if alive "$pid"; then
        state=up
        health="$(health_of "http://127.0.0.1:$(http_port "$i")/health")"
      fi
    fi
    status_row "node$i" "$pid" "$state" \
      "127.0.0.1:$(http_port "$i")" "127.0.0.1:$(mesh_port "$i")" "$health"
  done
  local lb_pid="-" lb_state=down lb_health="-" lb_pid_file="$LB_DIR/$REC_LB_KIND.pid"
  if [[ -f "$lb_pid_file" ]]; then
    lb_pid="$(<"$lb_pid_file")"
    if alive "$lb_pid"; then
      lb_state=up
      lb_health="$(health_of "http://127.0.0.1:$LB_PORT/health")"
    fi
  fi
  status_row "$REC_LB_KIND" "$lb_pid" "$lb_state" \
    "127.0.0.1:$LB_PORT" "-" "$lb_health"
  if [[ "$REC_OWN_PG" == 1 ]]; then
    local pg_state=down pg_pid="-"
    if [[ -f "$PG_DIR/data/postmaster.pid" ]]; then
      pg_pid="$(head -n 1 "$PG_DIR/data/postmaster.pid")"
      alive "$pg_pid" && pg_state=up
    fi
    status_row postgres "$pg_pid" "$pg_state" "-" "-" "socket in $PG_DIR/socket"
  else
    printf 'postgres: external (DATABASE_URL)\n'
  fi
}

cmd_logs() {
  local which="${1:-}"
  [[ -d "$STATE_DIR" ]] || die "no cluster in $STATE_DIR"
  case "$which" in
    "")
      local file
      for file in "$NODES_DIR"/node*.log "$LB_DIR/error.log" "$LB_DIR/nginx.out" "$LB_DIR/haproxy.log" "$PG_DIR/postgres.log"; do
        [[ -f "$file" ]] || continue
        printf '==> %s <==\n' "$file"
        tail -n 20 "$file"
      done
      ;;
    lb) cat "$LB_DIR/error.log" "$LB_DIR/haproxy.log" 2>/dev/null || true ;;
    pg | postgres) cat "$PG_DIR/postgres.log" ;;
    node[0-9]*)
      [[ -f "$NODES_DIR/$which.log" ]] || die "no log for $which in $NODES_DIR"
      cat "$NODES_DIR/$which.log"
      ;;
    [0-9]*)
      [[ -f "$NODES_DIR/node$which.log" ]] || die "no log for node$which in $NODES_DIR"
      cat "$NODES_DIR/node$which.log"
      ;;
    *) die "logs takes a node (node1 or 1), lb or pg, not '$which'" ;;
  esac
}

cmd_clean() {
  cmd_stop
  # Only a folder this script made: it holds the record or is empty.
  if [[ -d "$STATE_DIR" ]]; then
    [[ -f "$RECORD" || -z "$(ls -A "$STATE_DIR")" ]] ||
      die "$STATE_DIR was not made by this script; not deleting it"
    rm -rf "$STATE_DIR"
    say "deleted $STATE_DIR"
  fi
}

# ---------------------------------------------------------------------------- the record

# What `start` chose, for `stop`, `status` and `logs` (which may run with other knobs).
write_record() {
  cat >"$RECORD" <<EOF
REC_NODES=$(printf '%q' "$1")
REC_BIN=$(printf '%q' "$2")
REC_OWN_PG=$(printf '%q' "$3")
REC_PG_BIN=$(printf '%q' "$4")
REC_LB_PROGRAM=$(printf '%q' "$5")
REC_LB_KIND=$(printf '%q' "$LB_KIND")
REC_HTTP_BASE_PORT=$(printf '%q' "$HTTP_BASE_PORT")
REC_MESH_BASE_PORT=$(printf '%q' "$MESH_BASE_PORT")
REC_LB_PORT=$(printf '%q' "$LB_PORT")
EOF
}

load_record() {
  REC_NODES=0 REC_BIN="" REC_OWN_PG=0 REC_PG_BIN="" REC_LB_PROGRAM="" REC_LB_KIND=""
  # shellcheck source=/dev/null
  . "$RECORD"
  HTTP_BASE_PORT="$REC_HTTP_BASE_PORT"
  MESH_BASE_PORT="$REC_MESH_BASE_PORT"
  LB_PORT="$REC_LB_PORT"
}

anything_running() {
  local pid_file
  for pid_file in "$NODES_DIR"/node*.pid "$LB_DIR"/*.pid; do
    [[ -f "$pid_file" ]] && alive "$(<"$pid_file")" && return 0
  done
  return 1
}

# ------------------------------------------------------------------------------- helpers

# One line of `status`: name, pid, state, HTTP address, mesh address, health.
status_row() { printf '%-9s %-8s %-6s %-16s %-16s %s\n' "$@"; }

http_port() { echo $((HTTP_BASE_PORT + $1 - 1)); }
mesh_port() { echo $((MESH_BASE_PORT + $1 - 1)); }

# True when the process exists and is not a zombie (an exited child nobody reaped yet).
alive() {
  local pid="$1" stat
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat%% *}" != Z ]]
}

# True when the process's executable is `program` (also after it was rebuilt and replaced).
runs_program() {
  local pid="$1" program="$2" exe
  [[ -n "$program" ]] || return 0
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 0
  [[ "${exe% (deleted)}" == "$(realpath "$program" 2>/dev/null || echo "$program")" ]]
}

http_ok() { curl --silent --fail --max-time 2 --output /dev/null "$1"; }

health_of() {
  local code
  code="$(curl --silent --max-time 2 --output /dev/null --write-out '%{http_code}' "$1" || true)"
  case "$code" in
    200) echo "healthy" ;;
    000 | "") echo "no answer" ;;
    *) echo "unhealthy ($code)" ;;
  esac
}

# True when nothing accepts connections on the loopback port.
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

wait_for() {
  local what="$1" timeout="$2"
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      warn "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not installed"
}

say() { printf 'queen-cluster: %s\n' "$*"; }
warn() { printf 'queen-cluster: %s\n' "$*" >&2; }
die() {
  printf 'queen-cluster: error: %s\n' "$*" >&2
  exit 1
}

main "$@"
