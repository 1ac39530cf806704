#!/usr/bin/env bash
# GPU machine, one call of the device tool for everything (the device time is scarce):
# the whole ctest suite, the GPT-2 / quantized / per-op benchmarks against PyTorch, then
# compute-sanitizer memcheck of the CUDA cases of the given test binaries. Each phase has
# its own time limit so a slow one cannot starve the rest. Results go to $OUT.
#   MEMCHECK="test_cuda_graph test_attention ..." PERF_FILTER='regex' bash scripts/device/h200_all.sh
# Narrower runs: CTEST_ARGS='-R gpt2', GPT2_ARGS='--phases decode', GPT2_TIMEOUT=0 and
# QUANT_TIMEOUT=0 (skip those phases).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/device/unpack.sh
nvidia-smi -L | tee "$out/gpu.txt"
echo "== ctest ${CTEST_ARGS:-}"
(cd build && timeout ${CTEST_TIMEOUT:-150} ctest -j16 --output-on-failure --timeout 120 ${CTEST_ARGS:-} > "$out/ctest.log" 2>&1)
echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "^\s+[0-9]+ - .*\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -40
[[ "${GPT2_TIMEOUT:-150}" == 0 ]] || {
echo "== gpt2"
timeout ${GPT2_TIMEOUT:-150} python3 bench/gpt2_h200.py --wick build/tools/wick/wick ${GPT2_ARGS:-} > "$out/gpt2_table.md" 2> "$out/gpt2.log"
echo "gpt2 rc=$?"; cat "$out/gpt2_table.md"; grep -iE "error|failed" "$out/gpt2.log" | head -5
}
[[ "${QUANT_TIMEOUT:-60}" == 0 ]] || {
echo "== quant"
timeout ${QUANT_TIMEOUT:-60} python3 bench/quant_h200.py build/tools/wick/wick --out "$out/quant_table.md" > "$out/quant.log" 2>&1
echo "quant rc=$?"; cat "$out/quant_table.md" 2>/dev/null || tail -5 "$out/quant.log"
}
if [[ -n "${PERF_FILTER:-}" ]]; then
  echo "== per-op rows: $PERF_FILTER"
  timeout ${PERF_TIMEOUT:-120} python3 bench/compare_cuda.py build/tools/wick/wick --filter "$PERF_FILTER" \
    --out "$out/gpu_table.md" > "$out/perf.log" 2>&1
  echo "compare_cuda rc=$?"; cat "$out/gpu_table.md" 2>/dev/null || tail -5 "$out/perf.log"
fi
echo "== memcheck"
for t in ${MEMCHECK:-}; do
  timeout ${MEMCHECK_TIMEOUT:-60} compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 \
    "build/tests/$t" --gtest_filter='*cuda*:*Cuda*' > "$out/memcheck_$t.log" 2>&1
  echo "$t memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$out/memcheck_$t.log")"
done
