#!/usr/bin/env bash
# Runs a chosen set of benchmark scenarios and writes BENCHMARKS.md and its plot.
#
#   bench/run.sh                  # every set: partitions batch groups payload producers
#   bench/run.sh partitions batch # only these sets
#   BENCH_ONLY=batch-100 bench/run.sh   # one scenario by name (regex on the name)
#
# Each scenario is one `queen-bench run` that starts the release broker on a fresh embedded
# PostgreSQL, measures broker, baseline and raw ceiling in the same run, and writes
# bench-results/NN-NAME.json; `queen-bench report` then writes BENCHMARKS.md (with the
# analysis in bench/analysis.md) and bench/partitions.png. Runs as root or as a user who can
# run initdb; as root, PostgreSQL runs as the `postgres` user, created here if missing.
set -euo pipefail
cd "$(dirname "$0")/.."

sets=("$@")
if [ ${#sets[@]} -eq 0 ]; then
  sets=(partitions batch groups payload producers)
fi
results=${BENCH_RESULTS:-bench-results}

# What the runs need from the machine: PostgreSQL's server programs, the font the plot's
# text is drawn with, and (as root) the unprivileged user PostgreSQL runs as.
need=()
if ! command -v initdb >/dev/null 2>&1 && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  need+=(postgresql)
fi
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin postgres
fi

cargo build --release --bin queen --bin queen-bench

# A full run starts from nothing, so the report never mixes runs; a partial run replaces
# only its own rows.
if [ $# -eq 0 ] && [ -z "${BENCH_ONLY:-}" ]; then
  rm -rf "$results"
fi
mkdir -p "$results"
n=0
while read -r set name options; do
  case "$set" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  if [[ ! " ${sets[*]} " == *" $set "* ]]; then continue; fi
  if [ -n "${BENCH_ONLY:-}" ] && ! [[ "$name" =~ $BENCH_ONLY ]]; then continue; fi
  out=$(printf '%s/%02d-%s.json' "$results" "$n" "$name")
  echo "== $name"
  # shellcheck disable=SC2086 # the options are words by design
  target/release/queen-bench run --label "$name" $options --out "$out"
done < bench/scenarios

target/release/queen-bench report --results "$results" --out BENCHMARKS.md \
  --plot bench/partitions.png --analysis bench/analysis.md
