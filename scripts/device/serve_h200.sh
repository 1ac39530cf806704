#!/usr/bin/env bash
# GPU machine: issue 23's figures. wick's batched step (`wick batched-bench`) against
# llama.cpp's `llama-batched-bench`, then `wick serve` against `llama-server` under the same
# load (bench/serve_load.py: streaming completions, 256-token prompts and outputs), on the
# Llama-3.2-1B-shaped F16 and Q4_K_M files of bench/make_llama_gguf.py.
#   LLAMA_BIN=DIR [WAIT_FOR=FILE] [QUANTS="F16 Q4_K_M"] [NPL=1,8,32,64] [REPS=2] [BATCHED=0] \
#     [SERVERS=0] [STEPS="graph forward"] [QUANT_ROWS="8 64"] bash scripts/device/serve_h200.sh
# LLAMA_BIN: the bin folder of a llama.cpp CUDA build with llama-quantize, llama-batched-bench
# and llama-server (not part of wick; docs/perf.md says how to build one: configure with
# -DLLAMA_BUILD_SERVER=ON for llama-server). BATCHED=0 skips the engine rows, SERVERS=0 the
# HTTP rows; STEPS: wick's decode steps to run (batched-bench --step; default graph);
# QUANT_ROWS: for the quantized files, wick's rows again under each WICK_CUDA_QUANT_MATVEC_ROWS
# (the rows up to which the matrix-vector kernel multiplies; more go through bands). WAIT_FOR: a file
# that appears when that build is done (wick's side runs first, while it builds).
# Writes to $OUT: bb_<file>.txt (both engines' tables), serve_<file>.md (the load table).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}; m=${MODELS:-/tmp/m}; w=build/tools/wick/wick
npl=${NPL:-1,8,32,64}; reps=${REPS:-2}
mkdir -p "$out" "$m"
# File names as llm_h200.sh's (l1b-f16.gguf, l1b-Q4_K_M.gguf, ...), so that both share them.
gguf_of() { [[ $1 == F16 ]] && echo "$m/l1b-f16.gguf" || echo "$m/l1b-$1.gguf"; }
[[ -f $(gguf_of F16) ]] || python3 bench/make_llama_gguf.py --shape 1b --dtype f16 --out "$(gguf_of F16)"
# Positions for npl sequences of npp + ntg tokens (llama.cpp's -c is the total over sequences).
max_npl=${npl##*,}; ctx=$((max_npl * 512))

wick_batched() {  # FILE TAG
  for step in ${STEPS:-graph}; do
    echo "== wick batched-bench $2 --step $step" | tee -a "$out/bb_$2.txt"
    timeout 240 $w batched-bench --model "$1" --device cuda:0 -npp 256 -ntg 256 -npl "$npl" --step "$step" 2>&1 |
      tee -a "$out/bb_$2.txt"
  done
}
[[ ${BATCHED:-1} == 1 ]] && wick_batched "$(gguf_of F16)" F16
while [[ -n "${WAIT_FOR:-}" && ! -f $WAIT_FOR ]]; do sleep 3; done  # the llama.cpp build
for q in ${QUANTS:-F16 Q4_K_M}; do
  f=$(gguf_of "$q")
  [[ -f $f ]] || "$LLAMA_BIN/llama-quantize" "$(gguf_of F16)" "$f" "$q" > /dev/null 2>&1
  [[ ${BATCHED:-1} == 1 ]] || continue  # BATCHED=0: the servers only
  if [[ $q != F16 ]]; then
    wick_batched "$f" "$q"
    for rows in ${QUANT_ROWS:-}; do
      echo "== WICK_CUDA_QUANT_MATVEC_ROWS=$rows" | tee -a "$out/bb_$q.txt"
      WICK_CUDA_QUANT_MATVEC_ROWS=$rows wick_batched "$f" "$q"
    done
  fi
  echo "== llama-batched-bench $q" | tee -a "$out/bb_$q.txt"
  timeout 240 "$LLAMA_BIN/llama-batched-bench" -m "$f" -ngl 99 -c "$ctx" -b 2048 -ub 512 \
    -npp 256 -ntg 256 -npl "$npl" 2>&1 | grep -E '^\|' | tee -a "$out/bb_$q.txt"
done

# The servers, side by side: both up at once, serve_load.py alternates them per row.
[[ ${SERVERS:-1} == 1 ]] || exit 0
for q in ${QUANTS:-F16 Q4_K_M}; do
  f=$(gguf_of "$q")
  $w serve --model "$f" --device cuda:0 --port 8080 --parallel "$max_npl" --max-queue 256 --ctx-size 1024 \
    2> "$out/wick_serve_$q.log" &
  wp=$!
  "$LLAMA_BIN/llama-server" -m "$f" -ngl 99 --port 8081 -np "$max_npl" -c "$((max_npl * 1024))" \
    > "$out/llama_server_$q.log" 2>&1 &
  lp=$!
  for port in 8080 8081; do
    for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 1; done
  done
  timeout 400 python3 bench/serve_load.py --server wick=http://127.0.0.1:8080 --server llama-server=http://127.0.0.1:8081 \
    --concurrency "$npl" --prompt-tokens 256 --max-tokens 256 --rounds 1 --reps "$reps" --vocab 50000 \
    --out "$out/serve_$q.md" 2>&1 | tail -n 30
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$out/serve_mem_$q.txt"
  kill -INT $wp $lp; wait $wp $lp 2>/dev/null
done
