#!/usr/bin/env bash
# Property-based API test of a running broker: schemathesis (from PyPI, pinned) reads the
# broker's own /api/openapi.json, generates requests from it (valid and invalid), and
# reports every answer that breaks the contract: a 5xx, a status or content type the
# document does not list, a body that does not match its schema, a 405 without `Allow`,
# bad input accepted or good input refused. It prints what it found and exits non-zero
# when it found something.
#
# Usage: bench/schemathesis.sh [BASE_URL] [MAX_EXAMPLES] [CHECKS]
#   BASE_URL      default http://127.0.0.1:6632 (start one with `cargo run --release`)
#   MAX_EXAMPLES  generated cases per operation and phase, default 25 (bounds the run)
#   CHECKS        schemathesis checks, default all; `not_a_server_error` for 5xx only
#
# The run mutates the broker (it pushes, acks, deletes queues, toggles maintenance), so
# point it at a scratch broker, never a real one. The venv is kept in target/tmp.
set -euo pipefail
cd "$(dirname "$0")/.."

base="${1:-http://127.0.0.1:6632}"
examples="${2:-25}"
checks="${3:-all}"
version="4.32.5"
venv="target/tmp/schemathesis-venv"

if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/schemathesis" --version | grep -q "$version"; then
  echo "installing schemathesis $version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "schemathesis==$version"
fi

if ! curl -sf "$base/health" >/dev/null; then
  echo "no broker answers on $base/health" >&2
  exit 2
fi

# A fixed seed makes a run repeatable. Long-polls may last DEFAULT_TIMEOUT (30 s), hence the
# response-time limit. The pop switch is turned back off afterwards, since the generated
# bodies include {"pop": true}.
status=0
mkdir -p target/tmp/schemathesis # its cache goes in the working directory: keep it out of the tree
(cd target/tmp/schemathesis && "../../../$venv/bin/schemathesis" run "$base/api/openapi.json" \
  --checks "$checks" \
  --max-examples "$examples" \
  --seed 14 \
  --workers 2 \
  --request-timeout 60 \
  --max-response-time 45 \
  --phases examples,coverage,fuzzing,stateful \
  --max-failures 500) || status=$?
curl -sf -XPOST "$base/api/v1/system/maintenance" -H 'content-type: application/json' \
  -d '{"pop": false}' >/dev/null || true
exit "$status"
