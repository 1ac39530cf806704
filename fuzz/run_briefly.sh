#!/usr/bin/env bash
# Builds every libFuzzer target (clang, ASan + UBSan) and runs each for N seconds
# (default 30), starting from its committed seed corpus fuzz/corpus/<name>/.
#   fuzz/run_briefly.sh [SECONDS]     (build directory: $WICK_FUZZ_BUILD or build-fuzz)
# Exits non-zero if a target crashes; the reproducer is left in the working directory.
set -euo pipefail
secs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WICK_FUZZ_BUILD:-$root/build-fuzz}

source "$root/scripts/compiler_cache.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" "${wick_cache_args[@]}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DWICK_CUDA=OFF -DWICK_TESTS=OFF -DWICK_BENCH=OFF >/dev/null
# target | binary (in the build dir) | seed corpus | dictionary (optional)
targets=(
  "fuzz_safetensors|fuzz/fuzz_safetensors|fuzz/corpus/safetensors|fuzz/safetensors.dict"
  "fuzz_gguf|fuzz/gguf/fuzz_gguf|fuzz/corpus/gguf|"
  "fuzz_cli_args|fuzz/fuzz_cli_args|fuzz/corpus/cli_args|"
  "fuzz_tokenizer|fuzz/tokenizer/fuzz_tokenizer|fuzz/corpus/tokenizer|fuzz/tokenizer/tokenizer.dict"
  "fuzz_model_config|fuzz/fuzz_model_config|fuzz/corpus/model_config|"
  "fuzz_tokenizer_json|fuzz/fuzz_tokenizer_json|fuzz/corpus/tokenizer_json|"
  "fuzz_chat_template|fuzz/fuzz_chat_template|fuzz/corpus/chat_template|fuzz/chat_template.dict"
  "fuzz_serve_request|fuzz/fuzz_serve_request|fuzz/corpus/serve_request|"
)
names=()
for t in "${targets[@]}"; do names+=("${t%%|*}"); done
ninja -C "$build" "${names[@]}"

for t in "${targets[@]}"; do
  IFS='|' read -r name bin corpus dictfile <<<"$t"
  work=$(mktemp -d)  # new corpus entries go here; the committed seeds stay as they are
  dict=()
  [[ -n "$dictfile" && -f "$root/$dictfile" ]] && dict=(-dict="$root/$dictfile")
  echo "== $name for ${secs}s"
  "$build/$bin" -max_total_time="$secs" -print_final_stats=1 "${dict[@]}" "$work" "$root/$corpus"
  rm -rf "$work"
done
