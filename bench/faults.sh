#!/usr/bin/env bash
# Runs the fault tests under load RUNS times each (default 5) on a release build and prints
# a table: per run, messages answered as stored, deliveries, acks that failed (the only
# duplicates the lease model explains), the failed requests by kind and status (418 = no
# HTTP answer: a dropped or refused connection), and whether the run held the bar: every
# stored message delivered, no duplicate without a failed ack, every failure of the kind the
# fault explains (the tests assert all of it; a run that breaks it is marked FAIL and its
# output kept under target/faults/).
#
#   postgres_restart  PostgreSQL stopped for 3 s and started again under 4 producers,
#                     3 leased consumers and parked long-polls, the push spool off
#                     (failures must be 503s)
#   spool_load        the same with the push spool on (no push may fail: pushes met by the
#                     outage are answered buffered and must all be delivered)
#   nodes_kill_under_load  one of three broker processes SIGKILLed and restarted under load
#   nodes_spool_kill  a broker SIGKILLed with pushes in its spool (PostgreSQL down), and
#                     one killed in the middle of its replay: each buffered message once
#   dropped_requests  pushes and acks abandoned by their clients after 0.2-10 ms, re-sent
#
# Usage: bench/faults.sh [RUNS]
#
# These tests inject one fault at a time. The randomized fault run mixes them (three nodes,
# queue mode and two groups, bundles; kills, pauses past a lease, PostgreSQL restarts, mesh
# cuts, a full spool disk, push maintenance, on a seeded schedule) and prints its seed and a
# table of lost messages, duplicates and order violations (README, "The two commands"):
#   QUEEN_FAULT_SECS=600 cargo test --test broker nodes::fault_run -- --nocapture
#   QUEEN_FAULT_SEED=<seed printed by a run> cargo test --test broker nodes::fault_run -- --nocapture
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
tests=(
  "postgres_restart::a_postgres_restart_under_load_loses_nothing_and_answers_503"
  "spool::load::a_postgres_restart_under_load_with_the_spool_loses_no_push_and_fails_none"
  "nodes::spool_kill::a_node_killed_with_a_full_spool_stores_every_buffered_push_once_after_its_restart"
  "nodes::spool_kill::a_node_killed_in_the_middle_of_its_replay_stores_each_message_once_after_its_restart"
  "nodes::kill_under_load::a_node_killed_and_restarted_under_load_loses_nothing_and_repeats_only_failed_acks"
  "dropped_requests::pushes_and_acks_dropped_mid_way_lose_nothing_and_store_nothing_twice"
)
out=target/faults
mkdir -p "$out"
export QUEEN_SKIP_IMAGE_TEST=1
cargo test --release --test broker --no-run

printf '%-4s %-22s %8s %11s %12s  %-6s %s\n' run test stored deliveries "failed acks" verdict "failed requests (kind, status): count"
for run in $(seq 1 "$runs"); do
  for test in "${tests[@]}"; do
    short="${test%::*}"
    short="${short//::/_}"
    log="$out/$run-$short-$(echo "$test" | cksum | cut -d' ' -f1).log"
    if cargo test --release --test broker "$test" -- --exact --nocapture >"$log" 2>&1; then
      verdict=ok
    else
      verdict=FAIL
    fi
    # "4550 deliveries of 4550 stored messages; 10 acks failed"
    counts=$(grep -Eo '[0-9]+ deliveries of [0-9]+ stored messages; [0-9]+ acks failed' "$log" | tail -1 || true)
    deliveries=$(echo "$counts" | awk '{print $1}')
    stored=$(echo "$counts" | awk '{print $4}')
    acks=$(echo "$counts" | awk '{print $7}')
    failures=$(grep -Eo 'failures: \{[^}]*\}' "$log" | tail -1 | sed 's/^failures: //' || true)
    printf '%-4s %-22s %8s %11s %12s  %-6s %s\n' "$run" "$short" "${stored:--}" "${deliveries:--}" "${acks:--}" "$verdict" "${failures:--}"
    if [ "$verdict" = ok ]; then rm -f "$log"; fi
  done
done
