#!/usr/bin/env bash
# Builds every libFuzzer target (clang, ASan + UBSan) and runs each for N seconds
# (default 30), starting from its committed seed corpus fuzz/corpus/<name>/.
#   fuzz/run_briefly.sh [SECONDS]     (build directory: $WICK_FUZZ_BUILD or build-fuzz)
# Exits non-zero if a target crashes; the reproducer is left in the working directory.
set -euo pipefail
secs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WICK_FUZZ_BUILD:-$root/build-fuzz}

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DWICK_CUDA=OFF -DWICK_TESTS=OFF -DWICK_BENCH=OFF >/dev/null
targets=()
for src in "$root"/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
ninja -C "$build" "${targets[@]}"

for t in "${targets[@]}"; do
  name=${t#fuzz_}
  work=$(mktemp -d)  # new corpus entries go here; the committed seeds stay as they are
  dict=()
  [[ -f "$root/fuzz/$name.dict" ]] && dict=(-dict="$root/fuzz/$name.dict")
  echo "== $t for ${secs}s"
  "$build/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 "${dict[@]}" "$work" "$root/fuzz/corpus/$name"
  rm -rf "$work"
done
