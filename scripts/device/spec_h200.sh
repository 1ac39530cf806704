#!/usr/bin/env bash
# GPU machine, one call: speculative decoding (issue 36 item 6). The CUDA cases of the tests
# the change touched, one binary's under compute-sanitizer memcheck, then on the
# Llama-shaped F16 files of SHAPES (random weights, bench/make_llama_gguf.py):
#   - `wick generate` at batch 1, 256 tokens, greedy: plain; --spec ngram over a prompt that
#     repeats itself; --spec draft with the target drafting for itself (every draft kept: the
#     upper bound of the machinery) and with its q4_0 quantization (--draft-quantize q4_0);
#   - `wick serve` without and with --spec ngram under bench/serve_load.py (prompts that repeat
#     a 16-token motif) at CONC streams.
# gguf-py (for make_llama_gguf.py) comes from .device/gguf-py.tar.xz.
#   [TESTS='ctest regex'] [MEMCHECK="test_a"] [SHAPES="1b"] [CONC=1,8,32] [TOKENS=256]
#   bash scripts/device/spec_h200.sh
# Writes to $OUT: gpu.txt, ctest.log, memcheck_<test>.log, gen.txt, serve_<shape>.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/m
source scripts/device/unpack.sh
source scripts/device/cuda_checks.sh
w=build/tools/wick/wick
(for s in ${SHAPES:-1b}; do
  python3 bench/make_llama_gguf.py --shape "$s" --dtype f16 --out "/tmp/m/l$s-f16.gguf" || exit 1
done > "$out/make_gguf.log" 2>&1) &
maker=$!
nvidia-smi -L | tee "$out/gpu.txt"
run_cuda_checks
wait $maker || { echo "make_llama_gguf failed"; tail -5 "$out/make_gguf.log"; exit 1; }
# A prompt that repeats itself (where prompt lookup finds drafts), as bench/serve_load.py's.
motif="the quick brown fox jumps over the lazy dog and then"
prompt="$motif $motif $motif $motif"
n=${TOKENS:-256}
for s in ${SHAPES:-1b}; do
  f=/tmp/m/l$s-f16.gguf
  gen() {  # NAME ARGS...
    local name=$1
    shift
    local log
    log=$(timeout 300 $w generate --model "$f" --device cuda:0 --prompt "$prompt" --max-tokens "$n" --ignore-eos \
      --temperature 0 "$@" 2>&1 >/dev/null)
    printf '%s %-12s %s | %s\n' "$s" "$name" "$(grep -o 'decode [0-9.]* s ([0-9.]* tokens/s)' <<<"$log")" \
      "$(grep -o '[0-9]* drafted, [0-9]* accepted ([0-9.]*%)' <<<"$log")" | tee -a "$out/gen.txt"
  }
  for r in 1 2; do
    gen plain
    gen ngram --spec ngram
    gen self --spec draft --draft-model "$f" --draft-tokens 4
    gen q4_0 --spec draft --draft-model "$f" --draft-quantize q4_0 --draft-tokens 4
  done
  $w serve --model "$f" --device cuda:0 --port 18301 --parallel 64 --ctx-size 1024 > "$out/serve_plain.log" 2>&1 &
  p1=$!
  $w serve --model "$f" --device cuda:0 --port 18302 --parallel 64 --ctx-size 1024 --spec ngram \
    > "$out/serve_ngram.log" 2>&1 &
  p2=$!
  for port in 18301 18302; do
    for _ in $(seq 120); do curl -sf "127.0.0.1:$port/health" > /dev/null && break; sleep 1; done
  done
  timeout 400 python3 bench/serve_load.py --server plain=http://127.0.0.1:18301 --server ngram=http://127.0.0.1:18302 \
    --concurrency "${CONC:-1,8,32}" --prompt-tokens 256 --motif-tokens 16 --max-tokens 128 --rounds 2 --reps 2 \
    --vocab 50000 --out "$out/serve_$s.md" 2>&1 | tail -4
  curl -s 127.0.0.1:18302/metrics | grep '^wick_spec_' | tee -a "$out/serve_$s.md"
  kill $p1 $p2
  wait $p1 $p2 2>/dev/null
done
