#!/usr/bin/env bash
# Runs on the GPU machine (the device tool): the whole test suite on cuda:0 and cpu, the
# CUDA cases again under compute-sanitizer memcheck, and `wick info`. Results go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
origin=$(sed -n 's/^checkout path: //p' .device/origin.txt)
# The carried build refers to the checkout by the path it was built at.
if [[ "$origin" != "$PWD" ]]; then mkdir -p "$(dirname "$origin")"; ln -sfn "$PWD" "$origin"; fi
mkdir -p build && tar -C build -xJf .device/build.tar.xz
export LD_LIBRARY_PATH=$PWD/build/src:${LD_LIBRARY_PATH:-}
# The image's /usr/local/cuda has no libnccl; PyTorch's wheel carries the same library.
nccl_lib=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)/lib
[[ -d "$nccl_lib" ]] && export LD_LIBRARY_PATH=$nccl_lib:$LD_LIBRARY_PATH
export NCCL_NVLS_ENABLE=0
nvidia-smi -L | tee "$out/gpu.txt"
./build/tools/wick/wick info | tee -a "$out/gpu.txt"
echo "== ctest"
(cd build && ctest -j8 --output-on-failure --timeout 600 > "$out/ctest.log" 2>&1); echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "^\s+[0-9]+ - .*\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -60
if [[ "${SANITIZE:-1}" == 1 ]]; then
  echo "== compute-sanitizer memcheck (cuda cases)"
  : > "$out/memcheck.log"
  for t in build/tests/test_*; do
    [[ -x "$t" && ! "$t" == *.cmake ]] || continue
    compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 "$t" --gtest_filter='*cuda*:*Cuda*' \
      >> "$out/memcheck.log" 2>&1
    echo "$(basename "$t") rc=$?" | tee -a "$out/memcheck_summary.txt"
  done
  grep -E "ERROR SUMMARY" "$out/memcheck.log" | sort | uniq -c
fi
