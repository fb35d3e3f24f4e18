#!/usr/bin/env bash
# Fuzzes every decoder that reads bytes from outside the broker (JSON and QPB1 push, JSON and
# QTB1 transactions, stored segment frames, mesh frames, query strings) for INPUTS mutated
# inputs each (default one million), on the stable toolchain, and prints a table: inputs
# run, corpus size reached, distinct outcomes, the worst peak heap as a fraction of its
# bound, and seconds. Any panic, any input over its memory bound, or any refused body that
# is not a 4xx fails the run; the input is kept under tests/fuzz/corpus/<target>/, where
# `cargo test --test fuzz` replays it from then on.
#
# Usage: bench/fuzz-decoders.sh [INPUTS] [SEED] [TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
inputs="${1:-1000000}"
seed="${2:-$(date +%s)}"
args=(--inputs "$inputs" --seed "$seed")
if [ -n "${3:-}" ]; then
  args+=(--target "$3")
fi
echo "fuzz seed $seed, $inputs inputs a target"
cargo test --release --test fuzz -- "${args[@]}"
