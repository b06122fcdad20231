#!/usr/bin/env bash
# Fuzz every target for a bounded time with libFuzzer + ASan + UBSan.
# usage: [FUZZ_MAX_RUNS=N] [FUZZ_TIMEOUT=S] tests/fuzz/run.sh [SECONDS_PER_TARGET=60] [TARGET...]
# Builds build-fuzz/ with clang (only the fuzz targets, at -O2: several
# times more inputs per second than -O0, and ASan/UBSan still check each),
# runs each target from its committed seeds and regression inputs plus a
# scratch corpus until SECONDS or FUZZ_MAX_RUNS executions, whichever comes
# first (an input running over FUZZ_TIMEOUT seconds, default 10, fails
# as a hang), and prints the executions per target. Exits non-zero on the first
# crash, with the crashing input in build-fuzz/fuzz-artifacts/ (fix the bug,
# then copy the input to tests/fuzz/regressions/<target>/ so ctest replays it).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request tokenizer toml config_json safetensors http_framing http_parse)
build=build-fuzz
mkdir -p "$build"
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERT_SANITIZE=ON -DBERT_FUZZ=ON \
  > "$build/configure.log"
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" > "$build/build.log" \
  || { tail -40 "$build/build.log"; exit 1; }
mkdir -p "$build/fuzz-artifacts"
for t in "${targets[@]}"; do
  work="$build/fuzz-corpus/$t"
  mkdir -p "$work"
  log="$build/fuzz-$t.log"
  seeds=(tests/fuzz/corpus/"$t")
  [ -d tests/fuzz/regressions/"$t" ] && seeds+=(tests/fuzz/regressions/"$t")
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -runs="${FUZZ_MAX_RUNS:--1}" \
      -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$t-" \
      "$work" "${seeds[@]}" > "$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz_$t: CRASH (input in $build/fuzz-artifacts/)"
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  secs=$(grep -o 'runs in [0-9]* second' "$log" | grep -o '[0-9]*')
  echo "fuzz_$t: ${runs:-?} executions in ${secs:-$seconds}s, $cov, no crash"
done
