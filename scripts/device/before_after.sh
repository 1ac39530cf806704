#!/usr/bin/env bash
# GPU machine, one call: decode and prefill speed of two builds side by side on the same
# files and the same card, alternating, so that a change's before/after is one comparison.
# The build under test is the carried .device/build.tar.xz (unpack.sh puts it in build/);
# the baseline is .device/before.tar.xz (the earlier commit's src/libwick.so and
# tools/wick/wick, stripped), unpacked into before/ and run with its own libwick.so first on
# the library path and the carried build's CUDA module (libwick_cuda.so, looked for beside
# libwick.so) beside it: valid while the change leaves src/backend alone.
#   - `wick lm-bench -p 512 -n 128` on the Llama-1B-shaped F16 file of bench/make_llama_gguf.py
#     as stored and quantized at load (QUANTS, default "q8_0 q4_k"), and on GPT-2 small
#     (124M, random weights made by transformers, as bench/gpt2_h200.py does) in f16;
#   - `wick batched-bench` at 1/8/32/64 sequences on the F16 file.
# Then the CUDA checks of the carried build (TESTS, MEMCHECK: cuda_checks.sh).
#   [TESTS='ctest regex'] [MEMCHECK="test_a"] [ROUNDS=2] bash scripts/device/before_after.sh
# Writes to $OUT: gpu.txt, lm_bench.txt (one line per build, model and round), batched.txt,
# ctest.log, memcheck_<test>.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/m before
source scripts/device/unpack.sh
source scripts/device/cuda_checks.sh
tar -C before -xJf .device/before.tar.xz
ln -sf "$PWD/build/src/libwick_cuda.so" before/src/libwick_cuda.so
nvidia-smi -L | tee "$out/gpu.txt"
(python3 bench/make_llama_gguf.py --shape 1b --dtype f16 --out /tmp/m/l1b-f16.gguf &&
  python3 -c "
import sys, torch
sys.path.insert(0, 'bench')
import gpt2_h200
gpt2_h200.make_checkpoint('/tmp/m/gpt2', torch)") > "$out/make_models.log" 2>&1 ||
  { echo "making the models failed"; tail -5 "$out/make_models.log"; }
# wick of one build: its own libwick.so (and so its own libwick_cuda.so) ahead of the other's.
wick_of() {  # BUILD ARGS...
  local dir=$1
  shift
  LD_LIBRARY_PATH="$PWD/$dir/src:$LD_LIBRARY_PATH" "$dir/tools/wick/wick" "$@"
}
bench() {  # BUILD NAME ARGS...
  local dir=$1 name=$2
  shift 2
  local json
  json=$(timeout 300 wick_of "$dir" lm-bench --device cuda:0 -p 512 -n 128 --reps 3 --json "$@" 2>>"$out/lm_bench.err")
  python3 -c "
import json, sys
j = json.loads(sys.argv[1])
print(sys.argv[2], sys.argv[3], ' '.join('%s %.1f' % (t['test'], t['tokens_per_s']) for t in j['tests']))" \
    "$json" "$dir" "$name" | tee -a "$out/lm_bench.txt"
}
for r in $(seq "${ROUNDS:-2}"); do
  for b in before build; do
    bench "$b" f16 --model /tmp/m/l1b-f16.gguf
    for q in ${QUANTS:-q8_0 q4_k}; do bench "$b" "$q" --model /tmp/m/l1b-f16.gguf --quantize "$q"; done
    bench "$b" gpt2-f16 --model /tmp/m/gpt2 --dtype f16
  done
done
for b in before build; do
  echo "== $b" >> "$out/batched.txt"
  timeout 300 wick_of "$b" batched-bench --model /tmp/m/l1b-f16.gguf --device cuda:0 -npp 256 -ntg 128 \
    -npl 1,8,32,64 >> "$out/batched.txt" 2>&1
done
cat "$out/batched.txt"
run_cuda_checks
