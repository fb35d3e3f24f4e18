#!/usr/bin/env bash
# The same tier-3 client calls (bench/tier3-peer.py) against this broker and the public peer
# server, alternately, on one machine and one PostgreSQL: this broker's release build on its
# embedded PostgreSQL, and the peer on a database of its own in that same PostgreSQL.
#
#   bench/tier3-peer.sh PEER_BINARY [ROUNDS] [-- driver options]
#
# PEER_BINARY is the peer's `queen` (`cargo install --locked queen-engine@1.3.0`). The driver
# runs in the compat suite's virtualenv (target/tmp/compat-venv, made by .ci/run or by
# `cargo test --test broker compat`). Each round runs the driver against this broker, then
# against the peer; the rows are printed as the driver prints them, labelled by broker.
set -euo pipefail

peer_binary=${1:?usage: bench/tier3-peer.sh PEER_BINARY [ROUNDS] [-- driver options]}
rounds=${2:-2}
shift $(( $# >= 2 ? 2 : 1 ))
[ "${1:-}" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
python=$root/target/tmp/compat-venv/bin/python
broker=$root/target/release/queen
work=$(mktemp -d /tmp/tier3-peer.XXXXXX)
chmod o+x "$work" # the embedded PostgreSQL runs as its own user
ours_port=6791 peer_port=6792

stop() {
  [ -n "${peer_pid:-}" ] && kill "$peer_pid" 2>/dev/null && wait "$peer_pid" 2>/dev/null
  [ -n "${ours_pid:-}" ] && kill "$ours_pid" 2>/dev/null && wait "$ours_pid" 2>/dev/null
  rm -rf "$work"
}
trap stop EXIT

healthy() {
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0
    sleep 0.5
  done
  echo "broker on port $1 never became healthy; its log:" >&2
  tail -20 "$2" >&2
  return 1
}

[ -x "$broker" ] || (cd "$root" && cargo build --release --bin queen)
QUEEN_DATA_DIR=$work/ours PORT=$ours_port QUEEN_MESH_PORT=7791 "$broker" >"$work/ours.log" 2>&1 &
ours_pid=$!
healthy $ours_port "$work/ours.log"

# The embedded PostgreSQL listens only on a socket in the data folder, named by its port
# (README "Configuration", `QUEEN_EMBEDDED_PG_PORT`).
psql -q -h "$work/ours/socket" -p 5433 -U queen -d queen -c "CREATE DATABASE peer"
mkdir -p "$work/peer-buffer"
PG_HOST=$work/ours/socket PG_PORT=5433 PG_USER=queen PG_PASSWORD=unused PG_DATABASE=peer \
  PORT=$peer_port QUEEN_MESH_PORT=7792 FILE_BUFFER_DIR=$work/peer-buffer \
  "$peer_binary" >"$work/peer.log" 2>&1 &
peer_pid=$!
healthy $peer_port "$work/peer.log"

for round in $(seq 1 "$rounds"); do
  echo "# round $round"
  "$python" "$root/bench/tier3-peer.py" --url "http://127.0.0.1:$ours_port" --label ours "$@" \
    | grep '^measure='
  "$python" "$root/bench/tier3-peer.py" --url "http://127.0.0.1:$peer_port" --label peer "$@" \
    | grep '^measure='
done
