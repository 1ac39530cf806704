#!/usr/bin/env bash
# GPU machine: wick against llama.cpp on Llama-3.2-1B-shaped GGUF files (random weights,
# bench/make_llama_gguf.py; quantized by llama.cpp's llama-quantize) and GPT-2 small (f16),
# side by side (bench/llm_side_by_side.py), plus a per-kernel profile of wick's F16 decode.
#   LLAMA_BIN=DIR [SHAPES="1b"] [QUANTS="Q8_0 Q4_0 Q4_K_M"] [GPT2=0] bash scripts/device/llm_h200.sh
# LLAMA_BIN: the bin folder of a llama.cpp CUDA build (not part of wick; docs/perf.md says how
# to build one). Needs gguf-py on PYTHONPATH (llama.cpp's tree has it). Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/out}; m=${MODELS:-/tmp/m}; w=build/tools/wick/wick
mkdir -p "$out" "$m"
files=()
for s in ${SHAPES:-1b}; do
  [[ -f $m/l$s-f16.gguf ]] || python3 bench/make_llama_gguf.py --shape "$s" --dtype f16 --out "$m/l$s-f16.gguf"
  files+=("$m/l$s-f16.gguf")
done
if [[ "${PROFILE:-1}" == 1 ]]; then
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-count ${COUNT:-1500} \
    $w generate --model "${files[0]}" --prompt hi --max-tokens 4 --ignore-eos > "$out/ncu.csv" 2>/dev/null
  python3 scripts/device/ncu_summary.py "$out/ncu.csv" 30 > "$out/ncu_sum.txt"; head -30 "$out/ncu_sum.txt"
fi
if [[ "${GPT2:-1}" == 1 && ! -d $m/gpt2 ]]; then
  python3 -c "import sys,torch; sys.path.insert(0,'bench'); import gpt2_h200; gpt2_h200.make_checkpoint('$m/gpt2', torch)"
  # convert_hf_to_gguf.py reads GPT-2's context from n_ctx, which transformers 5 no longer writes.
  python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c.setdefault('n_ctx', c['n_positions']); json.dump(c, open(p,'w'))" "$m/gpt2/config.json"
  python3 "$LLAMA_BIN/../../convert_hf_to_gguf.py" "$m/gpt2" --outtype f16 --outfile "$m/gpt2-f16.gguf" > "$out/convert.log" 2>&1
fi
while [[ -n "${WAIT_FOR:-}" && ! -f $WAIT_FOR ]]; do sleep 3; done  # a llama.cpp build still running
for s in ${SHAPES:-1b}; do
  for q in ${QUANTS:-Q8_0 Q4_0 Q4_K_M}; do
    [[ -f $m/l$s-$q.gguf ]] || "$LLAMA_BIN/llama-quantize" "$m/l$s-f16.gguf" "$m/l$s-$q.gguf" "$q" > /dev/null 2>&1
    files+=("$m/l$s-$q.gguf")
  done
done
[[ "${GPT2:-1}" == 1 ]] && files+=("$m/gpt2-f16.gguf=$m/gpt2")
python3 bench/llm_side_by_side.py --wick $w --llama-bin "$LLAMA_BIN" --files "$(IFS=,; echo "${files[*]}")" \
  --wick-args "--dtype f16" --reps ${REPS:-3} --rounds ${ROUNDS:-1} --json "$out/side.json" | tee "$out/side.md"
