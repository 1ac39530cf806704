#!/usr/bin/env bash
# Sanitizer gate for CI (called from .ci/run). Two CPU-only clang builds, configured by
# scripts/sanitizer_build.sh:
#   1. asan: ASan + UBSan, runs the WHOLE CPU test suite via ctest. The same tree holds the
#      libFuzzer targets, which fuzz/run_briefly.sh then runs (built here, not again there).
#   2. tsan: ThreadSanitizer, runs the concurrency tests only (ctest -R Concurrency:
#      test_concurrency, the shared tokenizer of test_tokenizer_hf and the serving engine of
#      test_engine): TSan slows everything ~10x and only threaded tests can race. Only those
#      three test programs are built.
# Usage: scripts/sanitize.sh [asan|tsan|all]   (default all; build dirs under the repo root,
#        overridable with WICK_ASAN_BUILD / WICK_TSAN_BUILD; parallelism with WICK_JOBS).
# Quiet: build and test logs go to <build>/sanitize.log; only a summary line per stage is
# printed, plus the log's tail when a stage fails. Exits non-zero on any failure.
set -euo pipefail
what=${1:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${WICK_JOBS:-2}
source "$root/scripts/sanitizer_build.sh"

# run_stage NAME KIND BUILD_DIR "NINJA TARGETS (empty: all)" "CTEST ARGS..."
run_stage() {
  local name=$1 kind=$2 build=$3 targets=$4 ctest_args=$5
  local log="$build/sanitize.log" start=$SECONDS
  mkdir -p "$build"
  : >"$log"
  # shellcheck disable=SC2086  # targets / ctest_args are deliberately word-split
  if ! { sanitizer_configure "$kind" "$build" &&
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
  run_stage "ASan+UBSan (whole CPU suite)" asan "${WICK_ASAN_BUILD:-$root/build-asan}" "" "" || status=1
fi
if [[ $what == all || $what == tsan ]]; then
  run_stage "TSan (concurrency tests)" tsan "${WICK_TSAN_BUILD:-$root/build-tsan}" \
    "test_concurrency test_tokenizer_hf test_engine" "-R Concurrency" || status=1
fi
exit $status
