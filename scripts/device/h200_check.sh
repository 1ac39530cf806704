#!/usr/bin/env bash
# Runs on the GPU machine (the device tool): the whole test suite on cuda:0 and cpu, the
# CUDA cases again under compute-sanitizer memcheck, and `wick info`. Results go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/device/unpack.sh
nvidia-smi -L | tee "$out/gpu.txt"
./build/tools/wick/wick info | tee -a "$out/gpu.txt"
echo "== ctest"
(cd build && ctest -j8 --output-on-failure --timeout 600 > "$out/ctest.log" 2>&1); echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "^\s+[0-9]+ - .*\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -60
if [[ "${SANITIZE:-1}" == 1 ]]; then
  echo "== compute-sanitizer memcheck (cuda cases)"
  : > "$out/memcheck.log"
  for t in build/tests/test_*; do
    [[ -x "$t" && ! "$t" == *.cmake ]] || continue
    compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 "$t" --gtest_filter='*cuda*:*Cuda*' \
      >> "$out/memcheck.log" 2>&1
    echo "$(basename "$t") rc=$?" | tee -a "$out/memcheck_summary.txt"
  done
  grep -E "ERROR SUMMARY" "$out/memcheck.log" | sort | uniq -c
fi
