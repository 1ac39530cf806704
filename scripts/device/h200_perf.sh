#!/usr/bin/env bash
# GPU machine: the tests (h200_check.sh), then the per-op table against PyTorch eager
# (bench/compare_cuda.py) into $OUT/gpu_table.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
bash scripts/device/h200_check.sh > "$out/check.txt" 2>&1
grep -E "tests passed|tests failed|\(Failed|rc=[1-9]|ERROR SUMMARY" "$out/check.txt" | sort | uniq -c | head -40
source scripts/device/env.sh
timeout ${PERF_TIMEOUT:-360} python3 bench/compare_cuda.py build/tools/wick/wick --out "$out/gpu_table.md" > "$out/perf.log" 2>&1
echo "compare_cuda rc=$?"
cat "$out/gpu_table.md" 2>/dev/null || tail -30 "$out/perf.log"
