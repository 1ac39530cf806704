#!/usr/bin/env bash
# GPU machine, one call: prefill and decode speed of two builds side by side on the same
# files and the same card, alternating, so that a change's before/after is one comparison.
# Both sides are timed as a user runs them, `wick generate` (its stderr's prefill and decode
# tokens/s), so the baseline needs only its wick command and libwick.so.
# The build under test is the carried .device/build.tar.xz (unpack.sh puts it in build/);
# the baseline is .device/before.tar.xz (the earlier commit's src/libwick.so and
# tools/wick/wick, stripped), unpacked into before/ and run with its own libwick.so first on
# the library path and the carried build's CUDA module (libwick_cuda.so, looked for beside
# libwick.so) beside it: valid while the change leaves src/backend alone.
# Files: the Llama-1B-shaped F16 file of bench/make_llama_gguf.py as stored and quantized at
# load (QUANTS, default "q8_0 q4_k"), and GPT-2 small (124M, random weights made by
# transformers, as bench/gpt2_h200.py does) in f16; a prompt of ~PROMPT words (default 500)
# and TOKENS generated tokens (default 128), greedy, end tokens ignored.
# Then the CUDA checks of the carried build (TESTS, MEMCHECK: cuda_checks.sh).
#   [TESTS='ctest regex'] [MEMCHECK="test_a"] [ROUNDS=3] bash scripts/device/before_after.sh
# Writes to $OUT: gpu.txt, generate.txt (one line per build, model and round), ctest.log,
# memcheck_<test>.log.
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
prompt=$(printf 'hello %.0s' $(seq "${PROMPT:-500}"))
gen() {  # BUILD NAME ARGS...
  local dir=$1 name=$2
  shift 2
  local log
  log=$(LD_LIBRARY_PATH="$PWD/$dir/src:$LD_LIBRARY_PATH" timeout 300 "$dir/tools/wick/wick" generate --device cuda:0 \
    --prompt "$prompt" --max-tokens "${TOKENS:-128}" --ignore-eos --temperature 0 "$@" 2>&1 >/dev/null)
  printf '%-7s %-9s prefill %s | decode %s\n' "$dir" "$name" \
    "$(grep -o 'prompt: [0-9]* tokens, prefill [0-9.]* s ([0-9.]* tokens/s)' <<<"$log" | grep -o '[0-9.]* tokens/s')" \
    "$(grep -o 'decode [0-9.]* s ([0-9.]* tokens/s)' <<<"$log" | grep -o '[0-9.]* tokens/s')" | tee -a "$out/generate.txt"
}
for r in $(seq "${ROUNDS:-3}"); do
  for b in before build; do
    gen "$b" f16 --model /tmp/m/l1b-f16.gguf
    for q in ${QUANTS:-q8_0 q4_k}; do gen "$b" "$q" --model /tmp/m/l1b-f16.gguf --quantize "$q"; done
    gen "$b" gpt2-f16 --model /tmp/m/gpt2 --dtype f16
  done
done
run_cuda_checks
