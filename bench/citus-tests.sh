#!/usr/bin/env bash
# Runs the broker tests that matter most for Citus, and the Python client compat suite, in
# the harness's Citus mode (tests/broker/support/citus.rs): one test process, which starts
# a Citus coordinator + 2 workers with the cluster script in a /tmp folder, gives every
# test a database of its own on it, and stops the cluster when it exits. Prints each
# test's verdict and a summary; the full output is kept in target/citus-tests.log.
#
#   compat_python   the published Python client's suite (tests/compat/)
#   citus_layout    the layout itself: fresh database, existing unsharded database
#   push:: pop_ ack:: transaction  the data path, wildcard pops over partitions whose
#                   shards sit on different workers, bundles across workers (2PC)
#   retention::     retention of segments, dead letters, partitions
#   tenants::       tenant claims and limits (the limit triggers)
#   upgrade::       migrations, fresh and on an existing database
#
# Usage: bench/citus-tests.sh [extra cargo test filters...]
#   QUEEN_CITUS_CLUSTER_SH  the cluster script (default: ../shared/citus/cluster.sh beside
#                     the repository, as tests/broker/citus_suite.rs finds it; the older
#                     name CITUS_CLUSTER_SH is read too); `build` is run first, a no-op once
#                     Citus is installed (the first build needs root)
#
# `cargo test` runs a shorter list on Citus by itself (tests/broker/citus_suite.rs, the
# tests that pass there and must keep passing); this script runs the wider list, failing
# tests included, to see where the layout stands.
#   QUEEN_TEST_CITUS_PORT  coordinator port (default 9800; workers at +1, +2)
set -euo pipefail
cd "$(dirname "$0")/.."

script=${QUEEN_CITUS_CLUSTER_SH:-${CITUS_CLUSTER_SH:-$(cd .. && pwd)/shared/citus/cluster.sh}}
[ -x "$script" ] || { echo "no cluster script at $script (set QUEEN_CITUS_CLUSTER_SH)" >&2; exit 2; }
"$script" build

filters=("$@")
if [ ${#filters[@]} -eq 0 ]; then
    filters=(compat_python citus_layout push:: pop_ ack:: transaction retention:: tenants:: upgrade::)
fi

cargo test --test broker --no-run
mkdir -p target
started=$(date +%s)
set +e
QUEEN_TEST_CITUS="$script" cargo test --test broker -- --test-threads 2 "${filters[@]}" \
    > target/citus-tests.log 2>&1
status=$?
set -e
grep -E '^test .* \.\.\. ' target/citus-tests.log | sort
grep -E '^test result:' target/citus-tests.log || true
echo "citus-tests: $(( $(date +%s) - started )) s, exit $status (log: target/citus-tests.log)"
exit $status
