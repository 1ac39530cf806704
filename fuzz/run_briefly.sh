#!/usr/bin/env bash
# Builds every libFuzzer target (clang, ASan + UBSan) and runs each for N seconds (default
# 30), starting from its committed seed corpus fuzz/corpus/<name>/, two targets at a time
# (one per core: each fuzzer is single-threaded).
#   fuzz/run_briefly.sh [SECONDS]     (build directory: $WICK_FUZZ_BUILD or build-asan)
# The build is the ASan tree of scripts/sanitize.sh (scripts/sanitizer_build.sh configures
# both alike), so after `scripts/sanitize.sh asan` nothing is compiled again here.
# Exits non-zero if a target crashes; its log is printed and the reproducer is left in the
# working directory.
set -euo pipefail
secs=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WICK_FUZZ_BUILD:-$root/build-asan}
parallel=${WICK_FUZZ_PARALLEL:-2}
source "$root/scripts/sanitizer_build.sh"
sanitizer_configure asan "$build" >/dev/null

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
  "fuzz_grammar|fuzz/fuzz_grammar|fuzz/corpus/grammar|"
)
names=()
for t in "${targets[@]}"; do names+=("${t%%|*}"); done
ninja -C "$build" "${names[@]}" >/dev/null

logs=$(mktemp -d)
# run_one TARGET-LINE: one fuzzer for $secs seconds, its output in $logs/<name>.log.
run_one() {
  local name bin corpus dictfile work status=0
  IFS='|' read -r name bin corpus dictfile <<<"$1"
  work=$(mktemp -d)  # new corpus entries go here; the committed seeds stay as they are
  local dict=()
  [[ -n "$dictfile" && -f "$root/$dictfile" ]] && dict=(-dict="$root/$dictfile")
  "$build/$bin" -max_total_time="$secs" -print_final_stats=1 "${dict[@]}" "$work" "$root/$corpus" \
    >"$logs/$name.log" 2>&1 || status=$?
  rm -rf "$work"
  return $status
}

failed=()
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  pids=() batch=()
  for t in "${targets[@]:i:parallel}"; do
    run_one "$t" & pids+=($!) batch+=("${t%%|*}")
  done
  for j in "${!pids[@]}"; do
    name=${batch[j]}
    if wait "${pids[j]}"; then
      echo "== $name ${secs}s: $(grep -E '^stat::number_of_executed_units' "$logs/$name.log" | awk '{print $2}') runs, ok"
    else
      echo "== $name FAILED; its log:" >&2
      cat "$logs/$name.log" >&2
      failed+=("$name")
    fi
  done
done
rm -rf "$logs"
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets ran ${secs}s each, no finding"
