#!/usr/bin/env bash
# Sanitizer gate for CI (called from .ci/run). Two CPU-only builds:
#   1. build-asan: ASan + UBSan (-DWICK_SANITIZE=ON), runs the WHOLE CPU test suite via ctest.
#   2. build-tsan: ThreadSanitizer (-DWICK_TSAN=ON), runs the concurrency tests only
#      (ctest -R Concurrency: test_concurrency, the shared tokenizer of test_tokenizer_hf and
#      the serving engine of test_engine):
#      TSan slows everything ~10x and only threaded tests can race.
# Usage: scripts/sanitize.sh [asan|tsan|all]   (default all; build dirs under the repo root,
#        overridable with WICK_ASAN_BUILD / WICK_TSAN_BUILD; parallelism with WICK_JOBS).
# Quiet: build and test logs go to <build>/sanitize.log; only a summary line per stage is
# printed, plus the log's tail when a stage fails. Exits non-zero on any failure.
set -euo pipefail
what=${1:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${WICK_JOBS:-2}

# -O1 keeps the instrumented suite fast enough while leaving stack traces readable.
source "$root/scripts/compiler_cache.sh"
common=("${wick_cache_args[@]}" -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g"
        -DWICK_CUDA=OFF -DWICK_BENCH=OFF -DWICK_TESTS=ON)

# run_stage NAME BUILD_DIR "CMAKE FLAGS..." "NINJA TARGETS (empty: all)" "CTEST ARGS..."
run_stage() {
  local name=$1 build=$2 flags=$3 targets=$4 ctest_args=$5
  local log="$build/sanitize.log" start=$SECONDS
  mkdir -p "$build"
  : >"$log"
  # shellcheck disable=SC2086  # flags / targets / ctest_args are deliberately word-split
  if ! { cmake -S "$root" -B "$build" "${common[@]}" $flags &&
         ninja -C "$build" -j"$jobs" $targets &&
         ctest --test-dir "$build" --output-on-failure -j"$jobs" $ctest_args; } >>"$log" 2>&1; then
    echo "sanitize: $name FAILED after $((SECONDS - start))s (log: $log); tail:" >&2
    tail -n 60 "$log" >&2
    return 1
  fi
  local summary
  summary=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)
  echo "sanitize: $name ok in $((SECONDS - start))s: $summary"
}

# allocator_may_return_null: an impossible allocation must reach wick's OutOfMemory error
# (as it does without ASan) instead of ASan aborting the process.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

status=0
if [[ $what == all || $what == asan ]]; then
  run_stage "ASan+UBSan (whole CPU suite)" "${WICK_ASAN_BUILD:-$root/build-asan}" \
    "-DWICK_SANITIZE=ON -DWICK_TSAN=OFF" "" "" || status=1
fi
if [[ $what == all || $what == tsan ]]; then
  run_stage "TSan (concurrency tests)" "${WICK_TSAN_BUILD:-$root/build-tsan}" \
    "-DWICK_TSAN=ON -DWICK_SANITIZE=OFF" "test_concurrency test_tokenizer_hf test_engine" "-R Concurrency" || status=1
fi
exit $status
