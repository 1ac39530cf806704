#!/usr/bin/env bash
# GPU machine, three calls: gpt-oss on CUDA (issue 39): MXFP4 blocks, attention sinks, the
# gpt-oss fixtures of test_llama. The build of pack_build.sh
# (TESTS="test_attention test_cache_attention test_quant_cuda test_gguf test_llama" NO_WICK_BENCH=1)
# is split in four (split -n 4 -d .device/build.tar.xz .device/build.part_): a call carries
# 64 MiB at most, the checkout (about 52 MB) included.
#   STAGE=start: carries .device/build.part_00; stashes it.
#   STAGE=part PART=1, then PART=2: carries .device/build.part_0$PART; stashes it.
#   STAGE=run: carries .device/build.part_03 and .device/origin.txt; joins the build, runs the
#     CUDA cases of the five programs, then the new CUDA paths under compute-sanitizer memcheck.
# Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/parts.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
case ${STAGE:-run} in
  start) stash_part 0; nvidia-smi -L; exit 0 ;;
  part) stash_part "${PART:-1}"; exit 0 ;;
esac
join_parts
nvidia-smi -L
(cd build && timeout 400 ctest -j8 --timeout 300 -R "/(Attention|CacheAttention|QuantDevice|Llama)\.[A-Za-z]+/cuda_0" \
  > "$out/ctest.log" 2>&1)
echo "ctest rc=$?"
grep -E "tests passed|tests failed" "$out/ctest.log"
grep -E "\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted|Not Run)\)" "$out/ctest.log" | head -20
for t in "test_attention --gtest_filter=*Sinks*/cuda*" "test_cache_attention --gtest_filter=*Sinks*/cuda*" \
         "test_quant_cuda --gtest_filter=*SmallMMatmulMatchesCpuForEveryTypeAndShape/cuda*"; do
  echo "== memcheck $t"
  timeout 300 compute-sanitizer --tool memcheck build/tests/$t 2>&1 | grep -E "PASSED|FAILED|ERROR SUMMARY" | head -4
done
