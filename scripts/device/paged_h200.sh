#!/usr/bin/env bash
# GPU machine, one call: the paged KV cache and the prefix cache (issue 36). The CUDA cases of
# the tests the change touched, the same binaries' CUDA cases under compute-sanitizer
# memcheck, then batched decoding of the Llama-1B-shaped F16 file through per-sequence slots
# (`batched-bench --mode batch`: KvCache::pooled, the old layout) and through the engine's
# paged pool (`--mode engine`, blocks of each of BLOCKS positions), ROUNDS times alternating,
# then `wick serve` under bench/prefix_cache.py (a 2048-token prefix cold and reused). gguf-py
# (for bench/make_llama_gguf.py) comes from .device/gguf-py.tar.xz (llama.cpp's, not wick's).
#   [TESTS='ctest regex'] [MEMCHECK="test_a test_b"] [NPL=1,8,32,64] [BLOCKS="16 32 512"]
#   [ROUNDS=2] [PREFIX=0] bash scripts/device/paged_h200.sh
# Writes to $OUT: gpu.txt, ctest.log, memcheck_<test>.log, bb.txt, prefix.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/m
source scripts/device/unpack.sh
source scripts/device/cuda_checks.sh
f=/tmp/m/l1b-f16.gguf
(python3 bench/make_llama_gguf.py --shape 1b --dtype f16 --out "$f" > "$out/make_gguf.log" 2>&1) &
maker=$!
nvidia-smi -L | tee "$out/gpu.txt"
run_cuda_checks
wait $maker || { echo "make_llama_gguf failed"; tail -5 "$out/make_gguf.log"; exit 1; }
bb() {  # MODE [BLOCK]
  echo "== wick batched-bench --mode $1 ${2:+--kv-block-size $2}" | tee -a "$out/bb.txt"
  timeout 200 build/tools/wick/wick batched-bench --model "$f" --device cuda:0 -npp 256 -ntg 256 \
    -npl "${NPL:-1,8,32,64}" --mode "$1" ${2:+--kv-block-size $2} 2>&1 | grep -E "^\|" | tee -a "$out/bb.txt"
}
for ((r = 0; r < ${ROUNDS:-2}; ++r)); do
  bb batch
  for b in ${BLOCKS:-16 32 512}; do bb engine "$b"; done
done
if [[ ${PREFIX:-1} == 1 ]]; then
  build/tools/wick/wick serve --model "$f" --device cuda:0 --parallel 4 --ctx-size 4096 --port 8090 \
    > "$out/serve.log" 2>&1 &
  get() { python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('$1').read().decode())"; }
  for _ in $(seq 120); do get http://127.0.0.1:8090/health > /dev/null 2>&1 && break; sleep 1; done
  python3 bench/prefix_cache.py --server wick=http://127.0.0.1:8090 --prefix-tokens 2048 --rounds 5 \
    --vocab 32000 | tee "$out/prefix.md"
  get http://127.0.0.1:8090/metrics | grep -E "^wick_(prefix|kv_blocks)" | tee -a "$out/prefix.md"
  kill %1
fi
