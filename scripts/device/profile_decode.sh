#!/usr/bin/env bash
# GPU machine: per-kernel times of GPT-2 small decode steps under Nsight Compute (graph
# nodes are profiled one by one), summed by kernel name, to find what a token costs.
#   DTYPE=f32 bash scripts/device/profile_decode.sh   (after unpacking a carried build)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
source scripts/device/unpack.sh
ck=$(mktemp -d)
python3 - "$ck" <<'PY'
import sys, torch
sys.path.insert(0, "bench")
import gpt2_h200
gpt2_h200.make_checkpoint(sys.argv[1], torch)
PY
# Prefill launches come first; skip them and profile about two decode steps.
timeout ${NCU_TIMEOUT:-240} ncu --clock-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip ${SKIP:-400} --launch-count ${COUNT:-500} \
  build/tools/wick/wick generate --model "$ck" --prompt "$(python3 -c 'print(" hello"*32)')" --max-tokens 6 \
  --temperature 0 --ignore-eos --device cuda --dtype ${DTYPE:-f32} > "$out/ncu_decode.csv" 2> "$out/ncu_decode.err"
echo "ncu rc=$?"
python3 scripts/device/ncu_summary.py "$out/ncu_decode.csv" | tee "$out/ncu_summary.txt"
