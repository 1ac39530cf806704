#!/usr/bin/env bash
# GPU machine, one call: check the CUDA kernels a change touched, then measure decode and
# prefill against llama.cpp (scripts/device/llm_h200.sh). A llama.cpp CUDA build starts in
# the background first (from a trimmed llama.cpp source tree carried as .device/llama.tar.xz,
# folder trim/: not part of wick, see docs/perf.md), while the carried wick build
# (.device/build.tar.xz, pack_build.sh) runs the CUDA cases of TESTS under ctest and the
# test binaries of MEMCHECK under compute-sanitizer memcheck, and the Llama-1B-shaped file
# is written.
#   TESTS='ctest regex' MEMCHECK="test_a test_b" [SHAPES="1b 8b"] [QUANTS="Q8_0 Q4_0 Q4_K_M"] \
#     [BEFORE_BENCH="command"] [LLAMA_SERVER=1] [BENCH_SCRIPT=scripts/device/serve_h200.sh] \
#     bash scripts/device/decode_h200.sh
# BEFORE_BENCH runs after the tests, while llama.cpp may still be building (a profile).
# LLAMA_SERVER=1 builds llama-server too (for serve_h200.sh). BENCH_SCRIPT: what runs after
# the tests with LLAMA_BIN and WAIT_FOR set (default llm_h200.sh).
# Writes to $OUT: ctest.log, memcheck_<test>.log, llama_build.log, and llm_h200.sh's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
lc=/tmp/lc
mkdir -p "$out" "$lc" /tmp/m
tar -C "$lc" -xJf .device/llama.tar.xz
targets="llama-bench llama-quantize llama-batched-bench" server=-DLLAMA_BUILD_SERVER=OFF
if [[ ${LLAMA_SERVER:-0} == 1 ]]; then
  targets+=" llama-server" server="-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
fi
setsid bash -c "cd $lc/trim && cmake -S . -B b -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DLLAMA_CURL=OFF $server -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF \
  && ninja -C b $targets; touch $lc/done" > "$out/llama_build.log" 2>&1 < /dev/null &
source scripts/device/unpack.sh
export PYTHONPATH=$lc/trim/gguf-py${PYTHONPATH:+:$PYTHONPATH}
# The F16 file of each shape of SHAPES (default 1b), written under another name and renamed:
# llm_h200.sh makes a file itself when it is absent.
(for s in ${SHAPES:-1b}; do
  python3 bench/make_llama_gguf.py --shape "$s" --dtype f16 --out /tmp/m/part.gguf >> "$out/make_gguf.log" 2>&1 &&
    mv /tmp/m/part.gguf "/tmp/m/l$s-f16.gguf"
done) &
maker=$!
nvidia-smi -L
(cd build && timeout "${CTEST_TIMEOUT:-200}" ctest -j8 --timeout 150 -R "${TESTS:-cuda_0}" > "$out/ctest.log" 2>&1)
echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -20
for t in ${MEMCHECK:-}; do
  timeout "${MEMCHECK_TIMEOUT:-90}" compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 \
    "build/tests/$t" --gtest_filter='*cuda*' > "$out/memcheck_$t.log" 2>&1
  echo "$t memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$out/memcheck_$t.log")"
done
[[ -n "${BEFORE_BENCH:-}" ]] && bash -c "$BEFORE_BENCH"
wait "$maker"
PROFILE=${PROFILE:-0} LLAMA_BIN=$lc/trim/b/bin WAIT_FOR=$lc/done timeout "${BENCH_TIMEOUT:-330}" \
  bash "${BENCH_SCRIPT:-scripts/device/llm_h200.sh}"
echo "llama.cpp build: $(tail -n 1 "$out/llama_build.log")"
