#!/usr/bin/env bash
# GPU machine: where a batched decode step's time goes. `wick batched-bench` at NPL
# sequences, first plain (the step's wall time), then under Nsight Compute (each kernel's
# GPU time, summed by name): the difference is host and launch overhead.
#   [FILE=/tmp/m/l1b-f16.gguf] [NPL=64] bash scripts/device/profile_batched.sh
# Needs an unpacked build (unpack.sh). Writes to $OUT: batched_plain.txt, ncu_batched.csv, ncu_batched_sum.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}; w=build/tools/wick/wick
f=${FILE:-/tmp/m/l1b-f16.gguf}; npl=${NPL:-64}
mkdir -p "$out"
[[ -f $f ]] || python3 bench/make_llama_gguf.py --shape 1b --dtype f16 --out "$f"
timeout 120 $w batched-bench --model "$f" --device cuda:0 -npp 32 -ntg 32 -npl "1,8,$npl" 2>&1 | tee "$out/batched_plain.txt"
# A short run: 32-token prompts, 4 decode steps; prefill kernels are in the sum too (named apart).
timeout ${NCU_TIMEOUT:-200} ncu --clock-control none --metrics gpu__time_duration.sum --csv \
  --launch-count ${COUNT:-3000} $w batched-bench --model "$f" --device cuda:0 -npp 32 -ntg 4 -npl "$npl" \
  > "$out/ncu_batched.csv" 2> "$out/ncu_batched.err"
echo "ncu rc=$?"
python3 scripts/device/ncu_summary.py "$out/ncu_batched.csv" 40 | tee "$out/ncu_batched_sum.txt"
