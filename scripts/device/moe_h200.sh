#!/usr/bin/env bash
# GPU machine, three calls: the Mixture-of-Experts checks and wick against llama.cpp on a
# Qwen3-30B-A3B-shaped file (bench/make_llama_gguf.py --shape qwen3moe, LAYERS of its 48 layers:
# each layer is the same work, and the 64 GB disk holds no 61 GB f16 file).
# The build (pack_build.sh) is split in three or four (split -n 3 or 4, by the checkout's size, -d .device/build.tar.xz
# .device/build.part_): a call carries at most 64 MiB with the checkout.
#   STAGE=start: carries .device/build.part_00 and .device/llama.tar.xz; stashes the part,
#     starts the llama.cpp CUDA build (trimmed sdist tree, not part of wick) and the f16 file.
#   STAGE=part (PART=1, then PART=2 when split in four): carries .device/build.part_0$PART; stashes it.
#   STAGE=run: carries the last part (.device/build.part_02, or _03 when split in four) and .device/origin.txt; joins the build, runs the CUDA cases of TESTS under
#     ctest and MEMCHECK's binaries under compute-sanitizer, then quantizes (QUANTS) and runs
#     bench/llm_side_by_side.py and llama-batched-bench / wick batched-bench.
# Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/parts.sh
out=${OUT:-/tmp/out}; lc=/tmp/lc; m=/tmp/m; layers=${LAYERS:-12}
mkdir -p "$out" "$lc" "$m"
if [[ ${STAGE:-run} == start ]]; then
  stash_part 0
  tar -C "$lc" -xJf .device/llama.tar.xz
  setsid bash -c "cd $lc/trim && cmake -S . -B b -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF \
    && ninja -C b llama-bench llama-quantize llama-batched-bench; touch $lc/done" > $lc/build.log 2>&1 < /dev/null &
  setsid bash -c "PYTHONPATH=$lc/trim/gguf-py python3 bench/make_llama_gguf.py --shape qwen3moe --layers $layers \
    --dtype f16 --out $m/part.gguf && mv $m/part.gguf $m/q3moe-f16.gguf" > $m/make.log 2>&1 < /dev/null &
  nvidia-smi -L
  exit 0
fi
if [[ ${STAGE:-run} == part ]]; then
  stash_part "${PART:-1}"
  exit 0
fi
join_parts
nvidia-smi -L
(cd build && timeout 240 ctest -j8 --timeout 200 -R "${TESTS:-cuda_0}" > "$out/ctest.log" 2>&1)
echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -20
for t in ${MEMCHECK:-}; do
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 \
    "build/tests/$t" --gtest_filter="${MEMCHECK_FILTER:-*cuda*}" > "$out/memcheck_$t.log" 2>&1
  echo "$t memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$out/memcheck_$t.log")"
done
while [[ ! -f $lc/done || ! -f $m/q3moe-f16.gguf ]]; do sleep 3; done
tail -n 1 $lc/build.log
bin=$lc/trim/b/bin
files=()
for q in ${QUANTS:-Q4_K_M Q8_0}; do
  [[ -f $m/q3moe-$q.gguf ]] || "$bin/llama-quantize" "$m/q3moe-f16.gguf" "$m/q3moe-$q.gguf" "$q" > /dev/null 2>&1
  files+=("$m/q3moe-$q.gguf")
done
ls -la $m
w=build/tools/wick/wick
python3 bench/llm_side_by_side.py --wick $w --llama-bin "$bin" --files "$(IFS=,; echo "${files[*]}")" \
  --wick-args "--dtype f16" --reps ${REPS:-3} --rounds ${ROUNDS:-1} --json "$out/side.json" | tee "$out/side.md"
if [[ ${BATCHED:-1} == 1 ]]; then
  f=${files[0]}
  for fa in 0 1; do
    timeout 120 "$bin/llama-batched-bench" -m "$f" -ngl 99 -fa $fa -c 40960 -b 2048 -ub 512 -npp 256 -ntg 128 \
      -npl 1,8,32,64 > "$out/llama_batched_fa$fa.txt" 2>&1
    grep -E "^\|" "$out/llama_batched_fa$fa.txt" | tail -5
  done
  timeout 200 $w batched-bench --model "$f" --device cuda --dtype f16 -p 256 -n 128 -l 1,8,32,64 > "$out/wick_batched.txt" 2>&1
  tail -8 "$out/wick_batched.txt"
fi
